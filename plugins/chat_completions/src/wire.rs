//! The upstream's JSON, as much of it as is used. Every field is optional and unknown fields are
//! ignored: OpenAI adds fields often (`obfuscation`, `service_tier`, `refusal`, `annotations`…),
//! and the compatible servers (xAI, vLLM, Ollama, agent servers) each omit different ones.

use serde::Deserialize;
use serde_json::Value;

/// One `chat.completion.chunk` of a stream.
#[derive(Debug, Default, Deserialize)]
pub struct Chunk {
    #[serde(default)]
    pub choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// An error reported inside the stream (`{"error":{"message":…}}`).
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ChunkChoice {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default)]
    pub delta: Option<Delta>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Delta {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    /// The legacy single function call (`functions` API): index 0, no id.
    #[serde(default)]
    pub function_call: Option<FunctionDelta>,
}

/// A piece of one tool call: `index` always, `id` and `function.name` in the first piece,
/// `function.arguments` in pieces.
#[derive(Debug, Default, Deserialize)]
pub struct ToolCallDelta {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    /// A string everywhere in the spec; a few servers send the arguments object itself.
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// Token counts (`completion_tokens_details` and the like are ignored).
#[derive(Debug, Default, Deserialize)]
pub struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub total_tokens: Option<u64>,
}

/// A whole `chat.completion` (non-streaming).
#[derive(Debug, Default, Deserialize)]
pub struct Completion {
    #[serde(default)]
    pub choices: Option<Vec<Choice>>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Choice {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default)]
    pub message: Option<WireMessage>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WireMessage {
    /// A string, or (some compatible servers) an array of `{"type":"text","text":…}` parts.
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default)]
    pub tool_calls: Option<Vec<WireToolCall>>,
    /// The legacy single function call.
    #[serde(default)]
    pub function_call: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WireToolCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

/// Arguments as text: a string as is, anything else (an object) serialised.
pub fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
