//! The registry of this process's runs, by chat or search id (shared: the database's, through
//! `shared.rs`): a run registered ([`ActiveRuns::start`]), found ([`ActiveRuns::attach`]), asked to
//! stop, fenced when the lease is lost, and ended in the contract's order ([`Run::finish`]). What
//! runs a run's work is `task.rs`, below the kinds of run (`chat.rs`, `search.rs`) as this is.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::shared::Shared;
use crate::runlog::{RunLog, StopSwitch};
use crate::store::{RunEvent, RunStart, Store, StoreError};
use crate::telemetry::metrics;

/// What a run needs of the server: where it is recorded, and the registry it runs in.
#[derive(Clone)]
pub struct RunContext {
    pub store: Store,
    pub runs: Arc<ActiveRuns>,
}

#[derive(Debug)]
pub struct ActiveRuns {
    // A std Mutex: every critical section is a map operation, never held across an await.
    inner: Mutex<Maps>,
    /// Run tasks alive (registered or not: non-streaming completions count too).
    pub(super) live: watch::Sender<usize>,
    /// Set when the shutdown grace period is over: runs still going record an error and stop.
    pub(super) stop: watch::Sender<bool>,
    /// Bumped when this instance lost its lease: the runs started before stop (others own them
    /// now, or will).
    pub(super) fence: watch::Sender<u64>,
    /// The runs of a shared database; `None` on SQLite.
    shared: Option<Shared>,
    /// How each kind's `error` event is written.
    pub(super) errors: ErrorEvents,
}

/// How each kind of run writes its `error` event's data: the streams' own formats, given by
/// the layer that knows both (`server.rs`), so the registry imports neither chat nor search.
#[derive(Clone, Copy, Debug)]
pub struct ErrorEvents {
    pub chat: fn(&str) -> String,
    pub search: fn(&str) -> String,
}

impl ErrorEvents {
    pub fn of(&self, kind: RunKind, message: &str) -> String {
        match kind {
            RunKind::Chat => (self.chat)(message),
            RunKind::Search => (self.search)(message),
        }
    }
}

impl Default for ErrorEvents {
    /// `{ "message": … }` for both (tests of the registry).
    fn default() -> Self {
        let plain = |message: &str| serde_json::json!({ "message": message }).to_string();
        Self {
            chat: plain,
            search: plain,
        }
    }
}

impl Default for ActiveRuns {
    /// Runs in this process's memory only (SQLite, tests of the registry).
    fn default() -> Self {
        Self {
            inner: Mutex::default(),
            live: watch::Sender::new(0),
            stop: watch::Sender::new(false),
            fence: watch::Sender::new(0),
            shared: None,
            errors: ErrorEvents::default(),
        }
    }
}

/// This process's runs, by chat or search id: those it owns (and, shared, the mirrors it follows
/// live in `shared.rs`).
#[derive(Debug, Default)]
struct Maps {
    chats: BTreeMap<String, Entry>,
    searches: BTreeMap<String, Entry>,
    /// Shared run ids whose stop was heard for no run of this process, newest last: a run whose
    /// row was committed but whose entry was not in yet looks here once it is.
    unmatched_stops: std::collections::VecDeque<String>,
}

/// How many unmatched stop requests are remembered (every instance hears every stop).
const UNMATCHED_STOPS: usize = 256;

/// A run this process owns.
#[derive(Debug)]
struct Entry {
    log: Arc<RunLog>,
    /// Thrown when a client asks the run to stop.
    stop: Arc<StopSwitch>,
    /// The shared run's id (PostgreSQL).
    shared_id: Option<Arc<str>>,
}

impl Entry {
    fn new(log: Arc<RunLog>, shared_id: Option<Arc<str>>) -> Self {
        Self {
            log,
            stop: Arc::default(),
            shared_id,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunKind {
    Chat,
    Search,
}

impl RunKind {
    /// As the shared runs table writes it (and metrics and traces name it).
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Chat => "chat",
            RunKind::Search => "search",
        }
    }

    /// The kind the runs table names (it holds no other).
    pub(super) fn from_stored(kind: &str) -> Self {
        if kind == RunKind::Chat.as_str() {
            RunKind::Chat
        } else {
            RunKind::Search
        }
    }
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The chat or search has a run already (here or, shared, on another instance).
    #[error("a run is going already")]
    Running,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A registered run, held by its task. It ends with [`Run::finish`], in the contract's order:
/// the run's final state is persisted (by the caller, before), the run leaves
/// `GET /v1/active-runs` (so an attach now answers 404), then the terminal event goes out.
/// Dropped unfinished (a bug, or its task dropped mid-end), it leaves the registry, and a shared
/// run is ended in the database with an error, so no chat stays running forever.
#[derive(Debug)]
pub struct Run {
    runs: Arc<ActiveRuns>,
    kind: RunKind,
    id: String,
    log: Arc<RunLog>,
    /// The shared run's id, until its end is stored.
    shared_id: Option<Arc<str>>,
    /// How it ended, once counted in the metrics: `done`, `error`, or `abandoned` (dropped
    /// unfinished).
    outcome: Option<&'static str>,
    /// Thrown when a client asks the run to stop ([`ActiveRuns::request_stop`]).
    stop: Arc<StopSwitch>,
    /// The lease epoch it started in ([`ActiveRuns::fence`]).
    epoch: u64,
}

impl Run {
    pub fn log(&self) -> &Arc<RunLog> {
        &self.log
    }

    /// What a client's stop throws.
    pub fn stop_switch(&self) -> Arc<StopSwitch> {
        self.stop.clone()
    }

    /// Ends the run with its terminal event `name` (`done` or `error`) and `data`.
    pub async fn finish(mut self, name: &str, data: &str) {
        // Counted before the terminal event goes out: a client that has read it and scrapes
        // sees the run ended.
        self.ended(if name == "done" { "done" } else { "error" });
        let seq = self.log.close();
        if let (Some(shared), Some(run_id)) = (&self.runs.shared, self.shared_id.clone()) {
            let event = RunEvent {
                run_id,
                seq,
                name: name.to_string(),
                data: data.to_string(),
                terminal: true,
            };
            let mut fence = self.runs.fence.subscribe();
            let epoch = self.epoch;
            // Biased: the end is handed to the writer first, whatever the fence says.
            let stored = tokio::select! {
                biased;
                stored = shared.end(event) => Some(stored),
                // The lease ran out: other instances end the run, and this one's readers are
                // not kept waiting for a database that may not answer.
                _ = fence.wait_for(|e| *e != epoch) => None,
            };
            if stored == Some(false) {
                tracing::warn!(
                    run = %self.id,
                    "a run's end was refused: another instance ended it (this one lost its lease)"
                );
            }
            self.shared_id = None;
        }
        self.leave();
        self.log.push(name, data, true);
    }

    /// Counts the run's end once, with its outcome.
    fn ended(&mut self, outcome: &'static str) {
        if self.outcome.is_none() {
            self.outcome = Some(outcome);
            metrics::run_ended(self.kind.as_str(), outcome);
        }
    }

    fn leave(&self) {
        self.runs.with(self.kind, |map| {
            if map
                .get(&self.id)
                .is_some_and(|e| Arc::ptr_eq(&e.log, &self.log))
            {
                map.remove(&self.id);
            }
        });
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.leave();
        self.ended("abandoned");
        if let (Some(shared), Some(run_id)) = (&self.runs.shared, self.shared_id.take()) {
            let seq = self.log.close();
            shared.end_detached(RunEvent {
                run_id,
                seq,
                name: "error".into(),
                data: self.runs.errors.of(self.kind, Stopped::Panicked.message()),
                terminal: true,
            });
        }
    }
}

/// Ends the run held in `registration` with its terminal event; when the run's task no longer
/// holds it (it was dropped mid-end), only this process's readers are told.
pub async fn end(registration: &Mutex<Option<Run>>, log: &RunLog, name: &str, data: &str) {
    let run = registration
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    match run {
        Some(run) => run.finish(name, data).await,
        None => log.push(name, data, true),
    }
}

impl ActiveRuns {
    /// The registry for `store`: shared with the other instances on PostgreSQL, this process's
    /// own on SQLite. Shared, it starts the tasks that write and follow runs in the database.
    pub fn new(store: &Store, errors: ErrorEvents) -> Arc<Self> {
        let (stops, mut stop_ids) = tokio::sync::mpsc::unbounded_channel();
        let runs = Arc::new(Self {
            shared: store.runs_table().map(|table| Shared::start(table, stops)),
            errors,
            ..Self::default()
        });
        // Stop requests other instances made for runs this one owns (`shared.rs`); on SQLite a
        // stop is always this process's own.
        if runs.shared.is_some() {
            let weak = Arc::downgrade(&runs);
            tokio::spawn(async move {
                while let Some(ids) = stop_ids.recv().await {
                    let Some(runs) = weak.upgrade() else { return };
                    runs.stop_owned(&ids);
                }
            });
        }
        runs
    }

    /// Stops this process's runs whose shared ids are `ids`; the others are remembered a while.
    fn stop_owned(&self, ids: &[String]) {
        let mut maps = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for id in ids {
            let owned = maps
                .chats
                .values()
                .chain(maps.searches.values())
                .find(|entry| entry.shared_id.as_deref() == Some(id.as_str()));
            match owned {
                Some(entry) => entry.stop.request(),
                None => {
                    if maps.unmatched_stops.len() == UNMATCHED_STOPS {
                        maps.unmatched_stops.pop_front();
                    }
                    maps.unmatched_stops.push_back(id.clone());
                }
            }
        }
    }

    /// Asks the running stream of `id` to stop, wherever it runs (shared: on any instance), and
    /// returns its log, whose terminal event says it ended; `None` when nothing runs.
    pub async fn request_stop(
        &self,
        kind: RunKind,
        id: &str,
    ) -> Result<Option<Arc<RunLog>>, StoreError> {
        let local = self.with(kind, |map| {
            map.get(id).map(|entry| {
                entry.stop.request();
                entry.log.clone()
            })
        });
        if local.is_some() {
            metrics::run_cancelled(kind.as_str());
            return Ok(local);
        }
        let Some(shared) = &self.shared else {
            return Ok(None);
        };
        match shared.table.request_stop(kind.as_str(), id).await? {
            Some((run_id, tag)) => {
                metrics::run_cancelled(kind.as_str());
                Ok(Some(shared.follow(&run_id, tag).await?))
            }
            None => Ok(None),
        }
    }

    /// Whether runs are shared with other instances.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Registers a run with a fresh log; [`StartError::Running`] when one with that id is running
    /// (shared: on any instance). Shared, the registration is a database write: call it where a
    /// dropped future cannot leave it half-done ([`ActiveRuns::spawn_step`]).
    pub async fn start(self: &Arc<Self>, kind: RunKind, id: &str) -> Result<Run, StartError> {
        let Some(shared) = &self.shared else {
            let log = Arc::new(RunLog::default());
            return self.with(kind, |map| {
                if map.contains_key(id) {
                    return Err(StartError::Running);
                }
                let entry = Entry::new(log.clone(), None);
                let stop = entry.stop.clone();
                map.insert(id.to_string(), entry);
                Ok(self.run(kind, id, log, None, stop, 0))
            });
        };
        let run_id: Arc<str> = crate::vocabulary::new_id().into();
        let tag = crate::runlog::next_tag();
        // Before the insert: a lease lost while it is written counts for this run too.
        let epoch = *self.fence.borrow();
        match shared.table.start(&run_id, kind.as_str(), id, tag).await? {
            RunStart::Running => return Err(StartError::Running),
            RunStart::Started => {}
        }
        let log = Arc::new(RunLog::new(
            tag,
            Some((run_id.clone(), shared.forward())),
            false,
        ));
        // The database said this run is the only one: an entry still here is a run whose end
        // is stored and which is on its way out. A stop heard between the run's commit and now
        // found no entry; it is taken now.
        let entry = Entry::new(log.clone(), Some(run_id.clone()));
        let stop = entry.stop.clone();
        {
            let mut maps = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(at) = maps.unmatched_stops.iter().position(|i| **i == *run_id) {
                maps.unmatched_stops.remove(at);
                stop.request();
            }
            let map = match kind {
                RunKind::Chat => &mut maps.chats,
                RunKind::Search => &mut maps.searches,
            };
            map.insert(id.to_string(), entry);
        }
        Ok(self.run(kind, id, log, Some(run_id), stop, epoch))
    }

    fn run(
        self: &Arc<Self>,
        kind: RunKind,
        id: &str,
        log: Arc<RunLog>,
        shared_id: Option<Arc<str>>,
        stop: Arc<StopSwitch>,
        epoch: u64,
    ) -> Run {
        metrics::run_started(kind.as_str());
        Run {
            runs: Arc::clone(self),
            kind,
            id: id.to_string(),
            log,
            shared_id,
            outcome: None,
            stop,
            epoch,
        }
    }

    /// The log of the running stream with that id: this process's own, or (shared) a mirror of
    /// another instance's run.
    pub async fn attach(&self, kind: RunKind, id: &str) -> Result<Option<Arc<RunLog>>, StoreError> {
        if let Some(log) = self.with(kind, |map| map.get(id).map(|e| e.log.clone())) {
            return Ok(Some(log));
        }
        let Some(shared) = &self.shared else {
            return Ok(None);
        };
        match shared.table.live(kind.as_str(), id).await? {
            Some((run_id, tag)) => Ok(Some(shared.follow(&run_id, tag).await?)),
            None => Ok(None),
        }
    }

    /// Whether a run of that id is going (shared: on any instance).
    pub async fn is_running(&self, kind: RunKind, id: &str) -> Result<bool, StoreError> {
        if self.with(kind, |map| map.contains_key(id)) {
            return Ok(true);
        }
        match &self.shared {
            Some(shared) => Ok(shared.table.live(kind.as_str(), id).await?.is_some()),
            None => Ok(false),
        }
    }

    /// Running chat ids and search ids, each sorted (shared: of every live instance).
    pub async fn snapshot(&self) -> Result<(Vec<String>, Vec<String>), StoreError> {
        let Some(shared) = &self.shared else {
            let maps = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            return Ok((
                maps.chats.keys().cloned().collect(),
                maps.searches.keys().cloned().collect(),
            ));
        };
        let (mut chats, mut searches) = (Vec::new(), Vec::new());
        for (kind, target) in shared.table.all_live().await? {
            match RunKind::from_stored(&kind) {
                RunKind::Chat => chats.push(target),
                RunKind::Search => searches.push(target),
            }
        }
        Ok((chats, searches))
    }

    fn with<R>(&self, kind: RunKind, f: impl FnOnce(&mut BTreeMap<String, Entry>) -> R) -> R {
        let mut maps = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(match kind {
            RunKind::Chat => &mut maps.chats,
            RunKind::Search => &mut maps.searches,
        })
    }

    /// This instance lost its lease (`beat.rs`): the runs going now stop, and record their end
    /// where they still may (others own them, or will).
    pub fn fence(&self) {
        self.fence.send_modify(|epoch| *epoch += 1);
    }
}

/// Why a run ended without finishing its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The shutdown grace period ended.
    Shutdown,
    /// A bug: the run panicked.
    Panicked,
    /// This instance lost its lease on the shared database: others took it for gone.
    LeaseLost,
}

impl Stopped {
    /// The word metrics and traces use for it.
    pub fn label(self) -> &'static str {
        match self {
            Stopped::Shutdown => "shutdown",
            Stopped::Panicked => "panic",
            Stopped::LeaseLost => "lease_lost",
        }
    }

    /// What the run's record and its `error` event say.
    pub fn message(self) -> &'static str {
        match self {
            Stopped::Shutdown => "the server shut down before the reply was finished",
            Stopped::Panicked => {
                "the reply failed inside the server (the server log has the cause)"
            }
            Stopped::LeaseLost => {
                "the server lost its lease on the database before the reply was finished"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[tokio::test]
    async fn one_run_per_id_until_it_ends() {
        let runs = Arc::new(ActiveRuns::default());
        let run = runs.start(RunKind::Chat, "c1").await.unwrap();
        assert!(matches!(
            runs.start(RunKind::Chat, "c1").await,
            Err(StartError::Running)
        ));
        assert!(runs.is_running(RunKind::Chat, "c1").await.unwrap());
        assert!(!runs.is_running(RunKind::Search, "c1").await.unwrap());
        assert_eq!(
            runs.snapshot().await.unwrap(),
            (vec!["c1".to_string()], vec![])
        );
        let log = run.log().clone();
        let mut reader = log.reader();
        run.finish("done", "{}").await;
        assert!(!runs.is_running(RunKind::Chat, "c1").await.unwrap());
        assert_eq!(reader.next().await.unwrap().len(), 1);
        assert!(reader.finished());
        // Dropped unfinished, a run leaves the registry too.
        drop(runs.start(RunKind::Chat, "c1").await.unwrap());
        assert!(runs.start(RunKind::Chat, "c1").await.is_ok());
    }
}
