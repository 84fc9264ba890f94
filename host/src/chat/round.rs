//! One round of the loop as it streams: what kind of round it is, decided by what the upstream
//! says first, and the reply's text, sent as it arrives.
//!
//! The rule (docs/api.md, "Live replies"): a round's kind is decided by its first text or tool
//! call. The WIT says a provider emits a round's items in the order the upstream began them
//! (`turn-event` in `wit/worlds.wit`), so that is what the upstream said first.
//! - **Text first**: the text goes out as deltas as it arrives. Should a tool call follow (a
//!   model that writes a sentence before calling a tool), the text already sent stays part of
//!   the reply: the calls' `tool_call` events follow it, and the next round's text follows them
//!   after a blank line. Nothing the client saw is taken back.
//! - **Tool call first**: any text of the round is held until its calls have ended, then sent
//!   after their `tool_call` events, so the round keeps the contract's `tool_call* → delta*`.
//!   (Text of an earlier round still precedes a later round's `tool_call` events: the reply is
//!   the work in its order.)
//!
//! The reply (`done.text`, the stored assistant message) is exactly the deltas sent: every
//! round's text in order. Text held when a run stops or fails was never sent and is dropped. A
//! reply that fails after some of its text went out ends with the `error` event and is not
//! stored, as the contract has it for a failed stream.

use super::events::{ChatEvent, Usage};
use super::sink::Sink;
use crate::plugins::runtime::CallError;
use crate::plugins::worlds::provider::{self as wit, PluginError, TurnEvent};

/// What a round turned out to be, from its first text or tool call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Kind {
    /// Nothing decisive yet (reasoning, usage, nothing at all).
    #[default]
    Undecided,
    /// It began with text: its text streams.
    Text,
    /// It began with a tool call: its text waits for the round's end.
    Tools,
}

/// The reply's text: exactly what went out as deltas, across rounds.
#[derive(Debug, Default)]
pub(super) struct Reply {
    text: String,
}

impl Reply {
    /// Sends `piece` as a delta. The first piece of a round after an earlier round's text
    /// starts after a blank line, in the same delta, so the reply reads as paragraphs.
    pub(super) fn send(&mut self, piece: &str, first_of_round: bool, sink: &Sink) {
        let gap = if first_of_round { self.gap() } else { "" };
        let delta = format!("{gap}{piece}");
        self.text.push_str(&delta);
        sink.emit(&ChatEvent::Delta(delta));
    }

    /// What separates a new round's text from the reply so far.
    fn gap(&self) -> &'static str {
        if self.text.is_empty() || self.text.ends_with("\n\n") {
            ""
        } else if self.text.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        }
    }

    pub(super) fn into_text(self) -> String {
        self.text
    }

    /// The bytes of text sent so far.
    pub(super) fn len(&self) -> usize {
        self.text.len()
    }

    #[cfg(test)]
    pub(super) fn text(&self) -> &str {
        &self.text
    }
}

/// What one provider turn produced.
#[derive(Default)]
pub(super) struct Turn {
    pub kind: Kind,
    /// The turn's own text, for the transcript the model sees next round (kept only when tools
    /// are on: without them there is no next round, and the reply holds the text already).
    pub text: String,
    /// Text of a round that began with a tool call, sent once its calls have ended.
    pub held: Vec<String>,
    /// Whether any of its text went out as a delta.
    pub sent: bool,
    /// Events it gave (any kind): a turn that gave none may be tried again.
    pub events: usize,
    pub calls: Vec<wit::ToolCall>,
    pub usage: Option<Usage>,
    pub continuation: Option<String>,
    /// How the turn ended; `None` when a client stopped the run during it (the turn was
    /// dropped, and its upstream request with it).
    pub result: Option<Result<Result<wit::TurnOutcome, PluginError>, CallError>>,
    /// When its first text or tool call arrived, from its start.
    pub first_token: Option<std::time::Duration>,
    /// The wait the upstream asked for with its error status.
    pub retry_after: Option<std::time::Duration>,
    /// The host sent the turn's request and no answer came back.
    pub unanswered: bool,
}

impl Turn {
    /// Takes one event. `tools`: tools were offered, so a tool call is a call to run.
    pub(super) fn take(&mut self, event: TurnEvent, tools: bool, reply: &mut Reply, sink: &Sink) {
        self.events += 1;
        match event {
            TurnEvent::TextDelta(text) => {
                if text.is_empty() {
                    return;
                }
                if tools {
                    self.text.push_str(&text);
                }
                if self.kind == Kind::Undecided {
                    self.kind = Kind::Text;
                }
                match self.kind {
                    Kind::Tools => self.held.push(text),
                    _ => {
                        reply.send(&text, !self.sent, sink);
                        self.sent = true;
                    }
                }
            }
            TurnEvent::ToolCall(call) if tools => {
                if self.kind == Kind::Undecided {
                    self.kind = Kind::Tools;
                }
                self.calls.push(call);
            }
            // Without tools offered, a call is the model's own mistake: the turn stays final.
            TurnEvent::ToolCall(_) => {}
            // The last report of a turn counts.
            TurnEvent::Usage(u) => {
                self.usage = Some(Usage {
                    input_tokens: u.input_tokens,
                    output_tokens: u.output_tokens,
                    total_tokens: u.total_tokens,
                })
            }
            TurnEvent::Continuation(state) => self.continuation = Some(state),
        }
    }

    /// Sends the text held back (a round that began with a tool call), after its calls'
    /// terminal `tool_call` events.
    pub(super) fn release_held(&mut self, reply: &mut Reply, sink: &Sink) {
        for piece in std::mem::take(&mut self.held) {
            reply.send(&piece, !self.sent, sink);
            self.sent = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runlog::RunLog;
    use std::sync::Arc;

    fn call(id: &str) -> TurnEvent {
        TurnEvent::ToolCall(wit::ToolCall {
            id: id.into(),
            name: "web_search".into(),
            arguments_json: "{}".into(),
        })
    }

    fn text(t: &str) -> TurnEvent {
        TurnEvent::TextDelta(t.into())
    }

    /// The event names and delta texts a sink got.
    fn sent(log: &Arc<RunLog>) -> Vec<String> {
        let mut reader = log.reader();
        let mut out = Vec::new();
        while let Some(frames) = futures::FutureExt::now_or_never(reader.next()).flatten() {
            out.extend(
                frames
                    .iter()
                    .map(|b| String::from_utf8_lossy(b).into_owned()),
            );
            if out.len() > 100 {
                break;
            }
        }
        out
    }

    fn sink() -> (Sink, Arc<RunLog>) {
        let log = Arc::new(RunLog::default());
        (
            Sink {
                log: Some(log.clone()),
                ..Sink::default()
            },
            log,
        )
    }

    #[test]
    fn a_text_round_streams_and_a_tool_round_holds_its_text() {
        let (sink, log) = sink();
        let mut reply = Reply::default();
        let mut first = Turn::default();
        first.take(text("Let me look."), true, &mut reply, &sink);
        assert_eq!(first.kind, Kind::Text);
        first.take(call("c1"), true, &mut reply, &sink);
        assert_eq!(first.kind, Kind::Text, "the first item decides");
        assert_eq!(reply.text(), "Let me look.");
        assert_eq!(first.calls.len(), 1);

        let mut second = Turn::default();
        second.take(call("c2"), true, &mut reply, &sink);
        second.take(text("noted"), true, &mut reply, &sink);
        assert_eq!(second.kind, Kind::Tools);
        assert_eq!(
            reply.text(),
            "Let me look.",
            "held until its calls are announced"
        );
        second.release_held(&mut reply, &sink);

        let mut last = Turn::default();
        last.take(text("Found"), true, &mut reply, &sink);
        last.take(text(" it."), true, &mut reply, &sink);
        assert_eq!(reply.text(), "Let me look.\n\nnoted\n\nFound it.");
        let frames = sent(&log).concat();
        assert!(frames.contains(r#""text":"\n\nnoted""#), "{frames}");
        assert!(frames.contains(r#""text":" it.""#), "{frames}");
    }

    #[test]
    fn rounds_are_separated_by_one_blank_line_and_calls_without_tools_are_ignored() {
        let (sink, _log) = sink();
        let mut reply = Reply::default();
        let mut first = Turn::default();
        first.take(text("Ends with a line\n"), false, &mut reply, &sink);
        first.take(call("c"), false, &mut reply, &sink);
        assert!(first.calls.is_empty());
        let mut second = Turn::default();
        second.take(TurnEvent::Continuation("r".into()), true, &mut reply, &sink);
        assert_eq!(second.kind, Kind::Undecided);
        second.take(text("next"), true, &mut reply, &sink);
        assert_eq!(reply.into_text(), "Ends with a line\n\nnext");
    }
}
