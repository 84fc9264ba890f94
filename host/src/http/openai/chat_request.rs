//! A `POST /openai/v1/chat/completions` body, checked and turned into the contract's completion
//! request (`http::completions::CompletionRequest`, `persist: false`), so the run is the one
//! `/v1` runs: the same validation, attachment rules, tool loop, retries and fallback.
//!
//! A field chatd does not honour is refused naming it, never dropped: the client asked for a
//! behaviour it would not get.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::errors::OpenAiError;
use crate::attachments::AttachmentInput;
use crate::http::AppState;
use crate::http::chats::MessageInput;
use crate::http::completions::CompletionRequest;
use crate::vocabulary::Role;

#[derive(Debug, Deserialize)]
pub struct ChatCompletionRequest {
    pub model: String,
    pub messages: Vec<Message>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default, deserialize_with = "crate::vocabulary::whole::option_u64")]
    pub max_tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::vocabulary::whole::option_u64")]
    pub max_completion_tokens: Option<u64>,
    /// chatd's own tools (names of `GET /v1/chat-tools`) run on the server; none when omitted.
    #[serde(default)]
    pub chatd_tools: Option<Vec<String>>,
    /// Every other field: each is checked by [`refuse_unhonoured`].
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System {
        content: Content,
    },
    Developer {
        content: Content,
    },
    User {
        content: Content,
    },
    Assistant {
        #[serde(default)]
        content: Option<Content>,
        #[serde(default)]
        tool_calls: Option<Value>,
    },
    Tool {},
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Deserialize)]
pub struct ImageUrl {
    pub url: String,
}

/// Fields whose default is what chatd does: accepted at that value (or null) only.
fn at_default(name: &str, value: &Value) -> bool {
    if value.is_null() {
        return true;
    }
    match name {
        "n" => value == &Value::from(1),
        "tools" | "functions" => value.as_array().is_some_and(Vec::is_empty),
        // Whether one turn may hold several calls: chatd's tool loop runs them either way.
        "parallel_tool_calls" => value.is_boolean(),
        "logprobs" | "store" => value == &Value::Bool(false),
        // An end user's id, for the client's own records: accepted, sent nowhere.
        "user" | "safety_identifier" => value.is_string(),
        _ => false,
    }
}

/// Refuses every field the front door does not honour yet (a 400 naming it).
fn refuse_unhonoured(other: &Map<String, Value>) -> Result<(), OpenAiError> {
    match other.iter().find(|(name, value)| !at_default(name, value)) {
        None => Ok(()),
        Some((name, _)) => Err(OpenAiError::bad_request(
            name,
            format!("{name}: not supported by this server's /openai/v1 (docs/openai.md)"),
        )
        .code("unsupported_parameter")),
    }
}

/// The provider and the model of `PROVIDER/MODEL`, when this server serves the provider.
pub fn split_model(state: &AppState, id: &str) -> Result<(String, String), OpenAiError> {
    let snapshot = state.plugins.snapshot();
    id.split_once('/')
        .filter(|(provider, model)| !model.is_empty() && snapshot.provider(provider).is_some())
        .map(|(provider, model)| (provider.to_string(), model.to_string()))
        .ok_or_else(|| OpenAiError::model_not_found(id))
}

impl ChatCompletionRequest {
    /// The contract's request for the same completion, without a chat.
    pub fn into_contract(self, state: &AppState) -> Result<CompletionRequest, OpenAiError> {
        refuse_unhonoured(&self.other)?;
        let (provider, model) = split_model(state, &self.model)?;
        if self.max_tokens.is_some() && self.max_completion_tokens.is_some() {
            return Err(OpenAiError::bad_request(
                "max_tokens",
                "max_tokens: send it or max_completion_tokens, not both",
            ));
        }
        let enabled_tools = Some(chatd_tools(state, &provider, self.chatd_tools)?);
        let messages = self
            .messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| message(i, m))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CompletionRequest {
            chat_id: None,
            provider,
            model,
            messages,
            additional_system_prompt: None,
            enabled_tools,
            temperature: self.temperature,
            max_tokens: self.max_tokens.or(self.max_completion_tokens),
            persist: Some(false),
        })
    }
}

/// The server tools a request names: each must be one `GET /v1/chat-tools` lists, and a
/// provider that runs its own tools takes none.
fn chatd_tools(
    state: &AppState,
    provider: &str,
    names: Option<Vec<String>>,
) -> Result<Vec<String>, OpenAiError> {
    let names = names.unwrap_or_default();
    if names.is_empty() {
        return Ok(names);
    }
    let takes_tools = state
        .plugins
        .snapshot()
        .provider(provider)
        .is_some_and(|p| p.profile.tools);
    if !takes_tools {
        return Err(OpenAiError::bad_request(
            "chatd_tools",
            format!("chatd_tools: {provider} runs its own tools and takes none of chatd's"),
        ));
    }
    let known = state.tools.names();
    if let Some(unknown) = names.iter().find(|n| !known.contains(n)) {
        return Err(OpenAiError::bad_request(
            "chatd_tools",
            format!(
                "chatd_tools: {} is not a tool of this server (GET /v1/chat-tools lists them)",
                crate::http::error::quoted(unknown)
            ),
        ));
    }
    Ok(names)
}

/// Message `i` as the contract's; its images as attachments.
fn message(i: usize, message: Message) -> Result<MessageInput, OpenAiError> {
    let field = format!("messages[{i}]");
    let (role, content) = match message {
        Message::System { content } | Message::Developer { content } => (Role::System, content),
        Message::User { content } => (Role::User, content),
        Message::Assistant {
            tool_calls: Some(calls),
            ..
        } if !calls.is_null() => {
            return Err(unsupported(&format!("{field}.tool_calls")));
        }
        Message::Assistant { content, .. } => (
            Role::Assistant,
            content.unwrap_or(Content::Text(String::new())),
        ),
        Message::Tool {} => return Err(unsupported(&format!("{field}.role"))),
    };
    let (text, images) = match content {
        Content::Text(text) => (text, Vec::new()),
        Content::Parts(parts) => split_parts(&field, role, parts)?,
    };
    Ok(MessageInput {
        role,
        content: text,
        name: None,
        attachments: (!images.is_empty()).then_some(images),
    })
}

/// A message's parts: its text parts joined, its images as attachments (a user's only; a data
/// URL only: chatd fetches nothing a client names).
fn split_parts(
    field: &str,
    role: Role,
    parts: Vec<Part>,
) -> Result<(String, Vec<AttachmentInput>), OpenAiError> {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for (j, part) in parts.into_iter().enumerate() {
        match part {
            Part::Text { text } => texts.push(text),
            Part::ImageUrl { .. } if role != Role::User => {
                let param = format!("{field}.content[{j}]");
                return Err(OpenAiError::bad_request(
                    &param,
                    format!("{param}: only a user message may carry an image"),
                ));
            }
            Part::ImageUrl { image_url } if !image_url.url.starts_with("data:") => {
                let param = format!("{field}.content[{j}].image_url.url");
                return Err(OpenAiError::bad_request(
                    &param,
                    format!(
                        "{param}: must be a data: URL (data:image/png;base64,…); chatd fetches \
                         no URL a client names"
                    ),
                ));
            }
            Part::ImageUrl { image_url } => images.push(AttachmentInput::Image {
                id: None,
                filename: None,
                mime_type: None,
                size_bytes: None,
                data_url: image_url.url,
            }),
        }
    }
    Ok((texts.join("\n\n"), images))
}

fn unsupported(param: &str) -> OpenAiError {
    OpenAiError::bad_request(
        param,
        format!("{param}: not supported by this server's /openai/v1 yet (docs/openai.md)"),
    )
    .code("unsupported_parameter")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_chatd_does_not_honour_are_refused_by_name() {
        let refused = |body: Value| {
            let other: Map<String, Value> = serde_json::from_value(body).unwrap();
            refuse_unhonoured(&other)
                .err()
                .map(|e| e.param_name().to_string())
        };
        assert_eq!(refused(json!({"n": 1, "tools": [], "user_x": null})), None);
        assert_eq!(refused(json!({"n": 2})), Some("n".into()));
        assert_eq!(refused(json!({"top_p": 0.5})), Some("top_p".into()));
        assert_eq!(
            refused(json!({"tools": [{"type": "function"}]})),
            Some("tools".into())
        );
    }

    #[test]
    fn parts_join_text_and_keep_data_url_images_of_users_only() {
        let parts: Vec<Part> = serde_json::from_value(json!([
            {"type": "text", "text": "a"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
            {"type": "text", "text": "b"}
        ]))
        .unwrap();
        let (text, images) = split_parts("messages[0]", Role::User, parts).unwrap();
        assert_eq!(text, "a\n\nb");
        assert_eq!(images.len(), 1);
        let remote: Vec<Part> = serde_json::from_value(
            json!([{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]),
        )
        .unwrap();
        let error = split_parts("messages[0]", Role::User, remote).unwrap_err();
        assert_eq!(error.param_name(), "messages[0].content[0].image_url.url");
    }
}
