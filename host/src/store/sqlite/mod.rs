//! The SQLite store, chatd's embedded default: one process per database file. It owns the
//! connection pool, the writer connection, the embedded migrations (`/migrations/sqlite`), and one
//! file per table family.
//!
//! Each statement is a round trip to a connection's own thread (sqlx), and on two cores those
//! hops, not SQLite, were most of a write's time. So a write is a [`batch::Batch`] of statements
//! where it can be: one round trip, through the one writer connection, with its conditions in
//! the SQL (`batch.rs`). Reads, and the writes that must read in the middle, use the pool; but
//! a completion's chat is read on the writer's connection, where its call's record follows
//! (`SqliteStore::read_on_writer`).
//!
//! SQLite settings, and why: WAL so the pool's readers never wait for the writer; `synchronous =
//! NORMAL`, which in WAL mode loses no committed transaction on a process crash (only on power
//! loss, the usual trade for servers); foreign keys on, because deletes rely on ON DELETE CASCADE;
//! a busy timeout so concurrent writers queue instead of failing with SQLITE_BUSY.

/// The next `updated_at` of a row being updated, as a SQL expression with one placeholder, bound
/// to [`crate::vocabulary::now`]: now, or the first microsecond of the millisecond after the stored
/// value when the clock has not moved past it, so that `updatedAt` (milliseconds, as clients see
/// it) increases on every update. Computed inside the statement rather than read first, so that an
/// update is one statement. Stored stamps are fixed-width text, so `MAX` compares them in time
/// order. A macro, not a `const`, so `concat!` can build statements from it.
macro_rules! next_updated_at {
    () => {
        "MAX(?, strftime('%Y-%m-%dT%H:%M:%f', substr(updated_at, 1, 23), '+0.001 seconds') || '000Z')"
    };
}

mod batch;
mod calls;
mod chats;
mod kept;
mod liveness;
mod message_search;
mod search_index;
mod searches;

use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrate as _;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::migrations::{self, Embedded};
use super::{Result, STARRED_PROJECT, StoreError};
use batch::Writer;

#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    writer: Writer,
    /// A lock on `<database>.lock`, held while the store is open: one process per database
    /// file, so a second chatd cannot take the first's calls for lost (`liveness.rs`). The
    /// system releases it when a process dies. `None` for an in-memory database.
    lock: std::sync::Arc<std::sync::Mutex<Option<std::fs::File>>>,
    /// The chats completions continue, kept in the process: only a server's store, which holds
    /// the process lock and so is the only writer of chats (`kept.rs`).
    kept: Option<std::sync::Arc<kept::Kept>>,
}

impl SqliteStore {
    /// The pool reads go through (writes, and a completion's chat, go through the writer).
    pub(super) fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The folder the database file is in (empty: the working directory); `None` for an
    /// in-memory database. Other files chatd keeps (the plugin compile cache) live beside it.
    pub fn folder(raw: &str) -> Option<std::path::PathBuf> {
        let options = SqliteConnectOptions::from_str(raw).ok()?;
        let path = options.get_filename();
        if is_in_memory(path) {
            return None;
        }
        Some(path.parent()?.to_path_buf())
    }

    /// Opens (creating file and folder if needed) and migrates the database; `timeout` bounds a
    /// wait for a connection or for SQLite's lock.
    /// `exclusive`: take the database's process lock, index the message search's queue and keep
    /// the chats completions continue (`kept.rs`) (a server); a short command writing a few rows
    /// beside a running server (`chatd users`) does none of it, and SQLite's own locking orders
    /// its writes with the server's, and it migrates only a database no server holds
    /// ([`migrate_beside`]).
    pub async fn open(raw: &str, timeout: Duration, exclusive: bool) -> Result<Self> {
        let options = SqliteConnectOptions::from_str(raw)
            .map_err(|source| StoreError::Open {
                url: raw.to_string(),
                source,
            })?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(timeout)
            .row_buffer_size(256)
            // Checkpoints run in the background (`checkpoints`); this is only the safety net
            // should that task fall behind (10,000 pages: about 40 MiB of WAL).
            .pragma("wal_autocheckpoint", "10000");
        if let Some(parent) = Self::folder(raw).filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(&parent).map_err(|source| StoreError::Folder {
                path: parent.display().to_string(),
                source,
            })?;
        }
        let lock = match exclusive {
            true => lock_database(options.get_filename())?,
            false => None,
        };
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .acquire_timeout(timeout)
            // sqlx pings a connection before lending it out, by default: one more round trip to
            // the connection's worker thread per query or transaction, which was a fifth of a
            // persisted completion's database hops. A SQLite connection is a file handle in this
            // process; it does not go stale the way a network connection does.
            .test_before_acquire(false)
            .connect_with(options.clone())
            .await
            .map_err(|source| StoreError::Open {
                url: raw.to_string(),
                source,
            })?;
        let migrator = Embedded(migrations::SQLITE).migrator().await?;
        if exclusive {
            migrator.run(&pool).await?;
        } else if let Err(e) = migrate_beside(&pool, &migrator, options.get_filename()).await {
            pool.close().await;
            return Err(e);
        }
        let writer = Writer::open(options)
            .await
            .map_err(|source| StoreError::Open {
                url: raw.to_string(),
                source,
            })?;
        tokio::spawn(checkpoints(pool.clone()));
        // A server's store indexes the search's queue; a short command beside it leaves that
        // to the server (or the next one to start).
        if exclusive {
            tokio::spawn(search_index::index_behind(pool.clone(), writer.downgrade()));
        }
        Ok(Self {
            pool,
            writer,
            lock: std::sync::Arc::new(std::sync::Mutex::new(lock)),
            kept: exclusive.then(Default::default),
        })
    }

    /// A write transaction. `BEGIN IMMEDIATE` takes SQLite's write lock up front: a deferred
    /// transaction that reads and then writes fails at once with SQLITE_BUSY_SNAPSHOT when another
    /// writer committed in between, where an immediate one waits its turn (busy timeout).
    pub(in crate::store) async fn write_tx(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }

    pub fn is_closed(&self) -> bool {
        self.pool.is_closed()
    }

    /// A trivial query: whether the database answers.
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// The readers' pool now: connections in use, idle.
    pub fn pool_connections(&self) -> (u32, u32) {
        let idle = self.pool.num_idle() as u32;
        (self.pool.size().saturating_sub(idle), idle)
    }

    /// Closes the pool, waiting for connections in use; the WAL is checkpointed on close. Then
    /// gives up the database's lock.
    pub async fn close(&self) {
        self.writer.close().await;
        self.pool.close().await;
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// The migrations of a store opened beside a server (not `exclusive`). None when the schema is
/// already this build's, the usual case: the lock is not even tried, so a server starting then is
/// never refused for it. Otherwise they are applied holding the serving lock when nothing holds
/// it; when something does (a server of another version, a server or a command migrating it),
/// nothing is changed: a server runs on the schema it knows, and keeps chats in its
/// memory (`kept.rs`) that a migration rewriting them would leave stale.
async fn migrate_beside(
    pool: &SqlitePool,
    migrator: &sqlx::migrate::Migrator,
    path: &std::path::Path,
) -> Result<()> {
    let mut conn = pool.acquire().await?;
    let table: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' \
         AND name = '_sqlx_migrations')",
    )
    .fetch_one(&mut *conn)
    .await?;
    // A migration that failed there is a difference too: sqlx refuses to migrate such a
    // database, and a server to serve it.
    let difference = if !table {
        migrations::difference(migrator, &[])
    } else if let Some(version) = conn.dirty_version().await? {
        Some(format!("migration {version} failed there"))
    } else {
        migrations::difference(migrator, &conn.list_applied_migrations().await?)
    };
    // Given back before migrating: the migrator takes a connection of its own.
    drop(conn);
    let Some(difference) = difference else {
        return Ok(());
    };
    match lock_database(path) {
        Ok(_held_while_migrating) => Ok(migrator.run(pool).await?),
        Err(StoreError::InUse { .. }) => Err(StoreError::ServedSchema(difference)),
        Err(e) => Err(e),
    }
}

/// Takes the lock beside a database file (`None` for an in-memory one), or says who has it.
fn lock_database(path: &std::path::Path) -> Result<Option<std::fs::File>> {
    if is_in_memory(path) {
        return Ok(None);
    }
    // One lock for one file, also when its path is a symlink to it: the kept chats (`kept.rs`)
    // rely on this process being the only server writing the file.
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| {
        let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
        let folder = std::fs::canonicalize(folder.unwrap_or(std::path::Path::new(".")));
        match (folder, path.file_name()) {
            (Ok(folder), Some(file)) => folder.join(file),
            _ => path.to_path_buf(),
        }
    });
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = std::path::PathBuf::from(name);
    let shown = lock_path.display().to_string();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|source| StoreError::Folder {
            path: shown.clone(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::InUse { path: shown }),
        Err(std::fs::TryLockError::Error(source)) => Err(StoreError::Folder {
            path: shown,
            source,
        }),
    }
}

/// How often the WAL is copied back into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// Copies the WAL back into the database file every [`CHECKPOINT_EVERY`], off the request path.
/// SQLite's automatic checkpoint runs inside whichever commit crosses the threshold, and that
/// request waited for it: measured, it tripled the p99 of a persisted completion (6.4 ms against
/// 2.1 ms without). A PASSIVE checkpoint never blocks readers or writers. Ends when the pool is
/// closed.
async fn checkpoints(pool: SqlitePool) {
    loop {
        tokio::time::sleep(CHECKPOINT_EVERY).await;
        if pool.is_closed() {
            return;
        }
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&pool)
            .await
        {
            if pool.is_closed() {
                return;
            }
            tracing::warn!(error = %e, "WAL checkpoint failed; SQLite's own checkpoint remains");
        }
    }
}

/// What can be starred. Each kind has its own membership table, so foreign keys stay real and
/// deleting a chat or search deletes its stars.
#[derive(Clone, Copy, Debug)]
enum Member {
    Chat,
    Search,
}

/// Adds `id` to the `starred` project or removes it. Adding twice keeps the first membership
/// (and so the first `starredAt`).
async fn set_membership(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    member: Member,
    id: &str,
    starred: bool,
) -> Result<()> {
    let (table, column) = match member {
        Member::Chat => ("project_chats", "chat_id"),
        Member::Search => ("project_searches", "search_id"),
    };
    if starred {
        let sql = format!(
            "INSERT INTO {table} (project_id, {column}, created_at) VALUES (?, ?, ?) \
             ON CONFLICT (project_id, {column}) DO NOTHING"
        );
        let at = crate::vocabulary::now();
        sqlx::query(&sql)
            .bind(STARRED_PROJECT)
            .bind(id)
            .bind(at)
            .execute(&mut **tx)
            .await?;
    } else {
        let sql = format!("DELETE FROM {table} WHERE project_id = ? AND {column} = ?");
        sqlx::query(&sql)
            .bind(STARRED_PROJECT)
            .bind(id)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// sqlx names an in-memory database `file:sqlx-in-memory-N` once parsed.
fn is_in_memory(path: &std::path::Path) -> bool {
    path.to_str().is_some_and(|p| {
        p.contains(":memory:") || p.contains("mode=memory") || p.starts_with("file:sqlx-in-memory-")
    })
}

/// A database file in `dir`, for the tests that need a file (a lock, a second connection).
#[cfg(test)]
fn file_url(dir: &tempfile::TempDir) -> String {
    format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("chatd.db").display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same file through another name (a symlink to it, in another folder) is the same
    /// database: a second server is refused.
    #[tokio::test]
    async fn one_lock_for_one_file_whatever_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let timeout = Duration::from_secs(5);
        let first = SqliteStore::open(&file_url(&dir), timeout, true)
            .await
            .unwrap();
        let link = tempfile::tempdir().unwrap();
        let linked = link.path().join("other.db");
        std::os::unix::fs::symlink(dir.path().join("chatd.db"), &linked).unwrap();
        let url = format!("sqlite://{}?mode=rwc", linked.display());
        let second = SqliteStore::open(&url, timeout, true).await;
        assert!(matches!(second, Err(StoreError::InUse { .. })));
        first.close().await;
        let again = SqliteStore::open(&url, timeout, true).await;
        assert!(again.is_ok(), "given up when the first closed");
    }

    /// Why a store opened beside the server on `url` was refused.
    async fn refused_beside(url: &str) -> String {
        match SqliteStore::open(url, Duration::from_secs(5), false).await {
            Err(StoreError::ServedSchema(why)) => why,
            other => panic!("opened beside the server: {:?}", other.map(|_| ())),
        }
    }

    /// A store opened beside a server (`chatd users`) migrates nothing under it: it opens only
    /// the schema it knows, and refuses, changing nothing, one the server has more or fewer
    /// migrations in. With no server it migrates, as a server would.
    #[tokio::test]
    async fn beside_a_server_nothing_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let url = file_url(&dir);
        let timeout = Duration::from_secs(5);
        let server = SqliteStore::open(&url, timeout, true).await.unwrap();
        let last: i64 = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
            .fetch_one(&server.pool)
            .await
            .unwrap();
        let has = |version: i64| {
            let pool = server.pool.clone();
            async move {
                sqlx::query_scalar::<_, i64>(
                    "SELECT COUNT(*) FROM _sqlx_migrations WHERE version = ?",
                )
                .bind(version)
                .fetch_one(&pool)
                .await
                .unwrap()
                    == 1
            }
        };
        // The server is older: its schema lacks this build's last migration.
        let row: (String, Vec<u8>) =
            sqlx::query_as("SELECT description, checksum FROM _sqlx_migrations WHERE version = ?")
                .bind(last)
                .fetch_one(&server.pool)
                .await
                .unwrap();
        sqlx::query("DELETE FROM _sqlx_migrations WHERE version = ?")
            .bind(last)
            .execute(&server.pool)
            .await
            .unwrap();
        let why = refused_beside(&url).await;
        assert!(why.contains("older"), "{why}");
        assert!(
            !has(last).await,
            "the migration was applied under the server"
        );
        // The server is newer: a migration this build does not know.
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
             execution_time) VALUES (?, ?, TRUE, ?, 0), (99991231000001, 'later', TRUE, X'00', 0)",
        )
        .bind(last)
        .bind(&row.0)
        .bind(&row.1)
        .execute(&server.pool)
        .await
        .unwrap();
        let why = refused_beside(&url).await;
        assert!(why.contains("newer"), "{why}");
        // A migration that failed there.
        sqlx::query(
            "UPDATE _sqlx_migrations SET success = (version <> ?) WHERE version <> 99991231000001",
        )
        .bind(last)
        .execute(&server.pool)
        .await
        .unwrap();
        let why = refused_beside(&url).await;
        assert!(why.contains(&format!("migration {last} failed")), "{why}");
        // The same schema beside the server: opened, the lock left to the server.
        sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 99991231000001")
            .execute(&server.pool)
            .await
            .unwrap();
        sqlx::query("UPDATE _sqlx_migrations SET success = TRUE")
            .execute(&server.pool)
            .await
            .unwrap();
        let beside = SqliteStore::open(&url, timeout, false).await.unwrap();
        assert!(beside.kept.is_none() && beside.lock.lock().unwrap().is_none());
        beside.close().await;
        // No server, a new file: the command migrates it, then gives the lock up.
        let fresh_dir = tempfile::tempdir().unwrap();
        let fresh = file_url(&fresh_dir);
        let alone = SqliteStore::open(&fresh, timeout, false).await.unwrap();
        let applied: i64 = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
            .fetch_one(&alone.pool)
            .await
            .unwrap();
        assert_eq!(applied, last);
        let server = SqliteStore::open(&fresh, timeout, true).await.unwrap();
        server.close().await;
        alone.close().await;
        // A schema already this build's: the lock is not even tried (here it could not be
        // taken: its file is a folder).
        let lock_file = fresh_dir.path().join("chatd.db.lock");
        std::fs::remove_file(&lock_file).unwrap();
        std::fs::create_dir(&lock_file).unwrap();
        let beside = SqliteStore::open(&fresh, timeout, false).await;
        assert!(beside.is_ok(), "{:?}", beside.err());
    }
}
