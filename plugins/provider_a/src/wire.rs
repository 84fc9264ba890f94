//! The upstream's JSON, as much of it as is used: the Response object (the non-streaming body,
//! and the `response` of the terminal stream events) and the stream events. Unknown fields and
//! unknown item/event types are ignored; everything but the ids and names of function calls is
//! optional, since recordings from 2025-03 to 2026 differ in what they carry.

use serde::Deserialize;
use serde_json::Value;

/// A Response object.
#[derive(Debug, Default, Deserialize)]
pub struct Response {
    #[serde(default)]
    pub id: Option<String>,
    /// `completed`, `incomplete`, `failed`, `cancelled`, `in_progress`, `queued`.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub error: Option<ApiError>,
    #[serde(default)]
    pub incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub output: Vec<OutputItem>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// An error: `response.error`, or the body of a stream `error` event.
#[derive(Debug, Default, Deserialize)]
pub struct ApiError {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// A string in every recording; other Responses-compatible servers send numbers.
    #[serde(default)]
    pub code: Option<Value>,
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct IncompleteDetails {
    /// `max_output_tokens` or `content_filter`.
    #[serde(default)]
    pub reason: Option<String>,
}

/// One item of `output`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub enum OutputItem {
    #[serde(rename = "message")]
    Message {
        #[serde(default)]
        content: Vec<OutputContent>,
    },
    #[serde(rename = "function_call")]
    FunctionCall {
        /// The id results answer (`call_…`).
        #[serde(default)]
        call_id: Option<String>,
        /// The item id (`fc_…`), used only when a server sends no `call_id`.
        #[serde(default)]
        id: Option<String>,
        name: String,
        #[serde(default)]
        arguments: String,
        /// `incomplete` when the output limit cut the call.
        #[serde(default)]
        status: Option<String>,
    },
    /// Reasoning, built-in tool calls…
    #[serde(other)]
    Other,
}

/// One part of an output message.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub enum OutputContent {
    #[serde(rename = "output_text")]
    Text { text: String },
    #[serde(rename = "refusal")]
    Refusal { refusal: String },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub total_tokens: Option<u64>,
}

/// A stream event, by its `type` (which equals the SSE event name).
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    #[serde(rename = "response.output_text.delta")]
    TextDelta { delta: String },
    #[serde(rename = "response.refusal.delta")]
    RefusalDelta { delta: String },
    #[serde(rename = "response.output_item.done")]
    ItemDone { item: OutputItem },
    #[serde(rename = "response.completed")]
    Completed { response: Response },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: Response },
    #[serde(rename = "response.failed")]
    Failed { response: Response },
    /// Documented with `code`/`message` at the top; recorded with them nested in `error`.
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        code: Option<Value>,
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        error: Option<ApiError>,
    },
    /// `response.created`, deltas of arguments and reasoning, content parts…
    #[serde(other)]
    Other,
}
