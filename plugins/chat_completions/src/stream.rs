//! A streamed response: a state machine fed one server-sent event at a time ([`Stream::push`]),
//! giving the turn events that event completed, then the turn's finish ([`Stream::finish`]).
//! The SDK's `Decoder` feeds it a response's events; everything here is pure, so the recordings
//! are replayed natively in the tests below.
//!
//! Text goes out as it arrives. Tool calls are assembled by `index` across chunks (the first
//! piece of an index has `id` and `function.name`, the others `function.arguments` pieces) and
//! go out whole, in index order, when the choice's `finish_reason` arrives or at `[DONE]`.
//! Text that arrives once a call has begun waits and goes out after the calls: a turn's events
//! keep the order the upstream began its items in (`turn-event` in the WIT), which is how the
//! host tells a round that began with a tool call. The
//! usage chunk (`choices: []`, asked with `stream_options.include_usage`) becomes a usage event.

use chatd_plugin_sdk::provider::TurnStream;
use std::collections::BTreeMap;

use chatd_plugin_sdk::host::{PluginError, ToolCall, UpstreamError};
use chatd_plugin_sdk::provider::{FinishReason, TurnEvent};
use chatd_plugin_sdk::sse::Event;

use crate::Flavor;
use crate::wire::{self, Chunk, ToolCallDelta};

/// The error a stream cut before its end gives.
pub const CUT: &str = "the stream ended before the response was complete";

/// The state of one streamed response.
#[derive(Debug)]
pub struct Stream {
    flavor: Flavor,
    /// Calls being assembled, by slot (the wire index, unless a server reused one).
    calls: BTreeMap<u32, PartialCall>,
    /// Wire index → the slot its pieces go to.
    slots: BTreeMap<u32, u32>,
    /// How many calls went out.
    emitted_calls: usize,
    /// Text that came after a call began, sent after the calls.
    held: String,
    /// The first `finish_reason` seen.
    finish_reason: Option<String>,
    /// `[DONE]` seen.
    done: bool,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl Stream {
    pub fn new(flavor: Flavor) -> Self {
        Self {
            flavor,
            calls: BTreeMap::new(),
            slots: BTreeMap::new(),
            emitted_calls: 0,
            held: String::new(),
            finish_reason: None,
            done: false,
        }
    }

    /// Takes one event; returns the turn events it completed, in order.
    pub fn push(&mut self, event: &Event) -> Result<Vec<TurnEvent>, PluginError> {
        if event.event == "error" {
            return Err(in_stream_error(event.data.as_bytes()));
        }
        if !self.flavor.parses_event(&event.event) {
            return Ok(Vec::new());
        }
        let data = event.data.trim();
        if data.is_empty() || self.done {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return self.flush();
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            PluginError::MalformedResponse(format!("a stream chunk is not valid JSON: {e}"))
        })?;
        if chunk.error.as_ref().is_some_and(|e| !e.is_null()) {
            return Err(in_stream_error(data.as_bytes()));
        }
        let mut out = Vec::new();
        let choices = chunk.choices.unwrap_or_default();
        // Only the first choice (index 0) is read: `n` is never asked for.
        if let Some(choice) = choices.into_iter().find(|c| c.index.unwrap_or(0) == 0) {
            if let Some(delta) = choice.delta {
                // Before this chunk's call pieces: a chunk that starts a call and carries text
                // had its text first.
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    if self.calls.is_empty() {
                        out.push(TurnEvent::TextDelta(text));
                    } else {
                        self.held.push_str(&text);
                    }
                }
                if self.flavor.returns_tool_calls() {
                    for (position, piece) in delta.tool_calls.unwrap_or_default().iter().enumerate()
                    {
                        self.add_piece(position as u32, piece);
                    }
                    if let Some(function) = delta.function_call {
                        self.add_piece(
                            0,
                            &ToolCallDelta {
                                index: Some(0),
                                id: None,
                                function: Some(function),
                            },
                        );
                    }
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason.get_or_insert(reason);
                out.extend(self.flush()?);
            }
        }
        if let Some(usage) = chunk.usage {
            out.push(TurnEvent::Usage(crate::usage(&usage)));
        }
        Ok(out)
    }

    /// The stream's end (after `[DONE]`, or when the body ended): why the model stopped. A
    /// stream that ended with neither `[DONE]` nor a finish reason was cut.
    pub fn finish(&mut self) -> Result<FinishReason, PluginError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(PluginError::Transport(CUT.into()));
        }
        if !self.calls.is_empty() {
            // A finish reason, then more call pieces, then the end without [DONE].
            return Err(PluginError::Transport(CUT.into()));
        }
        Ok(crate::finish_reason(
            self.finish_reason.as_deref(),
            self.emitted_calls > 0,
            self.flavor,
        ))
    }

    fn add_piece(&mut self, position: u32, piece: &ToolCallDelta) {
        let wire_index = piece.index.unwrap_or(position);
        let id = piece.id.as_deref().filter(|id| !id.is_empty());
        let mut slot = *self.slots.get(&wire_index).unwrap_or(&wire_index);
        // A new id at an index already in use: a server that numbers every call 0 (or none).
        if let (Some(id), Some(call)) = (id, self.calls.get(&slot))
            && !call.id.is_empty()
            && call.id != id
        {
            slot = self
                .calls
                .keys()
                .next_back()
                .map_or(0, |last| last + 1)
                .max(wire_index);
            while self.calls.contains_key(&slot) {
                slot += 1;
            }
        }
        self.slots.insert(wire_index, slot);
        let call = self.calls.entry(slot).or_default();
        if let Some(id) = id {
            call.id = id.to_string();
        }
        if let Some(function) = &piece.function {
            if let Some(name) = function.name.as_deref().filter(|n| !n.is_empty()) {
                call.name = name.to_string();
            }
            if let Some(arguments) = &function.arguments {
                match arguments {
                    serde_json::Value::String(text) => call.arguments.push_str(text),
                    other => call.arguments = wire::arguments_text(other),
                }
            }
        }
    }

    /// The assembled calls, in index order.
    fn flush(&mut self) -> Result<Vec<TurnEvent>, PluginError> {
        let calls = std::mem::take(&mut self.calls);
        self.slots.clear();
        let mut out = Vec::with_capacity(calls.len());
        for (slot, call) in calls {
            if call.name.is_empty() {
                return Err(PluginError::MalformedResponse(format!(
                    "the stream's tool call {slot} has no function name"
                )));
            }
            let id = if call.id.is_empty() {
                format!("call_{}", self.emitted_calls)
            } else {
                call.id
            };
            out.push(TurnEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments_json: if call.arguments.trim().is_empty() {
                    "{}".into()
                } else {
                    call.arguments
                },
            }));
            self.emitted_calls += 1;
        }
        if !self.held.is_empty() {
            out.push(TurnEvent::TextDelta(std::mem::take(&mut self.held)));
        }
        Ok(out)
    }
}

/// An error reported inside a stream: the message of its `error` object.
fn in_stream_error(data: &[u8]) -> PluginError {
    PluginError::Upstream(UpstreamError {
        status: 0,
        message: chatd_plugin_sdk::host::error_message(data)
            .unwrap_or_else(|| "the upstream reported an error in the stream".into()),
    })
}

impl TurnStream for Stream {
    fn push(&mut self, event: &Event) -> Result<Vec<TurnEvent>, PluginError> {
        Stream::push(self, event)
    }

    /// At `[DONE]` with every call complete; a `[DONE]` with calls still open reads on to the
    /// end of the body, where [`Stream::finish`] calls the stream cut.
    fn finished(&self) -> Option<FinishReason> {
        (self.done && self.calls.is_empty()).then(|| {
            crate::finish_reason(
                self.finish_reason.as_deref(),
                self.emitted_calls > 0,
                self.flavor,
            )
        })
    }

    fn end(&mut self) -> Result<FinishReason, PluginError> {
        self.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{Ev, evs};
    use chatd_plugin_sdk::provider::TurnOutcome;
    use chatd_plugin_sdk::testing::replay as replay_body;

    const TOOL_CALL: &str = include_str!(
        "../../../tests/fixtures/upstream/openai_chat/01_stream_tool_call_include_usage.response.sse"
    );
    const TEXT: &str = include_str!(
        "../../../tests/fixtures/upstream/openai_chat/02_stream_text_include_usage.response.sse"
    );
    const PARALLEL: &str = include_str!(
        "../../../tests/fixtures/upstream/openai_chat/03_stream_parallel_tool_calls.response.sse"
    );

    /// Replays a body through the SDK's decoder as the host feeds it, in `split`-byte chunks,
    /// up to the outcome.
    fn replay_split(
        body: &str,
        flavor: Flavor,
        split: usize,
    ) -> (Vec<Ev>, Result<TurnOutcome, PluginError>) {
        let decoder = chatd_plugin_sdk::codec::Decoder::new(true, Stream::new(flavor), |_| {
            unreachable!("a stream is not parsed whole")
        });
        let out = replay_body(decoder, "text/event-stream", body.as_bytes(), split);
        (evs(&out.events), out.outcome)
    }

    fn replay(body: &str, flavor: Flavor) -> (Vec<Ev>, Result<TurnOutcome, PluginError>) {
        replay_split(body, flavor, usize::MAX)
    }

    fn finish(outcome: Result<TurnOutcome, PluginError>) -> FinishReason {
        let outcome = outcome.unwrap();
        assert!(outcome.raw_json.is_none());
        outcome.finish
    }

    #[test]
    fn recorded_tool_call_stream() {
        let (events, outcome) = replay(TOOL_CALL, Flavor::Standard);
        assert_eq!(
            events,
            [
                Ev::call(
                    "call_ZR5UUuTt3pf61kjwAJIYdVMj",
                    "get_capital",
                    r#"{"country":"UK"}"#
                ),
                Ev::Usage(53, 15, 68),
            ]
        );
        assert_eq!(finish(outcome), FinishReason::ToolCalls);
    }

    #[test]
    fn recorded_text_stream() {
        let (events, outcome) = replay(TEXT, Flavor::Standard);
        // The first chunk's empty content is not an event.
        assert_eq!(
            events,
            [
                "The", " capital", " of", " the", " UK", " is", " London", "."
            ]
            .iter()
            .map(|t| Ev::Text(t.to_string()))
            .chain([Ev::Usage(78, 9, 87)])
            .collect::<Vec<_>>()
        );
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                Ev::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "The capital of the UK is London.");
        assert_eq!(finish(outcome), FinishReason::Stop);
    }

    #[test]
    fn recorded_parallel_tool_calls_come_in_index_order() {
        let (events, outcome) = replay(PARALLEL, Flavor::Standard);
        assert_eq!(
            events,
            [
                Ev::call(
                    "call_NS4iQj14cDFwc0BnrKqDHavt",
                    "get_weather",
                    r#"{"city": "Mexico City"}"#
                ),
                Ev::call("call_SkGkkGDvHQEEk0CGbnAh2AQw", "get_product_name", "{}"),
                Ev::Usage(417, 44, 461),
            ]
        );
        assert_eq!(finish(outcome), FinishReason::ToolCalls);
    }

    #[test]
    fn recordings_survive_any_chunking() {
        for body in [TOOL_CALL, TEXT, PARALLEL] {
            let whole = replay(body, Flavor::Standard);
            for split in [1, 2, 7, 64, 333] {
                let (events, outcome) = replay_split(body, Flavor::Standard, split);
                assert_eq!(events, whole.0, "split {split}");
                assert_eq!(outcome.unwrap().finish, whole.1.as_ref().unwrap().finish);
            }
        }
    }

    #[test]
    fn a_cut_stream_is_a_transport_error() {
        // The text recording, stopped before its finish chunk.
        let cut = TEXT.split("data: {\"id\":\"chatcmpl-Dx0Xq5Xx9rHB2ehcHZCRDsnuymUXc\",\"object\":\"chat.completion.chunk\",\"created\":1782955818,\"model\":\"gpt-4o-mini-2024-07-18\",\"service_tier\":\"default\",\"system_fingerprint\":\"fp_d0469e1700\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]").next().unwrap();
        assert!(cut.len() < TEXT.len());
        let (events, outcome) = replay(cut, Flavor::Standard);
        assert_eq!(events.len(), 8, "the text that came still went out");
        match outcome {
            Err(PluginError::Transport(why)) => assert_eq!(why, CUT),
            other => panic!("{other:?}"),
        }
        // The tool-call recording cut mid-arguments: no half call goes out.
        let cut = &TOOL_CALL[..TOOL_CALL.find("\"UK\"").unwrap()];
        let (events, outcome) = replay(cut, Flavor::Standard);
        assert!(events.is_empty(), "{events:?}");
        assert!(matches!(outcome, Err(PluginError::Transport(_))));
    }

    #[test]
    fn a_finish_without_done_is_complete() {
        let body = TEXT.replace("data: [DONE]\n\n", "");
        let (_, outcome) = replay(&body, Flavor::Standard);
        assert_eq!(finish(outcome), FinishReason::Stop);
    }

    #[test]
    fn done_without_a_finish_reason_flushes_the_calls() {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n\
                    data: [DONE]\n\n";
        let (events, outcome) = replay(body, Flavor::Standard);
        assert_eq!(events, [Ev::call("c1", "f", "{}")]);
        assert_eq!(finish(outcome), FinishReason::ToolCalls);
    }

    #[test]
    fn an_error_chunk_is_an_upstream_error() {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n\
                    data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n\
                    data: [DONE]\n\n";
        let (events, outcome) = replay(body, Flavor::Standard);
        assert_eq!(events, [Ev::Text("Hel".into())]);
        match outcome {
            Err(PluginError::Upstream(e)) => {
                assert_eq!(e.status, 0);
                assert_eq!(
                    e.message,
                    "The server had an error while processing your request."
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_error_event_is_an_upstream_error_for_both_flavors() {
        let body = "event: error\ndata: {\"error\":{\"message\":\"quota exceeded\"}}\n\n";
        for flavor in [Flavor::Standard, Flavor::Agent] {
            match replay(body, flavor).1 {
                Err(PluginError::Upstream(e)) => assert_eq!(e.message, "quota exceeded"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn malformed_data_is_a_malformed_response() {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]\n\n";
        assert!(matches!(
            replay(body, Flavor::Standard).1,
            Err(PluginError::MalformedResponse(_))
        ));
    }

    #[test]
    fn finish_reasons_map() {
        for (reason, expected) in [
            ("stop", FinishReason::Stop),
            ("length", FinishReason::Length),
            ("content_filter", FinishReason::ContentFilter),
            ("tool_calls", FinishReason::ToolCalls),
            ("function_call", FinishReason::ToolCalls),
            ("end_turn", FinishReason::Other),
        ] {
            let body = format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"x\"}},\"finish_reason\":\"{reason}\"}}]}}\n\ndata: [DONE]\n\n"
            );
            assert_eq!(
                finish(replay(&body, Flavor::Standard).1),
                expected,
                "{reason}"
            );
        }
    }

    #[test]
    fn calls_with_a_stop_reason_still_finish_as_tool_calls() {
        // Some servers (Ollama) say "stop" after tool calls.
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]}}]}\n\n\
                    data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
                    data: [DONE]\n\n";
        let (events, outcome) = replay(body, Flavor::Standard);
        assert_eq!(events, [Ev::call("c1", "f", r#"{"a":1}"#)]);
        assert_eq!(finish(outcome), FinishReason::ToolCalls);
    }

    #[test]
    fn calls_without_index_or_id_are_kept_apart() {
        // Whole calls, each alone in a chunk, all without `index` (some compatible servers).
        let body = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"n\\\":1}\"}}]}}]}\n\n\
                    data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"b\",\"function\":{\"name\":\"g\",\"arguments\":\"{\\\"n\\\":2}\"}}]}}]}\n\n\
                    data: {\"choices\":[{\"delta\":{\"function_call\":null},\"finish_reason\":\"tool_calls\"}]}\n\n";
        let (events, outcome) = replay(body, Flavor::Standard);
        assert_eq!(
            events,
            [
                Ev::call("a", "f", r#"{"n":1}"#),
                Ev::call("b", "g", r#"{"n":2}"#)
            ]
        );
        assert_eq!(finish(outcome), FinishReason::ToolCalls);
    }

    #[test]
    fn a_legacy_function_call_gets_an_id() {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"function_call\":{\"name\":\"get_color\",\"arguments\":\"\"}}}]}\n\n\
                    data: {\"choices\":[{\"index\":0,\"delta\":{\"function_call\":{\"arguments\":\"{\\\"m\\\":2}\"}}}]}\n\n\
                    data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"function_call\"}]}\n\n\
                    data: [DONE]\n\n";
        let (events, outcome) = replay(body, Flavor::Standard);
        assert_eq!(events, [Ev::call("call_0", "get_color", r#"{"m":2}"#)]);
        assert_eq!(finish(outcome), FinishReason::ToolCalls);
    }

    #[test]
    fn a_call_without_a_name_is_malformed() {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n";
        assert!(matches!(
            replay(body, Flavor::Standard).1,
            Err(PluginError::MalformedResponse(_))
        ));
    }

    /// What an agent server (Hermes Agent's API server) streams: its own tool progress as named
    /// events, keep-alive comments, even tool-call deltas of the calls it runs itself.
    const AGENT: &str = "\
: keepalive

data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"hermes-agent\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Let me look.\"},\"finish_reason\":null}]}

event: hermes.tool.progress
data: {\"tool_call_id\":\"call_123\",\"name\":\"web_search\",\"status\":\"started\",\"emoji\":\"🔍\",\"label\":\"Searching...\"}

data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_123\",\"type\":\"function\",\"function\":{\"name\":\"web_search\",\"arguments\":\"{\\\"q\\\":\\\"x\\\"}\"}}]},\"finish_reason\":null}]}

: keepalive

event: hermes.tool.progress
data: {\"tool_call_id\":\"call_123\",\"name\":\"web_search\",\"status\":\"completed\"}

event: hermes.tool.completed
data: not even JSON

event: message
data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" Found it:\"},\"finish_reason\":null}]}

data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" 42.\"},\"finish_reason\":\"tool_calls\"}]}

data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}

data: [DONE]

";

    #[test]
    fn the_agent_flavor_passes_only_text() {
        let (events, outcome) = replay(AGENT, Flavor::Agent);
        assert_eq!(
            events,
            [
                Ev::Text("Let me look.".into()),
                Ev::Text(" Found it:".into()),
                Ev::Text(" 42.".into()),
                Ev::Usage(10, 5, 15),
            ]
        );
        assert_eq!(finish(outcome), FinishReason::Other);
        for split in [1, 5, 50] {
            assert_eq!(replay_split(AGENT, Flavor::Agent, split).0, events);
        }
    }

    #[test]
    fn the_agent_flavor_reads_the_recordings_as_text_only() {
        let (events, outcome) = replay(TOOL_CALL, Flavor::Agent);
        assert_eq!(events, [Ev::Usage(53, 15, 68)]);
        assert_eq!(finish(outcome), FinishReason::Other);
        let (events, outcome) = replay(TEXT, Flavor::Agent);
        assert_eq!(events.len(), 9);
        assert_eq!(finish(outcome), FinishReason::Stop);
    }

    #[test]
    fn the_standard_flavor_reads_named_events_as_chunks() {
        // Only the agent flavor drops named events; a plain server has none, so a name is noise.
        let body = "event: message\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\n";
        let (events, outcome) = replay(body, Flavor::Standard);
        assert_eq!(events, [Ev::Text("Hi".into())]);
        assert_eq!(finish(outcome), FinishReason::Stop);
    }

    #[test]
    fn text_after_a_call_began_goes_out_after_the_calls() {
        let chunk = |delta: &str, finish: &str| Event {
            event: String::new(),
            data: format!(
                r#"{{"choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#
            ),
            id: None,
        };
        let mut stream = Stream::new(Flavor::Standard);
        let mut out = Vec::new();
        for event in [
            chunk(r#"{"content":"Before. "}"#, "null"),
            chunk(
                r#"{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{}"}}]}"#,
                "null",
            ),
            chunk(r#"{"content":"After."}"#, "null"),
            chunk("{}", r#""tool_calls""#),
        ] {
            out.extend(stream.push(&event).unwrap());
        }
        assert_eq!(
            evs(&out),
            vec![
                Ev::Text("Before. ".into()),
                Ev::call("c1", "f", "{}"),
                Ev::Text("After.".into()),
            ]
        );
    }
}
