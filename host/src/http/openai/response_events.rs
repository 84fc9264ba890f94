//! The Responses API's stream framing: `event: TYPE` and `data: {type, sequence_number, ...}`
//! for each of `response.created` and `response.in_progress` (the head), the message item
//! opened at the first text (`response.output_item.added`, `response.content_part.added`), each
//! `response.output_text.delta`, then at the end the text's `.done` events, each client call as
//! an item with its `response.function_call_arguments.delta` and `.done`, and
//! `response.completed` (`response.incomplete` at a token limit) with the whole response; a
//! failure after the head is `response.failed` with the error. The files the `python` tool
//! wrote are cited (`response.output_text.annotation.added`) before the text's `.done`.

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

    /// Opens the message item, once.
    fn open_text(&mut self, out: &mut Vec<u8>) {
        if self.text.is_some() {
            return;
        }
        let item_id = self.echo.message_id();
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

    /// Closes the message item, when text (or a file to cite) opened one: its citations of
    /// the files the code wrote first, then the text's `.done` events.
    fn close_text(&mut self, out: &mut Vec<u8>) {
        let Some(text) = self.text.take() else {
            return;
        };
        let item_id = self.echo.message_id();
        let at = json!({"item_id": item_id, "output_index": 0, "content_index": 0});
        let (annotations, _) = self.echo.cited(&text);
        for (i, annotation) in annotations.iter().enumerate() {
            let mut added = at.clone();
            added["annotation_index"] = json!(i);
            added["annotation"] = annotation.clone();
            out.extend(self.event("response.output_text.annotation.added", added));
        }
        let mut done = at.clone();
        done["text"] = json!(text);
        done["logprobs"] = json!([]);
        out.extend(self.event("response.output_text.done", done));
        let mut part = at;
        part["part"] = output_text(&text);
        part["part"]["annotations"] = Value::Array(annotations);
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
        self.open_text(&mut out);
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
        // Files to cite and no text: a message item carries their citations, as unstreamed.
        if self.text.is_none() && !self.echo.cited("").0.is_empty() {
            self.open_text(&mut out);
        }
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
