//! The active-run registry: which chat and search streams are running right now. It is memory
//! only (runs are not durable across restarts, per the contract). `GET /v1/active-runs` reads it,
//! `cacheHit` asks it whether a search is streaming, and the run issues register runs in it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
pub struct ActiveRuns {
    // A std Mutex: every critical section is a set operation, never held across an await.
    inner: Mutex<Sets>,
}

#[derive(Debug, Default)]
struct Sets {
    chats: BTreeSet<String>,
    searches: BTreeSet<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunKind {
    Chat,
    Search,
}

/// Proof that a run is registered; dropping it unregisters the run, so a run that ends by any
/// path (done, error, panic) leaves the registry.
#[derive(Debug)]
pub struct RunGuard {
    runs: Arc<ActiveRuns>,
    kind: RunKind,
    id: String,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.runs.with(self.kind, |set| set.remove(&self.id));
    }
}

impl ActiveRuns {
    /// Registers a run; `None` when one with that id is already running.
    pub fn start(self: &Arc<Self>, kind: RunKind, id: &str) -> Option<RunGuard> {
        self.with(kind, |set| set.insert(id.to_string()))
            .then(|| RunGuard {
                runs: Arc::clone(self),
                kind,
                id: id.to_string(),
            })
    }

    pub fn is_running(&self, kind: RunKind, id: &str) -> bool {
        self.with(kind, |set| set.contains(id))
    }

    /// Running chat ids and search ids, each sorted.
    pub fn snapshot(&self) -> (Vec<String>, Vec<String>) {
        let sets = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (
            sets.chats.iter().cloned().collect(),
            sets.searches.iter().cloned().collect(),
        )
    }

    fn with<R>(&self, kind: RunKind, f: impl FnOnce(&mut BTreeSet<String>) -> R) -> R {
        let mut sets = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(match kind {
            RunKind::Chat => &mut sets.chats,
            RunKind::Search => &mut sets.searches,
        })
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
}
