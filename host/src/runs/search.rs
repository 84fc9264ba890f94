//! A search run, whichever route starts it: [`run`] (the outcome as one answer) and [`stream`]
//! (a backend-owned run by search id, or the one already running, joined). Each is a task of
//! its own that runs both parts (`crate::search`), stores the outcome when one part succeeded,
//! and ends in the contract's order: outcome stored, run out of `GET /v1/active-runs`, then
//! `done`. A route validates the body, calls one of these, and frames the answer.

use std::sync::{Arc, Mutex};

use super::registry::{RunContext, RunKind, StartError, Stopped};
use crate::plugins::loading::load::Plugin;
use crate::runlog::{EventId, RunReader};
use crate::search::{self, RunRequest, events};
use crate::store::{SearchDetailRecord, StoreError};
use crate::usage::Spender;

/// A run's end, for the terminal event or the response.
pub enum Ended {
    Stored(Box<SearchDetailRecord>),
    /// Both parts failed: nothing stored.
    Failed(search::BothFailed),
    /// The search was deleted during the run.
    Gone,
    /// The outcome could not be stored.
    NotStored(String),
}

/// Runs one run of `search_id` to its end in a task of its own (a client that hangs up does not
/// lose the outcome); `None` when the task stopped early (shutdown, a panic).
pub async fn run(
    ctx: &RunContext,
    search_id: String,
    plugin: Arc<Plugin>,
    request: RunRequest,
    spender: Option<Arc<Spender>>,
) -> Option<Ended> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let work = ctx.clone();
    ctx.runs.spawn(
        RunKind::Search,
        async move {
            let ended = run_and_store(&work, &search_id, &plugin, &request, &|_| {}, spender).await;
            let _ = tx.send(ended);
        },
        |_| async {},
    );
    rx.await.ok()
}

/// Starts a streamed run of `search_id`, or joins one that started meanwhile (here or on another
/// instance), in a task of its own: on a shared database registering the run is a write, which
/// a client gone at that moment must not cut short. `done` renders a stored outcome as the
/// `done` event's data (the wire's shape is the route's). `Err(None)`: the step panicked.
/// `spender`: whose account the answer is recorded in, when this call starts the run.
pub async fn stream(
    ctx: &RunContext,
    search_id: String,
    (plugin, request): (Arc<Plugin>, RunRequest),
    spender: Option<Arc<Spender>>,
    last: Option<EventId>,
    done: fn(SearchDetailRecord) -> String,
) -> Result<RunReader, Option<StoreError>> {
    let step = ctx.clone();
    ctx.runs
        .spawn_step(async move {
            let run = (request, plugin, spender);
            start_or_join(step, search_id, run, last.as_ref(), done).await
        })
        .await
        .map_err(|_| None)?
        .map_err(Some)
}

/// Starts a run of `search_id`, or joins one that started meanwhile. Between a refused start
/// and the lookup that run may end; then this call starts the next one.
async fn start_or_join(
    ctx: RunContext,
    search_id: String,
    (request, plugin, spender): (RunRequest, Arc<Plugin>, Option<Arc<Spender>>),
    last: Option<&EventId>,
    done: fn(SearchDetailRecord) -> String,
) -> Result<RunReader, StoreError> {
    let run = loop {
        match ctx.runs.start(RunKind::Search, &search_id).await {
            Ok(run) => break run,
            Err(StartError::Running) => {}
            Err(StartError::Store(e)) => return Err(e),
        }
        if let Some(log) = ctx.runs.attach(RunKind::Search, &search_id).await? {
            return Ok(log.reader_after(last));
        }
        tokio::task::yield_now().await;
    };
    let log = run.log().clone();
    let reader = log.reader();
    let registration = Arc::new(Mutex::new(Some(run)));
    let work = ctx.clone();
    let (work_log, stop_log) = (log.clone(), log);
    let stop_registration = registration.clone();
    ctx.runs.spawn(
        RunKind::Search,
        async move {
            let report = |event: &search::SearchEvent| {
                work_log.push(event.name(), &event.data(), false);
            };
            let ended = run_and_store(&work, &search_id, &plugin, &request, &report, spender).await;
            let (name, data) = match ended {
                Ended::Stored(detail) => ("done", done(*detail)),
                Ended::Failed(both) => ("error", events::error_data(&both.to_string())),
                Ended::Gone => ("error", events::error_data(search::SEARCH_NOT_FOUND)),
                Ended::NotStored(why) => ("error", events::error_data(&why)),
            };
            super::registry::end(&registration, &work_log, name, &data).await;
        },
        move |why| async move {
            let message = stopped_message(why);
            super::registry::end(
                &stop_registration,
                &stop_log,
                "error",
                &events::error_data(message),
            )
            .await;
        },
    );
    Ok(reader)
}

/// Runs and persists one run of `search_id`, reporting its part events to `report`.
async fn run_and_store(
    ctx: &RunContext,
    search_id: &str,
    plugin: &Plugin,
    request: &RunRequest,
    report: &(dyn Fn(&search::SearchEvent) + Sync),
    spender: Option<Arc<Spender>>,
) -> Ended {
    let search = plugin.as_search().expect("a search plugin");
    let ran = search::run(search, request, report, spender.as_deref()).await;
    if let Some(spender) = spender {
        spender.settle().await;
    }
    let outcome = match ran {
        Ok(outcome) => outcome,
        Err(both) => return Ended::Failed(both),
    };
    match ctx.store.record_search_run(search_id, outcome).await {
        Ok(Some(detail)) => Ended::Stored(Box::new(detail)),
        Ok(None) => Ended::Gone,
        Err(e) => {
            // The cause is for the log; the client gets words it can act on.
            tracing::error!(
                search = search_id,
                "a search outcome could not be stored: {e}"
            );
            Ended::NotStored(
                "the search outcome could not be stored (the server log has the cause)".into(),
            )
        }
    }
}

/// What a search run that stopped early says.
pub fn stopped_message(why: Stopped) -> &'static str {
    match why {
        Stopped::Shutdown => "the server shut down before the search was finished",
        Stopped::Panicked => "the search failed inside the server (the server log has the cause)",
        Stopped::LeaseLost => {
            "the server lost its lease on the database before the search was finished"
        }
    }
}
