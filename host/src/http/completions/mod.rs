//! Chat completions: `POST /v1/chat-completions`, `POST /v1/chat-completions/stream` and
//! `POST /v1/chats/:chatId/stream/attach`. Here: each route parses (its validation is
//! `request.rs`), calls one function of `runs::chat` (which owns the run: its task, its record
//! before the first turn, its terminal event), and frames the answer (JSON, or the SSE response
//! of `http::sse`) with the contract's status codes.

use crate::people::Caller;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::AppState;
use super::chats::CHAT_NOT_FOUND;
use super::error::{ApiError, ApiJson, ApiPath, ApiResult, BudgetErrorBody, ErrorBody};
use super::sse;
use crate::chat::completion::Finished;
use crate::chat::events::Usage;
use crate::chat::failure::CompletionError;
use crate::runs::chat::{self, Completed, RunError, StreamError};
use crate::runs::{RunKind, Stopped};
use crate::vocabulary::Role;
pub use request::CompletionRequest;
pub(crate) use request::provider_plugin;
pub(in crate::http) use request::{
    Ask, Extras, Origins, max_tokens, model, prepare, prepare_with, temperature,
};

mod request;

pub const ACTIVE_STREAM_NOT_FOUND: &str = "active chat stream not found";

#[derive(Debug, Serialize, ToSchema)]
pub struct AssistantMessage {
    /// Always `assistant`.
    pub role: Role,
    pub content: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletionResponse {
    pub chat_id: Option<String>,
    pub provider: String,
    pub model: String,
    pub message: AssistantMessage,
    pub usage: Usage,
    /// The provider's last upstream response, as it sent it.
    #[schema(value_type = Object)]
    pub raw: Value,
}

/// A completion without a reply, as the contract answers it.
fn run_error(error: RunError) -> ApiError {
    match error {
        RunError::Completion(e @ CompletionError::Provider { refused: true, .. }) => {
            ApiError::bad_request(e.to_string())
        }
        RunError::Completion(e @ CompletionError::Provider { .. }) => {
            ApiError::new(StatusCode::BAD_GATEWAY, e.to_string())
        }
        RunError::ChatGone => ApiError::not_found(CHAT_NOT_FOUND),
        RunError::NotRecorded(e) if e.is_unavailable() => ApiError::from(e),
        other => ApiError::internal(format!("{other}: {:?}", std::error::Error::source(&other))),
    }
}

/// How a run of [`chat::complete`] ended, as a route answers it: the reply, or the error the
/// contract gives (also `/openai/v1`'s, which reshapes it).
pub(in crate::http) fn finished(completed: Completed) -> ApiResult<Finished> {
    match completed {
        Completed::Ended(outcome) => outcome.map_err(run_error),
        Completed::NotStored(why) => Err(ApiError::internal(why)),
        // Not the request's fault nor a bug: another instance, or this one restarted, serves it.
        Completed::Stopped(why @ (Stopped::Shutdown | Stopped::LeaseLost)) => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            why.message(),
        )),
        Completed::Stopped(Stopped::Panicked) => {
            Err(ApiError::internal(Stopped::Panicked.message()))
        }
    }
}

#[utoipa::path(post, path = "/chat-completions", tag = "chats", request_body = CompletionRequest,
    responses((status = 200, body = CompletionResponse), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 413, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "a USD budget, and the model has no price"),
              (status = 429, body = BudgetErrorBody, description = "a budget is spent"),
              (status = 502, body = ErrorBody, description = "the provider failed; the message names it and the upstream's error"),
              (status = 503, body = ErrorBody, description = "the provider's plugin is not loaded")))]
pub async fn complete(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CompletionRequest>,
) -> ApiResult<Json<CompletionResponse>> {
    let run = prepare(&state, &caller, body, false).await?;
    let (provider, model) = (run.provider.clone(), run.model.clone());
    let (call, completed) = chat::complete(&state.run_context(), run).await;
    let finished = finished(completed)?;
    Ok(Json(CompletionResponse {
        chat_id: call.chat_id,
        provider,
        model,
        message: AssistantMessage {
            role: Role::Assistant,
            content: finished.text,
        },
        usage: finished.usage.unwrap_or_default(),
        raw: finished
            .raw
            .unwrap_or_else(|| Value::Object(Default::default())),
    }))
}

#[utoipa::path(post, path = "/chat-completions/stream", tag = "chats", request_body = CompletionRequest,
    responses((status = 200, content_type = "text/event-stream", description = "events meta, tool_call, delta, then done or error; each with an `id:`"),
              (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "a stream is already running for this chat"),
              (status = 403, body = ErrorBody, description = "a USD budget, and the model has no price"),
              (status = 429, body = BudgetErrorBody, description = "a budget is spent"),
              (status = 503, body = ErrorBody, description = "the provider's plugin is not loaded")))]
pub async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CompletionRequest>,
) -> ApiResult<Response> {
    let persist = body.persist.unwrap_or(true);
    if !persist && body.chat_id.is_some() {
        return Err(ApiError::bad_request(
            "chatId: must be omitted when persist is false",
        ));
    }
    let run = prepare(&state, &caller, body, true).await?;
    if !persist {
        // Its run is driven by the response: it starts as hyper first reads the body, before
        // the head is sent (hyper reads on while the body has frames: `meta`, then the run up
        // to its upstream call).
        let (reader, run) = chat::ephemeral(&state.runs, run);
        return Ok(sse::sse(RunKind::Chat, reader, Some(run)));
    }
    let reader = chat::stream(&state.run_context(), run)
        .await
        .map_err(|e| match e {
            StreamError::Running => ApiError::new(
                StatusCode::CONFLICT,
                "a stream is already running for this chat: attach to it with POST /v1/chats/:chatId/stream/attach",
            ),
            StreamError::Store(e) => e.into(),
            StreamError::Panicked => ApiError::internal(Stopped::Panicked.message()),
        })?;
    let_the_run_start().await;
    Ok(sse::sse(RunKind::Chat, reader, None))
}

/// Lets a run just spawned take its first steps, as far as its upstream call, before the handler
/// returns and hyper writes the response head. The head's write, and the client's wake-up with
/// it, then overlap the upstream's answer instead of delaying the call. (The run waits in its
/// worker's next-task slot, which the handler's task, still running, holds up until it yields.
/// A run spawned by a new chat's step, in another task, may be under way already; the yield
/// costs it nothing.) Measured in BENCHMARKS.md, "The run before the head".
async fn let_the_run_start() {
    tokio::task::yield_now().await;
}

#[utoipa::path(post, path = "/chats/{chatId}/stream/attach", tag = "chats",
    params(("chatId" = String, Path), ("Last-Event-ID" = Option<String>, Header, description = sse::LAST_EVENT_ID_DOC)),
    responses((status = 200, content_type = "text/event-stream", description = "the run's events so far, then new ones until done or error"),
              (status = 400, body = ErrorBody, description = "Last-Event-ID is not an event id"), (status = 404, body = ErrorBody, description = "active chat stream not found")))]
pub async fn attach(
    State(state): State<AppState>,
    ApiPath(chat_id): ApiPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    sse::attach(
        &state,
        RunKind::Chat,
        &chat_id,
        &headers,
        ACTIVE_STREAM_NOT_FOUND,
    )
    .await
}
