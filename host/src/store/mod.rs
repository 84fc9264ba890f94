//! The store: the only module with SQL. Callers get plain records (`records.rs`), never rows, and
//! one set of semantics whichever database holds them: SQLite (`sqlite/`, the embedded default,
//! one process per database) or PostgreSQL (`postgres/`, shared by several instances). Each
//! backend has its own migrations (`/migrations/sqlite`, `/migrations/postgres`). Reads are
//! written once for both (`read.rs`); writes are each backend's own, written for what that
//! database does well; [`Store`] only chooses between them. The black-box suite runs against
//! both (`tests/api_postgres`), which is what holds them to one behaviour.

mod backend;
pub mod containers;
pub mod exchanges;
pub mod files;
pub mod library;
pub mod library_search;
pub mod library_vectors;
pub mod liveness;
pub mod logins;
mod migrations;
pub mod oidc;
pub mod owners;
pub mod people;
mod postgres;
mod read;
mod records;
mod row;
pub mod sessions;
mod sqlite;
mod text;
pub mod transfer;
mod transfer_tables;
pub mod usage;

/// How long an instance on PostgreSQL stays alive without renewing its lease.
pub use postgres::{Heard, LEASE, RunListener};
pub use records::{
    CallRecord, CallUsage, ChatPatch, ChatRecord, ChatSettings, MessageHit, MessageRecord, NewCall,
    NewChat, NewMessage, NewSearch, PageAfter, RunEvent, RunStart, SearchDetailRecord,
    SearchRecord, SearchRunOutcome, TitleMatch, WorkspaceRecord, normalize_query,
};

use crate::config::DatabaseUrl;
use backend::{Calls, Chats, Liveness, Searches};
use postgres::PgStore;
use sqlite::SqliteStore;

/// The folder for what chatd keeps outside the database (compiled plugins, the devbox's pinned
/// host key): CHATD_DATA_DIR, else [`Store::default_data_dir`]; `None` for an in-memory SQLite
/// database without CHATD_DATA_DIR.
pub fn data_dir(config: &crate::config::Config) -> Option<std::path::PathBuf> {
    match &config.chatd_data_dir {
        Some(dir) => Some(dir.clone()),
        None => Store::default_data_dir(&config.database_url),
    }
}

/// Whether the data folder can be used, without creating it: it, or the folder it would be
/// created in, takes a file (made and removed at once). Startup asks before it compiles the
/// plugins, so a folder it cannot use stops it at once, with this one line, having made
/// nothing.
pub fn check_data_dir(config: &crate::config::Config) -> std::result::Result<(), String> {
    let Some(dir) = data_dir(config) else {
        return Ok(());
    };
    let shown = dir.display();
    let existing = dir
        .ancestors()
        .find(|a| a.as_os_str().is_empty() || a.exists())
        .map(|a| {
            if a.as_os_str().is_empty() {
                std::path::Path::new(".")
            } else {
                a
            }
        })
        .unwrap_or(std::path::Path::new("."));
    if !existing.is_dir() {
        return Err(format!(
            "CHATD_DATA_DIR: cannot create {shown}: {} is not a folder",
            existing.display()
        ));
    }
    tempfile::Builder::new()
        .prefix(".chatd-write-check")
        .tempfile_in(existing)
        .map(drop)
        .map_err(|e| format!("CHATD_DATA_DIR: {shown} is not writable: {e}"))
}

/// Creates the data folder when missing; `Err` is the one line startup stops with.
pub fn prepare_data_dir(config: &crate::config::Config) -> std::result::Result<(), String> {
    check_data_dir(config)?;
    let Some(dir) = data_dir(config) else {
        return Ok(());
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("CHATD_DATA_DIR: cannot create {}: {e}", dir.display()))
}

/// The id of the reserved project whose members are the starred chats and searches.
pub const STARRED_PROJECT: &str = "starred";

/// The store layer's one error type.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the database at {url}: {source}")]
    Open { url: String, source: sqlx::Error },
    #[error("cannot create the database folder {path}: {source}")]
    Folder {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "the database is in use by another chatd process ({path} is locked): SQLite serves one \
         instance; stop the other, give this one another DATABASE_URL, or run several instances \
         on PostgreSQL (docs/operating.md, \"Running several instances\")"
    )]
    InUse { path: String },
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A command beside a server found a schema other than its own while another chatd held
    /// the database, and changed nothing (it does not migrate under a server:
    /// `sqlite::migrate_beside`).
    #[error(
        "the database's schema is not this chatd's ({0}), and another chatd holds it (a server \
         of another version, or a server or a command migrating it); nothing was changed: try \
         again once it has migrated, or use the server's own `chatd users`"
    )]
    ServedSchema(String),
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("stored JSON is invalid: {0}")]
    Json(#[from] serde_json::Error),
    #[error("stored value is invalid: {0}")]
    Value(#[from] crate::vocabulary::UnknownValue),
    /// This instance did not renew its lease in time, and other instances took it for gone.
    #[error("this instance's lease on the database ran out; other instances ended its work")]
    LeaseLost,
    /// The database cannot be reached, did not answer within the timeout
    /// (DATABASE_TIMEOUT_SECS), or cannot take a write (a full disk): not the request's fault,
    /// not a bug. Made from the driver's error by [`unavailable`].
    #[error("the database ({backend}) is unavailable: {reason}")]
    Unavailable {
        backend: &'static str,
        reason: String,
    },
}

/// The driver's errors that mean the database is away or out of room, as
/// [`StoreError::Unavailable`]'s reason; `None` for the others (a bug, bad stored data).
fn unavailable(backend: &'static str, err: &sqlx::Error) -> Option<String> {
    match err {
        sqlx::Error::PoolTimedOut => Some("no connection free or made within the timeout".into()),
        sqlx::Error::PoolClosed => Some("the server is shutting down".into()),
        sqlx::Error::Io(e) => Some(e.to_string()),
        sqlx::Error::Tls(e) => Some(format!("TLS: {e}")),
        sqlx::Error::Database(db) => {
            let code = db.code()?;
            let away = if backend == PG {
                // SQLSTATE classes: 08 connection exception, 53 insufficient resources (a full
                // disk, too many connections), 57P shutting down or starting, 58 system (I/O).
                ["08", "53", "57P", "58"]
                    .iter()
                    .any(|c| code.starts_with(c))
            } else {
                // Primary result codes: BUSY, LOCKED, READONLY, IOERR, FULL, CANTOPEN.
                code.parse::<i32>()
                    .is_ok_and(|c| matches!(c & 0xff, 5 | 6 | 8 | 10 | 13 | 14))
            };
            away.then(|| db.message().to_string())
        }
        _ => None,
    }
}

impl StoreError {
    /// Whether the database was away (or full) rather than the operation wrong.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Unavailable { .. })
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// The database, whichever it is. Cheap to clone (each backend is handles to shared pools).
#[derive(Clone, Debug)]
pub struct Store {
    backend: Backend,
    /// The longest a store operation may take (DATABASE_TIMEOUT_SECS), waiting for a connection
    /// included.
    timeout: std::time::Duration,
}

#[derive(Clone, Debug)]
enum Backend {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

/// Runs `$call` on whichever backend `$store` has: both implement `backend.rs`'s traits.
macro_rules! on_backend {
    ($store:expr, $db:ident => $call:expr) => {
        match &$store.backend {
            Backend::Sqlite($db) => $call,
            Backend::Postgres($db) => $call,
        }
    };
}

/// A function of the shared read side (`read.rs`) on whichever backend `$store` has, on its pool,
/// [`measured`] under the name `$op`.
macro_rules! read {
    ($store:expr, $op:literal, $f:ident($($arg:expr),*)) => {
        measured($store.backend_name(), $op, $store.timeout, async {
            match &$store.backend {
                Backend::Sqlite(db) => read::sqlite::$f(db.pool(), $($arg),*).await,
                Backend::Postgres(db) => read::postgres::$f(db.pool(), $($arg),*).await,
            }
        })
        .await
    };
}

/// [`on_backend!`] for an operation that goes to the database, [`measured`] under the name `$op`.
macro_rules! timed {
    ($store:expr, $op:literal, $db:ident => $call:expr) => {
        measured($store.backend_name(), $op, $store.timeout, async { on_backend!($store, $db => $call) }).await
    };
}

/// Runs a store operation timed into the store's metrics, and in a span of its own inside a
/// trace (`telemetry`), for at most `timeout`: a database that does not answer (a connection
/// cut without a reset keeps a query waiting for minutes) is [`StoreError::Unavailable`] then,
/// as the driver's errors that say it is away are.
async fn measured<T>(
    backend: &'static str,
    operation: &'static str,
    timeout: std::time::Duration,
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    use crate::telemetry::{metrics, trace};
    use tracing::Instrument as _;
    let span = trace::store(backend, operation);
    let started = std::time::Instant::now();
    let result = match tokio::time::timeout(timeout, work.instrument(span.clone())).await {
        Ok(Err(StoreError::Sql(e))) => Err(match unavailable(backend, &e) {
            Some(reason) => StoreError::Unavailable { backend, reason },
            None => StoreError::Sql(e),
        }),
        Ok(result) => result,
        Err(_) => Err(StoreError::Unavailable {
            backend,
            // Given up on, not undone: a write sent before may still land.
            reason: format!(
                "no answer within {} s (a write may still complete)",
                timeout.as_secs_f32()
            ),
        }),
    };
    metrics::store_query(backend, operation, started.elapsed(), result.is_ok());
    if result.is_err() {
        trace::failed(&span, Some("store"));
    }
    result
}

impl Store {
    /// The data folder (CHATD_DATA_DIR) when `explicit` does not name it: the SQLite file's
    /// folder (`.` for a file in the working directory), `data` on PostgreSQL; `None` for an
    /// in-memory database, which keeps nothing on disk.
    pub fn default_data_dir(url: &DatabaseUrl) -> Option<std::path::PathBuf> {
        match url {
            DatabaseUrl::Sqlite(raw) => SqliteStore::folder(raw).map(|folder| {
                if folder.as_os_str().is_empty() {
                    ".".into()
                } else {
                    folder
                }
            }),
            DatabaseUrl::Postgres(_) => Some("data".into()),
        }
    }

    /// Opens (creating an SQLite file and its folder if needed) and migrates the database;
    /// `max_connections` bounds a PostgreSQL pool (SQLite's is fixed); `timeout` bounds each
    /// operation, a connection's wait and making one included.
    pub async fn open(
        url: &DatabaseUrl,
        max_connections: u32,
        timeout: std::time::Duration,
    ) -> Result<Self> {
        Self::open_as(url, max_connections, timeout, true).await
    }

    /// [`Self::open`] for a short command that writes a few rows beside a running server
    /// (`chatd users`). On SQLite it does not take the process lock, which a server holds, but
    /// to migrate a database nothing holds; beside a server it opens only a schema the same as
    /// its own. On PostgreSQL it migrates as an instance starting does.
    pub async fn open_beside(url: &DatabaseUrl, timeout: std::time::Duration) -> Result<Self> {
        Self::open_as(url, 2, timeout, false).await
    }

    async fn open_as(
        url: &DatabaseUrl,
        max_connections: u32,
        timeout: std::time::Duration,
        exclusive: bool,
    ) -> Result<Self> {
        let backend = match url {
            DatabaseUrl::Sqlite(raw) => {
                Backend::Sqlite(SqliteStore::open(raw, timeout, exclusive).await?)
            }
            DatabaseUrl::Postgres(raw) => {
                Backend::Postgres(PgStore::open(raw, max_connections, timeout).await?)
            }
        };
        Ok(Self { backend, timeout })
    }

    /// Whether the database answers now (a trivial query within the timeout).
    pub async fn ping(&self) -> Result<()> {
        timed!(self, "ping", db => db.ping().await)
    }

    /// Whether several processes may share this database (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// Refreshes PostgreSQL's planner statistics (the message search's plan depends on them:
    /// its migration says why) after a bulk load, before autovacuum would; nothing on SQLite,
    /// whose plans do not use them.
    pub async fn analyze(&self) -> Result<()> {
        if let Backend::Postgres(db) = &self.backend {
            sqlx::query("ANALYZE").execute(db.pool()).await?;
        }
        Ok(())
    }

    /// Closes the pools, waiting for connections in use.
    pub async fn close(&self) {
        on_backend!(self, db => db.close().await)
    }

    pub fn is_closed(&self) -> bool {
        on_backend!(self, db => db.is_closed())
    }

    /// The database's name in metrics and traces (OpenTelemetry's `db.system.name`).
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => PG,
        }
    }

    /// The readers' pool now: connections in use, idle.
    pub fn pool_connections(&self) -> (u32, u32) {
        on_backend!(self, db => db.pool_connections())
    }

    pub async fn create_chat(&self, chat: NewChat) -> Result<ChatRecord> {
        timed!(self, "create_chat", db => db.create_chat(chat).await)
    }

    /// All chats, most recently updated first.
    pub async fn list_chats(&self, owner: &str) -> Result<Vec<ChatRecord>> {
        read!(self, "list_chats", chats(owner))
    }

    /// Up to `limit` chats after `after` (from the newest when `None`), in [`Self::list_chats`]'s
    /// order; only those whose title holds `title`'s text when given.
    pub async fn list_chats_page(
        &self,
        limit: u32,
        after: Option<&PageAfter>,
        title: Option<&TitleMatch>,
        owner: &str,
    ) -> Result<Vec<ChatRecord>> {
        read!(
            self,
            "list_chats_page",
            chats_page(limit, after, title, owner)
        )
    }

    /// The newest messages of users and assistants whose text holds every word of `words`
    /// (whole words), newest first: up to `limit` of them, after the hit whose
    /// position is `after`. `None` when `after` is not a position this backend gives.
    pub async fn search_messages(
        &self,
        words: &[String],
        limit: u32,
        after: Option<&str>,
        owner: &str,
    ) -> Result<Option<Vec<MessageHit>>> {
        timed!(self, "search_messages", db => db.search_messages(words, limit, after, owner).await)
    }

    pub async fn get_chat(&self, id: &str) -> Result<Option<ChatRecord>> {
        read!(self, "get_chat", chat(id))
    }

    /// The chat and its transcript, in transcript order.
    pub async fn get_chat_with_messages(
        &self,
        id: &str,
    ) -> Result<Option<(ChatRecord, Vec<MessageRecord>)>> {
        timed!(self, "get_chat_with_messages", db => db.get_chat_with_messages(id).await)
    }

    /// The settings of chat `id`, when `owner` owns it, for a completion that continues it, and
    /// the transcript its call's record ([`Store::begin_call`]) picks the new rows from, where
    /// the backend reads it ahead: SQLite keeps both in the process after the first read
    /// (`sqlite/kept.rs`), reading them on the writer's connection, where that record is written
    /// next, when it has not (one round trip, cheaper than the pool's: `sqlite/batch.rs`);
    /// PostgreSQL reads only the chat, and the transcript under the chat's lock in the record.
    /// Another owner's chat is `None`, as a missing one, and nothing of it is read.
    pub async fn chat_to_continue(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<(ChatSettings, Option<Vec<MessageRecord>>)>> {
        timed!(self, "chat_to_continue", db => db.chat_to_continue(id, owner).await)
    }

    /// Applies a settings update and bumps `updatedAt`. `None` when the chat does not exist.
    pub async fn update_chat(&self, id: &str, patch: ChatPatch) -> Result<Option<ChatRecord>> {
        timed!(self, "update_chat", db => db.update_chat(id, patch).await)
    }

    /// Stars or unstars; never touches `updatedAt` or the transcript. Starring twice keeps the
    /// first `starredAt`.
    pub async fn set_chat_starred(&self, id: &str, starred: bool) -> Result<Option<ChatRecord>> {
        timed!(self, "set_chat_starred", db => db.set_chat_starred(id, starred).await)
    }

    /// Deletes the chat with its messages and stars. `false` when it did not exist.
    pub async fn delete_chat(&self, id: &str) -> Result<bool> {
        timed!(self, "delete_chat", db => db.delete_chat(id).await)
    }

    /// Appends a message and bumps the chat's `updatedAt`. `None` when the chat does not exist.
    pub async fn append_message(
        &self,
        chat_id: &str,
        message: NewMessage,
    ) -> Result<Option<MessageRecord>> {
        timed!(self, "append_message", db => db.append_message(chat_id, message).await)
    }

    /// Starts a call, in one transaction: stores the rows `new_rows` picks from the chat's
    /// transcript (so two calls with the same history cannot both store it), sets the chat's
    /// last-used provider and model (and the initiated ones if unset), and records the call.
    /// `false` when the chat does not exist (deleted meanwhile).
    ///
    /// `read`: the chat's transcript as the caller read it before (with the chat, when the
    /// request was checked; empty for a chat it has just created), which saves SQLite a round
    /// trip. It may be stale: rows are picked from it only if the transcript has not grown since.
    /// `None` reads it here. PostgreSQL reads it under the chat's lock whatever is given.
    pub async fn begin_call(
        &self,
        call: NewCall,
        read: Option<Vec<MessageRecord>>,
        new_rows: impl Fn(&[MessageRecord]) -> Vec<NewMessage>,
    ) -> Result<bool> {
        timed!(self, "begin_call", db => db.begin_call(call, read, new_rows).await)
    }

    /// Ends a call that succeeded: its assistant message (when it has a chat) and its usage and
    /// latency, and the provider and model that answered when they were not the ones asked
    /// (`answered_by`: the fallback's), in one transaction. A call that already ended keeps
    /// that outcome and gets no reply; a chat deleted meanwhile gets nothing.
    pub async fn finish_call(
        &self,
        call_id: &str,
        chat_id: Option<&str>,
        assistant: Option<NewMessage>,
        usage: Option<CallUsage>,
        latency_ms: u64,
        answered_by: Option<&(String, String)>,
    ) -> Result<()> {
        timed!(self, "finish_call", db => db.finish_call(call_id, chat_id, assistant, usage, latency_ms, answered_by).await)
    }

    /// Ends a call that failed: its error and latency (and whatever usage was reported). A call
    /// that already ended keeps its outcome.
    pub async fn fail_call(
        &self,
        call_id: &str,
        error: &str,
        usage: Option<CallUsage>,
        latency_ms: u64,
    ) -> Result<()> {
        timed!(self, "fail_call", db => db.fail_call(call_id, error, usage, latency_ms).await)
    }

    pub async fn get_call(&self, id: &str) -> Result<Option<CallRecord>> {
        read!(self, "get_call", call(id))
    }

    /// Sets the title only if the chat still has none (a title set meanwhile wins). Returns the
    /// chat as it is afterwards; `None` when it does not exist.
    pub async fn set_title_if_unset(
        &self,
        chat_id: &str,
        title: &str,
    ) -> Result<Option<ChatRecord>> {
        timed!(self, "set_title_if_unset", db => db.set_title_if_unset(chat_id, title).await)
    }

    /// Creates a search; with `reuse_by_query`, first looks for the most recently updated search
    /// with the same normalized query and returns that instead (`true` = reused). Concurrent
    /// callers with a new query end up with one search, not one each.
    pub async fn create_search(
        &self,
        search: NewSearch,
        reuse_by_query: bool,
    ) -> Result<(SearchRecord, bool)> {
        timed!(self, "create_search", db => db.create_search(search, reuse_by_query).await)
    }

    /// All searches, most recently updated first.
    pub async fn list_searches(&self, owner: &str) -> Result<Vec<SearchRecord>> {
        read!(self, "list_searches", searches(owner))
    }

    /// Up to `limit` searches after `after` (from the newest when `None`), in
    /// [`Self::list_searches`]'s order; only those whose title (the query when it has none)
    /// holds `title`'s text when given.
    pub async fn list_searches_page(
        &self,
        limit: u32,
        after: Option<&PageAfter>,
        title: Option<&TitleMatch>,
        owner: &str,
    ) -> Result<Vec<SearchRecord>> {
        read!(
            self,
            "list_searches_page",
            searches_page(limit, after, title, owner)
        )
    }

    pub async fn get_search(&self, id: &str) -> Result<Option<SearchDetailRecord>> {
        read!(self, "get_search", search_detail(id))
    }

    /// Replaces the search's last outcome with `outcome` and bumps `updatedAt`.
    pub async fn record_search_run(
        &self,
        id: &str,
        outcome: SearchRunOutcome,
    ) -> Result<Option<SearchDetailRecord>> {
        timed!(self, "record_search_run", db => db.record_search_run(id, outcome).await)
    }

    /// Stars or unstars; never touches `updatedAt` or the results.
    pub async fn set_search_starred(
        &self,
        id: &str,
        starred: bool,
    ) -> Result<Option<SearchRecord>> {
        timed!(self, "set_search_starred", db => db.set_search_starred(id, starred).await)
    }

    /// `false` when the search did not exist.
    pub async fn delete_search(&self, id: &str) -> Result<bool> {
        timed!(self, "delete_search", db => db.delete_search(id).await)
    }

    /// Up to `per_kind` chats and `per_kind` searches, newest `updatedAt` first (ties: newest id,
    /// and ids are UUIDv7, ordered by creation).
    pub async fn workspace_items(
        &self,
        per_kind: u32,
        owner: &str,
    ) -> Result<Vec<WorkspaceRecord>> {
        read!(self, "workspace_items", workspace(per_kind, owner))
    }

    /// Closes the calls that servers no longer alive left open (`liveness.rs`); how many.
    pub async fn close_lost_calls(&self) -> Result<usize> {
        timed!(self, "close_lost_calls", db => db.close_lost_calls().await)
    }

    /// Registers this process among the servers of the database; its id, for
    /// [`Store::heartbeat`].
    pub async fn register_instance(&self) -> Result<String> {
        timed!(self, "register_instance", db => db.register_instance().await)
    }

    /// Records that instance `id` is alive now (on PostgreSQL, renews its lease:
    /// [`StoreError::LeaseLost`] once it ran out).
    pub async fn heartbeat(&self, id: &str) -> Result<()> {
        timed!(self, "heartbeat", db => db.heartbeat(id).await)
    }

    /// Takes this instance out of the database's servers, at the end of a graceful shutdown
    /// (its runs have ended): others need not wait for its lease to run out.
    pub async fn leave(&self, id: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(db) => measured(PG, "leave", self.timeout, db.leave(id)).await,
        }
    }

    /// The runs shared by the instances of a deployment: `None` on SQLite, whose one process
    /// keeps its runs in memory.
    pub fn runs_table(&self) -> Option<RunsTable> {
        match &self.backend {
            Backend::Sqlite(_) => None,
            Backend::Postgres(db) => Some(RunsTable(db.clone(), self.timeout)),
        }
    }

    /// How often [`Store::heartbeat`] is due.
    pub fn heartbeat_every(&self) -> std::time::Duration {
        match self.backend {
            Backend::Sqlite(_) => liveness::HEARTBEAT,
            Backend::Postgres(_) => postgres::RENEW_EVERY,
        }
    }
}

/// The backend name of the runs table's operations.
const PG: &str = "postgresql";

/// The runs table of a shared database (`postgres/runs.rs`), for `runs::shared`.
#[derive(Clone, Debug)]
pub struct RunsTable(PgStore, std::time::Duration);

impl RunsTable {
    /// Registers a live run of `target` owned by this instance; [`StoreError::LeaseLost`] when
    /// this instance's lease ran out.
    pub async fn start(&self, id: &str, kind: &str, target: &str, tag: u32) -> Result<RunStart> {
        measured(
            PG,
            "start_run",
            self.1,
            self.0.start_run(id, kind, target, tag),
        )
        .await
    }

    /// The live run of `target`: its id and tag.
    pub async fn live(&self, kind: &str, target: &str) -> Result<Option<(String, u32)>> {
        measured(PG, "live_run", self.1, self.0.live_run(kind, target)).await
    }

    /// `(kind, target)` of every live run of an instance whose lease holds, sorted.
    pub async fn all_live(&self) -> Result<Vec<(String, String)>> {
        measured(PG, "live_runs", self.1, self.0.live_runs()).await
    }

    /// Stores this instance's events (a terminal one ends its run); the ids of the runs whose
    /// events were refused because this instance no longer owns them.
    pub async fn write(&self, events: &[RunEvent]) -> Result<std::collections::HashSet<String>> {
        measured(
            PG,
            "write_run_events",
            self.1,
            self.0.write_run_events(events),
        )
        .await
    }

    /// The events of each `(run id, last seq seen)` after that seq, in order.
    pub async fn events_after(&self, cursors: &[(&str, u32)]) -> Result<Vec<RunEvent>> {
        measured(
            PG,
            "run_events_after",
            self.1,
            self.0.run_events_after(cursors),
        )
        .await
    }

    /// Ends the runs of instances whose lease ran out with an `error` event (`error_data` gives
    /// its data for a kind); how many.
    pub async fn end_lost(&self, error_data: &(dyn Fn(&str) -> String + Sync)) -> Result<usize> {
        measured(
            PG,
            "end_lost_runs",
            self.1,
            self.0.end_lost_runs(error_data),
        )
        .await
    }

    /// Asks the owner of `target`'s live run to stop it; the run's id and tag, if one is live.
    pub async fn request_stop(&self, kind: &str, target: &str) -> Result<Option<(String, u32)>> {
        measured(
            PG,
            "request_run_stop",
            self.1,
            self.0.request_run_stop(kind, target),
        )
        .await
    }

    /// This instance's live runs a client asked to stop.
    pub async fn stop_requests(&self) -> Result<Vec<String>> {
        measured(PG, "run_stop_requests", self.1, self.0.run_stop_requests()).await
    }

    pub async fn listen(&self) -> Result<RunListener> {
        self.0.listen_runs().await
    }

    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

/// Decodes a JSON text column.
fn json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T> {
    Ok(serde_json::from_str(text)?)
}
