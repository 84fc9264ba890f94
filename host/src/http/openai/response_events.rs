//! The Responses API's stream framing: `event: TYPE` and `data: {type, sequence_number, ...}`
//! for each of `response.created` and `response.in_progress` (the head), the message item
//! opened at the first text (`response.output_item.added`, `response.content_part.added`), each
//! `response.output_text.delta`, then at the end the text's `.done` events, each client call as
//! an item with its `response.function_call_arguments.delta` and `.done`, and
//! `response.completed` (`response.incomplete` at a token limit) with the whole response; a
//! failure after the head is `response.failed` with the error.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::errors::OpenAiError;
use super::response_object::{Echo, output_text};
use super::stream::Frames;
use crate::chat::completion::Finished;

pub(super) struct ResponseEvents {
    pub echo: Echo,
    sequence: u64,
    /// The text sent so far, once its message item is open.
    text: Option<String>,
}

impl ResponseEvents {
    pub fn new(echo: Echo) -> Self {
        Self {
            echo,
            sequence: 0,
            text: None,
        }
    }

    /// One event, numbered.
    fn event(&mut self, kind: &str, mut data: Value) -> Vec<u8> {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        format!("event: {kind}\ndata: {data}\n\n").into_bytes()
    }

    /// Closes the message item, when text opened one.
    fn close_text(&mut self, out: &mut Vec<u8>) {
        let Some(text) = self.text.take() else {
            return;
        };
        let item_id = self.echo.message_id();
        let at = json!({"item_id": item_id, "output_index": 0, "content_index": 0});
        let mut done = at.clone();
        done["text"] = json!(text);
        done["logprobs"] = json!([]);
        out.extend(self.event("response.output_text.done", done));
        let mut part = at;
        part["part"] = output_text(&text);
        out.extend(self.event("response.content_part.done", part));
        let item = self.echo.message(&text, "completed");
        out.extend(self.event(
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        ));
    }
}

impl Frames for ResponseEvents {
    fn id(&self) -> &str {
        &self.echo.id
    }

    fn head(&mut self) -> Bytes {
        let response = self.echo.response("in_progress", Vec::new());
        let mut out = self.event("response.created", json!({"response": response}));
        let response = self.echo.response("in_progress", Vec::new());
        out.extend(self.event("response.in_progress", json!({"response": response})));
        out.into()
    }

    fn text(&mut self, text: &str) -> Bytes {
        let mut out = Vec::new();
        let item_id = self.echo.message_id();
        if self.text.is_none() {
            let item = self.echo.message("", "in_progress");
            out.extend(self.event(
                "response.output_item.added",
                json!({"output_index": 0, "item": item}),
            ));
            out.extend(self.event(
                "response.content_part.added",
                json!({"item_id": item_id, "output_index": 0, "content_index": 0,
                    "part": output_text("")}),
            ));
            self.text = Some(String::new());
        }
        if let Some(sent) = self.text.as_mut() {
            sent.push_str(text);
        }
        out.extend(self.event(
            "response.output_text.delta",
            json!({"item_id": item_id, "output_index": 0, "content_index": 0, "delta": text,
                "logprobs": []}),
        ));
        out.into()
    }

    fn finish(&mut self, finished: Finished) -> Bytes {
        let mut out = Vec::new();
        let had_text = self.text.is_some();
        self.close_text(&mut out);
        let first = usize::from(had_text);
        for (i, call) in finished.client_calls.iter().enumerate() {
            let output_index = first + i;
            let item_id = self.echo.call_item_id(i);
            let added = self.echo.call(i, call, "in_progress");
            out.extend(self.event(
                "response.output_item.added",
                json!({"output_index": output_index, "item": added}),
            ));
            out.extend(self.event(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": output_index,
                    "delta": call.arguments_json}),
            ));
            out.extend(self.event(
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": output_index,
                    "arguments": call.arguments_json}),
            ));
            let done = self.echo.call(i, call, "completed");
            out.extend(self.event(
                "response.output_item.done",
                json!({"output_index": output_index, "item": done}),
            ));
        }
        let response = self.echo.finished(&finished);
        let kind = if response["status"] == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        out.extend(self.event(kind, json!({"response": response})));
        out.into()
    }

    fn failed(&mut self, error: OpenAiError) -> Bytes {
        let body = error.body();
        let mut response = self.echo.response("failed", Vec::new());
        response["error"] = json!({
            "code": body["error"]["code"],
            "message": body["error"]["message"],
        });
        self.event("response.failed", json!({"response": response}))
            .into()
    }
}
