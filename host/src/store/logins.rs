//! Logins to MCP servers (`mcp_logins`, `mcp_login_starts`; both backends), each keyed by its
//! server and owner ([`LoginKey`]): sealed bytes the store keeps and never reads
//! (`tools/mcp/oauth/sealed.rs` seals them). On PostgreSQL a
//! refresh reads a login under the row's lock ([`LoginLock`]), so of several instances
//! refreshing at once one asks the token endpoint and the others find its tokens. SQLite has
//! one instance, whose own lock (the server's `Authorizer`) does that; holding SQLite's write
//! lock across a token request would stop every other write meanwhile. A login begun by
//! Connect is found once, by its `state`'s hash, within its time.
//!
//! Written once for both databases, as `files.rs` is.

use super::{Backend, Result, Store, measured};
use crate::vocabulary::now;

/// The longest [`Store::lock_login`] waits for another holder of the lock.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// A login as stored: sealed, and the key that sealed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedLogin {
    pub sealed: Vec<u8>,
    pub key_id: String,
}

/// Whose login to which server: `owner` is the person a `per_user` server's login is for, or
/// [`OPERATOR`] for a server every person shares.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LoginKey {
    pub server: String,
    pub owner: String,
}

/// The owner of a shared server's login: the operator's, used for every person's calls.
pub const OPERATOR: &str = "";

impl LoginKey {
    /// The operator's login to `server`.
    pub fn operator(server: &str) -> Self {
        Self::person(server, OPERATOR)
    }

    /// `owner`'s own login to `server`.
    pub fn person(server: &str, owner: &str) -> Self {
        Self {
            server: server.to_string(),
            owner: owner.to_string(),
        }
    }
}

const READ: &str = "SELECT sealed, key_id FROM mcp_logins WHERE owner = $1 AND server = $2";
/// PostgreSQL's row lock: a second reader under lock waits for the first's commit.
const READ_LOCKED: &str =
    "SELECT sealed, key_id FROM mcp_logins WHERE owner = $1 AND server = $2 FOR UPDATE";
const SERVERS_OF: &str =
    "SELECT server, updated_at FROM mcp_logins WHERE owner = $1 ORDER BY server";
const UPSERT: &str = "INSERT INTO mcp_logins (owner, server, sealed, key_id, updated_at) \
                      VALUES ($1, $2, $3, $4, $5) ON CONFLICT (owner, server) DO UPDATE \
                      SET sealed = excluded.sealed, key_id = excluded.key_id, \
                      updated_at = excluded.updated_at";
const DELETE: &str = "DELETE FROM mcp_logins WHERE owner = $1 AND server = $2";
const START: &str = "INSERT INTO mcp_login_starts \
                     (state_hash, owner, server, sealed, key_id, expires_at) \
                     VALUES ($1, $2, $3, $4, $5, $6)";
const TAKE_START: &str = "DELETE FROM mcp_login_starts WHERE state_hash = $1 AND expires_at > $2 \
                          RETURNING owner, server, sealed, key_id";
const EXPIRED_STARTS: &str = "DELETE FROM mcp_login_starts WHERE expires_at <= $1";

/// A login read under its lock: the transaction holding it, until [`LoginLock::save`] or
/// [`LoginLock::release`] (or drop, which rolls back).
pub struct LoginLock {
    tx: Tx,
    login: LoginKey,
    timeout: std::time::Duration,
}

enum Tx {
    /// No lock held: saving is a write transaction of its own.
    Sqlite(super::sqlite::SqliteStore),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

macro_rules! logins {
    ($db:ty, $locked:expr) => {
        use super::*;

        pub async fn read<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            login: &LoginKey,
            locked: bool,
        ) -> Result<Option<SealedLogin>> {
            let query = if locked { $locked } else { READ };
            let row: Option<(Vec<u8>, String)> = sqlx::query_as(query)
                .bind(&login.owner)
                .bind(&login.server)
                .fetch_optional(ex)
                .await?;
            Ok(row.map(|(sealed, key_id)| SealedLogin { sealed, key_id }))
        }

        pub async fn servers_of<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            owner: &str,
        ) -> Result<Vec<(String, String)>> {
            Ok(sqlx::query_as(SERVERS_OF).bind(owner).fetch_all(ex).await?)
        }

        pub async fn save<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            key: &LoginKey,
            login: &SealedLogin,
        ) -> Result<()> {
            sqlx::query(UPSERT)
                .bind(&key.owner)
                .bind(&key.server)
                .bind(&login.sealed)
                .bind(&login.key_id)
                .bind(now())
                .execute(ex)
                .await?;
            Ok(())
        }

        pub async fn delete<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            key: &LoginKey,
        ) -> Result<bool> {
            let done = sqlx::query(DELETE)
                .bind(&key.owner)
                .bind(&key.server)
                .execute(ex)
                .await?;
            Ok(done.rows_affected() > 0)
        }

        pub async fn start(
            tx: &mut sqlx::Transaction<'_, $db>,
            state_hash: &str,
            key: &LoginKey,
            login: &SealedLogin,
            expires_at: &str,
        ) -> Result<()> {
            sqlx::query(EXPIRED_STARTS)
                .bind(now())
                .execute(&mut **tx)
                .await?;
            sqlx::query(START)
                .bind(state_hash)
                .bind(&key.owner)
                .bind(&key.server)
                .bind(&login.sealed)
                .bind(&login.key_id)
                .bind(expires_at)
                .execute(&mut **tx)
                .await?;
            Ok(())
        }

        pub async fn take_start<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            state_hash: &str,
        ) -> Result<Option<(LoginKey, SealedLogin)>> {
            let row: Option<(String, String, Vec<u8>, String)> = sqlx::query_as(TAKE_START)
                .bind(state_hash)
                .bind(now())
                .fetch_optional(ex)
                .await?;
            Ok(row.map(|(owner, server, sealed, key_id)| {
                (LoginKey { server, owner }, SealedLogin { sealed, key_id })
            }))
        }
    };
}

mod on_sqlite {
    logins!(sqlx::Sqlite, READ);
}

mod on_postgres {
    logins!(sqlx::Postgres, READ_LOCKED);
}

impl Store {
    /// The login `key` names, if any.
    pub async fn login(&self, key: &LoginKey) -> Result<Option<SealedLogin>> {
        measured(self.backend_name(), "login", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => on_sqlite::read(db.pool(), key, false).await,
                Backend::Postgres(db) => on_postgres::read(db.pool(), key, false).await,
            }
        })
        .await
    }

    /// The servers `owner` holds a login to, by name, each with when its login was last
    /// stored.
    pub async fn logins_of(&self, owner: &str) -> Result<Vec<(String, String)>> {
        measured(self.backend_name(), "logins_of", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => on_sqlite::servers_of(db.pool(), owner).await,
                Backend::Postgres(db) => on_postgres::servers_of(db.pool(), owner).await,
            }
        })
        .await
    }

    /// The login `key` names read under its lock, held until the lock is saved or released:
    /// another instance's [`Self::lock_login`] of the same login waits meanwhile.
    pub async fn lock_login(&self, key: &LoginKey) -> Result<(LoginLock, Option<SealedLogin>)> {
        // Waiting for the lock is waiting for another instance's token request (at most 15 s,
        // `tools/mcp/oauth/http.rs`), which may take longer than a query is given.
        let wait = self.timeout.max(LOCK_WAIT);
        measured(self.backend_name(), "lock_login", wait, async {
            let (tx, found) = match &self.backend {
                Backend::Sqlite(db) => {
                    let found = on_sqlite::read(db.pool(), key, false).await?;
                    (Tx::Sqlite(db.clone()), found)
                }
                Backend::Postgres(db) => {
                    let mut tx = db.tx().await?;
                    let found = on_postgres::read(&mut *tx, key, true).await?;
                    (Tx::Postgres(tx), found)
                }
            };
            let lock = LoginLock {
                tx,
                login: key.clone(),
                timeout: self.timeout,
            };
            Ok((lock, found))
        })
        .await
    }

    /// Stores the login `key` names, replacing any.
    pub async fn save_login(&self, key: &LoginKey, login: &SealedLogin) -> Result<()> {
        let (lock, _) = self.lock_login(key).await?;
        lock.save(login).await
    }

    /// Deletes the login `key` names; whether there was one.
    pub async fn delete_login(&self, key: &LoginKey) -> Result<bool> {
        measured(self.backend_name(), "delete_login", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    let deleted = on_sqlite::delete(&mut *tx, key).await?;
                    tx.commit().await?;
                    Ok(deleted)
                }
                Backend::Postgres(db) => on_postgres::delete(db.pool(), key).await,
            }
        })
        .await
    }

    /// Keeps a login begun for `key` under its state's hash until `expires_at`, and deletes
    /// those that expired.
    pub async fn start_login(
        &self,
        state_hash: &str,
        key: &LoginKey,
        login: &SealedLogin,
        expires_at: &str,
    ) -> Result<()> {
        measured(self.backend_name(), "start_login", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    on_sqlite::start(&mut tx, state_hash, key, login, expires_at).await?;
                    Ok(tx.commit().await?)
                }
                Backend::Postgres(db) => {
                    let mut tx = db.tx().await?;
                    on_postgres::start(&mut tx, state_hash, key, login, expires_at).await?;
                    Ok(tx.commit().await?)
                }
            }
        })
        .await
    }

    /// The login begun under `state_hash`, taken (it is found once), unless it expired.
    pub async fn take_login_start(
        &self,
        state_hash: &str,
    ) -> Result<Option<(LoginKey, SealedLogin)>> {
        measured(
            self.backend_name(),
            "take_login_start",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => {
                        let mut tx = db.write_tx().await?;
                        let found = on_sqlite::take_start(&mut *tx, state_hash).await?;
                        tx.commit().await?;
                        Ok(found)
                    }
                    Backend::Postgres(db) => on_postgres::take_start(db.pool(), state_hash).await,
                }
            },
        )
        .await
    }
}

impl LoginLock {
    /// Stores `login` and lets the lock go.
    pub async fn save(self, login: &SealedLogin) -> Result<()> {
        let backend = self.backend_name();
        let key = self.login;
        measured(backend, "save_login", self.timeout, async move {
            match self.tx {
                Tx::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    on_sqlite::save(&mut *tx, &key, login).await?;
                    Ok(tx.commit().await?)
                }
                Tx::Postgres(mut tx) => {
                    on_postgres::save(&mut *tx, &key, login).await?;
                    Ok(tx.commit().await?)
                }
            }
        })
        .await
    }

    /// Deletes the login (a refused refresh ended it) and lets the lock go.
    pub async fn delete(self) -> Result<bool> {
        let backend = self.backend_name();
        let key = self.login;
        measured(backend, "delete_login", self.timeout, async move {
            match self.tx {
                Tx::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    let deleted = on_sqlite::delete(&mut *tx, &key).await?;
                    tx.commit().await?;
                    Ok(deleted)
                }
                Tx::Postgres(mut tx) => {
                    let deleted = on_postgres::delete(&mut *tx, &key).await?;
                    tx.commit().await?;
                    Ok(deleted)
                }
            }
        })
        .await
    }

    /// Lets the lock go, changing nothing.
    pub async fn release(self) {
        if let Tx::Postgres(tx) = self.tx {
            let _ = tx.rollback().await;
        }
    }

    fn backend_name(&self) -> &'static str {
        match self.tx {
            Tx::Sqlite(_) => "sqlite",
            Tx::Postgres(_) => "postgresql",
        }
    }
}
