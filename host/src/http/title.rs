//! `POST /v1/chats/title/suggest`: a title for an untitled chat, written only if the chat is
//! still untitled when the model answers.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use super::chats::{CHAT_NOT_FOUND, ChatResponse};
use super::completions::provider_plugin;
use super::error::{ApiError, ApiJson, ApiResult, BudgetErrorBody, ErrorBody};
use crate::chat::title;
use crate::plugins::builtin::TITLE_PROVIDER;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuggestTitleRequest {
    pub chat_id: String,
    /// The text to title (usually the first user message); must not be blank.
    pub content: String,
}

#[utoipa::path(post, path = "/chats/title/suggest", tag = "chats", request_body = SuggestTitleRequest,
    responses((status = 200, body = ChatResponse, description = "the chat, titled (or as it was, if it already had a title)"),
              (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "a USD budget, and the title model has no price"),
              (status = 429, body = BudgetErrorBody, description = "a budget is spent"),
              (status = 502, body = ErrorBody, description = "the title model failed"),
              (status = 503, body = ErrorBody, description = "the title provider's plugin is not loaded")))]
pub async fn suggest_title(
    State(state): State<AppState>,
    caller: crate::people::Caller,
    ApiJson(body): ApiJson<SuggestTitleRequest>,
) -> ApiResult<Json<ChatResponse>> {
    if body.content.trim().is_empty() {
        return Err(ApiError::bad_request("content: must be a non-blank string"));
    }
    let chat = state
        .store
        .get_chat(&body.chat_id)
        .await?
        .filter(|chat| chat.owner_id == caller.owner())
        .ok_or_else(|| ApiError::not_found(CHAT_NOT_FOUND))?;
    if chat.title.as_deref().is_some_and(|t| !t.trim().is_empty()) {
        return Ok(Json(ChatResponse { chat: chat.into() }));
    }
    // The contract's title provider, looked up as any provider is.
    let snapshot = state.plugins.snapshot();
    let provider = snapshot.provider(TITLE_PROVIDER).ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{TITLE_PROVIDER}: not served by this server"),
        )
    })?;
    let plugin = provider_plugin(provider)?;
    let content: String = body.content.chars().take(title::MAX_INPUT_CHARS).collect();
    let spender = state
        .admit(
            &caller,
            &crate::usage::Ask {
                source: crate::usage::Source::Title,
                provider: TITLE_PROVIDER,
                model: &state.chat.title_model,
                input_tokens: content.len() as u64 / 4 + 64,
                max_output_tokens: title::MAX_OUTPUT_TOKENS,
            },
        )
        .await?;
    let suggested = title::suggest(
        TITLE_PROVIDER,
        plugin,
        &state.chat.title_model,
        &content,
        spender,
    )
    .await
    .map_err(|e| ApiError::new(StatusCode::BAD_GATEWAY, e.to_string()))?;
    let chat = match suggested {
        // A title set meanwhile wins: the write is conditional.
        Some(title) => state.store.set_title_if_unset(&chat.id, &title).await?,
        None => state.store.get_chat(&chat.id).await?,
    }
    .ok_or_else(|| ApiError::not_found(CHAT_NOT_FOUND))?;
    Ok(Json(ChatResponse { chat: chat.into() }))
}
