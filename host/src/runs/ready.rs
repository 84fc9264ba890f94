//! Readiness (`GET /ready`): whether this instance can serve, kept up to date in the background
//! so a probe is answered at once: the database answers (a ping every [`PROBE_EVERY`], bounded
//! by the store's timeout) and, on a shared database, this instance holds its lease (set by
//! `beat.rs`). The bundled plugins load before the server listens; PLUGINS_DIR's load after, and
//! `/ready` also waits for them (`http/meta.rs`, `PluginHost::folder_loading`).
//! The ping runs on PostgreSQL on the lease's own connection (a busy pool is not a database
//! away), and does not write: a full disk shows in the writes' 503s, not here.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::store::{Store, StoreError};

/// How often the database is pinged.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct Readiness {
    /// Why the database is not usable, from the last ping; `None` when it answered.
    database: Mutex<Option<String>>,
    /// On a shared database, whether this instance holds its lease (always on SQLite).
    lease: AtomicBool,
}

impl Default for Readiness {
    fn default() -> Self {
        Self {
            database: Mutex::new(None),
            lease: AtomicBool::new(true),
        }
    }
}

impl Readiness {
    /// What keeps this instance from serving, as the one line `/ready` answers; `None` when
    /// ready.
    pub fn missing(&self) -> Option<String> {
        if let Some(why) = self
            .database
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Some(why);
        }
        (!self.lease.load(Ordering::Relaxed)).then(|| {
            "this instance does not hold its lease on the database (PostgreSQL): it was cut \
             off or frozen, and registers again when the database answers"
                .to_string()
        })
    }

    pub(super) fn set_lease(&self, held: bool) {
        self.lease.store(held, Ordering::Relaxed);
    }

    pub(super) fn lease_held(&self) -> bool {
        self.lease.load(Ordering::Relaxed)
    }

    /// Records the last ping's outcome. `/ready` needs no token, so what it answers names the
    /// database and not the driver's words (a user name, a TLS detail): those go to the log,
    /// once per change.
    fn set_database(&self, answer: Result<(), StoreError>) {
        let why = answer.err().map(|e| {
            let public = match &e {
                StoreError::Unavailable { backend, .. } => {
                    format!("the database ({backend}) is unavailable")
                }
                _ => "the database does not answer".to_string(),
            };
            (public, e.to_string())
        });
        let mut database = self.database.lock().unwrap_or_else(|e| e.into_inner());
        match &why {
            Some((_, cause)) if database.is_none() => tracing::warn!("not ready: {cause}"),
            None if database.is_some() => tracing::info!("ready: the database answers again"),
            _ => {}
        }
        *database = why.map(|(public, _)| public);
    }
}

/// Pings the database until the store closes, recording the outcome in `ready`.
pub async fn probe(store: Store, ready: std::sync::Arc<Readiness>) {
    loop {
        let answer = store.ping().await;
        if store.is_closed() {
            return;
        }
        ready.set_database(answer);
        tokio::time::sleep(PROBE_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_is_named_first_then_the_lease() {
        let ready = Readiness::default();
        assert_eq!(ready.missing(), None);
        ready.set_lease(false);
        assert!(ready.missing().unwrap().contains("lease"));
        ready.set_database(Err(StoreError::Unavailable {
            backend: "postgresql",
            reason: "password authentication failed for user \"chatd\"".into(),
        }));
        assert_eq!(
            ready.missing().unwrap(),
            "the database (postgresql) is unavailable",
            "the driver's words stay in the log"
        );
        ready.set_database(Ok(()));
        ready.set_lease(true);
        assert_eq!(ready.missing(), None);
    }
}
