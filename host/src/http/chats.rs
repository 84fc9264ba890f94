//! Chat routes: list, create, read, update, star, delete, and append a message. The request and
//! response DTOs live here; the rules are the contract's "Rules for … chats".

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::AppState;
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery, ApiResult, ErrorBody};
use super::limits::{
    self, MAX_MODEL_CHARS, MAX_NAME_CHARS, MAX_SYSTEM_PROMPT_CHARS, MAX_TITLE_CHARS,
};
use super::paging::{self, PageQuery, Wanted};
use crate::attachments::{self, AttachmentInput};
use crate::people::Caller;
use crate::store::{ChatPatch, ChatRecord, MessageRecord, NewChat, NewMessage};
use crate::vocabulary::{Role, to_millis};

pub const CHAT_NOT_FOUND: &str = "chat not found";

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatSummary {
    pub id: String,
    pub title: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub starred: bool,
    /// When the chat joined the reserved `starred` project.
    pub starred_at: Option<String>,
    pub initiated_provider: Option<String>,
    pub initiated_model: Option<String>,
    pub last_used_provider: Option<String>,
    pub last_used_model: Option<String>,
    pub additional_system_prompt: Option<String>,
    pub enabled_tools: Vec<String>,
}

impl From<ChatRecord> for ChatSummary {
    fn from(c: ChatRecord) -> Self {
        Self {
            id: c.id,
            title: c.title,
            created_at: to_millis(&c.created_at),
            updated_at: to_millis(&c.updated_at),
            starred: c.starred_at.is_some(),
            starred_at: c.starred_at.as_deref().map(to_millis),
            initiated_provider: c.initiated_provider,
            initiated_model: c.initiated_model,
            last_used_provider: c.last_used_provider,
            last_used_model: c.last_used_model,
            additional_system_prompt: c.additional_system_prompt,
            enabled_tools: c.enabled_tools,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatDetail {
    #[serde(flatten)]
    pub summary: ChatSummary,
    /// The transcript, in order.
    pub messages: Vec<Message>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    pub created_at: String,
    pub role: Role,
    pub content: String,
    pub name: Option<String>,
    /// `attachments` on user messages that carried them; `kind: "tool_call"` on tool-call logs.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

impl From<MessageRecord> for Message {
    fn from(m: MessageRecord) -> Self {
        Self {
            id: m.id,
            created_at: to_millis(&m.created_at),
            role: m.role,
            content: m.content,
            name: m.name,
            metadata: m.metadata,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ChatResponse {
    pub chat: ChatSummary,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ChatDetailResponse {
    pub chat: ChatDetail,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatListResponse {
    pub chats: Vec<ChatSummary>,
    /// With `limit` or `cursor`: the cursor of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MessageResponse {
    pub message: Message,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeletedResponse {
    pub deleted: bool,
}

/// A transcript row as clients send it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageInput {
    pub role: Role,
    pub content: String,
    pub name: Option<String>,
    /// At most 8; not allowed on `tool` messages.
    pub attachments: Option<Vec<AttachmentInput>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateChatRequest {
    /// Trimmed; blank is stored as null.
    pub title: Option<String>,
    /// Must come with `model`; a provider this server has.
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Trimmed; blank is stored as null.
    pub additional_system_prompt: Option<String>,
    /// Unknown names are ignored; omitted means every available tool.
    pub enabled_tools: Option<Vec<String>>,
    /// The initial transcript.
    pub messages: Option<Vec<MessageInput>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchChatRequest {
    /// Non-blank; stored trimmed.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub title: Option<Option<String>>,
    /// null or blank clears it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub additional_system_prompt: Option<Option<String>>,
    /// Unknown names are ignored; empty disables service-managed tools.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub enabled_tools: Option<Option<Vec<String>>>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct StarRequest {
    pub starred: bool,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddMessageRequest {
    pub role: Role,
    pub content: String,
    pub name: Option<String>,
    /// Any JSON object.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// Merged into `metadata.attachments`.
    pub attachments: Option<Vec<AttachmentInput>>,
}

/// Tells a field that is present (even as `null`) from one that is absent.
fn present<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Validates a message and folds its attachments into `metadata.attachments`. `field` is the
/// JSON path of the message, for error messages.
pub(super) fn new_message(
    role: Role,
    content: String,
    name: Option<String>,
    metadata: Option<Value>,
    attachments: Option<Vec<AttachmentInput>>,
    field: &str,
) -> ApiResult<NewMessage> {
    let mut metadata = match metadata {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map),
        Some(_) => {
            return Err(ApiError::invalid(
                format!("{field}metadata"),
                "must be an object or null",
            ));
        }
    };
    // Attachments already inside metadata obey the same limits as the `attachments` field, and
    // the two lists share the per-message count.
    let from_metadata: Vec<AttachmentInput> =
        match metadata.as_mut().and_then(|m| m.remove("attachments")) {
            None | Some(Value::Null) => Vec::new(),
            Some(value) => serde_path_to_error::deserialize(value).map_err(|e| {
                ApiError::invalid(
                    format!("{field}metadata.attachments{}", index_path(e.path())),
                    e.inner(),
                )
            })?,
        };
    let from_field = attachments.unwrap_or_default();
    let count = from_metadata.len() + from_field.len();
    if count > 0 {
        if role == Role::Tool {
            return Err(ApiError::invalid(
                format!("{field}attachments"),
                "tool messages must not carry attachments",
            ));
        }
        attachments::check_count(count, &format!("{field}attachments"))?;
        let mut stored =
            attachments::validate_each(from_metadata, &format!("{field}metadata.attachments"))?;
        stored.extend(attachments::validate_each(
            from_field,
            &format!("{field}attachments"),
        )?);
        metadata.get_or_insert_with(Default::default).insert(
            "attachments".into(),
            serde_json::to_value(stored).map_err(ApiError::internal)?,
        );
    }
    Ok(NewMessage {
        role,
        content,
        name: limits::optional(name.as_deref(), &format!("{field}name"), MAX_NAME_CHARS)?,
        metadata: metadata.map(Value::Object),
    })
}

/// A body's messages, each validated by [`new_message`], its errors naming the message as
/// `at(i)` says (`messages[i]` on the contract's routes).
pub(super) fn new_messages(
    inputs: Vec<MessageInput>,
    at: impl Fn(usize) -> String,
) -> ApiResult<Vec<NewMessage>> {
    inputs
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            new_message(
                m.role,
                m.content,
                m.name,
                None,
                m.attachments,
                &format!("{}.", at(i)),
            )
        })
        .collect()
}

/// A serde path inside a list (`[1].kind`), or nothing for the list itself.
fn index_path(path: &serde_path_to_error::Path) -> String {
    match path.to_string().as_str() {
        "." => String::new(),
        p if p.starts_with('[') => p.to_string(),
        p => format!(".{p}"),
    }
}

fn not_found() -> ApiError {
    ApiError::not_found(CHAT_NOT_FOUND)
}

/// `additionalSystemPrompt`, stored or one-off: trimmed, blank read as none.
pub(super) fn system_prompt(prompt: Option<&str>) -> ApiResult<Option<String>> {
    limits::optional(prompt, "additionalSystemPrompt", MAX_SYSTEM_PROMPT_CHARS)
}

/// All chats, most recently updated first; with `limit` or `cursor`, one page of them;
/// with `title`, those titled so (`paging.rs`).
#[utoipa::path(get, path = "/chats", tag = "chats", params(PageQuery),
    responses((status = 200, body = ChatListResponse), (status = 400, body = ErrorBody)))]
pub async fn list_chats(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(page): ApiQuery<PageQuery>,
) -> ApiResult<Json<ChatListResponse>> {
    let (chats, next_cursor) = match page.wanted()? {
        Wanted::All => (state.store.list_chats(caller.owner()).await?, None),
        Wanted::Page {
            limit,
            after,
            title,
        } => {
            let rows = state
                .store
                .list_chats_page(
                    limit.saturating_add(1),
                    after.as_ref(),
                    title.as_ref(),
                    caller.owner(),
                )
                .await?;
            paging::split(rows, limit, |c| (&c.updated_at, &c.id))
        }
    };
    Ok(Json(ChatListResponse {
        chats: chats.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}

#[utoipa::path(post, path = "/chats", tag = "chats", request_body = CreateChatRequest,
    responses((status = 200, body = ChatResponse), (status = 400, body = ErrorBody), (status = 413, body = ErrorBody)))]
pub async fn create_chat(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateChatRequest>,
) -> ApiResult<Json<ChatResponse>> {
    let model = limits::optional(body.model.as_deref(), "model", MAX_MODEL_CHARS)?;
    let provider_model = match (body.provider, model) {
        (Some(provider), Some(model)) => {
            let snapshot = state.plugins.snapshot();
            if snapshot.provider(&provider).is_none() {
                return Err(ApiError::invalid(
                    "provider",
                    snapshot.unknown_provider(&provider),
                ));
            }
            Some((provider, model))
        }
        (None, None) => None,
        _ => {
            return Err(ApiError::bad_request(
                "provider, model: must be supplied together",
            ));
        }
    };
    let offer = state.tools.offered(caller.owner()).await;
    let enabled_tools = match &body.enabled_tools {
        Some(requested) => offer.keep_known(requested),
        None => offer.names(),
    };
    let messages = new_messages(body.messages.unwrap_or_default(), |i| {
        format!("messages[{i}]")
    })?;
    let chat = state
        .store
        .create_chat(NewChat {
            owner_id: caller.owner().to_string(),
            title: limits::optional(body.title.as_deref(), "title", MAX_TITLE_CHARS)?,
            provider_model,
            additional_system_prompt: system_prompt(body.additional_system_prompt.as_deref())?,
            enabled_tools,
            messages,
        })
        .await?;
    Ok(Json(ChatResponse { chat: chat.into() }))
}

#[utoipa::path(get, path = "/chats/{chatId}", tag = "chats",
    params(("chatId" = String, Path)),
    responses((status = 200, body = ChatDetailResponse), (status = 404, body = ErrorBody)))]
pub async fn get_chat(
    State(state): State<AppState>,
    ApiPath(chat_id): ApiPath<String>,
) -> ApiResult<Json<ChatDetailResponse>> {
    let (chat, messages) = state
        .store
        .get_chat_with_messages(&chat_id)
        .await?
        .ok_or_else(not_found)?;
    Ok(Json(ChatDetailResponse {
        chat: ChatDetail {
            summary: chat.into(),
            messages: messages.into_iter().map(Into::into).collect(),
        },
    }))
}

#[utoipa::path(patch, path = "/chats/{chatId}", tag = "chats", request_body = PatchChatRequest,
    params(("chatId" = String, Path)),
    responses((status = 200, body = ChatResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn patch_chat(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(chat_id): ApiPath<String>,
    ApiJson(body): ApiJson<PatchChatRequest>,
) -> ApiResult<Json<ChatResponse>> {
    let title = match body.title {
        None => None,
        Some(title) => Some(
            limits::optional(title.as_deref(), "title", MAX_TITLE_CHARS)?
                .ok_or_else(|| ApiError::invalid("title", "must be a non-blank string"))?,
        ),
    };
    let enabled_tools = match body.enabled_tools {
        None => None,
        Some(None) => {
            return Err(ApiError::invalid(
                "enabledTools",
                "must be an array of tool names, not null",
            ));
        }
        Some(Some(requested)) => Some(
            state
                .tools
                .offered(caller.owner())
                .await
                .keep_known(&requested),
        ),
    };
    let additional_system_prompt = match body.additional_system_prompt {
        None => None,
        Some(prompt) => Some(system_prompt(prompt.as_deref())?),
    };
    let patch = ChatPatch {
        title,
        additional_system_prompt,
        enabled_tools,
    };
    // Nothing to change: nothing is written, and `updatedAt` stays.
    if patch.title.is_none()
        && patch.additional_system_prompt.is_none()
        && patch.enabled_tools.is_none()
    {
        let chat = state
            .store
            .get_chat(&chat_id)
            .await?
            .ok_or_else(not_found)?;
        return Ok(Json(ChatResponse { chat: chat.into() }));
    }
    let chat = state
        .store
        .update_chat(&chat_id, patch)
        .await?
        .ok_or_else(not_found)?;
    Ok(Json(ChatResponse { chat: chat.into() }))
}

#[utoipa::path(patch, path = "/chats/{chatId}/star", tag = "chats", request_body = StarRequest,
    params(("chatId" = String, Path)),
    responses((status = 200, body = ChatResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn star_chat(
    State(state): State<AppState>,
    ApiPath(chat_id): ApiPath<String>,
    ApiJson(body): ApiJson<StarRequest>,
) -> ApiResult<Json<ChatResponse>> {
    let chat = state
        .store
        .set_chat_starred(&chat_id, body.starred)
        .await?
        .ok_or_else(not_found)?;
    Ok(Json(ChatResponse { chat: chat.into() }))
}

#[utoipa::path(delete, path = "/chats/{chatId}", tag = "chats",
    params(("chatId" = String, Path)),
    responses((status = 200, body = DeletedResponse), (status = 404, body = ErrorBody)))]
pub async fn delete_chat(
    State(state): State<AppState>,
    ApiPath(chat_id): ApiPath<String>,
) -> ApiResult<Json<DeletedResponse>> {
    if !state.store.delete_chat(&chat_id).await? {
        return Err(not_found());
    }
    // Its interpreter session (variables, folder) goes with it, on this instance at once.
    state.tools.interpreter().sessions().end_chat(&chat_id);
    Ok(Json(DeletedResponse { deleted: true }))
}

#[utoipa::path(post, path = "/chats/{chatId}/messages", tag = "chats", request_body = AddMessageRequest,
    params(("chatId" = String, Path)),
    responses((status = 200, body = MessageResponse), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 413, body = ErrorBody)))]
pub async fn add_message(
    State(state): State<AppState>,
    ApiPath(chat_id): ApiPath<String>,
    ApiJson(body): ApiJson<AddMessageRequest>,
) -> ApiResult<Json<MessageResponse>> {
    let message = new_message(
        body.role,
        body.content,
        body.name,
        body.metadata,
        body.attachments,
        "",
    )?;
    let message = state
        .store
        .append_message(&chat_id, message)
        .await?
        .ok_or_else(not_found)?;
    Ok(Json(MessageResponse {
        message: message.into(),
    }))
}
