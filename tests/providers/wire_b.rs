//! provider_b: the Anthropic Messages API (`POST {base}/messages`, `GET {base}/models?limit=1000`,
//! `x-api-key` and `anthropic-version: 2023-06-01`). Answered by `anthropic_messages/`
//! recordings. The API keeps no state: every turn sends the whole transcript and no
//! continuation is emitted.

use chatd::plugins::testing::{Recorded, Reply};
use chatd::plugins::worlds::provider::{Image, TextFile, ToolCall, ToolResult};
use serde_json::{Value, json};

use crate::recorded::{before_event_with, cut_inside, recording};
use crate::support::{arguments, tool_spec};
use crate::wire::{
    Call, Canned, Cut, HttpError, KEY, MidStream, Models, Parallel, Support, ToolLoop, Wire,
    assert_file_in, of_type, service_flags, with_message,
};

const TEXT_WHOLE: &str = recording!("anthropic_messages/01_nonstream_text.response.json");
const PARALLEL: &str =
    recording!("anthropic_messages/03_nonstream_parallel_tool_use.response.json");
const LOOP_CALL: &str = recording!("anthropic_messages/05a_stream_tool_use.response.sse");
const LOOP_ANSWER: &str =
    recording!("anthropic_messages/05b_stream_after_tool_result.response.sse");
const ERROR_401: &str = recording!("anthropic_messages/09_error_401_authentication.response.json");

/// 05b's text (three deltas): the streamed answer of scenarios 2 and 3.
const LOOP_ANSWER_TEXT: &str = "The weather in Berlin is currently:\n- **Temperature:** 15°C\n- **Wind:** 10 km/h\n\nIt's relatively mild with a light breeze. Perfect for a walk around the city!";

pub struct WireB;

impl Wire for WireB {
    const PLUGIN: &'static str = "provider_b";
    const MODEL: &'static str = "claude-haiku-4-5-20251001";
    const TURN_PATH: &'static str = "/v1/messages";
    const MODELS_PATH: &'static str = "/v1/models";

    fn flags(base_url: &str) -> Vec<String> {
        service_flags("--provider-b-base-url", "--provider-b-api-key", base_url)
    }

    fn assert_credentials(request: &Recorded) {
        assert_eq!(
            request.header("x-api-key"),
            Some(KEY),
            "the host injects the key"
        );
        assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(request.header("authorization"), None);
    }

    fn text_whole() -> Canned {
        Canned {
            body: TEXT_WHOLE.into(),
            text: "2 + 2 = 4",
            usage: (16, 13, 29),
        }
    }

    fn text_stream() -> Canned {
        // 04 and 08 stream their text in one delta; 05b in three.
        Canned {
            body: LOOP_ANSWER.into(),
            text: LOOP_ANSWER_TEXT,
            usage: (748, 49, 797),
        }
    }

    fn tool_loop() -> Support<ToolLoop> {
        Support::Present(ToolLoop {
            tool: tool_spec(
                "weather",
                "Gets current weather for a location",
                r#"{"type":"object","properties":{"latitude":{"type":"string","description":"Latitude (e.g., 52.5200)"},"longitude":{"type":"string","description":"Longitude (e.g., 13.4050)"}},"required":["latitude","longitude"],"additionalProperties":false}"#,
            ),
            question: "What's the weather in Berlin? (52.5200, 13.4050)",
            first: LOOP_CALL.into(),
            call: Call {
                id: "toolu_01MKSN7NHsBVKr7Jvw5pqCQq",
                name: "weather",
                arguments: r#"{"latitude": "52.5200", "longitude": "13.4050"}"#,
            },
            continuation: None,
            output: "Current weather at 52.5200, 13.4050: 15°C, Wind: 10 km/h",
            second: Canned {
                body: LOOP_ANSWER.into(),
                text: LOOP_ANSWER_TEXT,
                usage: (748, 49, 797),
            },
            assert_follow_up,
        })
    }

    fn parallel_calls() -> Support<Parallel> {
        Support::Present(Parallel {
            reply: Reply::text(200, "application/json", PARALLEL),
            streaming: false,
            calls: vec![
                Call {
                    id: "toolu_01TjHdHxyQNDy4DipRieJU5n",
                    name: "weather",
                    arguments: r#"{"latitude":"52.5200","longitude":"13.4050"}"#,
                },
                Call {
                    id: "toolu_01QHFWAkMuVLb3VgS4EDGUGY",
                    name: "best_language_to_learn",
                    arguments: "{}",
                },
            ],
        })
    }

    fn assert_attachments(sent: &Value, image: &Image, file: &TextFile) {
        let message = &sent["messages"][0];
        assert_eq!(message["role"], "user");
        let images = of_type(&message["content"], "image");
        assert_eq!(
            images,
            [&json!({
                "type": "image",
                "source": {"type": "base64", "media_type": image.mime_type, "data": image.data_base64},
            })]
        );
        let texts: Vec<&Value> = of_type(&message["content"], "text")
            .into_iter()
            .map(|block| &block["text"])
            .collect();
        assert_file_in(&texts, file);
    }

    fn http_error(status: u16) -> HttpError {
        // The recorded 401; other statuses in the same shape with the documented error types
        // (FORMATS.md §2).
        let mut body: Value = serde_json::from_str(ERROR_401).unwrap();
        let (kind, message) = match status {
            401 => return with_message(body),
            429 => (
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            ),
            500 => ("api_error", "Internal server error"),
            other => panic!("no error body for {other}"),
        };
        body["error"] = json!({"type": kind, "message": message});
        with_message(body)
    }

    fn mid_stream_errors() -> Vec<MidStream> {
        // No recording has one: 05b's first delta, then the documented overloaded event
        // (FORMATS.md §2), which the plugin reports as `type: message`.
        let text = before_event_with(LOOP_ANSWER, "Berlin is currently");
        vec![MidStream {
            case: "an overloaded_error event",
            sse: format!(
                "{text}event: error\ndata: {}\n\n",
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#
            ),
            text_before: "The weather in",
            message: "overloaded_error: Overloaded".into(),
        }]
    }

    fn cut() -> Cut {
        Cut {
            sse: cut_inside(LOOP_ANSWER, "\" Berlin is currently").into(),
            text_before: "The weather in",
        }
    }

    fn models() -> Models {
        // No recording of Anthropic's list: the documented page (FORMATS.md §3), newest first,
        // which the plugin keeps in the API's order.
        let body = json!({
            "data": [
                {"type": "model", "id": "claude-opus-4-6", "display_name": "Claude Opus 4.6",
                 "created_at": "2026-02-04T00:00:00Z", "max_input_tokens": 200000,
                 "max_tokens": 128000, "capabilities": {"thinking": {"supported": true}}},
                {"type": "model", "id": "claude-haiku-4-5-20251001",
                 "display_name": "Claude Haiku 4.5", "created_at": "2025-10-15T00:00:00Z"},
                {"type": "model", "id": "claude-3-haiku-20240307",
                 "display_name": "Claude Haiku 3", "created_at": "2024-03-07T00:00:00Z"}
            ],
            "has_more": false,
            "first_id": "claude-opus-4-6",
            "last_id": "claude-3-haiku-20240307"
        });
        Models {
            body: body.to_string(),
            query: Some("limit=1000"),
            ids: vec![
                "claude-opus-4-6".into(),
                "claude-haiku-4-5-20251001".into(),
                "claude-3-haiku-20240307".into(),
            ],
        }
    }
}

/// The whole transcript again: the call as a `tool_use` block of the assistant turn, its result
/// as a `tool_result` block of the next user turn.
fn assert_follow_up(
    sent: &Value,
    call: &ToolCall,
    result: &ToolResult,
    continuation: Option<&str>,
) {
    assert_eq!(continuation, None, "the Messages API keeps no state");
    let messages = sent["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3, "{sent}");
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [{
            "type": "tool_use", "id": call.id, "name": call.name,
            "input": arguments(&call.arguments_json),
        }]})
    );
    assert_eq!(messages[2]["role"], "user");
    let results = of_type(&messages[2]["content"], "tool_result");
    assert_eq!(results.len(), 1, "{}", messages[2]);
    assert_eq!(results[0]["tool_use_id"], result.call_id);
    assert_eq!(results[0]["content"], result.output);
    assert_eq!(results[0]["is_error"], false);
}
