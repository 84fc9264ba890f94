//! An example provider plugin outside chatd's bundled set: Ollama's native chat API
//! (`POST {base}/api/chat`, answered as newline-delimited JSON; `GET {base}/api/tags`). The
//! whole provider is this file: its profile, its request, its private wire types and its stream
//! parser. The SDK does the rest: sending, reading as the body arrives, error statuses, the
//! export. The SDK's crate docs walk through it ("A new provider, end to end").
//!
//! What it leaves out, to stay an example: images (it declares `images: false`, so chatd refuses
//! them for it with a 400 before any call) and Ollama's `think` and `format` options.

use chatd_plugin_sdk::codec::{Codec, Decoder, post_turn};
use chatd_plugin_sdk::host::{ContentPart, Message, PluginError, Request, Role, ToolCall};
use chatd_plugin_sdk::host::{UpstreamError, Usage};
use chatd_plugin_sdk::json::object;
use chatd_plugin_sdk::provider::{self, FinishReason, Profile, TurnEvent, TurnRequest, TurnStream};
use chatd_plugin_sdk::sse::Event;
use serde::Deserialize;
use serde_json::{Map, Value};

struct Ollama;

impl Codec for Ollama {
    fn profile() -> Profile {
        Profile {
            // Operators can also run it under other ids: `[providers.gpu2] adapter = "ollama"`.
            adapter: Some("ollama".into()),
            images: false,
            ..Profile::default()
        }
    }

    fn list_models() -> Result<Vec<String>, PluginError> {
        let base = provider::base_url()?;
        provider::list_models(&format!("{base}/api/tags"), &[], model_names)
    }

    fn start(request: TurnRequest) -> Result<(Request, Decoder), PluginError> {
        let base = provider::base_url()?;
        let upstream = post_turn(
            format!("{base}/api/chat"),
            &body(&request)?,
            request.streaming,
        );
        let decoder = Decoder::new(request.streaming, Stream::default(), whole);
        Ok((upstream, decoder))
    }
}

chatd_plugin_sdk::export_codec_provider!(Ollama);

// ---- request building -------------------------------------------------------------------

/// The `/api/chat` body of one turn.
fn body(request: &TurnRequest) -> Result<Value, PluginError> {
    let messages = request
        .messages
        .iter()
        .map(message)
        .collect::<Result<Vec<_>, _>>()?;
    // `object`, not `json!`, where a field takes a built value (the messages, a parsed schema):
    // `json!` copies it whole.
    let mut body = object([
        ("model", request.model.as_str().into()),
        ("messages", messages.into()),
        ("stream", request.streaming.into()),
    ]);
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                let function = object([
                    ("name", tool.name.as_str().into()),
                    ("description", tool.description.as_str().into()),
                    ("parameters", provider::tool_schema(tool)?),
                ]);
                Ok(object([
                    ("type", "function".into()),
                    ("function", function),
                ]))
            })
            .collect::<Result<Vec<_>, PluginError>>()?;
        body["tools"] = tools.into();
    }
    let mut options = Map::new();
    if let Some(t) = request.temperature.and_then(provider::json_number) {
        options.insert("temperature".into(), t);
    }
    if let Some(n) = request.max_tokens {
        options.insert("num_predict".into(), n.into());
    }
    if !options.is_empty() {
        body["options"] = options.into();
    }
    Ok(body)
}

/// One transcript message: Ollama takes one content string, so parts are joined; a tool result
/// is a `tool` message naming its tool; the assistant's calls carry their arguments as objects.
fn message(message: &Message) -> Result<Value, PluginError> {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut parts = Vec::new();
    for part in &message.content {
        match part {
            ContentPart::Text(text) => parts.push(text.clone()),
            ContentPart::TextFile(file) => parts.push(provider::text_file_prompt(file)),
            ContentPart::Image(_) => {
                return Err(PluginError::InvalidInput(
                    "this provider does not take images".into(),
                ));
            }
        }
    }
    let mut out = object([
        ("role", role.into()),
        ("content", parts.join("\n\n").into()),
    ]);
    if let Some(result) = &message.tool_result {
        out["content"] = result.output.clone().into();
        out["tool_name"] = result.name.clone().into();
    }
    if !message.tool_calls.is_empty() {
        let calls = message
            .tool_calls
            .iter()
            .map(|call| {
                let arguments: Value = serde_json::from_str(&call.arguments_json).map_err(|e| {
                    PluginError::InvalidInput(format!("tool call {}: arguments: {e}", call.id))
                })?;
                let function = object([
                    ("name", call.name.as_str().into()),
                    ("arguments", arguments),
                ]);
                Ok(object([("function", function)]))
            })
            .collect::<Result<Vec<_>, PluginError>>()?;
        out["tool_calls"] = calls.into();
    }
    Ok(out)
}

// ---- private wire types -----------------------------------------------------------------

/// One line of a streamed answer, or the whole of one that did not stream. Every field is
/// optional: what a server leaves out is not an error.
#[derive(Deserialize, Default)]
struct Chunk {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    /// A failure after the stream started (an error status carries it too; the SDK reads
    /// that one).
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: String,
    #[serde(default)]
    tool_calls: Vec<WireCall>,
}

#[derive(Deserialize)]
struct WireCall {
    /// Recent servers number their calls; older ones do not.
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    /// An object (a string from some servers).
    #[serde(default)]
    arguments: Value,
}

#[derive(Deserialize)]
struct Tags {
    models: Vec<Tag>,
}

#[derive(Deserialize)]
struct Tag {
    name: String,
}

// ---- conversion and the stream parser ---------------------------------------------------

/// The model names of `/api/tags`, in the server's order.
fn model_names(body: &[u8]) -> Result<Vec<String>, PluginError> {
    let tags: Tags = serde_json::from_slice(body)
        .map_err(|e| PluginError::MalformedResponse(format!("ollama: model list: {e}")))?;
    Ok(tags.models.into_iter().map(|m| m.name).collect())
}

/// A streamed answer, line by line (the SDK's decoder hands each line as an event's data).
#[derive(Default)]
struct Stream {
    calls: usize,
    finish: Option<FinishReason>,
}

impl Stream {
    fn chunk(&mut self, chunk: Chunk) -> Result<Vec<TurnEvent>, PluginError> {
        if let Some(message) = chunk.error {
            return Err(PluginError::Upstream(UpstreamError {
                status: 0,
                message: format!("ollama: {message}"),
            }));
        }
        let mut events = Vec::new();
        if let Some(message) = chunk.message {
            if !message.content.is_empty() {
                events.push(TurnEvent::TextDelta(message.content));
            }
            for call in message.tool_calls {
                self.calls += 1;
                let arguments_json = match call.function.arguments {
                    Value::String(text) => text,
                    Value::Null => "{}".into(),
                    object => object.to_string(),
                };
                events.push(TurnEvent::ToolCall(ToolCall {
                    id: call.id.unwrap_or_else(|| format!("call_{}", self.calls)),
                    name: call.function.name,
                    arguments_json,
                }));
            }
        }
        if chunk.done {
            let (input, output) = (
                chunk.prompt_eval_count.unwrap_or(0),
                chunk.eval_count.unwrap_or(0),
            );
            events.push(TurnEvent::Usage(Usage {
                input_tokens: input,
                output_tokens: output,
                total_tokens: input + output,
            }));
            // Ollama says `stop` after tool calls too; the host needs to know it should run them.
            self.finish = Some(match (self.calls, chunk.done_reason.as_deref()) {
                (1.., _) => FinishReason::ToolCalls,
                (0, Some("length")) => FinishReason::Length,
                _ => FinishReason::Stop,
            });
        }
        Ok(events)
    }
}

impl TurnStream for Stream {
    fn push(&mut self, event: &Event) -> Result<Vec<TurnEvent>, PluginError> {
        let chunk: Chunk = serde_json::from_str(&event.data).map_err(|e| {
            PluginError::MalformedResponse(format!("ollama: a stream line is not a chunk: {e}"))
        })?;
        self.chunk(chunk)
    }

    fn finished(&self) -> Option<FinishReason> {
        self.finish
    }

    fn end(&mut self) -> Result<FinishReason, PluginError> {
        self.finish.ok_or_else(|| {
            PluginError::Transport("ollama: the stream ended before its `done` line".into())
        })
    }
}

/// An answer that did not stream: one chunk with `done: true`.
fn whole(body: &str) -> Result<(Vec<TurnEvent>, FinishReason), PluginError> {
    let mut stream = Stream::default();
    let chunk = serde_json::from_str(body)
        .map_err(|e| PluginError::MalformedResponse(format!("ollama: the answer: {e}")))?;
    let events = stream.chunk(chunk)?;
    Ok((events, stream.end()?))
}

// ---- tests on the fixtures --------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use chatd_plugin_sdk::host::{TextFile, ToolResult, ToolSpec};
    use chatd_plugin_sdk::testing::{Replayed, replay};
    use serde_json::json;

    const TEXT: &str = include_str!("../fixtures/chat_stream_text.ndjson");
    const TOOL_CALL: &str = include_str!("../fixtures/chat_stream_tool_call.ndjson");
    const WHOLE: &str = include_str!("../fixtures/chat_nonstream.json");

    fn streamed(body: &str, piece: usize) -> Replayed {
        let decoder = Decoder::new(true, Stream::default(), whole);
        replay(decoder, "application/x-ndjson", body.as_bytes(), piece)
    }

    #[test]
    fn a_streamed_answer_in_any_pieces() {
        for piece in [1, 7, usize::MAX] {
            let out = streamed(TEXT, piece);
            assert_eq!(out.text(), "The capital is London.");
            assert_eq!(out.others(), ["usage 26+9=35"]);
            assert_eq!(out.finish(), FinishReason::Stop);
        }
    }

    #[test]
    fn a_streamed_tool_call_finishes_as_tool_calls() {
        let out = streamed(TOOL_CALL, 16);
        assert_eq!(
            out.others(),
            [
                r#"call call_1 web_search {"query":"capital of the UK"}"#,
                "usage 180+21=201"
            ]
        );
        assert_eq!(out.finish(), FinishReason::ToolCalls);
    }

    #[test]
    fn an_answer_that_did_not_stream() {
        let decoder = Decoder::new(false, Stream::default(), whole);
        let out = replay(
            decoder,
            "application/json; charset=utf-8",
            WHOLE.as_bytes(),
            9,
        );
        assert_eq!(out.text(), "The capital is London.");
        assert_eq!(out.finish(), FinishReason::Stop);
    }

    #[test]
    fn an_error_line_a_cut_and_a_stray_line() {
        let first = TEXT.lines().next().unwrap();
        let failed = streamed(&format!("{first}\n{{\"error\":\"out of memory\"}}\n"), 50);
        assert_eq!(failed.text(), "The");
        match failed.error() {
            PluginError::Upstream(e) => assert_eq!(e.message, "ollama: out of memory"),
            other => panic!("{other:?}"),
        }
        let cut = streamed(first, 8);
        assert_eq!(cut.text(), "The");
        assert!(matches!(cut.error(), PluginError::Transport(_)));
        let stray = streamed("not json\n", usize::MAX);
        assert!(matches!(stray.error(), PluginError::MalformedResponse(_)));
    }

    #[test]
    fn the_model_list() {
        let names = model_names(include_bytes!("../fixtures/tags.json")).unwrap();
        assert_eq!(names, ["qwen3:8b", "llama3.2:latest"]);
        assert!(model_names(b"{}").is_err());
    }

    fn text(role: Role, text: &str) -> Message {
        Message {
            role,
            content: vec![ContentPart::Text(text.into())],
            tool_calls: Vec::new(),
            tool_result: None,
        }
    }

    #[test]
    fn the_request_body() {
        let mut user = text(Role::User, "What is in it?");
        user.content.push(ContentPart::TextFile(TextFile {
            filename: "notes.txt".into(),
            mime_type: "text/plain".into(),
            text: "London".into(),
            truncated: false,
        }));
        let mut assistant = text(Role::Assistant, "");
        assistant.tool_calls.push(ToolCall {
            id: "call_1".into(),
            name: "web_search".into(),
            arguments_json: r#"{"query":"uk"}"#.into(),
        });
        let mut result = text(Role::Tool, "");
        result.tool_result = Some(ToolResult {
            call_id: "call_1".into(),
            name: "web_search".into(),
            output: "London".into(),
            is_error: false,
        });
        let request = TurnRequest {
            model: "llama3.2".into(),
            messages: vec![text(Role::System, "Be brief."), user, assistant, result],
            tools: vec![ToolSpec {
                name: "web_search".into(),
                description: "Search the web".into(),
                parameters_schema_json: r#"{"type":"object"}"#.into(),
            }],
            temperature: Some(0.7),
            max_tokens: Some(64),
            streaming: true,
            may_continue: false,
            continuation: None,
        };
        let body = body(&request).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "llama3.2",
                "stream": true,
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content":
                        format!("What is in it?\n\n{}", provider::text_file_prompt(&TextFile {
                            filename: "notes.txt".into(), mime_type: "text/plain".into(),
                            text: "London".into(), truncated: false }))},
                    {"role": "assistant", "content": "", "tool_calls":
                        [{"function": {"name": "web_search", "arguments": {"query": "uk"}}}]},
                    {"role": "tool", "content": "London", "tool_name": "web_search"}
                ],
                "tools": [{"type": "function", "function": {"name": "web_search",
                    "description": "Search the web", "parameters": {"type": "object"}}}],
                "options": {"temperature": 0.7, "num_predict": 64}
            })
        );
        let mut image = text(Role::User, "look");
        image
            .content
            .push(ContentPart::Image(chatd_plugin_sdk::host::Image {
                mime_type: "image/png".into(),
                data_base64: "AA==".into(),
            }));
        assert!(matches!(message(&image), Err(PluginError::InvalidInput(_))));
    }
}
