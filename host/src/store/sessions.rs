//! Sign-in's records (`login_links`, `sessions`; both backends): a link or a session is kept as
//! the SHA-256 of its secret, never the secret, and found by that digest, as a key is
//! (`people.rs`). A link is used at most once: using it and starting its session are one
//! transaction, so two presentations of one link cannot both sign in. What a session may reach
//! is `people/`'s; how long links and sessions last is `people/sessions.rs`'s.
//!
//! Written once for both databases, as `people.rs` is.

use super::people::people_op;
use super::{Backend, Result, Store, measured};
use crate::vocabulary::{new_id, now};

/// A session as stored, without its secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionRecord {
    pub id: String,
    pub user_id: String,
    /// How it was started: `link` or `oidc`.
    pub via: String,
    pub user_agent: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub ended_at: Option<String>,
}

/// A session to start.
#[derive(Clone, Debug)]
pub struct NewSession {
    pub user_id: String,
    pub secret_sha256: String,
    pub via: &'static str,
    pub user_agent: Option<String>,
    pub expires_at: String,
}

const SESSION: &str =
    "SELECT id, user_id, via, user_agent, created_at, expires_at, ended_at FROM sessions";
const ADD_SESSION: &str = "INSERT INTO sessions \
    (id, user_id, secret_sha256, via, user_agent, created_at, expires_at) \
    VALUES ($1, $2, $3, $4, $5, $6, $7)";
const ADD_LINK: &str = "INSERT INTO login_links (secret_sha256, user_id, created_at, expires_at) \
                        VALUES ($1, $2, $3, $4)";
const USE_LINK: &str = "UPDATE login_links SET used_at = $2 \
    WHERE secret_sha256 = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id";
const END: &str = "UPDATE sessions SET ended_at = $3 \
                   WHERE id = $1 AND user_id = $2 AND ended_at IS NULL";
const END_ALL: &str = "UPDATE sessions SET ended_at = $2 WHERE user_id = $1 AND ended_at IS NULL";
const SPEND_LINKS: &str =
    "UPDATE login_links SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL";
/// Links and sessions that ended more than a day ago: nothing needs them.
const SWEEP_LINKS: &str = "DELETE FROM login_links WHERE expires_at < $1";
const SWEEP_SESSIONS: &str = "DELETE FROM sessions WHERE expires_at < $1 OR ended_at < $1";

type SessionRow = (
    String,
    String,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
);

fn session(
    (id, user_id, via, user_agent, created_at, expires_at, ended_at): SessionRow,
) -> SessionRecord {
    SessionRecord {
        id,
        user_id,
        via,
        user_agent,
        created_at,
        expires_at,
        ended_at,
    }
}

macro_rules! sessions {
    ($db:ty) => {
        use super::*;

        pub async fn add_link<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            (digest, user_id, expires_at): (&str, &str, &str),
        ) -> Result<()> {
            sqlx::query(ADD_LINK)
                .bind(digest)
                .bind(user_id)
                .bind(now())
                .bind(expires_at)
                .execute(ex)
                .await?;
            Ok(())
        }

        /// Uses the link and starts its session, in `tx`: the person's id, or `None` when the
        /// link is unknown, used or expired (nothing is written then).
        pub async fn sign_in_with_link(
            tx: &mut sqlx::Transaction<'_, $db>,
            link_digest: &str,
            new: &NewSession,
        ) -> Result<Option<SessionRecord>> {
            let at = now();
            let used: Option<(String,)> = sqlx::query_as(USE_LINK)
                .bind(link_digest)
                .bind(&at)
                .fetch_optional(&mut **tx)
                .await?;
            let Some((user_id,)) = used else {
                return Ok(None);
            };
            let new = NewSession {
                user_id,
                ..new.clone()
            };
            Ok(Some(add_session(&mut **tx, &new).await?))
        }

        pub async fn add_session<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            new: &NewSession,
        ) -> Result<SessionRecord> {
            let record = SessionRecord {
                id: new_id(),
                user_id: new.user_id.clone(),
                via: new.via.to_string(),
                user_agent: new.user_agent.clone(),
                created_at: now(),
                expires_at: new.expires_at.clone(),
                ended_at: None,
            };
            sqlx::query(ADD_SESSION)
                .bind(&record.id)
                .bind(&record.user_id)
                .bind(&new.secret_sha256)
                .bind(&record.via)
                .bind(&record.user_agent)
                .bind(&record.created_at)
                .bind(&record.expires_at)
                .execute(ex)
                .await?;
            Ok(record)
        }

        pub async fn session_by_secret<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            digest: &str,
        ) -> Result<Option<SessionRecord>> {
            let row: Option<SessionRow> =
                sqlx::query_as(&format!("{SESSION} WHERE secret_sha256 = $1"))
                    .bind(digest)
                    .fetch_optional(ex)
                    .await?;
            Ok(row.map(session))
        }

        pub async fn live_sessions_of<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            user_id: &str,
        ) -> Result<Vec<SessionRecord>> {
            let rows: Vec<SessionRow> = sqlx::query_as(&format!(
                "{SESSION} WHERE user_id = $1 AND ended_at IS NULL AND expires_at > $2 \
                 ORDER BY created_at, id"
            ))
            .bind(user_id)
            .bind(now())
            .fetch_all(ex)
            .await?;
            Ok(rows.into_iter().map(session).collect())
        }

        pub async fn end<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            (user_id, id): (&str, &str),
        ) -> Result<bool> {
            let done = sqlx::query(END)
                .bind(id)
                .bind(user_id)
                .bind(now())
                .execute(ex)
                .await?;
            Ok(done.rows_affected() == 1)
        }

        pub async fn end_all(tx: &mut sqlx::Transaction<'_, $db>, user_id: &str) -> Result<()> {
            let at = now();
            for sql in [END_ALL, SPEND_LINKS] {
                sqlx::query(sql)
                    .bind(user_id)
                    .bind(&at)
                    .execute(&mut **tx)
                    .await?;
            }
            Ok(())
        }

        pub async fn sweep(tx: &mut sqlx::Transaction<'_, $db>, before: &str) -> Result<()> {
            sqlx::query(SWEEP_LINKS)
                .bind(before)
                .execute(&mut **tx)
                .await?;
            sqlx::query(SWEEP_SESSIONS)
                .bind(before)
                .execute(&mut **tx)
                .await?;
            Ok(())
        }
    };
}

mod on_sqlite {
    sessions!(sqlx::Sqlite);
}

mod on_postgres {
    sessions!(sqlx::Postgres);
}

/// A transaction of its own on either backend, running `$f` in it.
macro_rules! in_tx {
    ($store:expr, $op:literal, |$on:ident, $tx:ident| $body:expr) => {
        measured($store.backend_name(), $op, $store.timeout, async {
            match &$store.backend {
                Backend::Sqlite(db) => {
                    let mut $tx = db.write_tx().await?;
                    use on_sqlite as $on;
                    let out = $body;
                    $tx.commit().await?;
                    Ok(out)
                }
                Backend::Postgres(db) => {
                    let mut $tx = db.tx().await?;
                    use on_postgres as $on;
                    let out = $body;
                    $tx.commit().await?;
                    Ok(out)
                }
            }
        })
        .await
    };
}

impl Store {
    /// Keeps a login link (its secret's digest) for `user_id` until `expires_at`.
    pub async fn add_login_link(
        &self,
        digest: &str,
        user_id: &str,
        expires_at: &str,
    ) -> Result<()> {
        people_op!(
            self,
            "add_login_link",
            write,
            add_link((digest, user_id, expires_at))
        )
    }

    /// Uses the login link whose secret has `link_digest` and starts `new` for its person, in
    /// one transaction (`new.user_id` is ignored); `None` when the link is unknown, was used,
    /// or expired.
    pub async fn sign_in_with_link(
        &self,
        link_digest: &str,
        new: &NewSession,
    ) -> Result<Option<SessionRecord>> {
        in_tx!(self, "sign_in_with_link", |on, tx| on::sign_in_with_link(
            &mut tx,
            link_digest,
            new
        )
        .await?)
    }

    /// Starts a session.
    pub async fn add_session(&self, new: &NewSession) -> Result<SessionRecord> {
        people_op!(self, "add_session", write, add_session(new))
    }

    /// The session whose secret has this digest, ended or not.
    pub async fn session_by_secret(&self, digest: &str) -> Result<Option<SessionRecord>> {
        people_op!(self, "session_by_secret", read, session_by_secret(digest))
    }

    /// `user_id`'s sessions that have neither ended nor expired, oldest first.
    pub async fn live_sessions_of(&self, user_id: &str) -> Result<Vec<SessionRecord>> {
        people_op!(self, "live_sessions_of", read, live_sessions_of(user_id))
    }

    /// Ends `user_id`'s session `id`; whether it was theirs and still going.
    pub async fn end_session(&self, user_id: &str, id: &str) -> Result<bool> {
        if id.contains('\0') {
            return Ok(false);
        }
        people_op!(self, "end_session", write, end((user_id, id)))
    }

    /// Ends every session of `user_id` and spends their unused login links (the person was
    /// disabled: enabling them again brings neither back).
    pub async fn end_sessions_of(&self, user_id: &str) -> Result<()> {
        in_tx!(self, "end_sessions_of", |on, tx| on::end_all(
            &mut tx, user_id
        )
        .await?)
    }

    /// Deletes links and sessions that expired or ended before `before` (stored form).
    pub async fn sweep_sessions(&self, before: &str) -> Result<()> {
        in_tx!(self, "sweep_sessions", |on, tx| on::sweep(&mut tx, before)
            .await?)
    }
}
