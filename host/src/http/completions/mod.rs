//! Chat completions: `POST /v1/chat-completions`, `POST /v1/chat-completions/stream` and
//! `POST /v1/chats/:chatId/stream/attach`. Here: the 409 and the wiring of a run (its task, its
//! record before the first turn, its terminal event); the request's validation is `request.rs`.
//! Elsewhere: which supplied rows are new and what the provider gets (`chat::history`), the
//! writes that begin and end a call (`Store::begin_call`, `finish_call`), the loop
//! (`chat::completion`), the SSE response (`http::sse`).
//!
//! Every completion runs as a backend-owned task (`ActiveRuns::spawn`): a client that leaves
//! does not stop it (except a `persist: false` stream, which has nothing to keep and whose
//! upstream call is cancelled), and shutdown waits for it. A persisted stream is registered by
//! chat id; its events go to the run's log, which the response (and any attach) reads.

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;
use utoipa::ToSchema;

use super::AppState;
use super::chats::CHAT_NOT_FOUND;
use super::error::{ApiError, ApiJson, ApiPath, ApiResult, ErrorBody};
use super::sse;
use crate::chat::completion::{Completion, Finished};
use crate::chat::events::{ChatEvent, Usage};
use crate::chat::failure::CompletionError;
use crate::chat::history;
use crate::chat::sink::{ChatWriter, Sink};
use crate::runlog::Stop;
use crate::runlog::{RunLog, RunReader};
use crate::runs::{self, Run, RunKind, StartError, Stopped};
use crate::store::{NewCall, NewChat, NewMessage};
use crate::vocabulary::{Role, new_id};
pub use request::CompletionRequest;
pub(crate) use request::provider_plugin;
use request::{Prepared, prepare};

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

/// Why a completion produced no reply.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Completion(#[from] CompletionError),
    /// The chat was deleted before the call could be recorded.
    #[error("chat not found")]
    ChatGone,
    /// The call could not be recorded; nothing of it is stored, and the upstream was not called.
    #[error("the request could not be stored: {0}")]
    NotRecorded(#[source] crate::store::StoreError),
}

impl RunError {
    fn usage(&self) -> Option<Usage> {
        match self {
            RunError::Completion(e) => e.usage(),
            _ => None,
        }
    }

    fn into_api(self) -> ApiError {
        match self {
            RunError::Completion(e @ CompletionError::Provider { refused: true, .. }) => {
                ApiError::bad_request(e.to_string())
            }
            RunError::Completion(e @ CompletionError::Provider { .. }) => {
                ApiError::new(StatusCode::BAD_GATEWAY, e.to_string())
            }
            RunError::ChatGone => ApiError::not_found(CHAT_NOT_FOUND),
            RunError::NotRecorded(e) if e.is_unavailable() => ApiError::from(e),
            other => {
                ApiError::internal(format!("{other}: {:?}", std::error::Error::source(&other)))
            }
        }
    }
}

/// Records the call (the new history rows, the last-used provider, the call row), then runs the
/// completion: the upstream is called only once the user's input is stored, so a database that
/// cannot take it (away, a full disk) refuses the request before anything is paid for. Tool rows
/// wait for that record ([`ChatWriter::recorded`]).
async fn run_recorded(
    state: &AppState,
    call: NewCall,
    history: Arc<[NewMessage]>,
    completion: Completion,
    sink: &Sink,
    recorded: watch::Sender<Option<bool>>,
) -> Result<Finished, RunError> {
    let begun = state
        .store
        .begin_call(call, |stored| history::new_rows(stored, &history))
        .await;
    recorded.send_replace(Some(matches!(begun, Ok(true))));
    match begun {
        Ok(true) => Ok(completion.run(sink).await?),
        Ok(false) => Err(RunError::ChatGone),
        Err(e) => Err(RunError::NotRecorded(e)),
    }
}

/// The pieces of a run that write to a chat: the sink's writer and the record's signal.
fn chat_writer(
    state: &AppState,
    chat_id: Option<&str>,
) -> (Option<ChatWriter>, watch::Sender<Option<bool>>) {
    let (tx, rx) = watch::channel(None);
    let log = chat_id.map(|id| ChatWriter {
        store: state.store.clone(),
        chat_id: id.to_string(),
        recorded: rx,
    });
    (log, tx)
}

/// A completion's bookkeeping once it ends: the call record, and on success the assistant
/// message, in one transaction.
async fn record(
    state: &AppState,
    call_id: &str,
    chat_id: Option<&str>,
    outcome: &Result<Finished, RunError>,
    started: Instant,
) -> Result<(), String> {
    let latency = started.elapsed().as_millis() as u64;
    let stored = match outcome {
        Ok(finished) => {
            // A stopped run with nothing said stores no message; its call still ends.
            let message = (!finished.stopped || !finished.text.is_empty()).then(|| NewMessage {
                role: Role::Assistant,
                content: finished.text.clone(),
                name: None,
                metadata: reply_metadata(finished),
            });
            state
                .store
                .finish_call(
                    call_id,
                    chat_id,
                    message,
                    finished.usage.map(Into::into),
                    latency,
                )
                .await
        }
        // Nothing was recorded: there is no call row to mark.
        Err(RunError::ChatGone | RunError::NotRecorded(_)) => Ok(()),
        Err(error) => {
            state
                .store
                .fail_call(
                    call_id,
                    &error.to_string(),
                    error.usage().map(Into::into),
                    latency,
                )
                .await
        }
    };
    let Err(e) = stored else { return Ok(()) };
    tracing::error!(call_id, error = %e, "could not store the end of a completion");
    let why = "the reply could not be stored";
    if outcome.is_ok() {
        // The reply is lost; its call says so, if the store still takes a write.
        let _ = state.store.fail_call(call_id, why, None, latency).await;
    }
    Err(why.to_string())
}

/// The assistant message's metadata: `stopped` when a client stopped the reply, `fallback`
/// naming the provider and model that answered when the requested one could not.
fn reply_metadata(finished: &Finished) -> Option<Value> {
    let mut map = serde_json::Map::new();
    if finished.stopped {
        map.insert("stopped".into(), Value::Bool(true));
    }
    if let Some((provider, model)) = &finished.fallback {
        map.insert(
            "fallback".into(),
            serde_json::json!({ "provider": provider, "model": model }),
        );
    }
    (!map.is_empty()).then_some(Value::Object(map))
}

#[utoipa::path(post, path = "/chat-completions", tag = "chats", request_body = CompletionRequest,
    responses((status = 200, body = CompletionResponse), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 413, body = ErrorBody),
              (status = 502, body = ErrorBody, description = "the provider failed; the message names it and the upstream's error"),
              (status = 503, body = ErrorBody, description = "the provider's plugin is not loaded")))]
pub async fn complete(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CompletionRequest>,
) -> ApiResult<Json<CompletionResponse>> {
    let prepared = prepare(&state, body, false).await?;
    let started = Instant::now();
    let call = NewCall {
        id: new_id(),
        chat_id: prepared.chat_id.clone(),
        provider: prepared.provider.clone(),
        model: prepared.model.clone(),
    };
    let (chat, recorded) = chat_writer(&state, call.chat_id.as_deref());
    let sink = Sink {
        log: None,
        chat,
        stop: Stop::default(),
    };
    // Either end answers the request: the work with its outcome, or the stop with its reason
    // (the work's half is dropped with the work, before the stop runs).
    let (tx, rx) = tokio::sync::oneshot::channel();
    let answer = Arc::new(std::sync::Mutex::new(Some(tx)));
    let stop_answer = answer.clone();
    let (work_state, work_call, stop_state, stop_call) =
        (state.clone(), call.clone(), state.clone(), call.clone());
    let (history, stop_history) = (prepared.history.clone(), prepared.history);
    let completion = prepared.completion;
    // A task of its own: a client that hangs up does not lose the reply.
    state.runs.spawn(
        RunKind::Chat,
        async move {
            let outcome = run_recorded(
                &work_state,
                work_call.clone(),
                history,
                completion,
                &sink,
                recorded,
            )
            .await;
            let stored = record(
                &work_state,
                &work_call.id,
                work_call.chat_id.as_deref(),
                &outcome,
                started,
            )
            .await;
            if let Some(tx) = answer.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = tx.send(Ok((outcome, stored)));
            }
        },
        move |why| async move {
            record_stopped(&stop_state, stop_call, &stop_history, started, why).await;
            if let Some(tx) = stop_answer.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = tx.send(Err(why));
            }
        },
    );
    let (outcome, stored) = match rx.await {
        Ok(Ok(done)) => done,
        // Not the request's fault nor a bug: another instance, or this one restarted, serves it.
        Ok(Err(why @ (Stopped::Shutdown | Stopped::LeaseLost))) => {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                why.message(),
            ));
        }
        Ok(Err(Stopped::Panicked)) | Err(_) => {
            return Err(ApiError::internal(Stopped::Panicked.message()));
        }
    };
    let finished = outcome.map_err(RunError::into_api)?;
    stored.map_err(ApiError::internal)?;
    Ok(Json(CompletionResponse {
        chat_id: call.chat_id,
        provider: prepared.provider,
        model: prepared.model,
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

/// How long a run stopped by the shutdown may take to record that, before its client is told.
const RECORD_AT_SHUTDOWN_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// A run stopped before its end (shutdown, a panic): its call (and the history rows, should the
/// stop have come before they were written: an accepted message is never lost) recorded with
/// the reason.
async fn record_stopped(
    state: &AppState,
    call: NewCall,
    history: &[NewMessage],
    started: Instant,
    why: Stopped,
) {
    let latency = started.elapsed().as_millis() as u64;
    let id = call.id.clone();
    let record = async {
        if state.store.get_call(&id).await?.is_none() {
            state
                .store
                .begin_call(call, |stored| history::new_rows(stored, history))
                .await?;
        }
        state
            .store
            .fail_call(&id, why.message(), None, latency)
            .await
    };
    // At shutdown the clients wait for their `error` event, after the record: a database that
    // does not answer gets a moment, not the whole timeout (the next start closes the call).
    let result = match why {
        Stopped::Shutdown => tokio::time::timeout(RECORD_AT_SHUTDOWN_WITHIN, record)
            .await
            .unwrap_or_else(|_| {
                Err(crate::store::StoreError::Unavailable {
                    backend: state.store.backend_name(),
                    reason: "no answer before the shutdown".into(),
                })
            }),
        _ => record.await,
    };
    if let Err(e) = result {
        tracing::error!(call_id = %id, error = %e, "could not record a stopped run");
    }
}

#[utoipa::path(post, path = "/chat-completions/stream", tag = "chats", request_body = CompletionRequest,
    responses((status = 200, content_type = "text/event-stream", description = "events meta, tool_call, delta, then done or error; each with an `id:`"),
              (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "a stream is already running for this chat"),
              (status = 503, body = ErrorBody, description = "the provider's plugin is not loaded")))]
pub async fn stream(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CompletionRequest>,
) -> ApiResult<Response> {
    let persist = body.persist.unwrap_or(true);
    if !persist && body.chat_id.is_some() {
        return Err(ApiError::bad_request(
            "chatId: must be omitted when persist is false",
        ));
    }
    let prepared = prepare(&state, body, true).await?;
    if !persist {
        return Ok(ephemeral(&state, prepared).await);
    }
    let started = Instant::now();
    // The chat (a new one is written first) and its run are started in a task of their own: in
    // the handler, a client gone while the chat was written (its handler dropped at that wait)
    // left the chat without the run that fills it, and on a shared database one gone while the
    // run was registered left a run no task ends. Accepted, a request now runs to its end, as it
    // does when its client leaves after `meta`; shutdown waits for the step as for a run.
    let step_state = state.clone();
    let reader = state
        .runs
        .spawn_step(async move {
            let state = step_state;
            let chat_id = match prepared.chat_id.clone() {
                Some(chat_id) => chat_id,
                // The new chat keeps the tools this request chose (all of them when it said
                // nothing).
                None => {
                    state
                        .store
                        .create_chat(NewChat {
                            enabled_tools: prepared.new_chat_tools.clone(),
                            ..NewChat::default()
                        })
                        .await?
                        .id
                }
            };
            start_run(&state, prepared, chat_id, started).await
        })
        .await
        .map_err(|_| ApiError::internal(Stopped::Panicked.message()))??;
    let_the_run_start().await;
    Ok(sse::sse(RunKind::Chat, reader, None))
}

/// Registers a persisted stream's run for `chat_id`, logs its `meta` and spawns it; its events
/// are read from the returned reader. Called in a task of its own ([`ActiveRuns::spawn_step`]):
/// registering may be a database write, which a dropped handler must not cut short.
///
/// [`ActiveRuns::spawn_step`]: crate::runs::ActiveRuns::spawn_step
async fn start_run(
    state: &AppState,
    prepared: Prepared,
    chat_id: String,
    started: Instant,
) -> ApiResult<RunReader> {
    // Registered before anything is stored, so a refused second stream writes nothing.
    let run = state
        .runs
        .start(RunKind::Chat, &chat_id)
        .await
        .map_err(|e| match e {
            StartError::Running => ApiError::new(
                StatusCode::CONFLICT,
                "a stream is already running for this chat: attach to it with POST /v1/chats/:chatId/stream/attach",
            ),
            StartError::Store(e) => e.into(),
        })?;
    let call = NewCall {
        id: new_id(),
        chat_id: Some(chat_id.clone()),
        provider: prepared.provider.clone(),
        model: prepared.model.clone(),
    };
    let log = run.log().clone();
    let (chat, recorded) = chat_writer(state, Some(&chat_id));
    let sink = Sink {
        log: Some(log.clone()),
        chat,
        stop: Stop::new(run.stop_switch()),
    };
    sink.emit(&ChatEvent::Meta {
        chat_id: Some(chat_id.clone()),
        call_id: Some(call.id.clone()),
        provider: prepared.provider,
        model: prepared.model.clone(),
    });
    let reader = log.reader();
    let stop_log = log.clone();
    let (work_state, stop_state, stop_call) = (state.clone(), state.clone(), call.clone());
    let (history, stop_history) = (prepared.history.clone(), prepared.history);
    let completion = prepared.completion;
    // Whichever way the run ends owns the registration: it is released after the final write
    // and before the terminal event, on the stop path too.
    let registration = Arc::new(std::sync::Mutex::new(Some(run)));
    let stop_registration = registration.clone();
    state.runs.spawn(
        RunKind::Chat,
        async move {
            let call_id = call.id.clone();
            let outcome =
                run_recorded(&work_state, call, history, completion, &sink, recorded).await;
            let stored = record(&work_state, &call_id, Some(&chat_id), &outcome, started).await;
            end(&registration, &log, &end_event(outcome, stored)).await;
        },
        move |why| async move {
            let event = ChatEvent::Error(why.message().into());
            if why == Stopped::LeaseLost {
                // The database may be away: the clients are told first, and the call is
                // recorded when it answers (or another instance closes it as lost).
                end(&stop_registration, &stop_log, &event).await;
                record_stopped(&stop_state, stop_call, &stop_history, started, why).await;
            } else {
                record_stopped(&stop_state, stop_call, &stop_history, started, why).await;
                end(&stop_registration, &stop_log, &event).await;
            }
        },
    );
    Ok(reader)
}

/// A `persist: false` stream: nothing stored, nothing registered, and the run ends with its
/// client (there is nothing to keep, and the upstream call costs).
async fn ephemeral(state: &AppState, prepared: Prepared) -> Response {
    let log = Arc::new(RunLog::default());
    let sink = Sink {
        log: Some(log.clone()),
        chat: None,
        stop: Stop::default(),
    };
    sink.emit(&ChatEvent::Meta {
        chat_id: None,
        call_id: None,
        provider: prepared.provider,
        model: prepared.model.clone(),
    });
    let reader = log.reader();
    let stop_log = log.clone();
    let task = state.runs.spawn(
        RunKind::Chat,
        async move {
            let outcome = prepared.completion.run(&sink).await.map_err(RunError::from);
            push(&log, &end_event(outcome, Ok(())));
        },
        move |why| async move { push(&stop_log, &ChatEvent::Error(why.message().into())) },
    );
    // Owned before the yield: a handler dropped there (its client gone) ends the run with it.
    let owner = sse::AbortOnDrop(task);
    let_the_run_start().await;
    sse::sse(RunKind::Chat, reader, Some(owner))
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

/// Ends a registered run with its terminal event (`runs::end`).
async fn end(registration: &std::sync::Mutex<Option<Run>>, log: &RunLog, event: &ChatEvent) {
    runs::end(registration, log, event.name(), &event.data()).await;
}

fn push(log: &RunLog, event: &ChatEvent) {
    log.push(event.name(), &event.data(), event.is_terminal());
}

/// The terminal event of a run.
fn end_event(outcome: Result<Finished, RunError>, stored: Result<(), String>) -> ChatEvent {
    match (outcome, stored) {
        (Ok(finished), Ok(())) => ChatEvent::Done {
            text: finished.text,
            usage: finished.usage,
        },
        (Err(error), _) => ChatEvent::Error(error.to_string()),
        (Ok(_), Err(why)) => ChatEvent::Error(why),
    }
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
