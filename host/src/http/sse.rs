//! Server-sent event responses, for every stream handler alike (chat and search runs): the
//! response over a run's log with its keep-alive comments, `Last-Event-ID`, and attaching to a
//! running run, counted in the metrics with the clients that leave before a run's end. The
//! frames themselves (`id:`, `event:`, one `data:` line) are written once, as the run logs each
//! event (`runlog::RunLog::push`), so every reader sends the same bytes.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::{ApiError, ApiResult};
use crate::runlog::{EventId, RunReader};
use crate::runs::{DrivenRun, RunKind};
use crate::telemetry::metrics;

/// How often an idle stream sends an SSE comment, so proxies keep it open through long tool
/// calls.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How often an idle stream that ends with its client (`persist: false`: it drives its run)
/// sends one. The server sees a client gone when a write fails, which is the first or second
/// write after it left (the connection is half-closed, not read: `serve.rs`); at this pace the
/// run, and its upstream request, end within about half a second of the client leaving.
const PROBE_EVERY: Duration = Duration::from_millis(250);

/// What the OpenAPI document says of the `Last-Event-ID` header.
pub const LAST_EVENT_ID_DOC: &str = "resume after this event: an id from this run's `id:` lines (`<run>-<position>`); one from an earlier run of the same chat or search, a bare position (the ids of older chatd versions), or a position past this run's last event replays this run from its start";

/// `Last-Event-ID`: the event to resume after, if any.
pub fn last_event_id(headers: &HeaderMap) -> ApiResult<Option<EventId>> {
    headers
        .get("last-event-id")
        .map(|value| {
            value.to_str().ok().and_then(EventId::parse).ok_or_else(|| {
                ApiError::bad_request(
                    "Last-Event-ID: must be an event id as the stream's id: lines give it, <run>-<position>",
                )
            })
        })
        .transpose()
}

/// Attaches to the running run of `kind` for `id`: its events after `Last-Event-ID` (all of
/// them without one), then the new ones until its end; 404 with `not_found` when none runs.
/// The run may be another instance's (shared runs).
pub async fn attach(
    state: &AppState,
    kind: RunKind,
    id: &str,
    headers: &HeaderMap,
    not_found: &str,
) -> ApiResult<Response> {
    let last = last_event_id(headers)?;
    let log = state
        .runs
        .attach(kind, id)
        .await?
        .ok_or_else(|| ApiError::not_found(not_found))?;
    metrics::run_attached(kind.as_str());
    Ok(sse(kind, log.reader_after(last.as_ref()), None))
}

/// What a stream sends next.
enum Next {
    Frames(Vec<Bytes>),
    /// The run's end has been sent (or its log is gone).
    End,
    /// Nothing for the idle time: a comment goes out.
    Idle,
}

/// The reader's next frames, driving `run` (until it is done) while there are none; [`Next::Idle`]
/// after `idle` without any.
async fn next(reader: &mut RunReader, run: &mut Option<DrivenRun>, idle: Duration) -> Next {
    let deadline = tokio::time::sleep(idle);
    tokio::pin!(deadline);
    loop {
        let frames = match run {
            Some(work) => tokio::select! {
                // What is logged goes out before the run is driven further.
                biased;
                frames = reader.next() => frames,
                () = work => {
                    // Done: its last event is logged, for the reader to take.
                    *run = None;
                    continue;
                }
                () = &mut deadline => return Next::Idle,
            },
            None => tokio::select! {
                frames = reader.next() => frames,
                () = &mut deadline => return Next::Idle,
            },
        };
        return frames.map_or(Next::End, Next::Frames);
    }
}

/// Counts the client's leaving when a stream's response is dropped before the run's end.
struct Departure {
    kind: RunKind,
    ended: bool,
}

impl Departure {
    /// The client has had the run's end.
    fn end(&mut self) {
        self.ended = true;
    }
}

impl Drop for Departure {
    fn drop(&mut self) {
        if !self.ended {
            metrics::client_disconnected(self.kind.as_str());
        }
    }
}

/// An SSE response reading a run's log. Each event is already framed, so this sends bytes as
/// they are logged, in batches when the reader is behind, and a comment when nothing happened
/// for [`KEEP_ALIVE`] ([`PROBE_EVERY`] when it drives the run). `run`, if given, is the run the
/// log is of, driven here while the reader waits (`runs::ActiveRuns::driven`), and dropped with
/// the response.
pub(crate) fn sse(kind: RunKind, reader: RunReader, run: Option<DrivenRun>) -> Response {
    let departure = Departure { kind, ended: false };
    let idle = if run.is_some() {
        PROBE_EVERY
    } else {
        KEEP_ALIVE
    };
    let state = (reader, run, departure);
    let frames = futures::stream::unfold(
        state,
        move |(mut reader, mut run, mut departure)| async move {
            if reader.finished() {
                departure.end();
                return None;
            }
            let bytes = match next(&mut reader, &mut run, idle).await {
                Next::Frames(frames) => Bytes::from(frames.concat()),
                Next::End => {
                    departure.end();
                    return None;
                }
                Next::Idle => Bytes::from_static(b": keep-alive\n\n"),
            };
            // The terminal event is in these bytes: a client that leaves now has had the run's end.
            departure.ended = reader.finished();
            Some((Ok::<_, Infallible>(bytes), (reader, run, departure)))
        },
    );
    (
        [
            (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            // nginx and friends: do not buffer the stream.
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(frames),
    )
        .into_response()
}
