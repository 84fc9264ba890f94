//! Chat completions' stream framing: each event is `data: {chat.completion.chunk}`: the role
//! first, then the text as it comes, a client's tool calls (each whole in one delta with its
//! `index`), `finish_reason` on the last choice chunk, the usage chunk (empty `choices`) when
//! `stream_options.include_usage` asks, then `data: [DONE]`. chatd's own tools run between turns
//! and are not shown: OpenAI's stream has no event for a server's tool.
//!
//! The role goes out with the turn's first content, as OpenAI's does: `"content": ""` before a
//! text, `"content": null` beside the first tool call of a turn that opens with calls (a client
//! such as the Vercel AI SDK opens a text part for `""`). Until then the stream opens with a
//! comment naming the completion.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::answer::{answering_model, finish_reason, usage_json};
use super::client_tools::ToolNames;
use super::errors::OpenAiError;
use super::files;
use super::stream::Frames;
use crate::chat::completion::Finished;
use crate::tools::python::Container;

/// What every chunk of one completion shares.
pub(super) struct Chunks {
    pub id: String,
    pub created: i64,
    /// The model asked for, until the end names the one that answered.
    pub model: String,
    pub include_usage: bool,
    /// The client's tool names, for its calls.
    pub names: ToolNames,
    /// The role has gone out (with the first text or the first call).
    pub opened: bool,
    /// The `python` tool's container, whose files the end names (`files.rs`).
    pub container: Option<Container>,
    /// The reply's text so far, for the files' citations.
    pub text: String,
}

impl Chunks {
    /// The role's chunk, with the empty text `content` OpenAI's opens a text with, unless the
    /// role has gone out already (then nothing).
    fn role(&mut self, content: &str) -> Bytes {
        if std::mem::replace(&mut self.opened, true) {
            return Bytes::new();
        }
        self.choice(
            json!({"role": "assistant", "content": content, "refusal": null}),
            None,
        )
    }

    /// A choice chunk: `delta`, and `finish_reason` on the last.
    fn choice(&self, delta: Value, finish_reason: Option<&str>) -> Bytes {
        data(&self.choice_json(delta, finish_reason))
    }

    fn choice_json(&self, delta: Value, finish_reason: Option<&str>) -> Value {
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
        chunk
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
        // Whether the turn opens with text or with calls is not known yet: a comment naming
        // the completion (as the log does) holds the place.
        Bytes::from(format!(": {}\n\n", self.id))
    }

    fn text(&mut self, text: &str) -> Bytes {
        if self.container.is_some() {
            self.text.push_str(text);
        }
        let mut out = self.role("").to_vec();
        out.extend_from_slice(&self.choice(json!({"content": text}), None));
        out.into()
    }

    fn finish(&mut self, finished: Finished) -> Bytes {
        self.model = answering_model(&finished, std::mem::take(&mut self.model));
        let calls = self.names.calls_json(&finished.client_calls);
        let mut out = Vec::new();
        if calls.is_empty() {
            out.extend_from_slice(&self.role(""));
        }
        // Each call whole in one delta, with its index (the SDKs join deltas by it); the first
        // of a turn with no text carries the role.
        for (index, mut call) in calls.into_iter().enumerate() {
            call["index"] = json!(index);
            let mut delta = json!({"tool_calls": [call]});
            if !self.opened {
                self.opened = true;
                delta = json!({"role": "assistant", "content": null, "tool_calls": delta["tool_calls"],
                               "refusal": null});
            }
            out.extend_from_slice(&self.choice(delta, None));
        }
        // The files the code wrote, cited in a delta of their own, and the session to continue
        // on the last choice chunk (`files.rs`).
        let (annotations, session) = files::cited(self.container.as_ref(), &self.text);
        if !annotations.is_empty() {
            out.extend_from_slice(&self.role(""));
            let delta = json!({"annotations": files::nested(annotations)});
            out.extend_from_slice(&self.choice(delta, None));
        }
        let reason = finish_reason(&finished);
        let mut last = self.choice_json(json!({}), Some(reason));
        if let Some(session) = session {
            last["chatd_session"] = json!(session);
        }
        out.extend_from_slice(&data(&last));
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
