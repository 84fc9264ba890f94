//! The PostgreSQL store, for several chatd instances sharing one database. Same records and
//! semantics as the SQLite store; its own migrations (`/migrations/postgres`) and writes (the
//! reads are `read.rs`'s, shared).
//!
//! Concurrency is READ COMMITTED with row locks where SQLite relied on its single writer: a
//! write to a chat's transcript first updates (and so locks) the chat's row, so the next `seq`
//! is read after any other writer committed; starring locks the row it stars; a search created
//! with `reuseByQuery` takes a transaction-scoped advisory lock on its normalized query. Each
//! statement is a round trip over the network here, so writes are plain transactions rather
//! than the SQLite store's one-query batches (which PostgreSQL's extended protocol does not
//! take).

mod calls;
mod chats;
mod liveness;
mod message_search;
mod runs;
mod searches;

pub use liveness::{LEASE, RENEW_EVERY};
pub use runs::{Heard, RunListener};

use super::text::{put, put_opt};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::migrations::{self, Embedded};
use super::{Result, StoreError};
use crate::vocabulary::new_id;

/// The next `updated_at` of a row being updated, as a SQL expression whose one parameter is
/// `$n`, bound to [`crate::vocabulary::now`]; the rule is `chatd_next_stamp` in the first migration.
macro_rules! next_updated_at {
    ($n:literal) => {
        concat!("chatd_next_stamp($", $n, ", updated_at)")
    };
}
pub(super) use next_updated_at;

#[derive(Clone, Debug)]
pub struct PgStore {
    pool: PgPool,
    /// The one connection that listens for run events (`runs.rs`), apart from `pool` so that it
    /// never takes a request's slot.
    listen_pool: PgPool,
    /// The one connection that renews this instance's lease and answers readiness pings
    /// (`liveness.rs`), apart from `pool`: a pool busy with requests must not cost the lease.
    lease_pool: PgPool,
    /// This process's id among the servers sharing the database: its row of `instances`, and
    /// the owner stamped on the calls it makes.
    instance: Arc<str>,
}

impl PgStore {
    /// Connects (at most `max_connections` at a time) and migrates the database; `timeout`
    /// bounds a wait for a connection (making one included).
    pub async fn open(raw: &str, max_connections: u32, timeout: Duration) -> Result<Self> {
        let open_error = |source| StoreError::Open {
            url: crate::config::redact_url(raw),
            source,
        };
        let options = PgConnectOptions::from_str(raw)
            .map_err(open_error)?
            .application_name("chatd");
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(timeout)
            .connect_with(options.clone())
            .await
            .map_err(open_error)?;
        Embedded(migrations::POSTGRES)
            .migrator()
            .await?
            .run(&pool)
            .await?;
        let listen_pool = PgPoolOptions::new()
            .max_connections(1)
            .connect_lazy_with(options.clone());
        let lease_pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(timeout)
            .connect_lazy_with(options);
        Ok(Self {
            pool,
            listen_pool,
            lease_pool,
            instance: Arc::from(new_id()),
        })
    }

    pub async fn close(&self) {
        tokio::join!(
            self.pool.close(),
            self.listen_pool.close(),
            self.lease_pool.close()
        );
    }

    pub fn is_closed(&self) -> bool {
        self.pool.is_closed() || self.listen_pool.is_closed()
    }

    /// A trivial query on the lease's connection: whether the database answers, whatever the
    /// requests' pool is doing.
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.lease_pool).await?;
        Ok(())
    }

    /// The readers' pool now: connections in use, idle.
    pub fn pool_connections(&self) -> (u32, u32) {
        let idle = self.pool.num_idle() as u32;
        (self.pool.size().saturating_sub(idle), idle)
    }

    /// The pool reads and writes go through.
    pub(super) fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub(in crate::store) async fn tx(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        Ok(self.pool.begin().await?)
    }
}

/// What can be starred, and the membership table that says so.
#[derive(Clone, Copy, Debug)]
enum Member {
    Chat,
    Search,
}

/// Adds `id` to the `starred` project or removes it. Adding twice keeps the first membership
/// (and so the first `starredAt`).
async fn set_membership(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    member: Member,
    id: &str,
    starred: bool,
) -> Result<()> {
    let (table, column) = match member {
        Member::Chat => ("project_chats", "chat_id"),
        Member::Search => ("project_searches", "search_id"),
    };
    let sql = if starred {
        format!(
            "INSERT INTO {table} (project_id, {column}, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (project_id, {column}) DO NOTHING"
        )
    } else {
        format!("DELETE FROM {table} WHERE project_id = $1 AND {column} = $2")
    };
    let mut query = sqlx::query(&sql).bind(super::STARRED_PROJECT).bind(id);
    if starred {
        query = query.bind(crate::vocabulary::now());
    }
    query.execute(&mut **tx).await?;
    Ok(())
}
