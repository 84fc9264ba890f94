//! From the upstream's answer to [`TurnEvent`]s and a [`FinishReason`], streamed ([`Stream`], fed
//! one server-sent event at a time) or whole ([`parse_message`]). Both are pure, so they are
//! tested against the recordings.
//!
//! * Text: each `text_delta` as it comes; whole `text` blocks when not streaming.
//! * Tool calls: a `tool_use` block's `input_json_delta` pieces are collected and, at its
//!   `content_block_stop`, emitted as one call (`{}` when there were none). Arguments are
//!   re-serialised compactly, streamed or not, so they read the same either way. A block whose
//!   JSON does not parse is malformed, unless the output limit cut it (`stop_reason:
//!   max_tokens`): then it is dropped and the turn ends with `Length`.
//! * Usage: input tokens from `message_start` (updated by `message_delta` when it repeats them),
//!   output tokens from `message_delta`, emitted once at `message_stop`. Input counts the prompt
//!   tokens read from and written to the cache too, as the other providers count them.
//! * Finish (at `message_stop`): `ToolCalls` when the turn made calls, else by `stop_reason`:
//!   `end_turn`/`stop_sequence` → `Stop`, `max_tokens`/`model_context_window_exceeded` →
//!   `Length`, `refusal` → `ContentFilter`, anything else (`pause_turn`…) → `Other`.
//! * An `error` event is [`PluginError::Upstream`] with status 0 (`overloaded_error: Overloaded`).
//! * Thinking, server tools and their results, `ping` and unknown events are ignored. A stream
//!   that ends before `message_stop` was cut.

use chatd_plugin_sdk::provider::TurnStream;
use chatd_plugin_sdk::sse::Event;
use std::collections::BTreeMap;

use chatd_plugin_sdk::host::{PluginError, ToolCall, UpstreamError, Usage};
use chatd_plugin_sdk::provider::{FinishReason, TurnEvent};
use serde_json::Value;

use crate::wire;

/// A `tool_use` block being received.
#[derive(Debug)]
struct PendingCall {
    id: String,
    name: String,
    /// The `input` of `content_block_start` (`{}` when streaming).
    start: Value,
    json: String,
}

/// The state of one streamed turn.
#[derive(Debug, Default)]
pub struct Stream {
    tokens: Tokens,
    stop_reason: Option<String>,
    pending: BTreeMap<u64, PendingCall>,
    tool_calls: usize,
    /// Why a tool call's arguments could not be read, if one's could not.
    cut_call: Option<String>,
    finish: Option<FinishReason>,
}

impl Stream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one event (its SSE name and data) and returns the turn events it produced.
    pub fn feed(&mut self, name: &str, data: &str) -> Result<Vec<TurnEvent>, PluginError> {
        if self.finish.is_some() {
            return Ok(Vec::new());
        }
        let mut events = Vec::new();
        match decode(name, data)? {
            wire::Event::MessageStart { message } => {
                if let Some(usage) = &message.usage {
                    self.tokens.absorb(usage);
                }
            }
            wire::Event::BlockStart {
                index,
                content_block,
            } => match content_block {
                wire::Block::Text { text } if !text.is_empty() => {
                    events.push(TurnEvent::TextDelta(text))
                }
                wire::Block::ToolUse { id, name, input } => {
                    self.pending.insert(
                        index,
                        PendingCall {
                            id,
                            name,
                            start: input,
                            json: String::new(),
                        },
                    );
                }
                _ => {}
            },
            wire::Event::BlockDelta { index, delta } => match delta {
                wire::Delta::Text { text } if !text.is_empty() => {
                    events.push(TurnEvent::TextDelta(text))
                }
                wire::Delta::InputJson { partial_json } => {
                    if let Some(call) = self.pending.get_mut(&index) {
                        call.json.push_str(&partial_json);
                    }
                }
                _ => {}
            },
            wire::Event::BlockStop { index } => {
                if let Some(call) = self.pending.remove(&index) {
                    let input = if call.json.trim().is_empty() {
                        Ok(call.start)
                    } else {
                        serde_json::from_str(&call.json).map_err(|e| e.to_string())
                    };
                    match input.and_then(|input| arguments(&input)) {
                        Ok(arguments_json) => {
                            self.tool_calls += 1;
                            events.push(TurnEvent::ToolCall(ToolCall {
                                id: call.id,
                                name: call.name,
                                arguments_json,
                            }));
                        }
                        Err(why) => {
                            self.cut_call.get_or_insert(format!(
                                "provider_b: the arguments of tool call {} ({}) are not a JSON \
                                 object: {why}",
                                call.id, call.name
                            ));
                        }
                    }
                }
            }
            wire::Event::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(usage) = &usage {
                    self.tokens.absorb(usage);
                }
            }
            wire::Event::MessageStop => {
                let stop_reason = self.stop_reason.as_deref();
                if let Some(why) = &self.cut_call
                    && stop_reason != Some("max_tokens")
                {
                    return Err(PluginError::MalformedResponse(why.clone()));
                }
                if let Some(usage) = self.tokens.usage() {
                    events.push(TurnEvent::Usage(usage));
                }
                self.finish = Some(finish(self.tool_calls, stop_reason));
            }
            wire::Event::Error { error } => return Err(upstream(error)),
            wire::Event::Other => {}
        }
        Ok(events)
    }

    /// The finish reason, once `message_stop` is in: the caller stops reading there.
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

/// A whole (non-streaming) Message body: its events and finish reason.
pub fn parse_message(body: &str) -> Result<(Vec<TurnEvent>, FinishReason), PluginError> {
    #[derive(serde::Deserialize)]
    struct Body {
        #[serde(default, rename = "type")]
        kind: Option<String>,
        #[serde(default)]
        error: Option<wire::ApiError>,
        #[serde(flatten)]
        message: wire::Message,
    }
    let malformed = |why: String| {
        PluginError::MalformedResponse(format!("provider_b: unexpected message body: {why}"))
    };
    let body: Body = serde_json::from_str(body).map_err(|e| malformed(e.to_string()))?;
    if body.kind.as_deref() == Some("error") {
        return Err(upstream(body.error.unwrap_or_default()));
    }
    let mut events = Vec::new();
    let mut tool_calls = 0;
    for block in body.message.content {
        match block {
            wire::Block::Text { text } if !text.is_empty() => {
                events.push(TurnEvent::TextDelta(text))
            }
            wire::Block::ToolUse { id, name, input } => {
                let arguments_json = arguments(&input).map_err(|why| {
                    malformed(format!("the arguments of tool call {id} ({name}): {why}"))
                })?;
                tool_calls += 1;
                events.push(TurnEvent::ToolCall(ToolCall {
                    id,
                    name,
                    arguments_json,
                }));
            }
            _ => {}
        }
    }
    let mut tokens = Tokens::default();
    if let Some(usage) = &body.message.usage {
        tokens.absorb(usage);
    }
    if let Some(usage) = tokens.usage() {
        events.push(TurnEvent::Usage(usage));
    }
    let finish = finish(tool_calls, body.message.stop_reason.as_deref());
    Ok((events, finish))
}

/// Parses an event's data; its `type` names it, or the SSE event name when the data has none.
fn decode(name: &str, data: &str) -> Result<wire::Event, PluginError> {
    let malformed = |e: serde_json::Error| {
        let name = if name.is_empty() { "message" } else { name };
        PluginError::MalformedResponse(format!("provider_b: unexpected {name} event: {e}"))
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

/// A tool call's input as compact JSON text; it must be an object (`null` counts as `{}`).
fn arguments(input: &Value) -> Result<String, String> {
    match input {
        Value::Object(_) => Ok(input.to_string()),
        Value::Null => Ok("{}".into()),
        other => Err(format!("got {other}")),
    }
}

fn finish(tool_calls: usize, stop_reason: Option<&str>) -> FinishReason {
    if tool_calls > 0 {
        return FinishReason::ToolCalls;
    }
    match stop_reason {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

/// An error reported inside a 200 response: `type: message`.
fn upstream(error: wire::ApiError) -> PluginError {
    let message = match (error.kind, error.message.filter(|m| !m.trim().is_empty())) {
        (Some(kind), Some(message)) => format!("{kind}: {message}"),
        (None, Some(message)) => message,
        (Some(kind), None) => kind,
        (None, None) => "the upstream reported an error without a message".into(),
    };
    PluginError::Upstream(UpstreamError { status: 0, message })
}

/// The token counts seen so far.
#[derive(Debug, Default)]
struct Tokens {
    seen: bool,
    input: u64,
    cache_creation: u64,
    cache_read: u64,
    output: u64,
}

impl Tokens {
    /// Takes the figures a usage object has (later ones are cumulative, so they replace).
    fn absorb(&mut self, usage: &wire::Usage) {
        let mut set = |field: &mut u64, value: Option<u64>| {
            if let Some(value) = value {
                *field = value;
                self.seen = true;
            }
        };
        set(&mut self.input, usage.input_tokens);
        set(&mut self.cache_creation, usage.cache_creation_input_tokens);
        set(&mut self.cache_read, usage.cache_read_input_tokens);
        set(&mut self.output, usage.output_tokens);
    }

    fn usage(&self) -> Option<Usage> {
        let input = self.input + self.cache_creation + self.cache_read;
        self.seen.then_some(Usage {
            input_tokens: input,
            output_tokens: self.output,
            total_tokens: input + self.output,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chatd_plugin_sdk::testing::{replay_sse, summary};

    macro_rules! fixture {
        ($name:literal) => {
            include_str!(concat!(
                "../../../tests/fixtures/upstream/anthropic_messages/",
                $name
            ))
        };
    }

    /// Runs a recorded stream through [`Stream`] as the host does: stops at the terminal
    /// event, or at the first error.
    fn run(sse: &str) -> (Vec<TurnEvent>, Result<FinishReason, PluginError>) {
        let out = replay_sse(Stream::new(), sse);
        (out.events, out.outcome.map(|o| o.finish))
    }

    #[test]
    fn streamed_text() {
        let (events, finish) = run(fixture!("04_stream_text.response.sse"));
        assert_eq!(finish.unwrap(), FinishReason::Stop);
        assert_eq!(
            summary(&events),
            ("1\n2\n3".into(), vec!["usage 15+9=24".into()])
        );

        let (events, finish) = run(fixture!("08_stream_text_short.response.sse"));
        assert_eq!(finish.unwrap(), FinishReason::Stop);
        assert_eq!(summary(&events), ("2".into(), vec!["usage 20+5=25".into()]));
    }

    #[test]
    fn streamed_tool_use_then_answer() {
        let (events, finish) = run(fixture!("05a_stream_tool_use.response.sse"));
        assert_eq!(finish.unwrap(), FinishReason::ToolCalls);
        assert_eq!(
            summary(&events),
            (
                String::new(),
                vec![
                    r#"call toolu_01MKSN7NHsBVKr7Jvw5pqCQq weather {"latitude":"52.5200","longitude":"13.4050"}"#.into(),
                    "usage 633+75=708".into(),
                ]
            )
        );

        let (events, finish) = run(fixture!("05b_stream_after_tool_result.response.sse"));
        assert_eq!(finish.unwrap(), FinishReason::Stop);
        assert_eq!(events.len(), 4);
        assert_eq!(
            summary(&events),
            (
                "The weather in Berlin is currently:\n- **Temperature:** 15°C\n- **Wind:** 10 km/h\n\n\
                 It's relatively mild with a light breeze. Perfect for a walk around the city!"
                    .into(),
                vec!["usage 748+49=797".into()]
            )
        );
    }

    #[test]
    fn streamed_thinking_is_skipped() {
        let (events, finish) = run(fixture!("06_stream_thinking.response.sse"));
        assert_eq!(finish.unwrap(), FinishReason::Stop);
        let (text, others) = summary(&events);
        assert!(
            text.starts_with("I'd ask: **\"What would you say if I asked you this question?\"**")
        );
        assert!(text.ends_with("What draws you to this paradox?"));
        assert_eq!(events.len(), 13);
        assert_eq!(others, vec!["usage 80+638=718"]);
    }

    #[test]
    fn streamed_server_tools_are_skipped_and_client_calls_kept() {
        let (events, finish) = run(fixture!(
            "07_stream_text_server_tool_and_tool_use.response.sse"
        ));
        assert_eq!(finish.unwrap(), FinishReason::ToolCalls);
        assert_eq!(
            summary(&events),
            (
                "Let me search for a tool that can provide current exchange rate information.\
                 I found the right tool! Let me fetch the current USD to EUR exchange rate for you."
                    .into(),
                vec![
                    r#"call toolu_01EFn5wTNBYA8Reni8rbmnHT get_exchange_rate {"from_currency":"USD","to_currency":"EUR"}"#.into(),
                    "usage 1591+175=1766".into(),
                ]
            )
        );
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

    #[test]
    fn an_error_event_fails_the_turn() {
        // The documented overloaded_error, mid-stream after some text.
        let whole = fixture!("04_stream_text.response.sse");
        let before = &whole[..whole.find("event: content_block_stop").unwrap()];
        let sse = format!(
            "{before}event: error\ndata: {{\"type\": \"error\", \"error\": {{\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}}}\n\n"
        );
        let (events, result) = run(&sse);
        assert_eq!(summary(&events).0, "1\n2\n3");
        assert_eq!(upstream_message(result), "overloaded_error: Overloaded");
        let (_, result) = run("event: error\ndata: {\"type\":\"error\",\"error\":{}}\n\n");
        assert_eq!(
            upstream_message(result),
            "the upstream reported an error without a message"
        );
    }

    #[test]
    fn a_stream_cut_before_message_stop_is_a_transport_error() {
        let whole = fixture!("05a_stream_tool_use.response.sse");
        let cut = &whole[..whole.find("event: message_stop").unwrap()];
        let (events, result) = run(cut);
        assert_eq!(summary(&events).1.len(), 1, "the call was complete");
        match result {
            Err(PluginError::Transport(why)) => assert!(why.contains("ended"), "{why}"),
            other => panic!("{other:?}"),
        }
        let cut = &whole[..whole.find("event: content_block_stop").unwrap()];
        let (events, result) = run(cut);
        assert!(events.is_empty());
        assert!(matches!(result, Err(PluginError::Transport(_))));
    }

    /// A stream whose one tool call has the JSON `args`, ending with `stop_reason`.
    fn one_call(args: &str, stop_reason: &str) -> String {
        let args = serde_json::to_string(args).unwrap();
        format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"usage\":{{\"input_tokens\":10,\"cache_creation_input_tokens\":5,\"cache_read_input_tokens\":100,\"output_tokens\":1}}}}}}\n\n\
             event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{{}}}}}}\n\n\
             event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":{args}}}}}\n\n\
             event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
             event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{stop_reason}\"}},\"usage\":{{\"output_tokens\":7}}}}\n\n\
             event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        )
    }

    #[test]
    fn tool_call_arguments() {
        // No deltas: "{}"; cache tokens count as input.
        let (events, finish) = run(&one_call("", "tool_use"));
        assert_eq!(finish.unwrap(), FinishReason::ToolCalls);
        assert_eq!(
            summary(&events).1,
            vec!["call toolu_1 f {}", "usage 115+7=122"]
        );
        // Malformed JSON is malformed…
        let (events, result) = run(&one_call("{\"a\":", "tool_use"));
        assert!(events.is_empty());
        match result {
            Err(PluginError::MalformedResponse(why)) => assert!(why.contains("toolu_1"), "{why}"),
            other => panic!("{other:?}"),
        }
        let (_, result) = run(&one_call("[1]", "tool_use"));
        assert!(matches!(result, Err(PluginError::MalformedResponse(_))));
        // …unless the output limit cut it: the call is dropped, the turn hit its length.
        let (events, finish) = run(&one_call("{\"a\":", "max_tokens"));
        assert_eq!(finish.unwrap(), FinishReason::Length);
        assert_eq!(summary(&events).1, vec!["usage 115+7=122"]);
    }

    #[test]
    fn stop_reasons() {
        for (reason, expected) in [
            ("end_turn", FinishReason::Stop),
            ("stop_sequence", FinishReason::Stop),
            ("tool_use", FinishReason::ToolCalls),
            ("max_tokens", FinishReason::Length),
            ("model_context_window_exceeded", FinishReason::Length),
            ("refusal", FinishReason::ContentFilter),
            ("pause_turn", FinishReason::Other),
        ] {
            let sse = fixture!("08_stream_text_short.response.sse").replace(
                "\"stop_reason\":\"end_turn\"",
                &format!("\"stop_reason\":\"{reason}\""),
            );
            assert_eq!(run(&sse).1.unwrap(), expected, "{reason}");
        }
        assert_eq!(finish(0, None), FinishReason::Other);
        assert_eq!(finish(2, Some("max_tokens")), FinishReason::ToolCalls);
    }

    #[test]
    fn unparseable_unknown_and_late_events() {
        let (_, result) = run("event: content_block_delta\ndata: {oops\n\n");
        assert!(matches!(result, Err(PluginError::MalformedResponse(_))));
        let (_, result) =
            run("event: content_block_delta\ndata: {\"type\":\"content_block_delta\"}\n\n");
        assert!(matches!(result, Err(PluginError::MalformedResponse(_))));
        // Unknown events are skipped; data without a type takes the event name.
        let mut stream = Stream::new();
        assert!(
            stream
                .feed("brand_new", r#"{"type":"brand_new"}"#)
                .unwrap()
                .is_empty()
        );
        let events = stream
            .feed(
                "content_block_delta",
                r#"{"index":0,"delta":{"type":"text_delta","text":"hi"}}"#,
            )
            .unwrap();
        assert_eq!(summary(&events).0, "hi");
        stream.feed("message_stop", "{}").unwrap();
        assert_eq!(stream.end().unwrap(), FinishReason::Other);
        assert!(
            stream
                .feed("content_block_delta", "not even json")
                .unwrap()
                .is_empty()
        );
    }

    fn whole(body: &str) -> (String, Vec<String>, FinishReason) {
        let (events, finish) = parse_message(body).unwrap();
        let (text, others) = summary(&events);
        (text, others, finish)
    }

    #[test]
    fn whole_messages() {
        assert_eq!(
            whole(fixture!("01_nonstream_text.response.json")),
            (
                "2 + 2 = 4".into(),
                vec!["usage 16+13=29".into()],
                FinishReason::Stop
            )
        );
        assert_eq!(
            whole(fixture!("02a_nonstream_tool_use.response.json")),
            (
                String::new(),
                vec![
                    r#"call toolu_01Ay5KzhmQYMK53svGLaAxfc weather {"latitude":"52.5200","longitude":"13.4050"}"#.into(),
                    "usage 633+75=708".into(),
                ],
                FinishReason::ToolCalls
            )
        );
        let (text, others, finish) =
            whole(fixture!("02b_nonstream_after_tool_result.response.json"));
        assert!(text.starts_with("The weather in Berlin is currently:\n- **Temperature**: 15°C"));
        assert_eq!(others, vec!["usage 748+55=803"]);
        assert_eq!(finish, FinishReason::Stop);
        assert_eq!(
            whole(fixture!("03_nonstream_parallel_tool_use.response.json")),
            (
                String::new(),
                vec![
                    r#"call toolu_01TjHdHxyQNDy4DipRieJU5n weather {"latitude":"52.5200","longitude":"13.4050"}"#.into(),
                    "call toolu_01QHFWAkMuVLb3VgS4EDGUGY best_language_to_learn {}".into(),
                    "usage 701+98=799".into(),
                ],
                FinishReason::ToolCalls
            )
        );
    }

    #[test]
    fn whole_oddities() {
        assert!(matches!(
            parse_message("nope"),
            Err(PluginError::MalformedResponse(_))
        ));
        let bad_input = r#"{"content":[{"type":"tool_use","id":"t","name":"n","input":"x"}],"stop_reason":"tool_use"}"#;
        assert!(matches!(
            parse_message(bad_input),
            Err(PluginError::MalformedResponse(_))
        ));
        // An error body that arrived with a 2xx status.
        match parse_message(fixture!("09_error_401_authentication.response.json")) {
            Err(PluginError::Upstream(e)) => {
                assert_eq!(e.message, "authentication_error: invalid x-api-key")
            }
            other => panic!("{other:?}"),
        }
        // No usage, a thinking block, a refusal.
        let body = r#"{"content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"No."}],"stop_reason":"refusal"}"#;
        assert_eq!(
            whole(body),
            ("No.".into(), vec![], FinishReason::ContentFilter)
        );
    }

    #[test]
    fn http_error_bodies_give_their_message() {
        // Errors with a 4xx/5xx status: the SDK's error_for_status quotes /error/message.
        for (body, message) in [
            (
                fixture!("09_error_401_authentication.response.json"),
                "invalid x-api-key",
            ),
            (
                fixture!("10_error_400_prompt_too_long.response.json"),
                "prompt is too long: 3333404 tokens > 200000 maximum",
            ),
            (
                fixture!("11_error_404_not_found_model.response.json"),
                "model: claude-does-not-exist",
            ),
        ] {
            assert_eq!(
                chatd_plugin_sdk::host::error_message(body.as_bytes()).as_deref(),
                Some(message)
            );
        }
    }
}
