//! Finding the caller behind a key. A key's answer is kept for [`FRESH`]: a key revoked or a
//! person disabled on another instance is refused here within that time, and on this instance
//! at once ([`Directory::forget`]). A key not found is not kept, so a key made a moment ago
//! (by the CLI, or on another instance) works at once: its first use reads the database.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{Caller, keys};
use crate::store::{Result, Store};
use crate::vocabulary::format_micros;

/// How long a key's answer is used before the database is asked again. Under a second, which is
/// the longest another instance's revocation may take to reach this one (docs/teams.md).
pub const FRESH: Duration = Duration::from_millis(500);

/// Answers kept at most; past it the oldest half goes.
const KEPT: usize = 10_000;

/// Keys' answers, by the digest of their secret.
pub struct Directory {
    store: Store,
    kept: Mutex<HashMap<String, Kept>>,
}

struct Kept {
    at: Instant,
    caller: Caller,
    /// The key's end (stored form), checked on every use: an answer is not kept past it.
    expires_at: Option<String>,
}

impl Directory {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            kept: Mutex::new(HashMap::new()),
        }
    }

    /// The caller holding the key `secret`, or `None` for a key that is unknown, revoked,
    /// expired, or whose person is disabled. `Err` only when the database cannot answer.
    pub async fn caller(&self, secret: &str) -> Result<Option<Caller>> {
        let digest = keys::digest(secret);
        if let Some(kept) = self.lock().get(&digest)
            && kept.at.elapsed() < FRESH
            && !expired(kept.expires_at.as_deref())
        {
            return Ok(Some(kept.caller.clone()));
        }
        let found = self.look_up(&digest).await?;
        let mut kept = self.lock();
        match &found {
            Some((caller, expires_at)) => {
                if kept.len() >= KEPT {
                    let mut ages: Vec<Instant> = kept.values().map(|k| k.at).collect();
                    ages.sort_unstable();
                    let cut = ages[ages.len() / 2];
                    kept.retain(|_, k| k.at > cut);
                }
                kept.insert(
                    digest,
                    Kept {
                        at: Instant::now(),
                        caller: caller.clone(),
                        expires_at: expires_at.clone(),
                    },
                );
            }
            None => {
                kept.remove(&digest);
            }
        }
        Ok(found.map(|(caller, _)| caller))
    }

    /// Drops what is kept for `person` (every key) or for one key, after a change made here.
    pub fn forget(&self, person: &str, key: Option<&str>) {
        self.lock().retain(|_, k| {
            k.caller.id != person || key.is_some_and(|key| k.caller.key_id() != Some(key))
        });
    }

    async fn look_up(&self, digest: &str) -> Result<Option<(Caller, Option<String>)>> {
        let Some(key) = self.store.key_by_secret(digest).await? else {
            return Ok(None);
        };
        if key.revoked_at.is_some() || expired(key.expires_at.as_deref()) {
            return Ok(None);
        }
        let Some(person) = self.store.person(&key.user_id).await? else {
            return Ok(None);
        };
        if person.disabled {
            return Ok(None);
        }
        let caller = Caller::with_key(&person, &key.id, &key.scopes);
        Ok(Some((caller, key.expires_at)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Kept>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether a key's end (stored form) has passed.
fn expired(expires_at: Option<&str>) -> bool {
    let now = format_micros(chrono::Utc::now().timestamp_micros());
    expires_at.is_some_and(|at| at <= now.as_str())
}
