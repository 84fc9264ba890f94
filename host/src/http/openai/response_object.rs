//! The Responses API's `response` object and its output items, for the answer to
//! `POST /openai/v1/responses` and for the events of its stream (`response_events.rs`).

use serde_json::{Value, json};

use super::answer::answering_model;
use super::client_tools::ToolNames;
use super::files;
use crate::chat::completion::Finished;
use crate::chat::events::Usage;
use crate::plugins::worlds::provider::{FinishReason, ToolCall};
use crate::tools::python::Container;

/// What every `response` object of one request repeats.
pub(super) struct Echo {
    /// `resp_` and the call's id.
    pub id: String,
    pub created_at: i64,
    /// The model asked for, until the end names the one that answered.
    pub model: String,
    pub instructions: Option<String>,
    /// The tools as the client sent them.
    pub tools: Value,
    pub temperature: Option<f64>,
    pub max_output_tokens: Option<u64>,
    /// `tool_choice`, `top_p` and `text` as the client sent them (their defaults when not).
    pub options: Sent,
    /// The client's tool names, for its calls.
    pub names: ToolNames,
    /// The `python` tool's container, whose files the answer names (`files.rs`).
    pub container: Option<Container>,
}

/// Options a `response` repeats as the request set them.
pub(super) struct Sent {
    pub tool_choice: Value,
    pub top_p: Value,
    pub text: Value,
    pub parallel_tool_calls: Value,
    pub reasoning: Value,
}

impl Sent {
    /// The request's, each at OpenAI's default when left out or null.
    pub fn of(body: &super::responses_request::ResponsesRequest) -> Self {
        let or = |v: Option<&Value>, default: Value| {
            v.filter(|v| !v.is_null()).cloned().unwrap_or(default)
        };
        Self {
            tool_choice: or(body.tool_choice.as_ref(), json!("auto")),
            top_p: or(body.top_p.as_ref(), json!(1.0)),
            text: or(body.text.as_ref(), json!({"format": {"type": "text"}})),
            parallel_tool_calls: or(body.parallel_tool_calls.as_ref(), json!(true)),
            reasoning: or(
                body.reasoning.as_ref(),
                json!({"effort": null, "summary": null}),
            ),
        }
    }
}

impl Echo {
    /// The `response` object: `status` and its `output` so far.
    pub fn response(&self, status: &str, output: Vec<Value>) -> Value {
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "model": self.model,
            "output": output,
            "instructions": self.instructions,
            "tools": self.tools,
            "tool_choice": self.options.tool_choice,
            "parallel_tool_calls": self.options.parallel_tool_calls,
            "reasoning": self.options.reasoning,
            "temperature": self.temperature,
            "top_p": self.options.top_p,
            "max_output_tokens": self.max_output_tokens,
            "previous_response_id": null,
            "store": false,
            "text": self.options.text,
            "truncation": "disabled",
            "metadata": {},
            "error": null,
            "incomplete_details": null,
            "usage": null,
        })
    }

    /// The files the code wrote, cited in `text`, and the session to continue (`files.rs`).
    pub fn cited(&self, text: &str) -> (Vec<Value>, Option<String>) {
        files::cited(self.container.as_ref(), text)
    }

    /// The finished `response`: its output, status, the model that answered and the usage.
    pub fn finished(&mut self, finished: &Finished) -> Value {
        self.model = answering_model(finished, std::mem::take(&mut self.model));
        let mut output = Vec::new();
        let (annotations, session) = self.cited(&finished.text);
        if !finished.text.is_empty() || !annotations.is_empty() {
            output.push(self.message(&finished.text, "completed"));
        }
        output.extend(
            finished
                .client_calls
                .iter()
                .enumerate()
                .map(|(i, call)| self.call(i, call, "completed")),
        );
        let incomplete = match finished.finish {
            Some(FinishReason::Length) => Some("max_output_tokens"),
            Some(FinishReason::ContentFilter) => Some("content_filter"),
            _ => None,
        };
        let status = if incomplete.is_some() {
            "incomplete"
        } else {
            "completed"
        };
        let mut response = self.response(status, output);
        if let Some(reason) = incomplete {
            response["incomplete_details"] = json!({"reason": reason});
        }
        response["usage"] = usage(finished.usage.unwrap_or_default());
        if let Some(session) = session {
            response["chatd_session"] = json!(session);
        }
        response
    }

    /// The reply's one message item; completed, its text cites the files the code wrote.
    pub fn message(&self, text: &str, status: &str) -> Value {
        let content = if status == "in_progress" {
            json!([])
        } else {
            let mut part = output_text(text);
            part["annotations"] = Value::Array(self.cited(text).0);
            json!([part])
        };
        json!({
            "type": "message",
            "id": self.message_id(),
            "status": status,
            "role": "assistant",
            "content": content,
        })
    }

    pub fn message_id(&self) -> String {
        format!("msg_{}", self.id.trim_start_matches("resp_"))
    }

    /// The `i`-th call of the client's tools, under its name.
    pub fn call(&self, i: usize, call: &ToolCall, status: &str) -> Value {
        let arguments = if status == "in_progress" {
            ""
        } else {
            call.arguments_json.as_str()
        };
        json!({
            "type": "function_call",
            "id": self.call_item_id(i),
            "call_id": call.id,
            "name": self.names.client(&call.name),
            "arguments": arguments,
            "status": status,
        })
    }

    pub fn call_item_id(&self, i: usize) -> String {
        format!("fc_{}_{i}", self.id.trim_start_matches("resp_"))
    }
}

pub(super) fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// The Responses API's `usage`.
fn usage(usage: Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total_tokens,
    })
}
