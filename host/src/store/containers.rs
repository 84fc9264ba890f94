//! The `python` tool's sessions of `/openai/v1` requests, which have no chat: containers
//! (`containers`, `container_files`, both backends), each the files its code wrote, kept for
//! [`KEPT_FOR`] after the container was last used (made, named by a request, or written to), so
//! a client may fetch them (`GET /openai/v1/files/{id}`) and a later request may continue the
//! session with them, on any instance. An expired container is never found; it is deleted, its
//! files with it, when a later container is made (a sweep whose failure fails nothing). Neither
//! table is exported (`chatd export`): they are a cache of a client's work, not a user's data.
//!
//! Written once for both databases, as `files.rs` is; a container holds at most the caps of a
//! chat's files ([`MAX_CHAT_FILES`], [`MAX_CHAT_FILE_BYTES`]).

use std::time::Duration;

use super::files::{Kept, MAX_CHAT_FILE_BYTES, MAX_CHAT_FILES, NewChatFile};
use super::{Backend, Result, Store, measured};
use crate::vocabulary::now;

/// How long a container lives after it was last used.
pub const KEPT_FOR: Duration = Duration::from_secs(24 * 60 * 60);

/// A container file, without its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerFileRecord {
    pub id: String,
    pub container_id: String,
    pub name: String,
    pub mime_type: String,
    pub size_bytes: i64,
    pub created_at: String,
    /// When it stops being served: its container's end, as of when it was read.
    pub expires_at: String,
}

/// A container's id: `cntr_` and a random UUID's 32 hex digits, unguessable.
pub fn new_container_id() -> String {
    format!("cntr_{}", uuid::Uuid::new_v4().simple())
}

/// A container file's id: `cfile_` and a random UUID's 32 hex digits, unguessable.
fn new_file_id() -> String {
    format!("cfile_{}", uuid::Uuid::new_v4().simple())
}

/// A stored timestamp `after` from now.
fn from_now(after: Duration) -> String {
    let at = chrono::Utc::now() + chrono::TimeDelta::from_std(after).unwrap_or_default();
    crate::vocabulary::format_micros(at.timestamp_micros())
}

const EXPIRED: &str = "DELETE FROM containers WHERE expires_at < $1";
/// Makes a container, or extends a live one's life; a container that expired is not revived.
const OPEN: &str = "INSERT INTO containers (id, created_at, expires_at, owner_id) \
                    VALUES ($1, $2, $3, $4) \
                    ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at \
                    WHERE containers.expires_at > $2 AND containers.owner_id = excluded.owner_id";
/// Extends a live container's life; whether it was live.
const TOUCH: &str = "UPDATE containers SET expires_at = $3 WHERE id = $1 AND expires_at > $2 \
                     RETURNING id";
/// Whether a container is live (a read: a request checks it before it is accepted).
const LIVE: &str = "SELECT id FROM containers WHERE id = $1 AND expires_at > $2 AND owner_id = $3";
const USAGE: &str = "SELECT COUNT(*), CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT), \
                     COALESCE(MAX(seq), 0) FROM container_files WHERE container_id = $1";
const INSERT: &str = "INSERT INTO container_files \
                      (id, container_id, name, mime_type, size_bytes, created_at, seq, data) \
                      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const ONE: &str = "SELECT f.id, f.container_id, f.name, f.mime_type, f.size_bytes, f.created_at, \
                   c.expires_at, f.data FROM container_files f \
                   JOIN containers c ON c.id = f.container_id \
                   WHERE f.id = $1 AND c.expires_at > $2 AND c.owner_id = $3";
/// The newest version of each name, of a live container.
const LATEST: &str = "SELECT f.name, f.data FROM container_files f \
                      JOIN containers c ON c.id = f.container_id \
                      WHERE f.container_id = $1 AND c.expires_at > $2 \
                      AND f.seq = (SELECT MAX(g.seq) FROM container_files g \
                      WHERE g.container_id = f.container_id AND g.name = f.name) ORDER BY f.name";

type FileRow = (String, String, String, String, i64, String, String, Vec<u8>);

macro_rules! containers {
    ($db:ty) => {
        use super::*;

        /// Makes container `id` (or extends its life); whether it is live now.
        pub async fn open(
            tx: &mut sqlx::Transaction<'_, $db>,
            id: &str,
            owner: &str,
        ) -> Result<bool> {
            let now = now();
            sqlx::query(OPEN)
                .bind(id)
                .bind(&now)
                .bind(from_now(KEPT_FOR))
                .bind(owner)
                .execute(&mut **tx)
                .await?;
            // Live and the owner's: another's container of that id is not this one.
            live(&mut **tx, id, owner).await
        }

        /// Extends a live container's life; whether it was live.
        pub async fn touch(tx: &mut sqlx::Transaction<'_, $db>, id: &str) -> Result<bool> {
            let row: Option<(String,)> = sqlx::query_as(TOUCH)
                .bind(id)
                .bind(now())
                .bind(from_now(KEPT_FOR))
                .fetch_optional(&mut **tx)
                .await?;
            Ok(row.is_some())
        }

        pub async fn sweep<'e>(ex: impl sqlx::Executor<'e, Database = $db>) -> Result<()> {
            sqlx::query(EXPIRED).bind(now()).execute(ex).await?;
            Ok(())
        }

        /// Stores `files` in container `id`, which the caller found live (and, on PostgreSQL,
        /// locked, so two instances cannot both pass the caps).
        pub async fn add(
            tx: &mut sqlx::Transaction<'_, $db>,
            id: &str,
            files: Vec<NewChatFile>,
        ) -> Result<std::result::Result<Vec<ContainerFileRecord>, Kept>> {
            let (count, bytes, seq): (i64, i64, i64) =
                sqlx::query_as(USAGE).bind(id).fetch_one(&mut **tx).await?;
            let more: i64 = files.iter().map(|f| f.data.len() as i64).sum();
            if count + files.len() as i64 > MAX_CHAT_FILES || bytes + more > MAX_CHAT_FILE_BYTES {
                return Ok(Err(Kept::Full));
            }
            let expires_at = from_now(KEPT_FOR);
            let mut stored = Vec::with_capacity(files.len());
            for (i, file) in files.into_iter().enumerate() {
                let record = ContainerFileRecord {
                    id: new_file_id(),
                    container_id: id.to_string(),
                    name: file.name,
                    mime_type: file.mime_type,
                    size_bytes: file.data.len() as i64,
                    created_at: now(),
                    expires_at: expires_at.clone(),
                };
                sqlx::query(INSERT)
                    .bind(&record.id)
                    .bind(id)
                    .bind(&record.name)
                    .bind(&record.mime_type)
                    .bind(record.size_bytes)
                    .bind(&record.created_at)
                    .bind(seq + 1 + i as i64)
                    .bind(file.data)
                    .execute(&mut **tx)
                    .await?;
                stored.push(record);
            }
            Ok(Ok(stored))
        }

        pub async fn live<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            id: &str,
            owner: &str,
        ) -> Result<bool> {
            let row: Option<(String,)> = sqlx::query_as(LIVE)
                .bind(id)
                .bind(now())
                .bind(owner)
                .fetch_optional(ex)
                .await?;
            Ok(row.is_some())
        }

        pub async fn one<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            file_id: &str,
            owner: &str,
        ) -> Result<Option<(ContainerFileRecord, Vec<u8>)>> {
            let row: Option<FileRow> = sqlx::query_as(ONE)
                .bind(file_id)
                .bind(now())
                .bind(owner)
                .fetch_optional(ex)
                .await?;
            Ok(row.map(
                |(id, container_id, name, mime_type, size_bytes, created_at, expires_at, data)| {
                    let record = ContainerFileRecord {
                        id,
                        container_id,
                        name,
                        mime_type,
                        size_bytes,
                        created_at,
                        expires_at,
                    };
                    (record, data)
                },
            ))
        }

        pub async fn latest<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            id: &str,
        ) -> Result<Vec<(String, Vec<u8>)>> {
            Ok(sqlx::query_as(LATEST)
                .bind(id)
                .bind(now())
                .fetch_all(ex)
                .await?)
        }
    };
}

mod on_sqlite {
    containers!(sqlx::Sqlite);
}

mod on_postgres {
    containers!(sqlx::Postgres);
}

impl Store {
    /// Makes container `id` `owner`'s (or extends its life, when it is live and theirs), then
    /// deletes expired ones; whether `id` is live now (an expired one is not revived).
    pub async fn open_container(&self, id: &str, owner: &str) -> Result<bool> {
        let live = measured(self.backend_name(), "open_container", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    let live = on_sqlite::open(&mut tx, id, owner).await?;
                    tx.commit().await?;
                    Ok(live)
                }
                Backend::Postgres(db) => {
                    let mut tx = db.tx().await?;
                    let live = on_postgres::open(&mut tx, id, owner).await?;
                    tx.commit().await?;
                    Ok(live)
                }
            }
        })
        .await?;
        let swept = measured(
            self.backend_name(),
            "sweep_containers",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => {
                        let mut tx = db.write_tx().await?;
                        on_sqlite::sweep(&mut *tx).await?;
                        Ok(tx.commit().await?)
                    }
                    Backend::Postgres(db) => on_postgres::sweep(db.pool()).await,
                }
            },
        )
        .await;
        if let Err(e) = swept {
            tracing::warn!(error = %e, "expired containers were not deleted; a later one will");
        }
        Ok(live)
    }

    /// Extends container `id`'s life, if it is live; whether it was.
    pub async fn touch_container(&self, id: &str) -> Result<bool> {
        measured(
            self.backend_name(),
            "touch_container",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => {
                        let mut tx = db.write_tx().await?;
                        let live = on_sqlite::touch(&mut tx, id).await?;
                        tx.commit().await?;
                        Ok(live)
                    }
                    Backend::Postgres(db) => {
                        let mut tx = db.tx().await?;
                        let live = on_postgres::touch(&mut tx, id).await?;
                        tx.commit().await?;
                        Ok(live)
                    }
                }
            },
        )
        .await
    }

    /// Keeps `files` in container `id`, all or none (within its caps), extending its life;
    /// [`Kept::NoChat`] when it expired meanwhile.
    pub async fn add_container_files(
        &self,
        id: &str,
        files: Vec<NewChatFile>,
    ) -> Result<std::result::Result<Vec<ContainerFileRecord>, Kept>> {
        measured(
            self.backend_name(),
            "add_container_files",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => {
                        let mut tx = db.write_tx().await?;
                        if !on_sqlite::touch(&mut tx, id).await? {
                            return Ok(Err(Kept::NoChat));
                        }
                        let kept = on_sqlite::add(&mut tx, id, files).await?;
                        tx.commit().await?;
                        Ok(kept)
                    }
                    Backend::Postgres(db) => {
                        let mut tx = db.tx().await?;
                        // The row locked by the update: two instances cannot both pass the caps.
                        if !on_postgres::touch(&mut tx, id).await? {
                            return Ok(Err(Kept::NoChat));
                        }
                        let kept = on_postgres::add(&mut tx, id, files).await?;
                        tx.commit().await?;
                        Ok(kept)
                    }
                }
            },
        )
        .await
    }

    /// Whether container `id` is live and `owner`'s; nothing written.
    pub async fn container_live(&self, id: &str, owner: &str) -> Result<bool> {
        measured(self.backend_name(), "container_live", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => on_sqlite::live(db.pool(), id, owner).await,
                Backend::Postgres(db) => on_postgres::live(db.pool(), id, owner).await,
            }
        })
        .await
    }

    /// Container file `file_id`, with its bytes, while its container lives, when it is
    /// `owner`'s.
    pub async fn container_file(
        &self,
        file_id: &str,
        owner: &str,
    ) -> Result<Option<(ContainerFileRecord, Vec<u8>)>> {
        measured(self.backend_name(), "container_file", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => on_sqlite::one(db.pool(), file_id, owner).await,
                Backend::Postgres(db) => on_postgres::one(db.pool(), file_id, owner).await,
            }
        })
        .await
    }

    /// The newest version of each of a live container's file names, by name.
    pub async fn latest_container_files(&self, id: &str) -> Result<Vec<(String, Vec<u8>)>> {
        measured(
            self.backend_name(),
            "latest_container_files",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => on_sqlite::latest(db.pool(), id).await,
                    Backend::Postgres(db) => on_postgres::latest(db.pool(), id).await,
                }
            },
        )
        .await
    }
}
