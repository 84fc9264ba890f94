//! Runs shared by the instances of a deployment, with PostgreSQL as the only shared service
//! (the SQL is `store/postgres/runs.rs`).
//!
//! - **Owning.** A run is registered in the database (one live run per chat or search: the
//!   409), and its owner's log hands every event to this instance's one writer task, which
//!   stores them in batches ([`FLUSH_EVERY`]: a stream costs a commit per batch, not per delta)
//!   under the event's position as its sequence, and notifies the other instances. A terminal
//!   event is written at once, ending the run in the same transaction, before this instance's
//!   readers get it. The database takes an owner's events only while the run is its own and live.
//! - **Following.** An instance asked for a run another owns keeps a mirror of its log: filled
//!   from the database at once (the replay), then on each notification naming the run, and every
//!   [`POLL_EVERY`] whatever was heard, so a notification lost with the listener's connection
//!   costs at most that long. Events enter a mirror only at its next position, so none is lost
//!   or doubled, and its frames are the owner's byte for byte.
//! - **Stopping.** A client's stop reaches a run's owner from any instance: the run is marked in
//!   the database and its owner notified on the same channel; an owner whose listener was away
//!   reads the marks when it listens again, so no stop is lost with a notification.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::runlog::{Forward, RunLog};
use crate::store::{RunEvent, RunsTable, StoreError};
use crate::telemetry::metrics;

/// How long events wait to be written with the next ones: the lag of live events on other
/// instances, and at most one commit per stream per this long.
pub const FLUSH_EVERY: Duration = Duration::from_millis(20);

/// How often a mirror looks for events whatever notifications said.
pub const POLL_EVERY: Duration = Duration::from_millis(500);

/// The most events stored in one transaction.
const MAX_BATCH: usize = 2_000;

/// How long the writer waits before trying a failed batch again, and the listener before
/// connecting again.
const RETRY_AFTER: Duration = Duration::from_millis(250);

/// The shared side of [`super::ActiveRuns`].
pub(super) struct Shared {
    pub(super) table: RunsTable,
    writer: mpsc::UnboundedSender<Write>,
    followers: Arc<Followers>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

/// What the writer task is given, and when it was logged (for the lag metric).
enum Write {
    Event(RunEvent, Instant),
    /// A terminal event, and who waits to know whether it was stored (this instance owned the
    /// run).
    End(RunEvent, Instant, Option<oneshot::Sender<bool>>),
}

impl Shared {
    /// Starts the writer, the listener and the follower tasks; they stop when the store closes.
    /// The ids of this instance's runs that clients asked to stop go to `stops`.
    pub(super) fn start(table: RunsTable, stops: mpsc::UnboundedSender<Vec<String>>) -> Self {
        let (writer, queue) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(table.clone(), queue));
        let followers = Arc::new(Followers {
            table: table.clone(),
            mirrors: Mutex::default(),
        });
        let (wake, woken) = mpsc::unbounded_channel();
        tokio::spawn(listen_loop(table.clone(), wake, stops));
        tokio::spawn(follow_loop(followers.clone(), woken));
        Self {
            table,
            writer,
            followers,
        }
    }

    /// An owner's hand-off of its events to the writer.
    pub(super) fn forward(&self) -> Forward {
        let writer = self.writer.clone();
        Box::new(move |event| {
            // Closed only when the writer stopped with the store: nothing to write to.
            let _ = writer.send(Write::Event(event, Instant::now()));
        })
    }

    /// Stores a run's terminal event, ending it, after the events before it; whether it was
    /// stored (false: another instance ended the run, or the store closed).
    pub(super) async fn end(&self, event: RunEvent) -> bool {
        let (tx, rx) = oneshot::channel();
        if self
            .writer
            .send(Write::End(event, Instant::now(), Some(tx)))
            .is_err()
        {
            return false;
        }
        rx.await.unwrap_or(false)
    }

    /// [`Shared::end`] without waiting.
    pub(super) fn end_detached(&self, event: RunEvent) {
        let _ = self.writer.send(Write::End(event, Instant::now(), None));
    }

    /// A mirror of run `run_id`, owned by another instance, with what the database has of it.
    pub(super) async fn follow(&self, run_id: &str, tag: u32) -> Result<Arc<RunLog>, StoreError> {
        self.followers.follow(run_id, tag).await
    }
}

/// Stores owners' events in batches, in the order they were logged.
async fn write_loop(table: RunsTable, mut queue: mpsc::UnboundedReceiver<Write>) {
    let mut batch = Batch::default();
    let mut open = true;
    let mut last_flush = Instant::now();
    while open || !batch.events.is_empty() {
        if batch.events.is_empty() {
            match queue.recv().await {
                Some(write) => batch.take(write),
                None => return,
            }
        }
        // More events join until the flush is due, unless an end is waiting.
        let due = last_flush + FLUSH_EVERY;
        while open && !batch.urgent && batch.events.len() < MAX_BATCH {
            tokio::select! {
                write = queue.recv() => match write {
                    Some(write) => batch.take(write),
                    None => open = false,
                },
                _ = tokio::time::sleep_until(due) => break,
            }
        }
        while batch.events.len() < MAX_BATCH
            && let Ok(write) = queue.try_recv()
        {
            batch.take(write);
        }
        match table.write(&batch.events).await {
            Ok(refused) => batch.done(&refused),
            Err(e) if table.is_closed() => {
                tracing::warn!(error = %e, "run events not stored: the store closed");
                batch.done(&HashSet::new());
                return;
            }
            Err(e) => {
                // Kept and tried again with what comes meanwhile: a run's events stay in order.
                tracing::warn!(error = %e, "could not store run events; trying again");
                tokio::time::sleep(RETRY_AFTER).await;
                continue;
            }
        }
        last_flush = Instant::now();
    }
}

#[derive(Default)]
struct Batch {
    events: Vec<RunEvent>,
    acks: Vec<(Arc<str>, oneshot::Sender<bool>)>,
    /// An end is in the batch: it goes now.
    urgent: bool,
    /// Runs already reported as refused (one warning each).
    refused: HashSet<Arc<str>>,
    /// When the batch's oldest event was logged.
    oldest: Option<Instant>,
}

impl Batch {
    fn take(&mut self, write: Write) {
        let (Write::Event(_, logged) | Write::End(_, logged, _)) = &write;
        self.oldest.get_or_insert(*logged);
        match write {
            Write::Event(event, _) => self.events.push(event),
            Write::End(event, _, ack) => {
                if let Some(ack) = ack {
                    self.acks.push((event.run_id.clone(), ack));
                }
                self.events.push(event);
                self.urgent = true;
            }
        }
    }

    /// The batch was written, but for the runs in `refused`.
    fn done(&mut self, refused: &HashSet<String>) {
        for id in refused {
            if self.refused.len() > 10_000 {
                self.refused.clear();
            }
            if self.refused.insert(id.as_str().into()) {
                tracing::warn!(
                    run = %id,
                    "events of a run refused: another instance ended it (this one lost its lease)"
                );
            }
        }
        for (id, ack) in self.acks.drain(..) {
            let _ = ack.send(!refused.contains(&*id));
        }
        if let Some(oldest) = self.oldest.take() {
            metrics::run_event_lag(oldest.elapsed());
        }
        self.events.clear();
        self.urgent = false;
    }
}

/// What wakes the followers.
enum Wake {
    /// These runs have new events.
    Runs(Vec<String>),
    /// Anything may have new events (notifications were lost, or it is time to poll).
    All,
}

/// Hears the notifications of new events and passes them on; reconnects when the connection
/// drops, and then wakes every mirror and reads the stop requests (what was sent meanwhile was
/// not heard). Stop requests go to `stops`.
async fn listen_loop(
    table: RunsTable,
    wake: mpsc::UnboundedSender<Wake>,
    stops: mpsc::UnboundedSender<Vec<String>>,
) {
    loop {
        let mut listener = match table.listen().await {
            Ok(listener) => listener,
            Err(_) if table.is_closed() => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for run events; trying again");
                tokio::time::sleep(RETRY_AFTER).await;
                continue;
            }
        };
        if wake.send(Wake::All).is_err() {
            return;
        }
        match table.stop_requests().await {
            Ok(ids) if !ids.is_empty() => {
                let _ = stops.send(ids);
            }
            Ok(_) => {}
            Err(_) if table.is_closed() => return,
            // Listened again, and read again, until the read succeeds: a stop made while no one
            // listened is never lost.
            Err(e) => {
                tracing::warn!(error = %e, "could not read the runs' stop requests; trying again");
                tokio::time::sleep(RETRY_AFTER).await;
                continue;
            }
        }
        loop {
            let heard = match listener.next().await {
                Ok(Some(heard)) => {
                    if !heard.stops.is_empty() {
                        let _ = stops.send(heard.stops);
                    }
                    if heard.runs.is_empty() {
                        continue;
                    }
                    Wake::Runs(heard.runs)
                }
                Ok(None) => {
                    // A new connection, listening before the stop requests are read: what was
                    // sent while none listened is found either way.
                    tracing::warn!("the run events listener lost its connection; reconnecting");
                    break;
                }
                Err(_) if table.is_closed() => return,
                Err(e) => {
                    tracing::warn!(error = %e, "the run events listener failed; reconnecting");
                    tokio::time::sleep(RETRY_AFTER).await;
                    break;
                }
            };
            if wake.send(heard).is_err() {
                return;
            }
        }
    }
}

/// Catches mirrors up when woken, and every [`POLL_EVERY`].
async fn follow_loop(followers: Arc<Followers>, mut woken: mpsc::UnboundedReceiver<Wake>) {
    let mut poll = tokio::time::interval(POLL_EVERY);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let first = tokio::select! {
            wake = woken.recv() => match wake {
                Some(wake) => wake,
                None => return,
            },
            _ = poll.tick() => Wake::All,
        };
        // Everything heard meanwhile, in one catch-up.
        let mut runs: Option<HashSet<String>> = Some(HashSet::new());
        for wake in std::iter::once(first).chain(std::iter::from_fn(|| woken.try_recv().ok())) {
            match (wake, &mut runs) {
                (Wake::Runs(ids), Some(runs)) => runs.extend(ids),
                (Wake::All, _) => runs = None,
                (Wake::Runs(_), None) => {}
            }
        }
        if followers.table.is_closed() {
            return;
        }
        if let Err(e) = followers.catch_up(runs.as_ref()).await {
            tracing::warn!(error = %e, "could not read run events; the next poll tries again");
        }
    }
}

/// The mirrors of other instances' runs that this instance's clients are reading.
struct Followers {
    table: RunsTable,
    /// By run id; a mirror lives as long as its readers.
    mirrors: Mutex<HashMap<String, Weak<RunLog>>>,
}

impl Followers {
    async fn follow(&self, run_id: &str, tag: u32) -> Result<Arc<RunLog>, StoreError> {
        let log = {
            let mut mirrors = self.mirrors.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(log) = mirrors.get(run_id).and_then(Weak::upgrade) {
                return Ok(log);
            }
            let log = Arc::new(RunLog::new(tag, None, true));
            mirrors.insert(run_id.to_string(), Arc::downgrade(&log));
            log
        };
        // The replay, here rather than at the next wake: the client gets it at once.
        for event in self.table.events_after(&[(run_id, 0)]).await? {
            log.push_at(&event);
        }
        Ok(log)
    }

    /// Reads the new events of the mirrors of `runs` (all mirrors: `None`).
    async fn catch_up(&self, runs: Option<&HashSet<String>>) -> Result<(), StoreError> {
        let targets: HashMap<String, Arc<RunLog>> = {
            let mut mirrors = self.mirrors.lock().unwrap_or_else(|e| e.into_inner());
            // A mirror no one reads, or that has its end, needs nothing more.
            mirrors.retain(|_, log| log.upgrade().is_some_and(|log| !log.len().1));
            mirrors
                .iter()
                .filter(|(id, _)| runs.is_none_or(|runs| runs.contains(*id)))
                .filter_map(|(id, log)| Some((id.clone(), log.upgrade()?)))
                .collect()
        };
        if targets.is_empty() {
            return Ok(());
        }
        let cursors: Vec<(&str, u32)> = targets
            .iter()
            .map(|(id, log)| (id.as_str(), log.len().0 as u32))
            .collect();
        for event in self.table.events_after(&cursors).await? {
            if let Some(log) = targets.get(&*event.run_id) {
                log.push_at(&event);
            }
        }
        Ok(())
    }
}
