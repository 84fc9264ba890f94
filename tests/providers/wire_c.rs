//! provider_c: an OpenAI-compatible chat completions API (`POST {base}/chat/completions`,
//! `GET {base}/models`, `Authorization: Bearer`), through the shared `chat_completions` library.
//! Answered by `openai_chat/` recordings. The whole transcript is sent every turn; no
//! continuation. The recordings and shapes here serve `wire_agent.rs` too (same wire).

use chatd::plugins::testing::{Recorded, Reply};
use chatd::plugins::worlds::provider::{Image, TextFile, ToolCall, ToolResult};
use serde_json::{Value, json};

use crate::recorded::{MODELS_LIST, before_event_with, cut_inside, recording};
use crate::support::tool_spec;
use crate::wire::{
    Call, Canned, Cut, HttpError, MidStream, Models, Parallel, Support, ToolLoop, Wire,
    assert_bearer, assert_file_in, of_type, openai_error, service_flags,
};

pub const TEXT_WHOLE: &str = recording!("openai_chat/04_nonstream_text.response.json");
/// The answer after a tool result; also the plain streamed text of scenario 2.
pub const TEXT_STREAM: &str = recording!("openai_chat/02_stream_text_include_usage.response.sse");
pub const CALL_STREAM: &str =
    recording!("openai_chat/01_stream_tool_call_include_usage.response.sse");
pub const PARALLEL_STREAM: &str =
    recording!("openai_chat/03_stream_parallel_tool_calls.response.sse");
const FOLLOW_UP_REQUEST: &str = recording!("openai_chat/02_stream_text_include_usage.request.json");
const ERROR_401: &str = recording!("openai_chat/07_error_401_invalid_api_key.response.json");

const STREAM_TEXT: &str = "The capital of the UK is London.";
/// Where the streams of scenarios 8 and 9 break: the chunk of the fifth delta.
const FIFTH_DELTA: &str = r#""content":" UK""#;

pub struct WireC;

impl Wire for WireC {
    const PLUGIN: &'static str = "provider_c";
    const MODEL: &'static str = "gpt-4o-mini";
    const TURN_PATH: &'static str = "/v1/chat/completions";
    const MODELS_PATH: &'static str = "/v1/models";

    fn flags(base_url: &str) -> Vec<String> {
        service_flags("--provider-c-base-url", "--provider-c-api-key", base_url)
    }

    fn assert_credentials(request: &Recorded) {
        assert_bearer(request);
    }

    fn text_whole() -> Canned {
        text_whole()
    }

    fn text_stream() -> Canned {
        text_stream(TEXT_STREAM.into())
    }

    fn tool_loop() -> Support<ToolLoop> {
        // 01 then 02: a recorded streamed loop.
        Support::Present(ToolLoop {
            tool: tool_spec(
                "get_capital",
                "",
                r#"{"additionalProperties":false,"properties":{"country":{"type":"string"}},"required":["country"],"type":"object"}"#,
            ),
            question: "What is the capital of the UK? Use the tool, then answer.",
            first: CALL_STREAM.into(),
            call: Call {
                id: "call_ZR5UUuTt3pf61kjwAJIYdVMj",
                name: "get_capital",
                arguments: r#"{"country":"UK"}"#,
            },
            continuation: None,
            output: "London",
            second: text_stream(TEXT_STREAM.into()),
            assert_follow_up,
        })
    }

    fn parallel_calls() -> Support<Parallel> {
        Support::Present(Parallel {
            reply: Reply::sse(PARALLEL_STREAM),
            streaming: true,
            calls: vec![
                Call {
                    id: "call_NS4iQj14cDFwc0BnrKqDHavt",
                    name: "get_weather",
                    arguments: r#"{"city": "Mexico City"}"#,
                },
                Call {
                    id: "call_SkGkkGDvHQEEk0CGbnAh2AQw",
                    name: "get_product_name",
                    arguments: "{}",
                },
            ],
        })
    }

    fn assert_attachments(sent: &Value, image: &Image, file: &TextFile) {
        assert_attachments(sent, image, file)
    }

    fn http_error(status: u16) -> HttpError {
        openai_error(ERROR_401, status)
    }

    fn mid_stream_errors() -> Vec<MidStream> {
        mid_stream_errors()
    }

    fn cut() -> Cut {
        cut()
    }

    fn models() -> Models {
        models()
    }
}

pub fn text_whole() -> Canned {
    Canned {
        body: TEXT_WHOLE.into(),
        text: "Hello! How can I assist you today?",
        usage: (11, 9, 20),
    }
}

/// 02 (or a variation of it that keeps its chunks).
pub fn text_stream(body: String) -> Canned {
    Canned {
        body,
        text: STREAM_TEXT,
        usage: (78, 9, 87),
    }
}

/// The user message as an array of parts: `image_url` with a data URL, text parts.
pub fn assert_attachments(sent: &Value, image: &Image, file: &TextFile) {
    let message = &sent["messages"][0];
    assert_eq!(message["role"], "user");
    let images = of_type(&message["content"], "image_url");
    assert_eq!(
        images,
        [&json!({
            "type": "image_url",
            "image_url": {"url": format!("data:{};base64,{}", image.mime_type, image.data_base64)},
        })]
    );
    let texts: Vec<&Value> = of_type(&message["content"], "text")
        .into_iter()
        .map(|part| &part["text"])
        .collect();
    assert_file_in(&texts, file);
}

/// 02's first four deltas, then an error: a chunk with an error object (the shape OpenAI's SDK
/// raises on), or an `error` event.
pub fn mid_stream_errors() -> Vec<MidStream> {
    let text = before_event_with(TEXT_STREAM, FIFTH_DELTA);
    let message = "The server had an error while processing your request. Sorry about that!";
    let error =
        json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}});
    vec![
        MidStream {
            case: "a chunk with an error object",
            sse: format!("{text}data: {error}\n\n"),
            text_before: "The capital of the",
            message: message.into(),
        },
        MidStream {
            case: "an error event",
            sse: format!("{text}event: error\ndata: {error}\n\n"),
            text_before: "The capital of the",
            message: message.into(),
        },
    ]
}

pub fn cut() -> Cut {
    Cut {
        sse: cut_inside(TEXT_STREAM, FIFTH_DELTA).into(),
        text_before: "The capital of the",
    }
}

/// Every id of the recorded list, sorted.
pub fn models() -> Models {
    let list: Value = serde_json::from_str(MODELS_LIST).unwrap();
    let mut ids: Vec<String> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| model["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 96);
    Models {
        body: MODELS_LIST.into(),
        query: None,
        ids,
    }
}

/// The call and its result as the recorded follow-up request (02) sent them: an assistant
/// message with `tool_calls`, then a `tool` message naming the call.
fn assert_follow_up(
    sent: &Value,
    call: &ToolCall,
    result: &ToolResult,
    continuation: Option<&str>,
) {
    assert_eq!(continuation, None, "chat completions keep no state");
    let recorded: Value = serde_json::from_str(FOLLOW_UP_REQUEST).unwrap();
    let messages = sent["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3, "{sent}");
    assert_eq!(messages[1], recorded["messages"][1]);
    assert_eq!(messages[2], recorded["messages"][2]);
    // The recording's ids are the ones of this turn.
    assert_eq!(messages[1]["tool_calls"][0]["id"], call.id);
    assert_eq!(messages[2]["tool_call_id"], result.call_id);
    assert_eq!(messages[2]["content"], result.output);
}
