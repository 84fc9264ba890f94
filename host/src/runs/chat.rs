//! A chat run, whichever route starts it: [`complete`] (the reply as one answer), [`stream`] (a
//! persisted stream: registered by chat id, followed and attached through its log),
//! [`ephemeral`] (a `persist: false` stream, ending with its client) and [`tapped`] (a
//! completion whose text a route frames itself, `/openai/v1`'s streams, stopped when its client
//! leaves). Each is a backend-owned task ([`ActiveRuns::spawn`]; `ephemeral`'s is driven by its
//! response instead, [`ActiveRuns::driven`]) that records the call before the
//! first turn (the user's input is stored before the upstream is called, so a database that
//! cannot take it refuses the request before anything is paid for), writes the reply and usage in
//! one transaction at its end, and records a stop (shutdown, a panic, a lost lease) with its
//! reason. A route parses, calls one
//! of these, and frames what it gets; the loop itself is `chat::completion`.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use super::registry::{ActiveRuns, Run, RunContext, RunKind, StartError, Stopped};
use super::task::DrivenRun;
use crate::chat::completion::{Completion, Finished};
use crate::chat::events::{ChatEvent, Usage};
use crate::chat::failure::CompletionError;
use crate::chat::history;
use crate::chat::sink::{ChatWriter, Sink};
use crate::runlog::{RunLog, RunReader, Stop, StopSwitch};
use crate::store::{MessageRecord, NewCall, NewChat, NewMessage, Store, StoreError};
use crate::vocabulary::{Role, new_id};

/// A validated completion request, ready to run.
pub struct ChatRun {
    pub provider: String,
    pub model: String,
    /// The chat it continues; `None`: a new one (a stream) or none at all.
    pub chat_id: Option<String>,
    /// The supplied history; its new rows are stored when the call is recorded. Shared by the
    /// run and its stop path: with attachments it can be tens of MiB.
    pub history: Arc<[NewMessage]>,
    /// The chat's transcript, as read when the request was checked (empty for a stream's new
    /// chat); `None` when none was read (no chat; PostgreSQL's, read with the record). Given to
    /// the call's record, which picks the new rows from it unless it has grown since.
    pub transcript: Option<Vec<MessageRecord>>,
    /// `enabledTools` for a chat this run creates.
    pub new_chat_tools: Vec<String>,
    /// Whose request it is: the owner of a chat it creates and of the exchange it keeps.
    pub owner: String,
    pub completion: Completion,
}

/// Why a completion produced no reply.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Completion(#[from] CompletionError),
    /// The chat was deleted before the call could be recorded.
    #[error("chat not found")]
    ChatGone,
    /// The call could not be recorded; nothing of it is stored, and the upstream was not called.
    #[error("the request could not be stored: {0}")]
    NotRecorded(#[source] StoreError),
}

impl RunError {
    fn usage(&self) -> Option<Usage> {
        match self {
            RunError::Completion(e) => e.usage(),
            _ => None,
        }
    }
}

/// How a completion of [`complete`] or [`tapped`] ended.
pub enum Completed {
    /// The reply, stored; or why there is none.
    Ended(Result<Finished, RunError>),
    /// The reply came but could not be stored (the reason is for the client).
    NotStored(String),
    /// The run was stopped before its end.
    Stopped(Stopped),
}

/// Runs `run` to its end in a task of its own (a client that hangs up does not lose the reply)
/// and returns how it ended; its call id is `call.id`.
pub async fn complete(ctx: &RunContext, run: ChatRun) -> (NewCall, Completed) {
    let (call, end) = begin(ctx, run, None, Stop::default());
    (call, ended(end).await)
}

/// A completion whose text a route frames its own way (`/openai/v1`'s chunks), run as
/// [`complete`] runs one (recorded, retried, fallen back) but stopped when its client leaves.
pub struct Tapped {
    pub call: NewCall,
    /// Its reply's text as it is sent, piece by piece; closed at its end.
    pub text: mpsc::UnboundedReceiver<String>,
    /// How it ended, once `text` is closed.
    pub end: oneshot::Receiver<Completed>,
    /// Dropped (its client gone), it stops the run: the upstream is closed and running tools
    /// end, and the call is recorded as a stopped run is.
    pub stop: StopOnDrop,
}

/// Throws a run's stop switch when dropped.
pub struct StopOnDrop(Arc<StopSwitch>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.request();
    }
}

/// Starts `run` as a [`Tapped`] completion.
pub fn tapped(ctx: &RunContext, run: ChatRun) -> Tapped {
    let (tx, text) = mpsc::unbounded_channel();
    let switch = Arc::new(StopSwitch::default());
    let (call, end) = begin(ctx, run, Some(tx), Stop::new(switch.clone()));
    Tapped {
        call,
        text,
        end,
        stop: StopOnDrop(switch),
    }
}

/// How a begun completion ended; a task that ended without saying (it panicked before its
/// stop path could) as panicked.
pub async fn ended(end: oneshot::Receiver<Completed>) -> Completed {
    end.await.unwrap_or(Completed::Stopped(Stopped::Panicked))
}

/// Spawns `run` as a backend-owned task: the call recorded before the first turn, its end
/// after the last, its outcome sent on the returned receiver (the stop path's too).
fn begin(
    ctx: &RunContext,
    run: ChatRun,
    tap: Option<mpsc::UnboundedSender<String>>,
    stop: Stop,
) -> (NewCall, oneshot::Receiver<Completed>) {
    let started = Instant::now();
    let call = NewCall {
        id: new_id(),
        chat_id: run.chat_id.clone(),
        provider: run.provider.clone(),
        model: run.model.clone(),
    };
    let (chat, recorded) = chat_writer(&ctx.store, call.chat_id.as_deref());
    let sink = Sink {
        log: None,
        tap,
        chat,
        stop,
    };
    // Either end answers: the work with its outcome, or the stop with its reason (the work's
    // half is dropped with the work, before the stop runs).
    let (tx, rx) = oneshot::channel();
    let answer = Arc::new(Mutex::new(Some(tx)));
    let stop_answer = answer.clone();
    let (work, work_call, stop, stop_call) = (ctx.clone(), call.clone(), ctx.clone(), call.clone());
    let (history, stop_history) = (run.history.clone(), run.history);
    let (owner, transcript) = (run.owner, run.transcript);
    let mut completion = run.completion;
    ctx.runs.spawn(
        RunKind::Chat,
        async move {
            let outcome = run_recorded(
                &work.store,
                work_call.clone(),
                transcript,
                history,
                &mut completion,
                &sink,
                recorded,
            )
            .await;
            // Let go before the end is told, as when the run took it by value.
            drop(completion);
            // The tap closes before the end is told: a reader sees every event first.
            drop(sink);
            let stored = record(
                &work.store,
                &work_call.id,
                work_call.chat_id.as_deref(),
                &owner,
                &outcome,
                started,
            )
            .await;
            let ended = match stored {
                Ok(()) => Completed::Ended(outcome),
                Err(why) if outcome.is_ok() => Completed::NotStored(why),
                Err(_) => Completed::Ended(outcome),
            };
            if let Some(tx) = answer.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = tx.send(ended);
            }
        },
        move |why| async move {
            record_stopped(&stop.store, stop_call, &stop_history, started, why).await;
            if let Some(tx) = stop_answer.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = tx.send(Completed::Stopped(why));
            }
        },
    );
    (call, rx)
}

/// Why a persisted stream did not start.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// A stream is already running for this chat (the contract's 409).
    #[error("a stream is already running for this chat")]
    Running,
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The step that starts it panicked (a bug).
    #[error("{}", Stopped::Panicked.message())]
    Panicked,
}

/// Starts a persisted stream of `run`: its chat (a new one is written first), its registration
/// by chat id, its `meta`, its task; its events are read from the returned reader. In a task of
/// its own ([`ActiveRuns::spawn_step`]): a client gone while the chat was written or the run
/// registered (a database write) must not leave a chat without its run, or a run no task ends.
/// Accepted, a request runs to its end, as it does when its client leaves after `meta`.
pub async fn stream(ctx: &RunContext, mut run: ChatRun) -> Result<RunReader, StreamError> {
    let started = Instant::now();
    let step = ctx.clone();
    ctx.runs
        .spawn_step(async move {
            let chat_id = match run.chat_id.clone() {
                Some(chat_id) => chat_id,
                None => {
                    let chat = step
                        .store
                        .create_chat(NewChat {
                            enabled_tools: run.new_chat_tools.clone(),
                            ..NewChat::owned_by(&run.owner)
                        })
                        .await?;
                    // Created without messages: none to read back.
                    run.transcript = Some(Vec::new());
                    chat.id
                }
            };
            start(&step, run, chat_id, started).await
        })
        .await
        .map_err(|_| StreamError::Panicked)?
}

/// Registers the stream for `chat_id` (before anything is stored, so a refused second stream
/// writes nothing), logs its `meta` and spawns it.
async fn start(
    ctx: &RunContext,
    run: ChatRun,
    chat_id: String,
    started: Instant,
) -> Result<RunReader, StreamError> {
    let registered = ctx
        .runs
        .start(RunKind::Chat, &chat_id)
        .await
        .map_err(|e| match e {
            StartError::Running => StreamError::Running,
            StartError::Store(e) => StreamError::Store(e),
        })?;
    let call = NewCall {
        id: new_id(),
        chat_id: Some(chat_id.clone()),
        provider: run.provider.clone(),
        model: run.model.clone(),
    };
    let log = registered.log().clone();
    let (chat, recorded) = chat_writer(&ctx.store, Some(&chat_id));
    let sink = Sink {
        log: Some(log.clone()),
        chat,
        stop: Stop::new(registered.stop_switch()),
        tap: None,
    };
    sink.emit(&ChatEvent::Meta {
        chat_id: Some(chat_id.clone()),
        call_id: Some(call.id.clone()),
        provider: run.provider,
        model: run.model.clone(),
    });
    let reader = log.reader();
    let stop_log = log.clone();
    let (work, stop, stop_call) = (ctx.clone(), ctx.clone(), call.clone());
    let (history, stop_history) = (run.history.clone(), run.history);
    let (owner, transcript) = (run.owner, run.transcript);
    let mut completion = run.completion;
    // Whichever way the run ends owns the registration: it is released after the final write
    // and before the terminal event, on the stop path too.
    let registration = Arc::new(Mutex::new(Some(registered)));
    let stop_registration = registration.clone();
    ctx.runs.spawn(
        RunKind::Chat,
        async move {
            let call_id = call.id.clone();
            let outcome = run_recorded(
                &work.store,
                call,
                transcript,
                history,
                &mut completion,
                &sink,
                recorded,
            )
            .await;
            // Let go before the end is told, as when the run took it by value.
            drop(completion);
            let stored = record(
                &work.store,
                &call_id,
                Some(&chat_id),
                &owner,
                &outcome,
                started,
            )
            .await;
            end(&registration, &log, &end_event(outcome, stored)).await;
        },
        move |why| async move {
            let event = ChatEvent::Error(why.message().into());
            if why == Stopped::LeaseLost {
                // The database may be away: the clients are told first, and the call is
                // recorded when it answers (or another instance closes it as lost).
                end(&stop_registration, &stop_log, &event).await;
                record_stopped(&stop.store, stop_call, &stop_history, started, why).await;
            } else {
                record_stopped(&stop.store, stop_call, &stop_history, started, why).await;
                end(&stop_registration, &stop_log, &event).await;
            }
        },
    );
    Ok(reader)
}

/// A `persist: false` stream: nothing stored, nothing registered; its events are read from the
/// reader, and the run is driven by whoever reads them ([`ActiveRuns::driven`]): it ends when
/// that is dropped (its client gone: there is nothing to keep, and the upstream call costs).
pub fn ephemeral(runs: &Arc<ActiveRuns>, run: ChatRun) -> (RunReader, DrivenRun) {
    let log = Arc::new(RunLog::default());
    let sink = Sink {
        log: Some(log.clone()),
        ..Sink::default()
    };
    sink.emit(&ChatEvent::Meta {
        chat_id: None,
        call_id: None,
        provider: run.provider,
        model: run.model.clone(),
    });
    let reader = log.reader();
    let stop_log = log.clone();
    // Mutable here and run in place in the run: given to `run` by value, it would be held
    // again twice in run's future, as an `async fn`'s arguments are (`Completion::run`).
    let mut completion = run.completion;
    let work = runs.driven(
        RunKind::Chat,
        async move {
            let outcome = completion.run(&sink).await.map_err(RunError::from);
            // Let go before the end is told, as when the run took it by value.
            drop(completion);
            push(&log, &end_event(outcome, Ok(())));
        },
        move |why| async move { push(&stop_log, &ChatEvent::Error(why.message().into())) },
    );
    (reader, work)
}

/// Records the call (the new history rows, the last-used provider, the call row), then runs the
/// completion. Tool rows wait for that record ([`ChatWriter::recorded`]).
async fn run_recorded(
    store: &Store,
    call: NewCall,
    transcript: Option<Vec<MessageRecord>>,
    history: Arc<[NewMessage]>,
    completion: &mut Completion,
    sink: &Sink,
    recorded: watch::Sender<Option<bool>>,
) -> Result<Finished, RunError> {
    let begun = store
        .begin_call(call, transcript, |stored| {
            history::new_rows(stored, &history)
        })
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
    store: &Store,
    chat_id: Option<&str>,
) -> (Option<ChatWriter>, watch::Sender<Option<bool>>) {
    let (tx, rx) = watch::channel(None);
    let log = chat_id.map(|id| ChatWriter {
        store: store.clone(),
        chat_id: id.to_string(),
        recorded: rx,
    });
    (log, tx)
}

/// A completion's bookkeeping once it ends: on success the server tools' rounds kept for the
/// client's next request, if any (a transaction of its own, first: a reply whose calls'
/// context was not kept is not given); then the call record with the assistant message, in
/// one transaction.
async fn record(
    store: &Store,
    call_id: &str,
    chat_id: Option<&str>,
    owner: &str,
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
            // Kept before the client hears of its calls, so its next request finds them.
            async {
                keep_exchange(store, owner, finished).await?;
                store
                    .finish_call(
                        call_id,
                        chat_id,
                        message,
                        finished.usage.map(Into::into),
                        latency,
                        finished.fallback.as_ref(),
                    )
                    .await
            }
            .await
        }
        // Nothing was recorded: there is no call row to mark.
        Err(RunError::ChatGone | RunError::NotRecorded(_)) => Ok(()),
        Err(error) => {
            store
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
        let _ = store.fail_call(call_id, why, None, latency).await;
    }
    Err(why.to_string())
}

/// The rounds of chatd's tools a completion ended with client calls after (`chat/kept.rs`),
/// kept under those calls' ids.
async fn keep_exchange(store: &Store, owner: &str, finished: &Finished) -> Result<(), StoreError> {
    if finished.kept.is_empty() {
        return Ok(());
    }
    let ids: Vec<String> = finished.client_calls.iter().map(|c| c.id.clone()).collect();
    let rounds = crate::chat::kept::to_json(&finished.kept);
    store
        .keep_exchange(&ids, owner, &rounds, crate::chat::kept::KEPT_FOR)
        .await
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

/// How long a run stopped by the shutdown may take to record that, before its client is told.
const RECORD_AT_SHUTDOWN_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// A run stopped before its end (shutdown, a panic): its call (and the history rows, should the
/// stop have come before they were written: an accepted message is never lost) recorded with
/// the reason.
async fn record_stopped(
    store: &Store,
    call: NewCall,
    history: &[NewMessage],
    started: Instant,
    why: Stopped,
) {
    let latency = started.elapsed().as_millis() as u64;
    let id = call.id.clone();
    let record = async {
        if store.get_call(&id).await?.is_none() {
            store
                .begin_call(call, None, |stored| history::new_rows(stored, history))
                .await?;
        }
        store.fail_call(&id, why.message(), None, latency).await
    };
    // At shutdown the clients wait for their `error` event, after the record: a database that
    // does not answer gets a moment, not the whole timeout (the next start closes the call).
    let result = match why {
        Stopped::Shutdown => tokio::time::timeout(RECORD_AT_SHUTDOWN_WITHIN, record)
            .await
            .unwrap_or_else(|_| {
                Err(StoreError::Unavailable {
                    backend: store.backend_name(),
                    reason: "no answer before the shutdown".into(),
                })
            }),
        _ => record.await,
    };
    if let Err(e) = result {
        tracing::error!(call_id = %id, error = %e, "could not record a stopped run");
    }
}

/// Ends a registered run with its terminal event (`runs::end`).
async fn end(registration: &Mutex<Option<Run>>, log: &RunLog, event: &ChatEvent) {
    super::registry::end(registration, log, event.name(), &event.data()).await;
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
