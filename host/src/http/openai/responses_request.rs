//! A `POST /openai/v1/responses` body, read as the completion it asks for (its items into the
//! contract's messages, its other fields by the readers chat completions' share, `wire.rs`), so
//! it runs as a chat completion does. Stateless: no response is kept, so
//! `previous_response_id` and `store: true` are refused by name (only chatd's tools' rounds
//! before a client's calls are, for its next request, as on chat completions: `kept.rs`).
//!
//! `input` is a string (one user message) or items: messages (`system`, `developer`, `user`
//! with `input_text` and data-URL `input_image` parts, `assistant` with `output_text`), the
//! client's `function_call`s (consecutive ones, and the assistant text before them, one
//! assistant message, as chat completions' wire wants them) and their `function_call_output`s.
//! The items are read once, straight into the contract's messages (`chat_request.rs`'s
//! [`content`] reads their parts), each refusal naming the Responses field
//! (`input[3].content[0].type`). The other fields go into the fields chat completions' reader
//! takes (`chat_request.rs`), told they are the Responses API's ([`Wire::Responses`]): `tools`,
//! `tool_choice` and the format in `text` as sent (flat), found where they are and named so;
//! `text.verbosity` and `reasoning.effort` taken out of their objects, `max_output_tokens`
//! checked a whole number here and its range there. The checks every front shares name each
//! message by its item (`completions::Origins`). Nothing is rewritten into chat completions'
//! shape, and no refusal is renamed afterwards.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::chat_request::{
    ChatCompletionRequest, MessagePath, Part, ReadMessage, Sent, content, role, untold_call,
};
use super::client_tools::{self, SentCall};
use super::errors::OpenAiError;
use super::wire::Wire;
use crate::http::chats::MessageInput;
use crate::vocabulary::Role;

#[derive(Debug, Deserialize)]
pub struct ResponsesRequest {
    pub model: String,
    pub input: Value,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub tools: Option<Value>,
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub parallel_tool_calls: Option<Value>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub top_p: Option<Value>,
    /// `{"format": ..., "verbosity": ...}`: chat completions' `response_format` and `verbosity`
    /// ([`format_and_verbosity`]).
    #[serde(default)]
    pub text: Option<Value>,
    /// `{"effort": ..., "summary": ...}`: chat completions' `reasoning_effort`; a summary is
    /// accepted and not given ([`reasoning_effort`]).
    #[serde(default)]
    pub reasoning: Option<Value>,
    #[serde(default)]
    pub max_output_tokens: Option<Value>,
    /// chatd's own tools run on the server, as on chat completions.
    #[serde(default)]
    pub chatd_tools: Option<Vec<String>>,
    /// The `python` tool's session to continue, as on chat completions.
    #[serde(default)]
    pub chatd_session: Option<Value>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The request read: the completion it asks for, its fields as sent in chat completions' reader
/// ([`Wire::Responses`]), its messages apart (read already, each knowing its item), and the
/// tools as sent.
pub struct Read {
    pub chat: ChatCompletionRequest,
    pub messages: Vec<ReadMessage>,
    /// The tools as the client sent them, echoed in the response.
    pub tools: Value,
}

/// Whether a field the Responses API has is at the value that asks for nothing chatd does not
/// do (what clients send by default).
fn no_op(name: &str, value: &Value) -> bool {
    if value.is_null() {
        return true;
    }
    let empty = |v: &Value| {
        v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(Map::is_empty)
    };
    match name {
        // Nothing is kept either way.
        "store" | "background" => value == &Value::Bool(false),
        "truncation" => value == "disabled",
        "include" | "metadata" => empty(value),
        "service_tier" => value == "auto" || value == "default",
        "user" | "safety_identifier" | "prompt_cache_key" => value.is_string(),
        _ => false,
    }
}

impl ResponsesRequest {
    pub fn read(self) -> Result<Read, OpenAiError> {
        if self
            .other
            .get("previous_response_id")
            .is_some_and(|v| !v.is_null())
        {
            return Err(OpenAiError::bad_request(
                "previous_response_id",
                "previous_response_id: this server keeps no responses (store is false): send the \
                 whole conversation in input",
            )
            .code("unsupported_parameter"));
        }
        if let Some((name, _)) = self.other.iter().find(|(n, v)| !no_op(n, v)) {
            return Err(OpenAiError::unsupported(name));
        }
        let mut messages = Vec::new();
        if let Some(instructions) = self.instructions.filter(|i| !i.is_empty()) {
            messages.push(plain("instructions", Role::System, instructions));
        }
        match self.input {
            Value::String(text) => messages.push(plain("input", Role::User, text)),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    add_item(&format!("input[{i}]"), item, &mut messages)?;
                }
            }
            _ => {
                return Err(OpenAiError::invalid(
                    "input",
                    "must be a string or an array of items",
                ));
            }
        }
        let echoed = self.tools.clone().unwrap_or(Value::Array(Vec::new()));
        let max_completion_tokens = match self.max_output_tokens {
            None | Some(Value::Null) => None,
            Some(n) => Some(n.as_u64().ok_or_else(|| {
                OpenAiError::invalid("max_output_tokens", "must be a whole number")
            })?),
        };
        let (response_format, verbosity) = format_and_verbosity(self.text)?;
        let chat = ChatCompletionRequest {
            model: self.model,
            messages: Vec::new(),
            stream: self.stream,
            stream_options: None,
            temperature: self.temperature,
            max_tokens: None,
            max_completion_tokens,
            chatd_tools: self.chatd_tools,
            chatd_session: self.chatd_session,
            tools: self.tools,
            tool_choice: self.tool_choice,
            parallel_tool_calls: self.parallel_tool_calls,
            reasoning_effort: reasoning_effort(self.reasoning)?,
            seed: None,
            verbosity,
            presence_penalty: None,
            frequency_penalty: None,
            logit_bias: None,
            top_p: self.top_p,
            stop: None,
            response_format,
            other: Map::new(),
            wire: Wire::Responses,
        };
        Ok(Read {
            chat,
            messages,
            tools: echoed,
        })
    }
}

/// `text: {"format": ..., "verbosity": ...}`, each as sent (a `json_schema` format flat: its
/// `name`, `schema`, `strict`, `description` beside `type`, read where they are by
/// `options.rs`).
fn format_and_verbosity(
    text: Option<Value>,
) -> Result<(Option<Value>, Option<Value>), OpenAiError> {
    let mut fields = match text {
        None | Some(Value::Null) => return Ok((None, None)),
        Some(Value::Object(fields)) => fields,
        Some(_) => return Err(OpenAiError::invalid("text", "must be an object")),
    };
    let format = fields.remove("format");
    let verbosity = fields.remove("verbosity");
    if let Some((name, _)) = fields.iter().find(|(_, v)| !v.is_null()) {
        return Err(OpenAiError::unsupported(&format!("text.{name}")));
    }
    Ok((format, verbosity))
}

/// `reasoning: {"effort", "summary"}` as chat completions' `reasoning_effort`. A summary of the
/// reasoning (`summary`, or the older `generate_summary`) is accepted and not given: no
/// provider here returns one (docs/openai.md).
fn reasoning_effort(reasoning: Option<Value>) -> Result<Option<Value>, OpenAiError> {
    let mut fields = match reasoning {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(fields)) => fields,
        Some(_) => return Err(OpenAiError::invalid("reasoning", "must be an object")),
    };
    let effort = fields.remove("effort");
    for summary in ["summary", "generate_summary"] {
        match fields.remove(summary) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if matches!(s.as_str(), "auto" | "concise" | "detailed") => {}
            Some(_) => {
                return Err(OpenAiError::invalid(
                    &format!("reasoning.{summary}"),
                    "must be one of auto, concise, detailed",
                ));
            }
        }
    }
    if let Some((name, _)) = fields.iter().find(|(_, v)| !v.is_null()) {
        return Err(OpenAiError::unsupported(&format!("reasoning.{name}")));
    }
    Ok(effort)
}

/// A message of text alone, from `at` (`instructions`, or `input` as a string).
fn plain(at: &str, role: Role, text: String) -> ReadMessage {
    ReadMessage {
        input: MessageInput {
            role,
            content: text,
            name: None,
            attachments: None,
        },
        sent: None,
        path: path(at),
    }
}

/// Where an item was; a call's id is its `call_id`, and a call is an item (this one, when it
/// is a `function_call`).
fn path(at: &str) -> MessagePath {
    MessagePath {
        at: at.to_string(),
        call_id: "call_id",
        calls: at.to_string(),
    }
}

/// One `input` item added to the messages: a message, a call (joined to the assistant message
/// before it, when there is one), or a call's output.
fn add_item(at: &str, item: &Value, messages: &mut Vec<ReadMessage>) -> Result<(), OpenAiError> {
    let Some(fields) = item.as_object() else {
        return Err(OpenAiError::invalid(at, "must be an object"));
    };
    let kind = match fields.get("type") {
        None | Some(Value::Null) => "message",
        Some(Value::String(kind)) => kind.as_str(),
        Some(_) => {
            return Err(OpenAiError::invalid(
                &format!("{at}.type"),
                "must be a string",
            ));
        }
    };
    match kind {
        "message" => messages.push(input_message(at, fields)?),
        "function_call" => add_call(at, fields, messages)?,
        "function_call_output" => {
            let call_id = fields
                .get("call_id")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    OpenAiError::invalid(&format!("{at}.call_id"), "must be a string")
                })?;
            let Some(output) = fields.get("output").and_then(Value::as_str) else {
                return Err(OpenAiError::invalid(
                    &format!("{at}.output"),
                    "must be a string (the call's result)",
                ));
            };
            check_fields(at, fields, &["type", "call_id", "output", "id", "status"])?;
            let mut message = plain(at, Role::Tool, output.to_string());
            message.sent = Some(Sent::Result {
                call_id: call_id.to_string(),
            });
            messages.push(message);
        }
        _ => return Err(OpenAiError::unsupported(&format!("{at}.type"))),
    }
    Ok(())
}

/// A `function_call` item, checked here so a refusal names it (`input[i].name`), joined to the
/// assistant message before it when there is one: chat completions' wire has a turn's calls on
/// one message.
fn add_call(
    at: &str,
    fields: &Map<String, Value>,
    messages: &mut Vec<ReadMessage>,
) -> Result<(), OpenAiError> {
    let text = |name: &str| {
        fields
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| OpenAiError::invalid(&format!("{at}.{name}"), "must be a string"))
    };
    let call_id = text("call_id")?;
    if call_id.is_empty() {
        return Err(OpenAiError::invalid(
            &format!("{at}.call_id"),
            "must not be empty",
        ));
    }
    let name = client_tools::checked_name(&format!("{at}.name"), fields.get("name"))?;
    let call = SentCall {
        id: call_id.to_string(),
        name,
        arguments: text("arguments")?.to_string(),
    };
    check_fields(
        at,
        fields,
        &["type", "call_id", "name", "arguments", "id", "status"],
    )?;
    match messages.last_mut() {
        Some(last) if last.input.role == Role::Assistant => match &mut last.sent {
            Some(Sent::Calls(calls)) => calls.push(call),
            _ => {
                last.sent = Some(Sent::Calls(vec![call]));
                last.path.calls = at.to_string();
            }
        },
        _ => {
            let mut message = plain(at, Role::Assistant, String::new());
            message.sent = Some(Sent::Calls(vec![call]));
            messages.push(message);
        }
    }
    Ok(())
}

/// Refuses a field of an item other than `known`, unless it is null.
fn check_fields(at: &str, fields: &Map<String, Value>, known: &[&str]) -> Result<(), OpenAiError> {
    match fields
        .iter()
        .find(|(name, value)| !known.contains(&name.as_str()) && !value.is_null())
    {
        Some((name, _)) => Err(OpenAiError::unsupported(&format!("{at}.{name}"))),
        None => Ok(()),
    }
}

/// A message item: its role, and its content with the Responses API's part types
/// (`input_text` and `output_text` text, `input_image` an image).
fn input_message(at: &str, fields: &Map<String, Value>) -> Result<ReadMessage, OpenAiError> {
    check_fields(at, fields, &["type", "role", "content", "id", "status"])?;
    let role = role(at, fields.get("role"))?;
    let path = path(at);
    if role == Role::Tool {
        return Err(untold_call(&path));
    }
    let input = content(at, role, fields.get("content"), part)?;
    Ok(ReadMessage {
        input,
        sent: None,
        path,
    })
}

/// A Responses part: `input_text` or `output_text` (`text`), or `input_image` (`image_url`, a
/// data URL, and `detail`; no `file_id`: chatd keeps no files of the Files API).
fn part<'a>(at: &str, part: &'a Value) -> Result<Part<'a>, OpenAiError> {
    match part.get("type").and_then(Value::as_str) {
        Some("input_text" | "output_text") => {
            Ok(Part::Text(part.get("text").and_then(Value::as_str)))
        }
        Some("input_image") => {
            if part.get("file_id").is_some_and(|v| !v.is_null()) {
                return Err(OpenAiError::unsupported(&format!("{at}.file_id")));
            }
            Ok(Part::Image {
                url: part.get("image_url"),
                url_at: format!("{at}.image_url"),
                detail: part.get("detail"),
                detail_at: format!("{at}.detail"),
            })
        }
        _ => Err(OpenAiError::unsupported(&format!("{at}.type"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(body: Value) -> Result<Read, OpenAiError> {
        serde_json::from_value::<ResponsesRequest>(body)
            .unwrap()
            .read()
    }

    #[test]
    fn items_become_the_contracts_messages_with_calls_joined() {
        let read = read(
            json!({"model": "p/m", "instructions": "Be brief.", "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "w", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "Sunny"},
                {"type": "function_call_output", "call_id": "c2", "output": "Rain"}
            ]}),
        )
        .unwrap();
        let messages = &read.messages;
        assert_eq!(messages.len(), 5, "{messages:?}");
        assert_eq!(messages[0].input.role, Role::System);
        assert_eq!(messages[0].input.content, "Be brief.");
        assert_eq!(messages[1].input.content, "Weather?");
        assert!(matches!(&messages[2].sent, Some(Sent::Calls(calls)) if calls.len() == 2));
        assert!(matches!(&messages[4].sent, Some(Sent::Result { call_id }) if call_id == "c2"));
        assert_eq!(messages[4].input.content, "Rain");
        assert!(read.chat.messages.is_empty(), "nothing is read twice");
        assert_eq!(messages[2].path.calls, "input[1]");
        let joined = self::read(json!({"model": "p/m", "input": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "Looking."},
            {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"}
        ]}))
        .unwrap();
        let assistant = &joined.messages[1].path;
        assert_eq!(
            (assistant.at.as_str(), assistant.calls.as_str()),
            ("input[1]", "input[2]"),
            "its calls are named by the item they came from"
        );
        let origins: Vec<&str> = messages.iter().map(|m| m.path.at.as_str()).collect();
        assert_eq!(
            origins,
            [
                "instructions",
                "input[0]",
                "input[1]",
                "input[3]",
                "input[4]"
            ]
        );
    }

    #[test]
    fn a_message_items_refusals_name_its_own_fields() {
        let param = |input: Value| {
            read(json!({"model": "p/m", "input": input}))
                .err()
                .map(|e| e.param_name().to_string())
        };
        let image = |part: Value| param(json!([{"role": "user", "content": [part]}]));
        assert_eq!(
            image(json!({"type": "input_image", "image_url": "https://example.com/a.png"})),
            Some("input[0].content[0].image_url".into())
        );
        assert_eq!(
            image(
                json!({"type": "input_image", "image_url": "data:image/png;base64,AA==", "detail": "low"})
            ),
            Some("input[0].content[0].detail".into())
        );
        assert_eq!(
            image(json!({"type": "input_text", "text": 7})),
            Some("input[0].content[0].text".into())
        );
        assert_eq!(
            param(json!([{"role": "assistant", "content": [
                {"type": "input_image", "image_url": "data:image/png;base64,AA=="}]}])),
            Some("input[0].content[0]".into())
        );
        assert_eq!(
            param(json!([{"role": "tool", "content": "42"}])),
            Some("input[0].call_id".into())
        );
        assert_eq!(
            param(json!([{"role": "robot", "content": "hi"}])),
            Some("input[0].role".into())
        );
        assert_eq!(
            param(json!([{"role": "user", "content": 7}])),
            Some("input[0].content".into())
        );
        let read = read(json!({"model": "p/m", "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "a"},
            {"type": "input_image", "image_url": "data:image/png;base64,AA==", "detail": "auto"},
            {"type": "output_text", "text": "b"}
        ]}]}))
        .unwrap();
        assert_eq!(read.messages[0].input.content, "a\n\nb");
        assert_eq!(
            read.messages[0].input.attachments.as_ref().map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn refusals_name_the_responses_field() {
        let param = |body: Value| read(body).err().map(|e| e.param_name().to_string());
        assert_eq!(
            param(json!({"model": "p/m", "input": "hi", "previous_response_id": "resp_1"})),
            Some("previous_response_id".into())
        );
        assert_eq!(
            param(json!({"model": "p/m", "input": "hi", "store": true})),
            Some("store".into())
        );
        assert_eq!(
            param(json!({"model": "p/m", "input": [{"type": "reasoning", "summary": []}]})),
            Some("input[0].type".into())
        );
        assert_eq!(
            param(
                json!({"model": "p/m", "input": [{"role": "user", "content": [{"type": "input_file"}]}]})
            ),
            Some("input[0].content[0].type".into())
        );
        assert_eq!(
            param(
                json!({"model": "p/m", "input": "hi", "store": false, "text": {"format": {"type": "text"}}})
            ),
            None
        );
    }

    #[test]
    fn the_other_fields_are_moved_as_sent_for_the_shared_readers() {
        let tools = json!([{"type": "function", "name": "w", "parameters": {"type": "object"}}]);
        let format = json!({"type": "json_schema", "name": "f", "schema": {}});
        let read = read(json!({"model": "p/m", "input": "hi", "tools": tools,
            "tool_choice": {"type": "function", "name": "w"},
            "text": {"format": format, "verbosity": "low"},
            "reasoning": {"effort": "high", "summary": "auto"}, "max_output_tokens": 5}))
        .unwrap();
        let chat = &read.chat;
        assert_eq!(chat.wire, Wire::Responses);
        assert_eq!(chat.tools.as_ref(), Some(&tools), "not nested");
        assert_eq!(read.tools, tools, "echoed");
        assert_eq!(
            chat.tool_choice,
            Some(json!({"type": "function", "name": "w"}))
        );
        assert_eq!(chat.response_format.as_ref(), Some(&format));
        assert_eq!(chat.verbosity, Some(json!("low")));
        assert_eq!(chat.reasoning_effort, Some(json!("high")));
        assert_eq!(chat.max_completion_tokens, Some(5));
    }
}
