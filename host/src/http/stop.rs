//! `POST /v1/chats/:chatId/stream/cancel`: a client stops the chat's running stream, wherever
//! it runs (on PostgreSQL, any instance asks the owner through the database). The run ends as
//! `chat::completion` says of a stop: its upstream request and running tool calls dropped, its
//! text so far stored and sent as `done`. The answer waits for that end, so the chat has left
//! `GET /v1/active-runs` and takes its next message when the client reads it.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use super::completions::ACTIVE_STREAM_NOT_FOUND;
use super::error::{ApiError, ApiPath, ApiResult, ErrorBody};
use crate::runs::RunKind;

/// How long the answer waits for the run's end: the owner's stop is immediate, but on another
/// instance it travels through the database, and a run whose owner died ends with its lease.
pub const STOP_WAIT: Duration = Duration::from_secs(15);

#[derive(Debug, Serialize, ToSchema)]
pub struct StopResponse {
    /// Always true: the run has ended, with `done` (the text sent so far) or, had it failed
    /// meanwhile, `error`.
    pub stopped: bool,
}

#[utoipa::path(post, path = "/chats/{chatId}/stream/cancel", tag = "chats",
    params(("chatId" = String, Path)),
    responses((status = 200, body = StopResponse, description = "the run stopped: its stream (and every attached one) ended with `done` carrying the text sent so far, stored (when there is any) as the assistant message with `metadata.stopped`"),
              (status = 404, body = ErrorBody, description = "active chat stream not found"),
              (status = 503, body = ErrorBody, description = "the run did not end within 15 s (its instance may be gone; it ends when its lease runs out)")))]
pub async fn stop_chat_stream(
    State(state): State<AppState>,
    ApiPath(chat_id): ApiPath<String>,
) -> ApiResult<Json<StopResponse>> {
    // All of it under the one bound, the database's part too: a store that stalls is a 503,
    // not a request that hangs.
    let stopped = async {
        let log = state
            .runs
            .request_stop(RunKind::Chat, &chat_id)
            .await?
            .ok_or_else(|| ApiError::not_found(ACTIVE_STREAM_NOT_FOUND))?;
        let mut reader = log.reader();
        while !reader.finished() {
            if reader.next().await.is_none() {
                break;
            }
        }
        Ok::<_, ApiError>(())
    };
    tokio::time::timeout(STOP_WAIT, stopped)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the run was asked to stop but did not end within {} s; it ends when its \
                 instance stops it or its lease runs out",
                    STOP_WAIT.as_secs()
                ),
            )
        })??;
    Ok(Json(StopResponse { stopped: true }))
}
