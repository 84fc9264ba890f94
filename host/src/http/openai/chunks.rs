//! Chat completions' stream framing: each event is `data: {chat.completion.chunk}`: the role
//! first, then the text as it comes, a client's tool calls (each whole in one delta with its
//! `index`), `finish_reason` on the last choice chunk, the usage chunk (empty `choices`) when
//! `stream_options.include_usage` asks, then `data: [DONE]`. chatd's own tools run between turns
//! and are not shown: OpenAI's stream has no event for a server's tool.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::answer::{answering_model, finish_reason, usage_json};
use super::client_tools::ToolNames;
use super::errors::OpenAiError;
use super::stream::Frames;
use crate::chat::completion::Finished;

/// What every chunk of one completion shares.
pub(super) struct Chunks {
    pub id: String,
    pub created: i64,
    /// The model asked for, until the end names the one that answered.
    pub model: String,
    pub include_usage: bool,
    /// The client's tool names, for its calls.
    pub names: ToolNames,
}

impl Chunks {
    /// A choice chunk: `delta`, and `finish_reason` on the last.
    fn choice(&self, delta: Value, finish_reason: Option<&str>) -> Bytes {
        let mut chunk = self.chunk(json!([{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason,
        }]));
        if self.include_usage {
            // As OpenAI's: every chunk has the field, null until the usage chunk.
            chunk["usage"] = Value::Null;
        }
        data(&chunk)
    }

    fn chunk(&self, choices: Value) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": choices,
        })
    }
}

impl Frames for Chunks {
    fn id(&self) -> &str {
        &self.id
    }

    fn head(&mut self) -> Bytes {
        self.choice(
            json!({"role": "assistant", "content": "", "refusal": null}),
            None,
        )
    }

    fn text(&mut self, text: &str) -> Bytes {
        self.choice(json!({"content": text}), None)
    }

    fn finish(&mut self, finished: Finished) -> Bytes {
        self.model = answering_model(&finished, std::mem::take(&mut self.model));
        let calls = self.names.calls_json(&finished.client_calls);
        let mut out = Vec::new();
        // Each call whole in one delta, with its index (the SDKs join deltas by it).
        for (index, mut call) in calls.into_iter().enumerate() {
            call["index"] = json!(index);
            let delta = json!({"tool_calls": [call]});
            out.extend_from_slice(&self.choice(delta, None));
        }
        let reason = finish_reason(&finished);
        out.extend_from_slice(&self.choice(json!({}), Some(reason)));
        if self.include_usage {
            let mut chunk = self.chunk(json!([]));
            chunk["usage"] = usage_json(finished.usage.unwrap_or_default());
            out.extend_from_slice(&data(&chunk));
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
        out.into()
    }

    /// OpenAI's error object as the last event, without `[DONE]`: the SDKs raise it.
    fn failed(&mut self, error: OpenAiError) -> Bytes {
        data(&error.body())
    }
}

/// One `data:` event.
pub(super) fn data(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}
