//! `stream: true` on `POST /openai/v1/chat/completions`: OpenAI's server-sent events over a
//! tapped run (`runs::chat::tapped`). Each is `data: {chat.completion.chunk}`: the role first,
//! then the text as it comes, `finish_reason` on the last choice chunk, the usage chunk (empty
//! `choices`) when `stream_options.include_usage` asks, then `data: [DONE]`. chatd's own tools
//! run between turns and are not shown: an OpenAI client has no event for a server's tool.
//!
//! The head waits up to [`HEAD_WAIT`] for the first text or the end, so a failure found at once
//! (the upstream refusing the key or the model, its 429 after chatd's tries) is an HTTP status
//! as the unstreamed answer's is. After that a failure is an error chunk (`data: {"error"}`,
//! which the SDKs raise), and comments probe the client every [`PROBE_EVERY`]: the server sees
//! a client gone only when a write fails (`http/serve.rs`), and the run must stop with it.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::answer::{answering_model, finish_reason, outcome, usage_json};
use super::client_tools::ToolNames;
use crate::chat::events::ChatEvent;
use crate::runs::chat::{Completed, StopOnDrop, Tapped, ended};

/// How long the head waits for the first text before it goes out as 200.
const HEAD_WAIT: Duration = Duration::from_millis(400);

/// How often a stream with nothing to send writes a comment. A client that left is seen at the
/// second write after it left (the first is usually still accepted), so its run stops within
/// about [`HEAD_WAIT`] + 2 × this of its leaving: under a second.
const PROBE_EVERY: Duration = Duration::from_millis(250);

/// What every chunk of one completion shares.
struct Chunks {
    id: String,
    created: i64,
    model: String,
    include_usage: bool,
    /// The client's tool names, for its calls.
    names: ToolNames,
}

impl Chunks {
    /// A choice chunk: `delta`, and `finish_reason` on the last.
    fn choice(&self, delta: Value, finish_reason: Option<&str>) -> Bytes {
        let mut chunk = self.chunk(json!([{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason,
        }]));
        if self.include_usage {
            // As OpenAI's: every chunk has the field, null until the usage chunk.
            chunk["usage"] = Value::Null;
        }
        frame(&chunk)
    }

    fn chunk(&self, choices: Value) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": choices,
        })
    }

    fn role(&self) -> Bytes {
        self.choice(
            json!({"role": "assistant", "content": "", "refusal": null}),
            None,
        )
    }

    fn text(&self, text: &str) -> Bytes {
        self.choice(json!({"content": text}), None)
    }

    /// The chunks after the last text: `finish_reason`, the usage when asked, `[DONE]`; or the
    /// error, for a run that failed.
    fn end(&mut self, completed: Completed) -> Bytes {
        let finished = match outcome(completed) {
            Ok(finished) => finished,
            Err(error) => {
                if let Some(cause) = error.cause() {
                    tracing::error!(id = self.id, cause, "a streamed completion failed");
                }
                return frame(&error.body());
            }
        };
        self.model = answering_model(&finished, std::mem::take(&mut self.model));
        let calls = self.names.calls_json(&finished.client_calls);
        let mut out = Vec::new();
        let finish_reason = finish_reason(&finished);
        // Each call whole in one delta, with its index (the SDKs join deltas by it).
        for (index, mut call) in calls.into_iter().enumerate() {
            call["index"] = json!(index);
            let delta = json!({"tool_calls": [call]});
            out.extend_from_slice(&self.choice(delta, None));
        }
        out.extend_from_slice(&self.choice(json!({}), Some(finish_reason)));
        if self.include_usage {
            let mut chunk = self.chunk(json!([]));
            chunk["usage"] = usage_json(finished.usage.unwrap_or_default());
            out.extend_from_slice(&frame(&chunk));
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
        out.into()
    }
}

fn frame(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// What the stream's body holds: the run's events and end, and its stop, thrown when the body
/// is dropped (the client gone).
struct Live {
    events: mpsc::UnboundedReceiver<ChatEvent>,
    end: Option<oneshot::Receiver<Completed>>,
    chunks: Chunks,
    _stop: StopOnDrop,
}

impl Live {
    /// The next text, or `None` once the events are over.
    async fn next_text(&mut self) -> Option<String> {
        loop {
            match self.events.recv().await? {
                ChatEvent::Delta(text) => return Some(text),
                // `tool_call`: chatd's own tools, not the client's to see.
                _ => continue,
            }
        }
    }

    /// The run's end, once its events are over.
    async fn ended(&mut self) -> Completed {
        match self.end.take() {
            Some(end) => ended(end).await,
            None => unreachable!("a stream reads its end once"),
        }
    }
}

/// The response to a streamed completion: a status for a failure before its first text (within
/// [`HEAD_WAIT`]), else the chunks.
pub(super) async fn respond(
    tapped: Tapped,
    model: String,
    include_usage: bool,
    names: ToolNames,
) -> Response {
    let Tapped {
        call,
        events,
        end,
        stop,
    } = tapped;
    let mut live = Live {
        events,
        end: Some(end),
        chunks: Chunks {
            id: format!("chatcmpl-{}", call.id),
            created: chrono::Utc::now().timestamp(),
            model,
            include_usage,
            names,
        },
        _stop: stop,
    };
    let first = tokio::time::timeout(HEAD_WAIT, live.next_text()).await;
    let mut head = live.chunks.role().to_vec();
    match first {
        Ok(Some(text)) => head.extend_from_slice(&live.chunks.text(&text)),
        // Over before any text: the whole answer, or its failure as a status.
        Ok(None) => {
            let completed = live.ended().await;
            return match outcome(completed) {
                Err(error) => error.into_response(),
                Ok(finished) => {
                    if !finished.text.is_empty() {
                        head.extend_from_slice(&live.chunks.text(&finished.text));
                    }
                    let completed = Completed::Ended(Ok(finished));
                    head.extend_from_slice(&live.chunks.end(completed));
                    sse(Body::from(head))
                }
            };
        }
        Err(_) => {}
    }
    let rest = futures::stream::unfold(Some(live), |live| async move {
        let mut live = live?;
        let bytes = match tokio::time::timeout(PROBE_EVERY, live.next_text()).await {
            Ok(Some(text)) => live.chunks.text(&text),
            Ok(None) => {
                let completed = live.ended().await;
                let last = live.chunks.end(completed);
                return Some((Ok::<_, Infallible>(last), None));
            }
            Err(_) => Bytes::from_static(b": keep-alive\n\n"),
        };
        Some((Ok(bytes), Some(live)))
    });
    let head = futures::stream::once(async move { Ok::<_, Infallible>(Bytes::from(head)) });
    sse(Body::from_stream(futures::StreamExt::chain(head, rest)))
}

fn sse(body: Body) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            // nginx and friends: do not buffer the stream.
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        body,
    )
        .into_response()
}
