//! Backend-owned runs: the registry of running chat and search streams, each run's event log,
//! and the shutdown switch every run watches. Memory only (runs are not durable across restarts,
//! per the contract). `GET /v1/active-runs` reads the registry, attach reads a run's log,
//! `cacheHit` asks whether a search is streaming.
//!
//! A run's events are kept in order in its [`RunLog`] until the run ends. A reader holds a
//! cursor into the log: it takes what is there under the lock, then waits for the length to
//! grow. Replay and follow are the same loop, so an attaching client can neither miss an event
//! nor see one twice, and a slow reader never holds up the run (there is no per-reader queue).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;

#[derive(Debug)]
pub struct ActiveRuns {
    // A std Mutex: every critical section is a map operation, never held across an await.
    inner: Mutex<Maps>,
    /// Run tasks alive (registered or not: non-streaming completions count too).
    live: watch::Sender<usize>,
    /// Set when the shutdown grace period is over: runs still going record an error and stop.
    stop: watch::Sender<bool>,
}

impl Default for ActiveRuns {
    fn default() -> Self {
        Self {
            inner: Mutex::default(),
            live: watch::Sender::new(0),
            stop: watch::Sender::new(false),
        }
    }
}

#[derive(Debug, Default)]
struct Maps {
    chats: BTreeMap<String, Arc<RunLog>>,
    searches: BTreeMap<String, Arc<RunLog>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunKind {
    Chat,
    Search,
}

/// Proof that a run is registered; dropping it takes the run out of the registry. The owner
/// drops it in the contract's order: the run's final state is persisted, the run leaves
/// `GET /v1/active-runs` (so an attach now answers 404), then the terminal event goes out.
#[derive(Debug)]
pub struct RunGuard {
    runs: Arc<ActiveRuns>,
    kind: RunKind,
    id: String,
    log: Arc<RunLog>,
}

impl RunGuard {
    pub fn log(&self) -> &Arc<RunLog> {
        &self.log
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.runs.with(self.kind, |map| {
            if map.get(&self.id).is_some_and(|l| Arc::ptr_eq(l, &self.log)) {
                map.remove(&self.id);
            }
        });
    }
}

impl ActiveRuns {
    /// Registers a run with a fresh log; `None` when one with that id is already running.
    pub fn start(self: &Arc<Self>, kind: RunKind, id: &str) -> Option<RunGuard> {
        let log = Arc::new(RunLog::default());
        self.with(kind, |map| {
            if map.contains_key(id) {
                return None;
            }
            map.insert(id.to_string(), log.clone());
            Some(RunGuard {
                runs: Arc::clone(self),
                kind,
                id: id.to_string(),
                log,
            })
        })
    }

    /// The log of the running stream with that id.
    pub fn log(&self, kind: RunKind, id: &str) -> Option<Arc<RunLog>> {
        self.with(kind, |map| map.get(id).cloned())
    }

    pub fn is_running(&self, kind: RunKind, id: &str) -> bool {
        self.with(kind, |map| map.contains_key(id))
    }

    /// Running chat ids and search ids, each sorted.
    pub fn snapshot(&self) -> (Vec<String>, Vec<String>) {
        let maps = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (
            maps.chats.keys().cloned().collect(),
            maps.searches.keys().cloned().collect(),
        )
    }

    fn with<R>(&self, kind: RunKind, f: impl FnOnce(&mut BTreeMap<String, Arc<RunLog>>) -> R) -> R {
        let mut maps = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(match kind {
            RunKind::Chat => &mut maps.chats,
            RunKind::Search => &mut maps.searches,
        })
    }

    /// Runs `work` as a backend-owned task: it goes on when the client leaves, and shutdown
    /// waits for it. If the shutdown grace period ends first, or `work` panics, `work` is dropped
    /// (cancelling its upstream call) and `stopped` runs instead, to record the failure and end
    /// the run's stream: no reader is left waiting for a terminal event that never comes.
    pub fn spawn<W, S, F>(self: &Arc<Self>, work: W, stopped: S) -> tokio::task::JoinHandle<()>
    where
        W: Future<Output = ()> + Send + 'static,
        S: FnOnce(Stopped) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        use futures::FutureExt;
        let live = LiveTask::new(self.clone());
        let mut stop = self.stop.subscribe();
        // Unwind safety: on a panic `work`'s state is dropped, never used again.
        // Boxed here, outside the task's block: a block that moves a captured future into a
        // future of its own (the `select!`) keeps room for both, and `work` is the run's whole
        // state machine. Measured on a persisted chat run: the task's future was 9.9 KiB; now
        // it is 0.8 KiB, beside the 4.5 KiB box.
        let mut work = Box::pin(std::panic::AssertUnwindSafe(work).catch_unwind());
        tokio::spawn(async move {
            let _live = live;
            let why = tokio::select! {
                done = &mut work => match done {
                    Ok(()) => None,
                    Err(_) => {
                        tracing::error!("a run panicked; its failure is recorded");
                        Some(Stopped::Panicked)
                    }
                },
                seen = stop.wait_for(|stop| *stop) => seen.is_ok().then_some(Stopped::Shutdown),
            };
            // Before `stopped`: the select only borrowed it, and a stopped run's upstream call
            // must be cancelled now, not after its failure is recorded.
            drop(work);
            if let Some(why) = why {
                // Boxed: a run's task lives as long as the run, and inline this rare path's
                // state would be part of every run's memory.
                Box::pin(stopped(why)).await;
            }
        })
    }

    /// Runs `step`, the short work that leads to a run (a new chat's write, then [`spawn`]), in a
    /// task of its own that shutdown counts as a run: a client gone in the middle of it does not
    /// stop it half-way, and neither does a shutdown, which waits for it as for a run (the run it
    /// spawns is counted before the step ends). It is not told to stop: it is one write long.
    ///
    /// [`spawn`]: ActiveRuns::spawn
    pub fn spawn_step<T, W>(self: &Arc<Self>, step: W) -> tokio::task::JoinHandle<T>
    where
        T: Send + 'static,
        W: Future<Output = T> + Send + 'static,
    {
        let live = LiveTask::new(self.clone());
        tokio::spawn(async move {
            let _live = live;
            step.await
        })
    }

    /// Waits until no run task is alive (tests and tools await it instead of polling).
    pub async fn settled(&self) {
        let _ = self.live.subscribe().wait_for(|n| *n == 0).await;
    }

    /// Shutdown, after the listener closed: waits up to `grace` for runs to finish, then tells
    /// the rest to stop and waits for them to record their error.
    pub async fn shut_down(&self, grace: Duration) {
        if tokio::time::timeout(grace, self.settled()).await.is_err() {
            let left = *self.live.borrow();
            tracing::warn!(
                runs = left,
                "grace period over: stopping the runs still going"
            );
            self.stop.send_replace(true);
            self.settled().await;
        }
    }

    /// Whether the grace period is over (runs started now stop at once).
    pub fn stopping(&self) -> bool {
        *self.stop.borrow()
    }
}

/// Why a run ended without finishing its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The shutdown grace period ended.
    Shutdown,
    /// A bug: the run panicked.
    Panicked,
}

impl Stopped {
    /// What the run's record and its `error` event say.
    pub fn message(self) -> &'static str {
        match self {
            Stopped::Shutdown => "the server shut down before the reply was finished",
            Stopped::Panicked => {
                "the reply failed inside the server (the server log has the cause)"
            }
        }
    }
}

/// Counts a run task as live while it exists.
struct LiveTask(Arc<ActiveRuns>);

impl LiveTask {
    fn new(runs: Arc<ActiveRuns>) -> Self {
        runs.live.send_modify(|n| *n += 1);
        Self(runs)
    }
}

impl Drop for LiveTask {
    fn drop(&mut self) {
        self.0.live.send_modify(|n| *n -= 1);
    }
}

/// One run's events, in order, each already framed for SSE (`id:`, `event:`, `data:`), so every
/// reader sends the same bytes without serializing again.
///
/// An event's id is `<run>-<position>`: the run's tag, then the event's 1-based position. The tag
/// is what tells a `Last-Event-ID` of this run from one of an earlier run of the same chat or
/// search, whose positions would otherwise skip events of this one.
#[derive(Debug)]
pub struct RunLog {
    /// This run's part of its event ids, written as 8 hex digits.
    tag: u32,
    events: Mutex<Vec<Bytes>>,
    /// The number of events, and whether the last one was terminal.
    len: watch::Sender<(usize, bool)>,
}

/// The next run's tag. Counting from a random start: two runs of one process never share a tag
/// (short of 2^32 runs), and a restarted server's tags have nothing to do with the last one's,
/// so an id kept from before a restart matches a new run only by a 1-in-2^32 chance.
static NEXT_TAG: LazyLock<AtomicU32> = LazyLock::new(|| {
    use std::hash::BuildHasher;
    // The standard library's hasher keys are random per process: a random number without a
    // dependency for it.
    let random = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
    AtomicU32::new(random as u32)
});

impl Default for RunLog {
    fn default() -> Self {
        Self {
            tag: NEXT_TAG.fetch_add(1, Ordering::Relaxed),
            events: Mutex::default(),
            len: watch::Sender::new((0, false)),
        }
    }
}

impl RunLog {
    /// Appends an event: `name` and its JSON `data`. Its SSE id is the run's tag and its 1-based
    /// position.
    pub fn push(&self, name: &str, data: &str, terminal: bool) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let id = events.len() + 1;
        let mut frame = String::with_capacity(data.len() + name.len() + 48);
        // Writing to a String cannot fail.
        let _ = write!(frame, "id: {:08x}-{id}\nevent: ", self.tag);
        frame.push_str(name);
        // JSON text has no raw newlines, so one `data:` line carries it.
        frame.push_str("\ndata: ");
        frame.push_str(data);
        frame.push_str("\n\n");
        events.push(Bytes::from(frame));
        // Under the lock, so readers see lengths in push order.
        self.len.send_replace((id, terminal));
    }

    /// A reader from the first event.
    pub fn reader(self: &Arc<Self>) -> RunReader {
        self.reader_at(0)
    }

    /// A reader after `last` (a `Last-Event-ID`) when it is one of this run's events; from the
    /// first event when it is not (it came from an earlier run: all of this one is new to its
    /// client) or there is none. A position this run has not reached is not one of its events
    /// either: no client was given its id, and skipping to it would hide events that client
    /// never saw.
    pub fn reader_after(self: &Arc<Self>, last: Option<&EventId>) -> RunReader {
        match last {
            Some(last) if last.run == Some(self.tag) && last.position <= self.len.borrow().0 => {
                self.reader_at(last.position)
            }
            _ => self.reader(),
        }
    }

    fn reader_at(self: &Arc<Self>, skip: usize) -> RunReader {
        RunReader {
            log: self.clone(),
            len: self.len.subscribe(),
            cursor: skip,
        }
    }
}

/// An event id as the `id:` lines give it, `<run>-<position>`: what a client sends back as
/// `Last-Event-ID` to resume after that event.
#[derive(Debug, PartialEq, Eq)]
pub struct EventId {
    /// `None` for a bare position: the ids of chatd before run tags, which can only name an
    /// event of a run that is gone (runs do not outlive the server).
    run: Option<u32>,
    position: usize,
}

impl EventId {
    /// `None` unless `text` is 8 hex digits, `-` and a position, or a position alone.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (run, position) = match text.split_once('-') {
            Some((run, position)) => {
                let hex = run.len() == 8 && run.bytes().all(|b| b.is_ascii_hexdigit());
                (
                    Some(u32::from_str_radix(run, 16).ok().filter(|_| hex)?),
                    position,
                )
            }
            None => (None, text),
        };
        // Digits only: `usize`'s parser would take a sign too.
        if position.is_empty() || !position.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(Self {
            run,
            position: position.parse().ok()?,
        })
    }
}

/// Reads a run's events from a position: first what is logged, then each new one, until the
/// terminal event.
pub struct RunReader {
    log: Arc<RunLog>,
    len: watch::Receiver<(usize, bool)>,
    cursor: usize,
}

impl RunReader {
    /// The next frames (all logged since the last call), or `None` after the terminal event.
    pub async fn next(&mut self) -> Option<Vec<Bytes>> {
        let cursor = self.cursor;
        // A new event, or the end (a resumed reader may already be past the last event).
        let (len, _) = match self
            .len
            .wait_for(|(len, terminal)| *len > cursor || *terminal)
            .await
        {
            Ok(seen) => *seen,
            // The log was dropped with its run: nothing more will come.
            Err(_) => return None,
        };
        if len <= cursor {
            return None;
        }
        let frames = {
            let events = self.log.events.lock().unwrap_or_else(|e| e.into_inner());
            events[cursor.min(events.len())..len.min(events.len())].to_vec()
        };
        self.cursor = len;
        Some(frames)
    }

    /// Whether the reader has passed the terminal event.
    pub fn finished(&self) -> bool {
        let (len, terminal) = *self.len.borrow();
        terminal && self.cursor >= len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_per_id_until_the_guard_drops() {
        let runs = Arc::new(ActiveRuns::default());
        let guard = runs.start(RunKind::Chat, "c1").unwrap();
        assert!(runs.start(RunKind::Chat, "c1").is_none());
        assert!(runs.is_running(RunKind::Chat, "c1"));
        assert!(!runs.is_running(RunKind::Search, "c1"));
        assert_eq!(runs.snapshot(), (vec!["c1".to_string()], vec![]));
        drop(guard);
        assert!(!runs.is_running(RunKind::Chat, "c1"));
        assert!(runs.start(RunKind::Chat, "c1").is_some());
    }

    #[tokio::test]
    async fn a_reader_replays_then_follows_without_loss_or_repeats() {
        let log = Arc::new(RunLog::default());
        log.push("meta", "{}", false);
        log.push("delta", r#"{"text":"a"}"#, false);
        let mut late = log.reader();
        let first_id = EventId::parse(&format!("{:08x}-1", log.tag)).unwrap();
        let mut resumed = log.reader_after(Some(&first_id));
        let writer = {
            let log = log.clone();
            tokio::spawn(async move {
                for i in 0..100 {
                    log.push("delta", &format!(r#"{{"text":"{i}"}}"#), false);
                    tokio::task::yield_now().await;
                }
                log.push("done", "{}", true);
            })
        };
        let mut seen = Vec::new();
        while !late.finished() {
            seen.extend(late.next().await.unwrap());
        }
        writer.await.unwrap();
        assert_eq!(seen.len(), 103);
        for (i, frame) in seen.iter().enumerate() {
            let text = std::str::from_utf8(frame).unwrap();
            let id = format!("id: {:08x}-{}\n", log.tag, i + 1);
            assert!(text.starts_with(&id), "{text}");
        }
        let first = resumed.next().await.unwrap();
        let id = format!("id: {:08x}-2\n", log.tag);
        assert!(std::str::from_utf8(&first[0]).unwrap().starts_with(&id));
    }

    #[test]
    fn event_ids_parse_as_the_id_lines_give_them() {
        let id = EventId::parse(" 0a1B2c3d-12 ").unwrap();
        assert_eq!((id.run, id.position), (Some(0x0a1b2c3d), 12));
        let bare = EventId::parse("7").unwrap();
        assert_eq!((bare.run, bare.position), (None, 7));
        for bad in [
            "",
            "-12",
            "0a1b2c3d-",
            "0a1b2c3d-x",
            "0a1b2c3d--1",
            "0a1b2c3d-+1",
            "+1",
            "zz-1",
            "abc-1",
            "0a1b2c3d0-1",
        ] {
            assert_eq!(EventId::parse(bad), None, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn an_id_from_another_run_replays_this_one_from_the_start() {
        let (earlier, log) = (RunLog::default(), Arc::new(RunLog::default()));
        assert_ne!(earlier.tag, log.tag);
        log.push("meta", "{}", false);
        log.push("delta", "{}", false);
        for stale in [format!("{:08x}-1", earlier.tag), "1".to_string()] {
            let stale = EventId::parse(&stale).unwrap();
            let frames = log.reader_after(Some(&stale)).next().await.unwrap();
            assert_eq!(frames.len(), 2, "{stale:?}");
        }
        let own = EventId::parse(&format!("{:08x}-1", log.tag)).unwrap();
        assert_eq!(log.reader_after(Some(&own)).next().await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn shutdown_waits_for_a_step_as_for_a_run() {
        use futures::FutureExt;
        let runs = Arc::new(ActiveRuns::default());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let step = runs.spawn_step(async move {
            rx.await.unwrap();
            7
        });
        assert!(
            runs.shut_down(Duration::from_secs(30))
                .now_or_never()
                .is_none(),
            "shutdown waits while the step runs"
        );
        tx.send(()).unwrap();
        assert_eq!(step.await.unwrap(), 7);
        runs.shut_down(Duration::from_secs(30)).await;
        assert_eq!(*runs.live.borrow(), 0);
    }

    #[tokio::test]
    async fn shutdown_waits_for_runs_then_stops_the_rest() {
        let runs = Arc::new(ActiveRuns::default());
        let (tx, rx) = tokio::sync::oneshot::channel();
        runs.spawn(std::future::pending(), move |why| async move {
            let _ = tx.send(why);
        });
        let (tx2, rx2) = tokio::sync::oneshot::channel();
        runs.spawn(async { panic!("a bug") }, move |why| async move {
            let _ = tx2.send(why);
        });
        assert_eq!(rx2.await.unwrap(), Stopped::Panicked);
        runs.shut_down(Duration::from_millis(20)).await;
        assert_eq!(rx.await.unwrap(), Stopped::Shutdown);
        assert_eq!(*runs.live.borrow(), 0);
    }

    #[tokio::test]
    async fn a_position_past_the_end_replays_from_the_start() {
        let log = Arc::new(RunLog::default());
        log.push("meta", "{}", false);
        log.push("done", "{}", true);
        let at = |position: usize| EventId::parse(&format!("{:08x}-{position}", log.tag));
        // Resumed after its last event, a finished run has nothing more to give.
        assert!(log.reader_after(at(2).as_ref()).next().await.is_none());
        // No client was given an id past the end: all of the run is new to it.
        let mut reader = log.reader_after(at(5).as_ref());
        assert_eq!(reader.next().await.unwrap().len(), 2);
        assert!(reader.next().await.is_none());
    }
}
