//! A non-streamed response (`chat.completion`): the first choice's text as one text event, its
//! tool calls, the usage, and the finish reason. Pure, unit-tested on the recordings.

use chatd_plugin_sdk::host::{PluginError, ToolCall, UpstreamError};
use chatd_plugin_sdk::provider::{FinishReason, TurnEvent};
use serde_json::Value;

use crate::Flavor;
use crate::wire::{self, Completion};

/// The events of a whole response body, and why the model stopped.
pub fn parse(body: &str, flavor: Flavor) -> Result<(Vec<TurnEvent>, FinishReason), PluginError> {
    let completion: Completion = serde_json::from_str(body).map_err(|e| {
        PluginError::MalformedResponse(format!("unexpected chat completion response: {e}"))
    })?;
    if completion.error.as_ref().is_some_and(|e| !e.is_null()) {
        // An error in a 2xx body: reported like one inside a stream.
        return Err(PluginError::Upstream(UpstreamError {
            status: 0,
            message: chatd_plugin_sdk::host::error_message(body.as_bytes())
                .unwrap_or_else(|| "the upstream reported an error".into()),
        }));
    }
    let choices = completion.choices.unwrap_or_default();
    let choice = choices
        .into_iter()
        .find(|c| c.index.unwrap_or(0) == 0)
        .ok_or_else(|| {
            PluginError::MalformedResponse("the chat completion response has no choice".into())
        })?;
    let message = choice.message.unwrap_or_default();
    let mut events = Vec::new();
    let text = message
        .content
        .as_ref()
        .map(content_text)
        .unwrap_or_default();
    if !text.is_empty() {
        events.push(TurnEvent::TextDelta(text));
    }
    let mut calls = 0;
    if flavor.returns_tool_calls() {
        let legacy = message.function_call.map(|function| wire::WireToolCall {
            id: None,
            function: Some(function),
        });
        for call in message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .chain(legacy)
        {
            let function = call.function.unwrap_or_default();
            let name = function.name.filter(|n| !n.is_empty()).ok_or_else(|| {
                PluginError::MalformedResponse(format!("tool call {calls} has no function name"))
            })?;
            let arguments = function
                .arguments
                .as_ref()
                .map(wire::arguments_text)
                .unwrap_or_default();
            events.push(TurnEvent::ToolCall(ToolCall {
                id: call
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("call_{calls}")),
                name,
                arguments_json: if arguments.trim().is_empty() {
                    "{}".into()
                } else {
                    arguments
                },
            }));
            calls += 1;
        }
    }
    if let Some(usage) = completion.usage {
        events.push(TurnEvent::Usage(crate::usage(&usage)));
    }
    let finish = crate::finish_reason(choice.finish_reason.as_deref(), calls > 0, flavor);
    Ok((events, finish))
}

/// A message's content: a string, or the text of an array of parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Ev, evs};

    fn run(body: &str, flavor: Flavor) -> (Vec<Ev>, FinishReason) {
        let (events, finish) = parse(body, flavor).unwrap();
        (evs(&events), finish)
    }

    #[test]
    fn recorded_text() {
        let body = include_str!(
            "../../../tests/fixtures/upstream/openai_chat/04_nonstream_text.response.json"
        );
        assert_eq!(
            run(body, Flavor::Standard),
            (
                vec![
                    Ev::Text("Hello! How can I assist you today?".into()),
                    Ev::Usage(11, 9, 20)
                ],
                FinishReason::Stop
            )
        );
    }

    #[test]
    fn recorded_legacy_function_call() {
        // The `functions` API: one `function_call` without an id, finish "function_call".
        let body = include_str!(
            "../../../tests/fixtures/upstream/openai_chat/05a_nonstream_tool_calls.response.json"
        );
        assert_eq!(
            run(body, Flavor::Standard),
            (
                vec![
                    Ev::call(
                        "call_0",
                        "get_favorite_color_for_month",
                        r#"{"month_name":"February"}"#
                    ),
                    Ev::Usage(75, 19, 94)
                ],
                FinishReason::ToolCalls
            )
        );
    }

    #[test]
    fn recorded_answer_after_a_tool_result() {
        let body = include_str!(
            "../../../tests/fixtures/upstream/openai_chat/05b_nonstream_after_tool_result.response.json"
        );
        assert_eq!(
            run(body, Flavor::Standard),
            (
                vec![
                    Ev::Text("Your favorite color in February is chartreuse.".into()),
                    Ev::Usage(108, 10, 118)
                ],
                FinishReason::Stop
            )
        );
    }

    #[test]
    fn recorded_parallel_tool_calls() {
        let body = include_str!(
            "../../../tests/fixtures/upstream/openai_chat/06_nonstream_parallel_tool_calls.response.json"
        );
        assert_eq!(
            run(body, Flavor::Standard),
            (
                vec![
                    Ev::call(
                        "call_SKQEHo7QVlJRoCtEzcrYZM9C",
                        "get_weather_for_city",
                        r#"{"city_name": "Santiago"}"#
                    ),
                    Ev::call(
                        "call_CkjljlLr7IebPc4hnvetfiZ8",
                        "get_weather_for_city",
                        r#"{"city_name": "Karachi"}"#
                    ),
                    Ev::Usage(81, 52, 133)
                ],
                FinishReason::ToolCalls
            )
        );
        // The agent flavor drops them: only text (none here) and usage.
        assert_eq!(
            run(body, Flavor::Agent),
            (vec![Ev::Usage(81, 52, 133)], FinishReason::Other)
        );
    }

    #[test]
    fn recorded_401_error_body_gives_its_message() {
        let body = include_str!(
            "../../../tests/fixtures/upstream/openai_chat/07_error_401_invalid_api_key.response.json"
        );
        assert_eq!(
            chatd_plugin_sdk::host::error_message(body.as_bytes()).as_deref(),
            Some(
                "Incorrect API key provided: not-a-re**************************ized. You can find your API key at https://platform.openai.com/account/api-keys."
            )
        );
        // Given as a 2xx body, it is still an upstream error, not an empty answer.
        match parse(body, Flavor::Standard) {
            Err(PluginError::Upstream(e)) => assert!(e.message.starts_with("Incorrect API key")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn content_parts_and_missing_usage_are_tolerated() {
        let body = r#"{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"length"}]}"#;
        assert_eq!(
            run(body, Flavor::Standard),
            (vec![Ev::Text("ab".into())], FinishReason::Length)
        );
    }

    #[test]
    fn no_choice_is_malformed() {
        for body in [r#"{"choices":[]}"#, r#"{"id":"x"}"#, "not json"] {
            assert!(
                matches!(
                    parse(body, Flavor::Standard),
                    Err(PluginError::MalformedResponse(_))
                ),
                "{body}"
            );
        }
    }
}
