//! The upstream's JSON, as much of it as is used: the Message object (the non-streaming body,
//! and the `message` of `message_start`) and the stream events. Unknown fields, block types and
//! event types are ignored; usage figures are optional (older and newer API versions differ).

use serde::Deserialize;
use serde_json::Value;

/// A Message object.
#[derive(Debug, Default, Deserialize)]
pub struct Message {
    #[serde(default)]
    pub content: Vec<Block>,
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// A content block.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub enum Block {
    #[serde(rename = "text")]
    Text {
        #[serde(default)]
        text: String,
    },
    #[serde(rename = "tool_use")]
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// Thinking, server tool calls and their results…
    #[serde(other)]
    Other,
}

/// Token counts. `input_tokens` excludes the prompt tokens read from or written to the cache.
#[derive(Debug, Default, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
}

/// An error, in an `error` event or an error body.
#[derive(Debug, Default, Deserialize)]
pub struct ApiError {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
}

/// A stream event, by its `type` (which equals the SSE event name).
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    #[serde(rename = "message_start")]
    MessageStart { message: Message },
    #[serde(rename = "content_block_start")]
    BlockStart { index: u64, content_block: Block },
    #[serde(rename = "content_block_delta")]
    BlockDelta { index: u64, delta: Delta },
    #[serde(rename = "content_block_stop")]
    BlockStop { index: u64 },
    #[serde(rename = "message_delta")]
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<Usage>,
    },
    #[serde(rename = "message_stop")]
    MessageStop,
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        error: ApiError,
    },
    /// `ping`, and event types added later.
    #[serde(other)]
    Other,
}

/// A change to a content block.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    /// `thinking_delta`, `signature_delta`, `citations_delta`…
    #[serde(other)]
    Other,
}

/// The message-level change of `message_delta`.
#[derive(Debug, Default, Deserialize)]
pub struct MessageDelta {
    #[serde(default)]
    pub stop_reason: Option<String>,
}
