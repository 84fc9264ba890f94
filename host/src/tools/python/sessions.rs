//! The interpreter's sessions on one instance: one per chat, per `/openai/v1` container, or per
//! `persist: false` run, each an instance kept alive with its folder, found by [`SessionKey`].
//!
//! - A session's calls run one at a time (the model may ask for two in one round): each
//!   session is a slot behind an async lock, and at most [`MAX_WAITING`] calls wait for it;
//!   one more fails at once ([`SessionSlot::enter`]).
//! - At most `max_concurrent_runs` calls run at once across sessions; the others wait their
//!   turn (a queue, never a refusal). A call takes its session first and its turn second, so
//!   calls waiting for a busy session hold no turn another chat could use.
//! - A session unused for `idle` ends; past `max_sessions` the least recently used idle one
//!   ends; a run's session ends with its run (its [`RunToken`] dropped). A session ends by
//!   dropping its store: its memory and its folder's go back to the total at once.
//! - When the memory all plugin instances share would pass its cap, idle sessions are ended,
//!   least recently used first, before any growth fails ([`Sessions::reclaim`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::plugins::capabilities::files::tree::Folder;
use crate::plugins::memory::Reclaim;
use crate::plugins::worlds::tool::ToolSession;

/// Whose session a call runs in.
#[derive(Clone, Debug)]
pub enum SessionKey {
    /// A chat's: its calls share globals while the session lives.
    Chat(String),
    /// An `/openai/v1` container's (`store/containers.rs`): the requests that name it share
    /// its globals while the session lives, and its files while the container does.
    Container(String),
    /// A run without a chat (`persist: false`): its session ends with the run.
    Run(Arc<RunToken>),
    /// A session for this call alone (`/mcp`).
    Fresh,
}

/// Identifies one run without a chat while the run holds it.
#[derive(Debug)]
pub struct RunToken(u64);

impl RunToken {
    pub fn new() -> Arc<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Arc::new(Self(NEXT.fetch_add(1, Ordering::Relaxed)))
    }
}

impl SessionKey {
    /// The key of a run: its chat's, else one for the run alone.
    pub fn for_run(chat_id: Option<&str>) -> Self {
        match chat_id {
            Some(id) => SessionKey::Chat(id.to_string()),
            None => SessionKey::Run(RunToken::new()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Id {
    Chat(String),
    Container(String),
    Run(u64),
}

/// Calls that may wait for one session while another of its calls runs (the model asked for
/// several in one round); one more fails at once rather than queue behind them.
pub const MAX_WAITING: usize = 8;

/// A session's slot behind its lock, and how many calls wait for it.
pub struct SessionSlot {
    slot: tokio::sync::Mutex<Slot>,
    waiting: AtomicUsize,
}

/// A call refused because [`MAX_WAITING`] calls already wait for its session.
#[derive(Debug)]
pub struct TooManyWaiting;

impl SessionSlot {
    fn new() -> Self {
        Self {
            slot: tokio::sync::Mutex::new(Slot::default()),
            waiting: AtomicUsize::new(0),
        }
    }

    /// Waits for the session's other calls to end, unless [`MAX_WAITING`] already wait.
    pub async fn enter(&self) -> Result<tokio::sync::MutexGuard<'_, Slot>, TooManyWaiting> {
        if let Ok(slot) = self.slot.try_lock() {
            return Ok(slot);
        }
        let before = self.waiting.fetch_add(1, Ordering::AcqRel);
        // Counted down however the wait ends, the call's future dropped included.
        let _waiting = Waiting(&self.waiting);
        if before >= MAX_WAITING {
            return Err(TooManyWaiting);
        }
        Ok(self.slot.lock().await)
    }

    /// Whether a call holds it: running in it, waiting for it, or about to (a call takes the
    /// slot out of the table before it enters).
    fn in_use(self: &Arc<Self>) -> bool {
        Arc::strong_count(self) > 1 || self.slot.try_lock().is_err()
    }
}

struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One session: its instance (none until its first call, or after one that failed) and folder.
#[derive(Default)]
pub struct Slot {
    pub session: Option<ToolSession>,
    pub folder: Option<Folder>,
    /// Which plugin's instance the session is (a reload may replace the plugin).
    pub plugin: usize,
}

struct Entry {
    slot: Arc<SessionSlot>,
    last_used: Instant,
    /// For a run's session: alive while its run is.
    run: Option<Weak<RunToken>>,
}

/// The sessions of one server.
pub struct Sessions {
    entries: Mutex<HashMap<Id, Entry>>,
    running: Semaphore,
}

impl Sessions {
    pub fn new(max_concurrent_runs: usize) -> Arc<Self> {
        Arc::new(Self {
            entries: Mutex::default(),
            running: Semaphore::new(max_concurrent_runs),
        })
    }

    /// Waits for a turn to run (at most `max_concurrent_runs` at once).
    pub async fn turn(&self) -> tokio::sync::SemaphorePermit<'_> {
        self.running
            .acquire()
            .await
            .expect("the semaphore is never closed")
    }

    /// The slot of `key`, made empty if it has none; `None` for [`SessionKey::Fresh`], whose
    /// session is the caller's alone.
    pub fn slot(&self, key: &SessionKey) -> Option<Arc<SessionSlot>> {
        let (id, run) = match key {
            SessionKey::Chat(chat) => (Id::Chat(chat.clone()), None),
            SessionKey::Container(id) => (Id::Container(id.clone()), None),
            SessionKey::Run(token) => (Id::Run(token.0), Some(Arc::downgrade(token))),
            SessionKey::Fresh => return None,
        };
        let mut entries = lock(&self.entries);
        let entry = entries.entry(id).or_insert_with(|| Entry {
            slot: Arc::new(SessionSlot::new()),
            last_used: Instant::now(),
            run,
        });
        entry.last_used = Instant::now();
        Some(entry.slot.clone())
    }

    /// Ends what should end: sessions idle longer than `idle`, those of finished runs, and the
    /// least recently used idle ones past `max_sessions`. A session in use is never ended.
    pub fn sweep(&self, idle: Duration, max_sessions: usize) {
        let now = Instant::now();
        let ended: Vec<Entry> = {
            let mut entries = lock(&self.entries);
            let mut ended = Vec::new();
            let stale: Vec<Id> = entries
                .iter()
                .filter(|(_, e)| {
                    now.duration_since(e.last_used) >= idle
                        || e.run.as_ref().is_some_and(|run| run.strong_count() == 0)
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in stale {
                if let Some(entry) = take_idle(&mut entries, &id) {
                    ended.push(entry);
                }
            }
            while entries.len() > max_sessions {
                let Some(id) = least_recent_idle(&entries) else {
                    break;
                };
                ended.extend(take_idle(&mut entries, &id));
            }
            ended
        };
        // Dropped outside the lock: a store's drop frees its memory.
        drop(ended);
    }

    /// Ends the session of chat `chat_id` (the chat was deleted), unless a call is running in it.
    pub fn end_chat(&self, chat_id: &str) {
        let ended = take_idle(&mut lock(&self.entries), &Id::Chat(chat_id.to_string()));
        drop(ended);
    }
}

impl Reclaim for Sessions {
    /// Ends idle sessions, least recently used first, until `fits` or none is left. Called when
    /// a plugin's memory growth would pass the total.
    fn reclaim(&self, fits: &mut dyn FnMut() -> bool) -> bool {
        let mut any = false;
        loop {
            let ended = {
                let mut entries = lock(&self.entries);
                let Some(id) = least_recent_idle(&entries) else {
                    return any;
                };
                take_idle(&mut entries, &id)
            };
            any |= ended.is_some();
            drop(ended);
            if fits() {
                return any;
            }
        }
    }
}

/// Removes the entry `id` if no call holds its slot ([`SessionSlot::in_use`]).
fn take_idle(entries: &mut HashMap<Id, Entry>, id: &Id) -> Option<Entry> {
    let busy = entries.get(id)?.slot.in_use();
    if busy { None } else { entries.remove(id) }
}

/// The least recently used entry whose slot no call holds.
fn least_recent_idle(entries: &HashMap<Id, Entry>) -> Option<Id> {
    entries
        .iter()
        .filter(|(_, e)| !e.slot.in_use())
        .min_by_key(|(_, e)| e.last_used)
        .map(|(id, _)| id.clone())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
