//! The chat stream's events, shaped as the contract's "Chat stream events" table. The run
//! produces them; the run log (`runlog.rs`) frames each once for SSE, and the HTTP layer sends
//! those bytes.

use serde::Serialize;
use serde_json::Value;

use crate::store::CallUsage;

/// Token accounting as clients see it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

impl From<CallUsage> for Usage {
    fn from(u: CallUsage) -> Self {
        Self {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            total_tokens: u.total_tokens,
        }
    }
}

impl From<Usage> for CallUsage {
    fn from(u: Usage) -> Self {
        Self {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            total_tokens: u.total_tokens,
        }
    }
}

/// `status` of a `tool_call` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    Initiated,
    Completed,
    Failed,
}

/// A `tool_call` event (no `type` field, per the contract). Clients upsert by `toolCallId`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEvent {
    pub tool_call_id: String,
    pub name: String,
    pub status: ToolStatus,
    pub summary: String,
    pub args: Value,
    pub started_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_preview: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One event of a chat stream.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatEvent {
    Meta {
        chat_id: Option<String>,
        call_id: Option<String>,
        provider: String,
        model: String,
    },
    ToolCall(ToolCallEvent),
    Delta(String),
    Done {
        text: String,
        usage: Option<Usage>,
    },
    Error(String),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MetaData<'a> {
    r#type: &'static str,
    chat_id: &'a Option<String>,
    call_id: &'a Option<String>,
    provider: &'a str,
    model: &'a str,
}

#[derive(Serialize)]
struct TextData<'a> {
    r#type: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct DoneData<'a> {
    r#type: &'static str,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: &'a Option<Usage>,
}

#[derive(Serialize)]
struct ErrorData<'a> {
    r#type: &'static str,
    message: &'a str,
}

impl ChatEvent {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            ChatEvent::Meta { .. } => "meta",
            ChatEvent::ToolCall(_) => "tool_call",
            ChatEvent::Delta(_) => "delta",
            ChatEvent::Done { .. } => "done",
            ChatEvent::Error(_) => "error",
        }
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self, ChatEvent::Done { .. } | ChatEvent::Error(_))
    }

    /// The event's `data:` JSON.
    pub fn data(&self) -> String {
        let json = match self {
            ChatEvent::Meta {
                chat_id,
                call_id,
                provider,
                model,
            } => serde_json::to_string(&MetaData {
                r#type: "meta",
                chat_id,
                call_id,
                provider,
                model,
            }),
            ChatEvent::ToolCall(call) => serde_json::to_string(call),
            ChatEvent::Delta(text) => serde_json::to_string(&TextData {
                r#type: "delta",
                text,
            }),
            ChatEvent::Done { text, usage } => serde_json::to_string(&DoneData {
                r#type: "done",
                text,
                usage,
            }),
            ChatEvent::Error(message) => serde_json::to_string(&ErrorData {
                r#type: "error",
                message,
            }),
        };
        // Plain structs of strings, numbers and JSON values: serializing cannot fail.
        json.expect("chat events serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn data(event: ChatEvent) -> Value {
        serde_json::from_str(&event.data()).unwrap()
    }

    #[test]
    fn events_have_the_contract_shapes() {
        assert_eq!(
            data(ChatEvent::Meta {
                chat_id: None,
                call_id: None,
                provider: "groq".into(),
                model: "m".into()
            }),
            json!({"type": "meta", "chatId": null, "callId": null, "provider": "groq", "model": "m"})
        );
        assert_eq!(
            data(ChatEvent::Delta("a\nb".into())),
            json!({"type": "delta", "text": "a\nb"})
        );
        assert_eq!(
            data(ChatEvent::Done {
                text: "hi".into(),
                usage: None
            }),
            json!({"type": "done", "text": "hi"})
        );
        assert_eq!(
            data(ChatEvent::Error("boom".into())),
            json!({"type": "error", "message": "boom"})
        );
        let initiated = ToolCallEvent {
            tool_call_id: "c1".into(),
            name: "web_search".into(),
            status: ToolStatus::Initiated,
            summary: "web_search: rust".into(),
            args: json!({"query": "rust"}),
            started_at: "2026-01-01T00:00:00.000Z".into(),
            completed_at: None,
            duration_ms: None,
            result_preview: None,
            error: None,
        };
        assert_eq!(
            data(ChatEvent::ToolCall(initiated)),
            json!({"toolCallId": "c1", "name": "web_search", "status": "initiated",
                   "summary": "web_search: rust", "args": {"query": "rust"},
                   "startedAt": "2026-01-01T00:00:00.000Z"})
        );
        assert!(!ChatEvent::Delta(String::new()).data().contains('\n'));
    }
}
