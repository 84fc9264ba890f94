//! Recorded-fixture helpers for a provider's own tests, run natively with `cargo test`: feed a
//! recorded upstream body through the provider's [`Decoder`] the way the host does (head, pieces,
//! end) and compare what came out. The recordings a bundled provider is tested on live in chatd's
//! `tests/fixtures/upstream/`; a new provider records its own the same way (the request body and
//! the raw response body, one file each).
//!
//! ```ignore
//! use chatd_plugin_sdk::testing::{Replayed, replay};
//!
//! #[test]
//! fn recorded_text_stream() {
//!     let decoder = crate::decoder(true);
//!     let out = replay(decoder, "text/event-stream", include_bytes!("../fixtures/text.sse"), 7);
//!     assert_eq!(out.text(), "The capital of the UK is London.");
//!     assert_eq!(out.others(), ["usage 78+9=87"]);
//! }
//! ```

use crate::codec::Decoder;
use crate::host::{Header, PluginError};
use crate::provider::{FinishReason, TurnEvent, TurnOutcome, TurnStream};

/// A built upstream body as the upstream reads it, a `Value` (raw schemas in it parsed), for a
/// provider's tests of its body: `as_sent(body(&request, ...))`.
pub fn as_sent<T: serde::Serialize>(
    body: Result<T, PluginError>,
) -> Result<serde_json::Value, PluginError> {
    body.map(|body| serde_json::to_value(body).expect("a body serializes"))
}

/// What a replayed body produced: the events in order and how the turn ended.
#[derive(Debug)]
pub struct Replayed {
    pub events: Vec<TurnEvent>,
    pub outcome: Result<TurnOutcome, PluginError>,
}

impl Replayed {
    /// The text deltas joined.
    pub fn text(&self) -> String {
        summary(&self.events).0
    }

    /// The events other than text, as [`show`] writes them.
    pub fn others(&self) -> Vec<String> {
        summary(&self.events).1
    }

    /// The finish reason; panics when the turn failed.
    pub fn finish(&self) -> FinishReason {
        match &self.outcome {
            Ok(outcome) => outcome.finish,
            Err(e) => panic!("the turn failed: {e:?}"),
        }
    }

    /// The error; panics when the turn succeeded.
    pub fn error(&self) -> &PluginError {
        match &self.outcome {
            Err(e) => e,
            Ok(outcome) => panic!("the turn succeeded: {outcome:?}"),
        }
    }
}

/// Feeds `body` to `decoder` as the host would: a 200 head with `content_type`, then the body in
/// `piece`-byte pieces (so a parser split across pieces is tested), then its end, stopping at
/// the first piece that ends the turn.
pub fn replay(mut decoder: Decoder, content_type: &str, body: &[u8], piece: usize) -> Replayed {
    decoder.head(
        200,
        &[Header {
            name: "content-type".into(),
            value: content_type.into(),
        }],
    );
    let mut events = Vec::new();
    let mut pieces = body.chunks(piece.max(1));
    let outcome = loop {
        let decoded = match pieces.next() {
            Some(piece) => decoder.feed(piece),
            None => decoder.finish(),
        };
        events.extend(decoded.events);
        if let Some(end) = decoded.end {
            break end;
        }
    };
    Replayed { events, outcome }
}

/// Replays a recorded server-sent-event stream through a provider's [`TurnStream`] alone.
pub fn replay_sse(stream: impl TurnStream + 'static, body: &str) -> Replayed {
    let decoder = Decoder::new(true, stream, |_| {
        Err(PluginError::InvalidInput(
            "replay_sse: a stream is not parsed whole".into(),
        ))
    });
    replay(decoder, "text/event-stream", body.as_bytes(), usize::MAX)
}

/// A turn event as comparable text: `text …`, `call ID NAME ARGS`, `usage IN+OUT=TOTAL`,
/// `continue STATE`.
pub fn show(event: &TurnEvent) -> String {
    match event {
        TurnEvent::TextDelta(text) => format!("text {text}"),
        TurnEvent::ToolCall(call) => {
            format!("call {} {} {}", call.id, call.name, call.arguments_json)
        }
        TurnEvent::Usage(u) => format!(
            "usage {}+{}={}",
            u.input_tokens, u.output_tokens, u.total_tokens
        ),
        TurnEvent::Continuation(state) => format!("continue {state}"),
    }
}

/// The text deltas joined, and the other events as [`show`] writes them, in order.
pub fn summary(events: &[TurnEvent]) -> (String, Vec<String>) {
    let text = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let others = events
        .iter()
        .filter(|e| !matches!(e, TurnEvent::TextDelta(_)))
        .map(show)
        .collect();
    (text, others)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::test_support::Echo;

    #[test]
    fn a_body_split_anywhere_replays_the_same() {
        let body = b"data: a\n\ndata: b\n\nevent: end\ndata: c\n\n";
        for piece in [1, 3, usize::MAX] {
            let decoder = Decoder::new(true, Echo(false), |_| unreachable!());
            let out = replay(decoder, "text/event-stream", body, piece);
            assert_eq!(out.text(), "abc");
            assert_eq!(out.finish(), FinishReason::Stop);
        }
        let cut = replay_sse(Echo(false), "data: a\n\n");
        assert!(matches!(cut.error(), PluginError::Transport(_)));
    }
}
