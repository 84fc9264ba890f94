//! A streamed answer on `/openai/v1` (chat completions' chunks, `chunks.rs`; the Responses
//! API's events, `response_events.rs`) over a tapped run (`runs::chat::tapped`): the transport
//! both share, with each framing behind [`Frames`].
//!
//! The head waits up to [`HEAD_WAIT`] for the first text or the end, so a failure found at once
//! (the upstream refusing the key or the model, its 429 after chatd's tries) is an HTTP status
//! as the unstreamed answer's is. After that a failure is the framing's last event, and
//! comments probe the client every [`PROBE_EVERY`]: the server sees a client gone only when a
//! write fails (`http/serve.rs`), and the run must stop with it.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tokio::sync::{mpsc, oneshot};

use super::answer::outcome;
use super::errors::OpenAiError;
use crate::chat::completion::Finished;
use crate::runs::chat::{Completed, StopOnDrop, Tapped, ended};

/// How long the head waits for the first text before it goes out as 200.
const HEAD_WAIT: Duration = Duration::from_millis(400);

/// How often a stream with nothing to send writes a comment. A client that left is seen at the
/// second write after it left (the first is usually still accepted), so its run stops within
/// about [`HEAD_WAIT`] + 2 × this of its leaving: under a second.
const PROBE_EVERY: Duration = Duration::from_millis(250);

/// How one wire frames a streamed answer.
pub(super) trait Frames: Send + 'static {
    /// The answer's id, for the log.
    fn id(&self) -> &str;
    /// What opens the stream (sent with the status line).
    fn head(&mut self) -> Bytes;
    /// A piece of the reply's text.
    fn text(&mut self, text: &str) -> Bytes;
    /// What closes an answer: the client's calls, the finish, the usage.
    fn finish(&mut self, finished: Finished) -> Bytes;
    /// What closes a failed one, once the head has gone out.
    fn failed(&mut self, error: OpenAiError) -> Bytes;
}

/// What the stream's body holds: the run's text and end, and its stop, thrown when the body
/// is dropped (the client gone).
struct Live<F> {
    text: mpsc::UnboundedReceiver<String>,
    end: Option<oneshot::Receiver<Completed>>,
    frames: F,
    _stop: StopOnDrop,
}

impl<F: Frames> Live<F> {
    /// The next text, or `None` once the run is over.
    async fn next_text(&mut self) -> Option<String> {
        self.text.recv().await
    }

    /// The run's end, once its text is over.
    async fn ended(&mut self) -> Completed {
        match self.end.take() {
            Some(end) => ended(end).await,
            None => unreachable!("a stream reads its end once"),
        }
    }

    /// The last events, after the head: the answer's close, or its failure's.
    fn close(&mut self, completed: Completed) -> Bytes {
        match outcome(completed) {
            Ok(finished) => self.frames.finish(finished),
            Err(error) => {
                if let Some(cause) = error.cause() {
                    let id = self.frames.id();
                    tracing::error!(id, cause, "a streamed completion failed");
                }
                self.frames.failed(error)
            }
        }
    }
}

/// The response to a streamed answer: a status for a failure before its first text (within
/// [`HEAD_WAIT`]), else the frames.
pub(super) async fn respond<F: Frames>(tapped: Tapped, frames: F) -> Response {
    let Tapped {
        text, end, stop, ..
    } = tapped;
    let mut live = Live {
        text,
        end: Some(end),
        frames,
        _stop: stop,
    };
    let first = tokio::time::timeout(HEAD_WAIT, live.next_text()).await;
    let mut head = live.frames.head().to_vec();
    match first {
        Ok(Some(text)) => head.extend_from_slice(&live.frames.text(&text)),
        // Over before any text: the whole answer, or its failure as a status.
        Ok(None) => {
            let completed = live.ended().await;
            return match outcome(completed) {
                Err(error) => error.into_response(),
                Ok(finished) => {
                    if !finished.text.is_empty() {
                        head.extend_from_slice(&live.frames.text(&finished.text));
                    }
                    head.extend_from_slice(&live.frames.finish(finished));
                    sse(Body::from(head))
                }
            };
        }
        Err(_) => {}
    }
    let rest = futures::stream::unfold(Some(live), |live| async move {
        let mut live = live?;
        let bytes = match tokio::time::timeout(PROBE_EVERY, live.next_text()).await {
            Ok(Some(text)) => live.frames.text(&text),
            Ok(None) => {
                let completed = live.ended().await;
                let last = live.close(completed);
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
