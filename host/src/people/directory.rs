//! Finding the caller behind a key or a session cookie. An answer is kept for [`FRESH`]: a key
//! revoked, a session ended or a person disabled on another instance is refused here within
//! that time, and on this instance at once ([`Directory::forget`]). A key or session not found
//! is not kept, so one made a moment ago (by the CLI, or on another instance) works at once:
//! its first use reads the database. Whether people use the deployment at all is kept here too
//! ([`Directory::team_exists`], for `usage/`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Caller, keys};
use crate::store::people::PersonRecord;
use crate::store::{Result, Store};
use crate::vocabulary::format_micros;

/// How long a key's answer is used before the database is asked again. Under a second, which is
/// the longest another instance's revocation may take to reach this one (docs/teams.md).
pub const FRESH: Duration = Duration::from_millis(500);

/// Answers kept at most; past it the oldest half goes.
const KEPT: usize = 10_000;

/// Keys' and sessions' answers, by the digest of their secret (a session's after `session:`).
pub struct Directory {
    store: Store,
    kept: Mutex<Answers>,
    /// Once anyone but the built-in admin, or any key, exists, it stays so (people are disabled,
    /// never deleted; keys revoked, never deleted).
    team: Arc<Mutex<Team>>,
}

/// Whether people use the deployment, as last known, and when the database was last asked.
#[derive(Default)]
struct Team {
    exists: bool,
    asked: Option<Instant>,
    asking: bool,
}

/// What is kept, and how many changes were made here: a lookup that began before a change
/// keeps nothing (it may have read what the change undid).
#[derive(Default)]
struct Answers {
    answers: HashMap<String, Kept>,
    changes: u64,
}

struct Kept {
    at: Instant,
    caller: Caller,
}

impl Directory {
    /// `team`: whether people use the deployment now (the server asks the database once, as it
    /// starts).
    pub fn new(store: Store, team: bool) -> Self {
        Self {
            store,
            kept: Mutex::new(Answers::default()),
            team: Arc::new(Mutex::new(Team {
                exists: team,
                asked: Some(Instant::now()),
                asking: false,
            })),
        }
    }

    /// Whether people use this deployment (anyone but the built-in admin, or a key): until they
    /// do, nothing is recorded of anyone's usage. Never waits: what is known is answered, and
    /// when it is older than [`FRESH`] the database is asked in the background, so people made
    /// elsewhere (another instance, `chatd users add`) are known within about a second. A
    /// request's work before its chat is stored must not wait on the database
    /// (`tests/api/runs.rs::a_new_chats_stream_dropped_while_the_chat_is_written_still_runs`).
    pub fn team_exists(&self) -> bool {
        let mut team = self.team.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = team.asked.is_some_and(|at| at.elapsed() < FRESH);
        if team.exists || fresh || team.asking {
            return team.exists;
        }
        team.asking = true;
        let (store, shared) = (self.store.clone(), self.team.clone());
        tokio::spawn(async move {
            let found = store.team_exists().await;
            let mut team = shared.lock().unwrap_or_else(|e| e.into_inner());
            team.asking = false;
            team.asked = Some(Instant::now());
            match found {
                Ok(found) => team.exists |= found,
                Err(e) => {
                    tracing::warn!(error = %e, "could not ask whether people use the deployment")
                }
            }
        });
        false
    }

    /// Says that people use this deployment (a person or a key was just made, or used, here).
    pub fn team_made(&self) {
        self.team.lock().unwrap_or_else(|e| e.into_inner()).exists = true;
    }

    /// The caller holding the key `secret`, or `None` for a key that is unknown, revoked,
    /// expired, or whose person is disabled. `Err` only when the database cannot answer.
    pub async fn caller(&self, secret: &str) -> Result<Option<Caller>> {
        let digest = keys::digest(secret);
        let found = self
            .remembered(digest.clone(), digest, Self::key_holder)
            .await?;
        if found.is_some() {
            self.team_made();
        }
        Ok(found)
    }

    /// The caller signed in with the session cookie `secret`, or `None` for a session that is
    /// unknown, ended, expired, or whose person is disabled.
    pub async fn session(&self, secret: &str) -> Result<Option<Caller>> {
        // Kept apart from keys' answers: a key's secret sent as a cookie is no session.
        let digest = keys::digest(secret);
        let kept_as = format!("session:{digest}");
        self.remembered(kept_as, digest, Self::session_holder).await
    }

    /// `look_up(digest)`'s answer, kept for [`FRESH`] under `kept_as`.
    async fn remembered<'a, F, Fut>(
        &'a self,
        kept_as: String,
        digest: String,
        look_up: F,
    ) -> Result<Option<Caller>>
    where
        F: FnOnce(&'a Self, String) -> Fut,
        Fut: std::future::Future<Output = Result<Option<Caller>>>,
    {
        let changes = {
            let kept = self.lock();
            if let Some(kept) = kept.answers.get(&kept_as)
                && kept.at.elapsed() < FRESH
                && !expired(kept.caller.expires_at.as_deref())
            {
                return Ok(Some(kept.caller.clone()));
            }
            kept.changes
        };
        let found = look_up(self, digest).await?;
        let mut kept = self.lock();
        match &found {
            Some(caller) if kept.changes == changes => {
                if kept.answers.len() >= KEPT {
                    let mut ages: Vec<Instant> = kept.answers.values().map(|k| k.at).collect();
                    ages.sort_unstable();
                    let cut = ages[ages.len() / 2];
                    kept.answers.retain(|_, k| k.at > cut);
                }
                kept.answers.insert(
                    kept_as,
                    Kept {
                        at: Instant::now(),
                        caller: caller.clone(),
                    },
                );
            }
            _ => {
                kept.answers.remove(&kept_as);
            }
        }
        Ok(found)
    }

    /// Drops what is kept for `person` (every key and session) or for one key or session (its
    /// id), after a change made here.
    pub fn forget(&self, person: &str, credential: Option<&str>) {
        let mut kept = self.lock();
        kept.changes += 1;
        kept.answers.retain(|_, k| {
            k.caller.id != person
                || credential.is_some_and(|id| k.caller.credential_id() != Some(id))
        });
    }

    async fn key_holder(&self, digest: String) -> Result<Option<Caller>> {
        let Some(key) = self.store.key_by_secret(&digest).await? else {
            return Ok(None);
        };
        if key.revoked_at.is_some() || expired(key.expires_at.as_deref()) {
            return Ok(None);
        }
        Ok(self
            .active_person(&key.user_id)
            .await?
            .map(|person| Caller::with_key(&person, &key)))
    }

    async fn session_holder(&self, digest: String) -> Result<Option<Caller>> {
        let Some(session) = self.store.session_by_secret(&digest).await? else {
            return Ok(None);
        };
        if session.ended_at.is_some() || expired(Some(&session.expires_at)) {
            return Ok(None);
        }
        Ok(self
            .active_person(&session.user_id)
            .await?
            .map(|person| Caller::with_session(&person, &session)))
    }

    /// The person `id`, unless disabled.
    async fn active_person(&self, id: &str) -> Result<Option<PersonRecord>> {
        Ok(self.store.person(id).await?.filter(|p| !p.disabled))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Answers> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether a key's end (stored form) has passed.
fn expired(expires_at: Option<&str>) -> bool {
    let now = format_micros(chrono::Utc::now().timestamp_micros());
    expires_at.is_some_and(|at| at <= now.as_str())
}
