//! The PostgreSQL store, for several chatd instances sharing one database. Same records and
//! semantics as the SQLite store; its own migrations (`/migrations/postgres`) and queries.
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
mod runs;
mod searches;
mod workspace;

pub use liveness::RENEW_EVERY;
pub use runs::{Heard, RunListener};

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

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
    /// This process's id among the servers sharing the database: its row of `instances`, and
    /// the owner stamped on the calls it makes.
    instance: Arc<str>,
}

impl PgStore {
    /// Connects (at most `max_connections` at a time) and migrates the database.
    pub async fn open(raw: &str, max_connections: u32) -> Result<Self> {
        let open_error = |source| StoreError::Open {
            url: crate::config::redact_url(raw),
            source,
        };
        let options = PgConnectOptions::from_str(raw)
            .map_err(open_error)?
            .application_name("chatd");
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone())
            .await
            .map_err(open_error)?;
        sqlx::migrate!("../migrations/postgres").run(&pool).await?;
        let listen_pool = PgPoolOptions::new()
            .max_connections(1)
            .connect_lazy_with(options);
        Ok(Self {
            pool,
            listen_pool,
            instance: Arc::from(new_id()),
        })
    }

    pub async fn close(&self) {
        tokio::join!(self.pool.close(), self.listen_pool.close());
    }

    pub fn is_closed(&self) -> bool {
        self.pool.is_closed() || self.listen_pool.is_closed()
    }

    /// The readers' pool now: connections in use, idle.
    pub fn pool_connections(&self) -> (u32, u32) {
        let idle = self.pool.num_idle() as u32;
        (self.pool.size().saturating_sub(idle), idle)
    }

    async fn tx(&self) -> Result<sqlx::Transaction<'_, sqlx::Postgres>> {
        Ok(self.pool.begin().await?)
    }
}

/// PostgreSQL's TEXT cannot hold U+0000, which SQLite's can and any client string may carry, so
/// free text is stored escaped: [`ESCAPE`] doubled stands for itself and [`ESCAPE`] `0` for
/// U+0000. The mapping is one-to-one, so equality (the reuseByQuery key) and emptiness hold as
/// they would on the text itself. Ids, stamps and JSON (which escapes U+0000) need none of it.
const ESCAPE: char = '\u{10FFFF}';

/// `text` as stored: borrowed when there is nothing to escape, the usual case.
fn put(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\0', ESCAPE]) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => out.extend([ESCAPE, '0']),
            ESCAPE => out.extend([ESCAPE, ESCAPE]),
            c => out.push(c),
        }
    }
    out.into()
}

fn put_opt(text: Option<&str>) -> Option<std::borrow::Cow<'_, str>> {
    text.map(put)
}

/// Stored text as it was given to [`put`].
fn take(text: String) -> String {
    if !text.contains(ESCAPE) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == ESCAPE) {
            (_, true) => match chars.next() {
                Some('0') => out.push('\0'),
                Some(other) => out.push(other),
                None => out.push(ESCAPE),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// A free-text column of `row`, unescaped.
fn text(row: &sqlx::postgres::PgRow, column: &str) -> Result<Option<String>> {
    use sqlx::Row;
    Ok(row.try_get::<Option<String>, _>(column)?.map(take))
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

#[cfg(test)]
mod tests {
    use super::{ESCAPE, put, take};

    #[test]
    fn stored_text_has_no_nul_and_comes_back_as_given() {
        let e = ESCAPE;
        for given in [
            String::new(),
            "plain".into(),
            "a\0b".into(),
            format!("{e}"),
            format!("{e}0"),
            format!("\0{e}{e}0\0"),
        ] {
            let stored = put(&given);
            assert!(!stored.contains('\0'), "{stored:?}");
            assert_eq!(take(stored.into_owned()), given);
        }
        assert!(matches!(put("plain"), std::borrow::Cow::Borrowed(_)));
        // One-to-one: different texts are stored differently.
        assert_ne!(put("\0"), put(&format!("{e}0")));
    }
}
