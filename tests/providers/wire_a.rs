//! provider_a: the OpenAI Responses API (`POST {base}/responses`, `GET {base}/models`,
//! `Authorization: Bearer`). Answered by `openai_responses/` recordings. Its tool loops keep
//! state upstream: a turn that may continue is stored and its response id is the continuation;
//! the next turn names it as `previous_response_id` and sends only the tool results.

use chatd::plugins::testing::{Recorded, Reply};
use chatd::plugins::worlds::provider::{Image, TextFile, ToolCall, ToolResult};
use serde_json::{Value, json};

use crate::recorded::{
    MODELS_LIST, before_event_with, cut_inside, event_with, insert_before, recording,
};
use crate::support::tool_spec;
use crate::wire::{
    Call, Canned, Cut, HttpError, MidStream, Models, Parallel, Support, ToolLoop, Wire,
    assert_bearer, assert_file_in, of_type, openai_error, service_flags,
};

const TEXT_WHOLE: &str = recording!("openai_responses/01_nonstream_text.response.json");
const TEXT_STREAM: &str = recording!("openai_responses/02_stream_text.response.sse");
const CALL_STREAM: &str = recording!("openai_responses/03_stream_function_call.response.sse");
const LOOP_CALL: &str =
    recording!("openai_responses/04a_stream_function_call_legacy_2025_03.response.sse");
const LOOP_ANSWER: &str = recording!(
    "openai_responses/04b_stream_after_function_call_output_legacy_2025_03.response.sse"
);
const ERROR_EVENT: &str = recording!(
    "openai_responses/07_stream_error_event_insufficient_quota.RECONSTRUCTED.response.sse"
);
const ERROR_401: &str = recording!("openai_responses/12_error_401_invalid_api_key.response.json");

/// Parts of a base model id the plugin documents as not usable for a chat turn (its
/// `models.rs`): other endpoints, audio/realtime, search, tool-bound and legacy models.
const NOT_CHAT: &[&str] = &[
    "embedding",
    "moderation",
    "whisper",
    "tts",
    "transcribe",
    "dall-e",
    "image",
    "sora",
    "audio",
    "realtime",
    "search-preview",
    "search-api",
    "deep-research",
    "computer-use",
    "instruct",
    "babbage",
    "davinci",
];

pub struct WireA;

impl Wire for WireA {
    const PLUGIN: &'static str = "provider_a";
    const MODEL: &'static str = "gpt-4o-mini";
    const TURN_PATH: &'static str = "/v1/responses";
    const MODELS_PATH: &'static str = "/v1/models";

    fn flags(base_url: &str) -> Vec<String> {
        service_flags("--provider-a-base-url", "--provider-a-api-key", base_url)
    }

    fn assert_credentials(request: &Recorded) {
        assert_bearer(request);
    }

    fn text_whole() -> Canned {
        Canned {
            body: TEXT_WHOLE.into(),
            text: "Ahoy! How can I help you today?",
            usage: (23, 89, 112),
        }
    }

    fn text_stream() -> Canned {
        Canned {
            body: TEXT_STREAM.into(),
            text: "Hello! How can I assist you today?",
            usage: (11, 10, 21),
        }
    }

    fn tool_loop() -> Support<ToolLoop> {
        // 04a/04b: a recorded streamed loop (the 2025-03 format, without sequence numbers).
        Support::Present(ToolLoop {
            tool: tool_spec(
                "get_capital",
                "",
                r#"{"type":"object","properties":{"country":{"type":"string"}},"required":["country"],"additionalProperties":false}"#,
            ),
            question: "What is the capital of France?",
            first: LOOP_CALL.into(),
            call: Call {
                id: "call_kL0PCQV7M2WMoVX8V8OtYSAL",
                name: "get_capital",
                arguments: r#"{"country":"France"}"#,
            },
            continuation: Some("resp_67e554a155508191900ee113293c4c830794405d35281ae2"),
            output: "Paris",
            second: Canned {
                body: LOOP_ANSWER.into(),
                text: "The capital of France is Paris.",
                usage: (278, 9, 287),
            },
            assert_follow_up,
        })
    }

    fn parallel_calls() -> Support<Parallel> {
        // No recording has two calls: 03 with a second finished function_call item added
        // before its response.completed (the shape of 03's own item).
        let second = concat!(
            "event: response.output_item.done\n",
            r#"data: {"type":"response.output_item.done","sequence_number":12,"output_index":1,"item":{"id":"fc_second","type":"function_call","status":"completed","arguments":"{\"location\":\"Paris, France\"}","call_id":"call_second","name":"get_weather_at_location"}}"#,
            "\n\n"
        );
        Support::Present(Parallel {
            reply: Reply::sse(&insert_before(
                CALL_STREAM,
                "event: response.completed",
                second,
            )),
            streaming: true,
            calls: vec![
                Call {
                    id: "call_0UFGPwrziw5rbinYp7rthrTb",
                    name: "get_weather_at_location",
                    arguments: r#"{"location":"San Francisco, CA"}"#,
                },
                Call {
                    id: "call_second",
                    name: "get_weather_at_location",
                    arguments: r#"{"location":"Paris, France"}"#,
                },
            ],
        })
    }

    fn assert_attachments(sent: &Value, image: &Image, file: &TextFile) {
        let message = &sent["input"][0];
        assert_eq!(message["role"], "user");
        let images = of_type(&message["content"], "input_image");
        assert_eq!(
            images,
            [&json!({
                "type": "input_image",
                "image_url": format!("data:{};base64,{}", image.mime_type, image.data_base64),
            })]
        );
        let texts: Vec<&Value> = of_type(&message["content"], "input_text")
            .into_iter()
            .map(|part| &part["text"])
            .collect();
        assert_file_in(&texts, file);
    }

    fn http_error(status: u16) -> HttpError {
        openai_error(ERROR_401, status)
    }

    fn mid_stream_errors() -> Vec<MidStream> {
        // 02's text deltas, then the recorded failure of 07 (an `error` event in the nested
        // shape, then response.failed), or response.failed alone.
        let text = before_event_with(TEXT_STREAM, "event: response.output_text.done");
        let error = event_with(ERROR_EVENT, "event: error");
        let failed = event_with(ERROR_EVENT, "event: response.failed");
        vec![
            MidStream {
                case: "the recorded error event",
                sse: format!("{text}{error}{failed}"),
                text_before: "Hello! How can I assist you today?",
                message: quota_message(),
            },
            MidStream {
                case: "response.failed alone",
                sse: format!("{text}{failed}"),
                text_before: "Hello! How can I assist you today?",
                message: quota_message(),
            },
        ]
    }

    fn cut() -> Cut {
        Cut {
            sse: cut_inside(TEXT_STREAM, r#""delta":" assist""#).into(),
            text_before: "Hello! How can I",
        }
    }

    fn models() -> Models {
        let list: Value = serde_json::from_str(MODELS_LIST).unwrap();
        let mut ids: Vec<String> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|model| model["id"].as_str().unwrap().to_string())
            .filter(|id| {
                // A fine-tune is judged by its base model.
                let base = id.strip_prefix("ft:").map_or(id.as_str(), |rest| {
                    rest.split(':').next().unwrap_or_default()
                });
                !NOT_CHAT.iter().any(|part| base.contains(part))
            })
            .collect();
        ids.sort();
        ids.dedup();
        // The filter must have kept chat models and dropped the others of the recording.
        assert!(ids.iter().any(|id| id == "gpt-4o-mini"));
        assert!(ids.iter().any(|id| id.starts_with("ft:gpt-3.5-turbo")));
        for dropped in ["text-embedding-3-small", "tts-1", "whisper-1", "dall-e-3"] {
            assert!(!ids.iter().any(|id| id == dropped), "{dropped}");
        }
        Models {
            body: MODELS_LIST.into(),
            query: None,
            ids,
        }
    }
}

/// The 07 recording's message, as the plugin reports in-stream errors: `code: message`.
fn quota_message() -> String {
    let data = event_with(ERROR_EVENT, "event: error")
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap();
    let event: Value = serde_json::from_str(data).unwrap();
    format!(
        "{}: {}",
        event["error"]["code"].as_str().unwrap(),
        event["error"]["message"].as_str().unwrap()
    )
}

/// A continued turn names the stored response and sends only what came after it: the result.
fn assert_follow_up(
    sent: &Value,
    call: &ToolCall,
    result: &ToolResult,
    continuation: Option<&str>,
) {
    let previous = continuation.expect("the first turn emitted a continuation");
    assert_eq!(sent["previous_response_id"], previous);
    assert_eq!(sent["store"], true, "a turn that may continue is stored");
    assert_eq!(
        sent["input"],
        json!([{"type": "function_call_output", "call_id": call.id, "output": result.output}])
    );
}
