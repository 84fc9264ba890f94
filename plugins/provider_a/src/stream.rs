//! From the upstream's answer to [`TurnEvent`]s and a [`FinishReason`], streamed ([`Stream`], fed
//! one server-sent event at a time) or whole ([`parse_response`]). Both are pure, so they are
//! tested against the recordings.
//!
//! * Text: `response.output_text.delta` (and `response.refusal.delta`: a refusal is the model's
//!   answer, shown as text) as it comes; whole `output_text`/`refusal` parts when not streaming.
//! * Tool calls: each `function_call` item once it is done (`response.output_item.done`), with
//!   its `call_id`; an item the output limit cut (`status: incomplete`) is dropped.
//! * The end: `response.completed` or `response.incomplete` give the usage, the response id as
//!   the continuation when the turn may be continued, and the finish reason. `response.failed`
//!   and `error` events (both the documented top-level and the recorded nested shape) are
//!   [`PluginError::Upstream`] with status 0. A stream that ends before any of them was cut.
//! * Everything else (created/in_progress, reasoning, content parts, argument deltas) is ignored.

use chatd_plugin_sdk::host::{PluginError, ToolCall, UpstreamError, Usage};
use chatd_plugin_sdk::provider::TurnStream;
use chatd_plugin_sdk::provider::{FinishReason, TurnEvent};
use chatd_plugin_sdk::sse::Event;
use serde_json::Value;

use crate::wire;

/// The state of one streamed turn.
#[derive(Debug)]
pub struct Stream {
    may_continue: bool,
    tool_calls: usize,
    finish: Option<FinishReason>,
}

impl Stream {
    /// A new turn; `may_continue` makes the response id a continuation event at the end.
    pub fn new(may_continue: bool) -> Self {
        Self {
            may_continue,
            tool_calls: 0,
            finish: None,
        }
    }

    /// Takes one event (its SSE name and data) and returns the turn events it produced.
    pub fn feed(&mut self, name: &str, data: &str) -> Result<Vec<TurnEvent>, PluginError> {
        if self.finish.is_some() || data.trim() == "[DONE]" {
            return Ok(Vec::new());
        }
        let event = decode(name, data)?;
        let mut events = Vec::new();
        match event {
            wire::Event::TextDelta { delta } | wire::Event::RefusalDelta { delta } => {
                if !delta.is_empty() {
                    events.push(TurnEvent::TextDelta(delta));
                }
            }
            wire::Event::ItemDone { item } => {
                if let Some(call) = tool_call(&item) {
                    self.tool_calls += 1;
                    events.push(TurnEvent::ToolCall(call));
                }
            }
            wire::Event::Completed { response }
            | wire::Event::Incomplete { response }
            | wire::Event::Failed { response } => {
                let finish = closing(&response, self.tool_calls, self.may_continue, &mut events)?;
                self.finish = Some(finish);
            }
            wire::Event::Error {
                code,
                message,
                error,
            } => {
                let error = error.unwrap_or_default();
                let kind = code.or(error.code).and_then(code_text).or(error.kind);
                return Err(upstream(kind, message.or(error.message)));
            }
            wire::Event::Other => {}
        }
        Ok(events)
    }

    /// The finish reason, once the terminal event is in: the caller stops reading there.
    pub fn finished(&self) -> Option<FinishReason> {
        self.finish
    }

    /// The stream ended: the finish reason, or the error of a stream cut before its end.
    pub fn end(&self) -> Result<FinishReason, PluginError> {
        self.finish.ok_or_else(|| {
            PluginError::Transport("the stream ended before the response was complete".into())
        })
    }
}

impl TurnStream for Stream {
    fn push(&mut self, event: &Event) -> Result<Vec<TurnEvent>, PluginError> {
        self.feed(&event.event, &event.data)
    }
    fn finished(&self) -> Option<FinishReason> {
        Stream::finished(self)
    }
    fn end(&mut self) -> Result<FinishReason, PluginError> {
        Stream::end(self)
    }
}

/// A whole (non-streaming) Response body: its events and finish reason.
pub fn parse_response(
    body: &str,
    may_continue: bool,
) -> Result<(Vec<TurnEvent>, FinishReason), PluginError> {
    let response: wire::Response = serde_json::from_str(body).map_err(|e| {
        PluginError::MalformedResponse(format!("provider_a: unexpected response body: {e}"))
    })?;
    let mut events = Vec::new();
    let mut tool_calls = 0;
    for item in &response.output {
        match item {
            wire::OutputItem::Message { content } => {
                for part in content {
                    match part {
                        wire::OutputContent::Text { text } if !text.is_empty() => {
                            events.push(TurnEvent::TextDelta(text.clone()))
                        }
                        wire::OutputContent::Refusal { refusal } if !refusal.is_empty() => {
                            events.push(TurnEvent::TextDelta(refusal.clone()))
                        }
                        _ => {}
                    }
                }
            }
            other => {
                if let Some(call) = tool_call(other) {
                    tool_calls += 1;
                    events.push(TurnEvent::ToolCall(call));
                }
            }
        }
    }
    let finish = closing(&response, tool_calls, may_continue, &mut events)?;
    Ok((events, finish))
}

/// Parses an event's data; its `type` names it, or the SSE event name when the data has none.
fn decode(name: &str, data: &str) -> Result<wire::Event, PluginError> {
    let malformed = |e: serde_json::Error| {
        let name = if name.is_empty() { "message" } else { name };
        PluginError::MalformedResponse(format!("provider_a: unexpected {name} event: {e}"))
    };
    let mut value: Value = serde_json::from_str(data).map_err(malformed)?;
    if let Some(object) = value.as_object_mut()
        && !object.contains_key("type")
        && !name.is_empty()
    {
        object.insert("type".into(), name.into());
    }
    serde_json::from_value(value).map_err(malformed)
}

/// A finished `function_call` item as a tool call; `None` for other items and cut calls.
fn tool_call(item: &wire::OutputItem) -> Option<ToolCall> {
    let wire::OutputItem::FunctionCall {
        call_id,
        id,
        name,
        arguments,
        status,
    } = item
    else {
        return None;
    };
    if status.as_deref() == Some("incomplete") {
        return None;
    }
    Some(ToolCall {
        id: call_id.clone().or_else(|| id.clone()).unwrap_or_default(),
        name: name.clone(),
        arguments_json: if arguments.trim().is_empty() {
            "{}".into()
        } else {
            arguments.clone()
        },
    })
}

/// The end of a turn: pushes the usage and the continuation, and says why it stopped (or how it
/// failed).
fn closing(
    response: &wire::Response,
    tool_calls: usize,
    may_continue: bool,
    events: &mut Vec<TurnEvent>,
) -> Result<FinishReason, PluginError> {
    let status = response.status.as_deref().unwrap_or("completed");
    if status == "failed" || response.error.is_some() {
        let error = response.error.as_ref();
        return Err(upstream(
            error.and_then(|e| e.code.clone().and_then(code_text).or(e.kind.clone())),
            error
                .and_then(|e| e.message.clone())
                .or_else(|| Some("the response failed".into())),
        ));
    }
    if let Some(usage) = &response.usage {
        events.push(TurnEvent::Usage(Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            total_tokens: usage
                .total_tokens
                .unwrap_or(usage.input_tokens + usage.output_tokens),
        }));
    }
    if may_continue && let Some(id) = response.id.as_ref().filter(|id| !id.is_empty()) {
        events.push(TurnEvent::Continuation(id.clone()));
    }
    Ok(if tool_calls > 0 {
        FinishReason::ToolCalls
    } else {
        match status {
            "completed" => FinishReason::Stop,
            "incomplete" => match response
                .incomplete_details
                .as_ref()
                .and_then(|d| d.reason.as_deref())
            {
                Some("max_output_tokens") => FinishReason::Length,
                Some("content_filter") => FinishReason::ContentFilter,
                _ => FinishReason::Other,
            },
            _ => FinishReason::Other,
        }
    })
}

/// An error code as text (`null` and empty codes are none).
fn code_text(code: Value) -> Option<String> {
    match code {
        Value::String(s) if !s.is_empty() => Some(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An error reported inside a 200 response: `code: message`.
fn upstream(kind: Option<String>, message: Option<String>) -> PluginError {
    let message = match (kind, message.filter(|m| !m.trim().is_empty())) {
        (Some(kind), Some(message)) => format!("{kind}: {message}"),
        (None, Some(message)) => message,
        (Some(kind), None) => kind,
        (None, None) => "the upstream reported an error without a message".into(),
    };
    PluginError::Upstream(UpstreamError { status: 0, message })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chatd_plugin_sdk::testing::{replay_sse, summary};

    macro_rules! fixture {
        ($name:literal) => {
            include_str!(concat!(
                "../../../tests/fixtures/upstream/openai_responses/",
                $name
            ))
        };
    }

    /// Runs a recorded stream through [`Stream`] as the host does: stops at the terminal
    /// event, or at the first error.
    fn run(sse: &str, may_continue: bool) -> (Vec<TurnEvent>, Result<FinishReason, PluginError>) {
        let out = replay_sse(Stream::new(may_continue), sse);
        (out.events, out.outcome.map(|o| o.finish))
    }

    fn upstream_message(result: Result<FinishReason, PluginError>) -> String {
        match result {
            Err(PluginError::Upstream(e)) => {
                assert_eq!(e.status, 0);
                e.message
            }
            other => panic!("expected an upstream error, got {other:?}"),
        }
    }

    const QUOTA: &str = "insufficient_quota: You exceeded your current quota, please check your \
                         plan and billing details. For more information on this error, read the \
                         docs: https://platform.openai.com/docs/guides/error-codes/api-errors.";

    #[test]
    fn streamed_text() {
        let (events, finish) = run(fixture!("02_stream_text.response.sse"), false);
        assert_eq!(finish.unwrap(), FinishReason::Stop);
        let deltas = events
            .iter()
            .filter(|e| matches!(e, TurnEvent::TextDelta(_)))
            .count();
        assert_eq!(deltas, 9);
        assert_eq!(
            summary(&events),
            (
                "Hello! How can I assist you today?".into(),
                vec!["usage 11+10=21".into()]
            )
        );
    }

    #[test]
    fn streamed_function_call() {
        let (events, finish) = run(fixture!("03_stream_function_call.response.sse"), false);
        assert_eq!(finish.unwrap(), FinishReason::ToolCalls);
        assert_eq!(
            summary(&events),
            (
                String::new(),
                vec![
                    r#"call call_0UFGPwrziw5rbinYp7rthrTb get_weather_at_location {"location":"San Francisco, CA"}"#.into(),
                    "usage 74+20=94".into(),
                ]
            )
        );
    }

    #[test]
    fn streamed_tool_loop_in_the_2025_03_format_with_continuation() {
        let (events, finish) = run(
            fixture!("04a_stream_function_call_legacy_2025_03.response.sse"),
            true,
        );
        assert_eq!(finish.unwrap(), FinishReason::ToolCalls);
        assert_eq!(
            summary(&events).1,
            vec![
                r#"call call_kL0PCQV7M2WMoVX8V8OtYSAL get_capital {"country":"France"}"#,
                "usage 255+16=271",
                "continue resp_67e554a155508191900ee113293c4c830794405d35281ae2",
            ]
        );

        let (events, finish) = run(
            fixture!("04b_stream_after_function_call_output_legacy_2025_03.response.sse"),
            false,
        );
        assert_eq!(finish.unwrap(), FinishReason::Stop);
        assert_eq!(
            summary(&events),
            (
                "The capital of France is Paris.".into(),
                vec!["usage 278+9=287".into()]
            )
        );
    }

    #[test]
    fn streamed_reasoning_is_skipped() {
        let (events, finish) = run(
            fixture!("05_stream_reasoning_encrypted_then_function_call.response.sse"),
            true,
        );
        assert_eq!(finish.unwrap(), FinishReason::ToolCalls);
        assert_eq!(
            summary(&events),
            (
                String::new(),
                vec![
                    r#"call call_CWXgs68YprAjp6t0371hiPOI final_result {"result":6666}"#.into(),
                    "usage 53+469=522".into(),
                    "continue resp_0050471a34b36ae60068c97b94a480819587a9d70cf2979b33".into(),
                ]
            )
        );

        let (events, finish) = run(
            fixture!("06_stream_reasoning_summary_function_call.RECONSTRUCTED.response.sse"),
            false,
        );
        assert_eq!(finish.unwrap(), FinishReason::ToolCalls);
        assert_eq!(
            summary(&events),
            (
                String::new(),
                vec![
                    r#"call call_AB6AaRZ1FYZB2RwS6A5vbdqn calculator {"a":12,"b":7,"op":"add"}"#
                        .into(),
                    "usage 134+28=162".into(),
                ]
            )
        );
    }

    #[test]
    fn a_nested_error_event_fails_the_turn() {
        let (events, result) = run(
            fixture!("07_stream_error_event_insufficient_quota.RECONSTRUCTED.response.sse"),
            false,
        );
        assert!(events.is_empty());
        assert_eq!(upstream_message(result), QUOTA);
    }

    #[test]
    fn response_failed_fails_the_turn() {
        // The recorded stream without its error event: response.failed alone ends it.
        let sse: String =
            fixture!("07_stream_error_event_insufficient_quota.RECONSTRUCTED.response.sse")
                .split("\n\n")
                .filter(|event| !event.starts_with("event: error"))
                .map(|event| format!("{event}\n\n"))
                .collect();
        assert!(sse.contains("response.failed"));
        let (events, result) = run(&sse, false);
        assert!(events.is_empty());
        assert_eq!(upstream_message(result), QUOTA);

        let (_, result) = run(
            "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"r\",\"status\":\"failed\",\"error\":null}}\n\n",
            false,
        );
        assert_eq!(upstream_message(result), "the response failed");
    }

    #[test]
    fn a_top_level_error_event_fails_the_turn() {
        // The documented shape (openai-python ResponseErrorEvent), after some text.
        let sse = "event: response.output_text.delta\n\
                   data: {\"type\":\"response.output_text.delta\",\"delta\":\"Hel\"}\n\n\
                   event: error\n\
                   data: {\"type\":\"error\",\"sequence_number\":5,\"code\":\"server_is_overloaded\",\"message\":\"The server is overloaded.\",\"param\":null}\n\n";
        let (events, result) = run(sse, false);
        assert_eq!(summary(&events).0, "Hel");
        assert_eq!(
            upstream_message(result),
            "server_is_overloaded: The server is overloaded."
        );

        let (_, result) = run(
            "event: error\ndata: {\"type\":\"error\",\"code\":null,\"message\":\"Boom\"}\n\n",
            false,
        );
        assert_eq!(upstream_message(result), "Boom");
        let (_, result) = run("event: error\ndata: {\"type\":\"error\"}\n\n", false);
        assert_eq!(
            upstream_message(result),
            "the upstream reported an error without a message"
        );
    }

    fn incomplete(reason: &str, output: &str) -> String {
        format!(
            "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"delta\":\"Mango\"}}\n\n\
             event: response.output_item.done\ndata: {{\"type\":\"response.output_item.done\",\"item\":{output}}}\n\n\
             event: response.incomplete\ndata: {{\"type\":\"response.incomplete\",\"response\":{{\"id\":\"resp_9\",\"status\":\"incomplete\",\"incomplete_details\":{{\"reason\":\"{reason}\"}},\"usage\":{{\"input_tokens\":14,\"output_tokens\":20,\"total_tokens\":34}}}}}}\n\n"
        )
    }

    #[test]
    fn response_incomplete_gives_its_reason() {
        let cut_call = r#"{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{\"a\":","status":"incomplete"}"#;
        let (events, finish) = run(&incomplete("max_output_tokens", cut_call), true);
        assert_eq!(finish.unwrap(), FinishReason::Length);
        assert_eq!(
            summary(&events),
            (
                "Mango".into(),
                vec!["usage 14+20=34".into(), "continue resp_9".into()]
            )
        );
        let message = r#"{"type":"message","content":[]}"#;
        let (_, finish) = run(&incomplete("content_filter", message), false);
        assert_eq!(finish.unwrap(), FinishReason::ContentFilter);
        let (_, finish) = run(&incomplete("something_new", message), false);
        assert_eq!(finish.unwrap(), FinishReason::Other);
    }

    #[test]
    fn a_stream_cut_before_its_end_is_a_transport_error() {
        let whole = fixture!("02_stream_text.response.sse");
        let cut = &whole[..whole.find("event: response.completed").unwrap()];
        let (events, result) = run(cut, false);
        assert_eq!(summary(&events).0, "Hello! How can I assist you today?");
        match result {
            Err(PluginError::Transport(why)) => assert!(why.contains("ended"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Cut inside the terminal event: its data never completed.
        let cut = &whole[..whole.len() - 10];
        assert!(matches!(run(cut, false).1, Err(PluginError::Transport(_))));
    }

    #[test]
    fn unparseable_data_is_malformed_and_done_markers_and_unknown_events_pass() {
        let (_, result) = run("event: response.output_text.delta\ndata: {nope\n\n", false);
        assert!(matches!(result, Err(PluginError::MalformedResponse(_))));
        let (_, result) = run(
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\"}\n\n",
            false,
        );
        assert!(matches!(result, Err(PluginError::MalformedResponse(_))));
        // Data-only events are named by their type; unknown ones and [DONE] are skipped.
        let sse = "data: {\"type\":\"response.something_new\",\"x\":1}\n\n\
                   data: {\"type\":\"response.output_text.delta\",\"delta\":\"ok\"}\n\n\
                   data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\"}}\n\n\
                   data: [DONE]\n\n";
        let (events, finish) = run(sse, false);
        assert_eq!(finish.unwrap(), FinishReason::Stop);
        assert_eq!(summary(&events), ("ok".into(), vec![]));
        // An event without a type takes the SSE event name.
        let mut stream = Stream::new(false);
        let events = stream
            .feed("response.output_text.delta", "{\"delta\":\"named\"}")
            .unwrap();
        assert_eq!(summary(&events).0, "named");
    }

    #[test]
    fn nothing_is_taken_after_the_end() {
        let mut stream = Stream::new(false);
        stream
            .feed(
                "response.completed",
                r#"{"type":"response.completed","response":{"status":"completed"}}"#,
            )
            .unwrap();
        let after = stream
            .feed(
                "response.output_text.delta",
                r#"{"type":"response.output_text.delta","delta":"late"}"#,
            )
            .unwrap();
        assert!(after.is_empty());
        assert_eq!(stream.end().unwrap(), FinishReason::Stop);
    }

    fn whole(body: &str, may_continue: bool) -> (String, Vec<String>, FinishReason) {
        let (events, finish) = parse_response(body, may_continue).unwrap();
        let (text, others) = summary(&events);
        (text, others, finish)
    }

    #[test]
    fn whole_text_responses() {
        assert_eq!(
            whole(fixture!("01_nonstream_text.response.json"), false),
            (
                "Ahoy! How can I help you today?".into(),
                vec!["usage 23+89=112".into()],
                FinishReason::Stop
            )
        );
        assert_eq!(
            whole(
                fixture!("01b_nonstream_text_gpt4o_mini.response.json"),
                false
            ),
            (
                "It looks like you're testing the system! How can I assist you today?".into(),
                vec!["usage 12+16=28".into()],
                FinishReason::Stop
            )
        );
    }

    #[test]
    fn whole_function_call_then_answer() {
        assert_eq!(
            whole(fixture!("08a_nonstream_function_call.response.json"), true),
            (
                String::new(),
                vec![
                    r#"call call_S2X9KuEJpYvFcF4hgv1XwM0j get_weather_at_location {"location":"San Francisco, CA"}"#.into(),
                    "usage 74+20=94".into(),
                    "continue resp_0df7c3d8927b3a940068c9ef43dce481949ab7ac4c9f676d61".into(),
                ],
                FinishReason::ToolCalls
            )
        );
        let (text, others, finish) = whole(
            fixture!("08b_nonstream_after_function_call_output.response.json"),
            false,
        );
        assert!(text.starts_with("The weather in San Francisco is currently about 22°C (72°F)"));
        assert!(text.ends_with("Enjoy your time in San Francisco!"));
        assert_eq!(others, vec!["usage 109+156=265"]);
        assert_eq!(finish, FinishReason::Stop);
    }

    #[test]
    fn whole_reasoning_responses_give_only_the_answer() {
        let (text, others, finish) = whole(
            fixture!("09a_nonstream_reasoning_encrypted_store_false.response.json"),
            false,
        );
        assert_eq!(text, "Hello! How can I help you today?");
        assert_eq!(others, vec!["usage 10+15=25"]);
        assert_eq!(finish, FinishReason::Stop);

        let (text, others, _) = whole(
            fixture!("09b_nonstream_reasoning_summary_auto.response.json"),
            false,
        );
        assert!(text.starts_with("```python\ndef factorial(n: int) -> int:"));
        assert!(!text.contains("Generating factorial function"));
        assert_eq!(others, vec!["usage 34+226=260"]);

        let (text, others, finish) = whole(
            fixture!("09c_nonstream_reasoning_summary_detailed_2026_compact.response.json"),
            true,
        );
        assert!(text.starts_with("For a tight, leak-resistant burrito:"));
        assert!(!text.contains("Creating clear instructions"));
        assert_eq!(
            others,
            vec![
                "usage 30+221=251",
                "continue resp_0cc0a58be930d768006a7cced25fbc819e8fa80571fbf90047"
            ]
        );
        assert_eq!(finish, FinishReason::Stop);
    }

    #[test]
    fn whole_incomplete_response_is_length() {
        assert_eq!(
            whole(
                fixture!("10_nonstream_incomplete_max_output_tokens.response.json"),
                false
            ),
            (
                "Mango sun-kissed sweet,  \nGolden nectar drips like rain,  \nSummer's bliss revealed"
                    .into(),
                vec!["usage 14+20=34".into()],
                FinishReason::Length
            )
        );
    }

    #[test]
    fn whole_failed_or_unreadable_responses() {
        let failed = r#"{"id":"r","status":"failed","error":{"code":"server_error","message":"Oops"},"output":[]}"#;
        assert_eq!(
            upstream_message(parse_response(failed, false).map(|(_, f)| f)),
            "server_error: Oops"
        );
        assert!(matches!(
            parse_response("<html>", false),
            Err(PluginError::MalformedResponse(_))
        ));
        assert!(matches!(
            parse_response(
                r#"{"output":[{"type":"function_call","call_id":"c"}]}"#,
                false
            ),
            Err(PluginError::MalformedResponse(_))
        ));
        // Refusals are the answer; missing usage means no usage event; empty arguments are "{}".
        let body = r#"{"id":"r","status":"completed","output":[
            {"type":"message","content":[{"type":"refusal","refusal":"I can't help with that."}]},
            {"type":"function_call","call_id":"c","name":"n","arguments":""}]}"#;
        assert_eq!(
            whole(body, false),
            (
                "I can't help with that.".into(),
                vec!["call c n {}".into()],
                FinishReason::ToolCalls
            )
        );
    }

    #[test]
    fn http_error_bodies_give_their_message() {
        // Errors before any output are HTTP statuses; the SDK's error_for_status reads them.
        for (body, message) in [
            (
                fixture!("07b_error_insufficient_quota.response.json"),
                "You exceeded your current quota",
            ),
            (
                fixture!("11_error_400_invalid_temperature.response.json"),
                "Invalid 'temperature': decimal below minimum value.",
            ),
            (
                fixture!("12_error_401_invalid_api_key.response.json"),
                "Incorrect API key provided: invalid-key.",
            ),
            (
                fixture!("13_error_400_context_length_exceeded.response.json"),
                "Your input exceeds the context window of this model.",
            ),
        ] {
            let found = chatd_plugin_sdk::host::error_message(body.as_bytes()).unwrap();
            assert!(found.starts_with(message), "{found}");
        }
    }
}
