//! Each person's library of documents (`library_files`, `library_chunks`; both backends): the
//! original bytes, where processing is, and the chunks it made. The rules are here, once:
//! - one owner's same bytes are one file ([`Added::Same`]), whatever its name;
//! - an owner holds at most [`MAX_LIBRARY_FILES`] files and [`MAX_LIBRARY_BYTES`] in all
//!   ([`Added::Full`]), decided under the owner's lock so two uploads cannot both pass;
//! - every read and delete names the owner: another person's id is not found;
//! - a file is taken for processing by one instance at a time ([`Store::claim_library_file`]),
//!   and taken over when that instance is no longer alive (on PostgreSQL, when its lease on the
//!   database ran out; on SQLite, when it is not this process); its chunks and its end are
//!   written only by the instance that holds it, so a file taken over is not stored twice.
//!
//! The keyword search over the chunks is `library_search.rs`. Written once for both databases,
//! as `files.rs` is.

use sha2::Digest as _;

use super::library_search::NewChunk;
use super::row::from_row;
use super::{Backend, Result, Store, measured};
use crate::vocabulary::{FileStatus, new_id, now};

/// Files one owner may hold.
pub const MAX_LIBRARY_FILES: i64 = 1_000;
/// Bytes one owner's files may hold together (the originals).
pub const MAX_LIBRARY_BYTES: i64 = 1 << 30;
/// How many times DATABASE_TIMEOUT_SECS storing a file's chunks may take.
const FINISH_TIMEOUT_FACTOR: u32 = 12;
/// A file taken this many times without an end (each taker stopped while working on it) fails
/// at the next take instead of stopping another worker.
pub const MAX_ATTEMPTS: i64 = 3;

/// A file to add.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewLibraryFile {
    pub name: String,
    pub mime_type: String,
    pub collection: Option<String>,
    pub content: Vec<u8>,
}

/// A library file, without its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryFileRecord {
    pub id: String,
    pub owner_id: String,
    pub name: String,
    pub mime_type: String,
    pub size_bytes: i64,
    pub collection: Option<String>,
    pub status: FileStatus,
    pub error: Option<String>,
    pub pages: Option<i64>,
    pub chunks: Option<i64>,
    pub created_at: String,
}

/// Which of an owner's caps an upload would pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cap {
    Files,
    Bytes,
}

/// What became of a file to add.
#[derive(Debug, PartialEq, Eq)]
pub enum Added {
    /// Stored, `processing`.
    New(LibraryFileRecord),
    /// The owner has these bytes already: that file, as it is.
    Same(LibraryFileRecord),
    /// The owner has these bytes already, in a file that failed: that file, `processing` again.
    Again(LibraryFileRecord),
    /// It would pass a cap: nothing stored.
    Full(Cap),
}

/// A file's vectors, stored with its chunks: `model`'s, one per chunk in order, each at unit
/// length (`library_vectors.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkVectors {
    pub model: String,
    pub vectors: Vec<Vec<f32>>,
}

/// A file taken for processing: what it is, its bytes, and how many takes it had before.
#[derive(Debug)]
pub struct Claimed {
    pub file: LibraryFileRecord,
    pub content: Vec<u8>,
    pub attempts: i64,
}

from_row! {
    struct FileRow {
        id: String,
        owner_id: String,
        name: String,
        mime_type: String,
        size_bytes: i64,
        collection: Option<String>,
        status: String,
        error: Option<String>,
        pages: Option<i64>,
        chunks: Option<i64>,
        created_at: String,
    }
}

impl FileRow {
    fn record(self) -> Result<LibraryFileRecord> {
        Ok(LibraryFileRecord {
            status: self.status.parse()?,
            id: self.id,
            owner_id: self.owner_id,
            name: self.name,
            mime_type: self.mime_type,
            size_bytes: self.size_bytes,
            collection: self.collection,
            error: self.error,
            pages: self.pages,
            chunks: self.chunks,
            created_at: self.created_at,
        })
    }
}

from_row! {
    struct ClaimedRow {
        ..file: FileRow,
        content: Vec<u8>,
        attempts: i64,
    }
}

macro_rules! columns {
    () => {
        "id, owner_id, name, mime_type, size_bytes, collection, status, error, pages, chunks, \
         created_at"
    };
}

const SAME: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM library_files WHERE owner_id = $1 AND sha256 = $2"
);
const USAGE: &str = "SELECT COUNT(*), CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) \
                     FROM library_files WHERE owner_id = $1";
const INSERT: &str = "INSERT INTO library_files (id, owner_id, name, mime_type, size_bytes, \
                      sha256, collection, status, content, created_at) \
                      VALUES ($1, $2, $3, $4, $5, $6, $7, 'processing', $8, $9)";
/// Newest first; only `$2`'s collection when it is not null.
const LIST: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM library_files WHERE owner_id = $1 AND ($2 IS NULL OR collection = $2) \
     ORDER BY created_at DESC, id DESC"
);
const ONE: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM library_files WHERE owner_id = $1 AND id = $2"
);
const CONTENT: &str = "SELECT content FROM library_files WHERE owner_id = $1 AND id = $2";
const DELETE: &str = "DELETE FROM library_files WHERE owner_id = $1 AND id = $2";
/// Whether a file waits that `$1` may take (a read first: an idle worker's look takes no write
/// lock).
macro_rules! waiting {
    ($live:literal) => {
        concat!(
            "SELECT 1 FROM library_files f WHERE f.status = 'processing' \
             AND (f.leased_by IS NULL OR NOT EXISTS (SELECT 1 FROM instances i \
             WHERE i.id = f.leased_by",
            $live,
            ")) LIMIT 1"
        )
    };
}
const WAITING_SQLITE: &str = waiting!("");
const WAITING_POSTGRES: &str = waiting!(" AND i.lease_until > clock_timestamp()");
/// The oldest file in `processing` that no live instance holds, taken by `$1`; another person's
/// before `$2`'s (the owner of the file taken last), so people take turns and one person's
/// thousand files do not hold up everyone else's. The instances table holds the live ones: on
/// SQLite only this process (it clears the others at start); on PostgreSQL those whose lease
/// holds (`$live` adds that test).
macro_rules! claim {
    ($live:literal, $skip_locked:literal) => {
        concat!(
            "UPDATE library_files SET leased_by = $1, attempts = attempts + 1 WHERE id = \
             (SELECT f.id FROM library_files f WHERE f.status = 'processing' \
             AND (f.leased_by IS NULL OR NOT EXISTS (SELECT 1 FROM instances i \
             WHERE i.id = f.leased_by",
            $live,
            ")) ORDER BY (f.owner_id = $2), f.created_at LIMIT 1",
            $skip_locked,
            ") RETURNING ",
            columns!(),
            ", content, attempts - 1 AS attempts"
        )
    };
}
const CLAIM_SQLITE: &str = claim!("", "");
const CLAIM_POSTGRES: &str = claim!(
    " AND i.lease_until > clock_timestamp()",
    " FOR UPDATE SKIP LOCKED"
);
/// Ends a file `$2` holds: ready with its counts, or failed with its error.
const READY: &str = "UPDATE library_files SET status = 'ready', pages = $3, chunks = $4, \
                     leased_by = NULL WHERE id = $1 AND leased_by = $2 AND status = 'processing'";
const FAILED: &str = "UPDATE library_files SET status = 'failed', error = $3, leased_by = NULL \
                      WHERE id = $1 AND leased_by = $2 AND status = 'processing'";
const CHUNKS: &str = "INSERT INTO library_chunks (file_id, seq, page, text) ";
/// Chunks per INSERT: a few round trips for a large file, well within each database's limit on
/// bound values (4 a row).
const CHUNKS_PER_INSERT: usize = 500;
/// A failed file whose same bytes are added again: waiting for processing again.
const AGAIN: &str = "UPDATE library_files SET status = 'processing', error = NULL, pages = NULL, \
                     chunks = NULL, attempts = 0, leased_by = NULL \
                     WHERE id = $1 AND status = 'failed'";

/// The hex SHA-256 of `bytes`: a file's identity within its owner's library.
fn digest(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

macro_rules! library {
    ($db:ty) => {
        use super::*;

        /// Adds `file` in `tx`, which holds the owner's lock (the caller's).
        pub async fn add(
            tx: &mut sqlx::Transaction<'_, $db>,
            owner: &str,
            file: NewLibraryFile,
        ) -> Result<Added> {
            let sha256 = digest(&file.content);
            let same: Option<FileRow> = sqlx::query_as(SAME)
                .bind(owner)
                .bind(&sha256)
                .fetch_optional(&mut **tx)
                .await?;
            if let Some(same) = same {
                let mut record = same.record()?;
                if record.status != FileStatus::Failed {
                    return Ok(Added::Same(record));
                }
                // Tried again: a newer extractor (or an operator's) may read it now.
                sqlx::query(AGAIN)
                    .bind(&record.id)
                    .execute(&mut **tx)
                    .await?;
                record.status = FileStatus::Processing;
                record.error = None;
                return Ok(Added::Again(record));
            }
            let (count, bytes): (i64, i64) = sqlx::query_as(USAGE)
                .bind(owner)
                .fetch_one(&mut **tx)
                .await?;
            let size = file.content.len() as i64;
            if count >= MAX_LIBRARY_FILES {
                return Ok(Added::Full(Cap::Files));
            }
            if bytes + size > MAX_LIBRARY_BYTES {
                return Ok(Added::Full(Cap::Bytes));
            }
            let record = LibraryFileRecord {
                id: new_id(),
                owner_id: owner.to_string(),
                name: file.name,
                mime_type: file.mime_type,
                size_bytes: size,
                collection: file.collection,
                status: FileStatus::Processing,
                error: None,
                pages: None,
                chunks: None,
                created_at: now(),
            };
            sqlx::query(INSERT)
                .bind(&record.id)
                .bind(owner)
                .bind(&record.name)
                .bind(&record.mime_type)
                .bind(size)
                .bind(&sha256)
                .bind(&record.collection)
                .bind(file.content)
                .bind(&record.created_at)
                .execute(&mut **tx)
                .await?;
            Ok(Added::New(record))
        }

        pub async fn list<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            owner: &str,
            collection: Option<&str>,
        ) -> Result<Vec<LibraryFileRecord>> {
            let rows: Vec<FileRow> = sqlx::query_as(LIST)
                .bind(owner)
                .bind(collection)
                .fetch_all(ex)
                .await?;
            rows.into_iter().map(FileRow::record).collect()
        }

        pub async fn one<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            owner: &str,
            id: &str,
        ) -> Result<Option<LibraryFileRecord>> {
            let row: Option<FileRow> = sqlx::query_as(ONE)
                .bind(owner)
                .bind(id)
                .fetch_optional(ex)
                .await?;
            row.map(FileRow::record).transpose()
        }

        pub async fn content<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            owner: &str,
            id: &str,
        ) -> Result<Option<Vec<u8>>> {
            let row: Option<(Vec<u8>,)> = sqlx::query_as(CONTENT)
                .bind(owner)
                .bind(id)
                .fetch_optional(ex)
                .await?;
            Ok(row.map(|(content,)| content))
        }

        pub async fn delete<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            owner: &str,
            id: &str,
        ) -> Result<bool> {
            let done = sqlx::query(DELETE).bind(owner).bind(id).execute(ex).await?;
            Ok(done.rows_affected() > 0)
        }

        pub async fn waiting<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            query: &'static str,
        ) -> Result<bool> {
            let row: Option<(i32,)> = sqlx::query_as(query).fetch_optional(ex).await?;
            Ok(row.is_some())
        }

        pub async fn claim<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            query: &'static str,
            instance: &str,
            last_owner: &str,
        ) -> Result<Option<Claimed>> {
            let row: Option<ClaimedRow> = sqlx::query_as(query)
                .bind(instance)
                .bind(last_owner)
                .fetch_optional(ex)
                .await?;
            row.map(|row| {
                Ok(Claimed {
                    file: row.file.record()?,
                    content: row.content,
                    attempts: row.attempts,
                })
            })
            .transpose()
        }

        /// Stores `chunks` (and their `vectors`) and makes the file ready, if `instance` still
        /// holds it; `false` (nothing stored) when it does not (deleted, or taken over).
        pub async fn ready(
            tx: &mut sqlx::Transaction<'_, $db>,
            id: &str,
            instance: &str,
            pages: Option<i64>,
            chunks: Vec<NewChunk>,
            vectors: Option<ChunkVectors>,
        ) -> Result<bool> {
            let held = sqlx::query(READY)
                .bind(id)
                .bind(instance)
                .bind(pages)
                .bind(chunks.len() as i64)
                .execute(&mut **tx)
                .await?;
            if held.rows_affected() == 0 {
                return Ok(false);
            }
            let numbered: Vec<(i64, NewChunk)> = chunks
                .into_iter()
                .enumerate()
                .map(|(seq, chunk)| (seq as i64, chunk))
                .collect();
            for batch in numbered.chunks(CHUNKS_PER_INSERT) {
                let mut insert = sqlx::QueryBuilder::<$db>::new(CHUNKS);
                insert.push_values(batch, |mut row, (seq, chunk)| {
                    row.push_bind(id)
                        .push_bind(*seq)
                        .push_bind(chunk.page.map(i64::from))
                        .push_bind(chunk.text.as_str());
                });
                insert.build().execute(&mut **tx).await?;
            }
            let Some(ChunkVectors { model, vectors }) = vectors else {
                return Ok(true);
            };
            let numbered: Vec<(i64, Vec<u8>)> = vectors
                .iter()
                .enumerate()
                .map(|(seq, v)| (seq as i64, super::super::library_vectors::encode(v)))
                .collect();
            for batch in numbered.chunks(CHUNKS_PER_INSERT) {
                let mut insert =
                    sqlx::QueryBuilder::<$db>::new(super::super::library_vectors::VECTORS);
                insert.push_values(batch, |mut row, (seq, vector)| {
                    row.push_bind(model.as_str())
                        .push_bind(id)
                        .push_bind(*seq)
                        .push_bind(vector.as_slice());
                });
                insert.build().execute(&mut **tx).await?;
            }
            Ok(true)
        }

        pub async fn failed<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            id: &str,
            instance: &str,
            error: &str,
        ) -> Result<bool> {
            let done = sqlx::query(FAILED)
                .bind(id)
                .bind(instance)
                .bind(error)
                .execute(ex)
                .await?;
            Ok(done.rows_affected() > 0)
        }
    };
}

mod on_sqlite {
    library!(sqlx::Sqlite);
}

mod on_postgres {
    library!(sqlx::Postgres);
}

/// [`measured`] `$f` of `on_sqlite` or `on_postgres` on the store's pool.
macro_rules! on_pool {
    ($store:expr, $op:literal, $f:ident($($arg:expr),*)) => {
        measured($store.backend_name(), $op, $store.timeout, async {
            match &$store.backend {
                Backend::Sqlite(db) => on_sqlite::$f(db.pool(), $($arg),*).await,
                Backend::Postgres(db) => on_postgres::$f(db.pool(), $($arg),*).await,
            }
        })
        .await
    };
}

impl Store {
    /// Adds `file` to `owner`'s library (module rules: the same bytes, the caps).
    pub async fn add_library_file(&self, owner: &str, file: NewLibraryFile) -> Result<Added> {
        measured(
            self.backend_name(),
            "add_library_file",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => {
                        // The write lock is the owner's lock: one writer at a time.
                        let mut tx = db.write_tx().await?;
                        let added = on_sqlite::add(&mut tx, owner, file).await?;
                        tx.commit().await?;
                        Ok(added)
                    }
                    Backend::Postgres(db) => {
                        let mut tx = db.tx().await?;
                        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                            .bind(format!("library:{owner}"))
                            .execute(&mut *tx)
                            .await?;
                        let added = on_postgres::add(&mut tx, owner, file).await?;
                        tx.commit().await?;
                        Ok(added)
                    }
                }
            },
        )
        .await
    }

    /// `owner`'s files, newest first; only those of `collection` when given.
    pub async fn library_files(
        &self,
        owner: &str,
        collection: Option<&str>,
    ) -> Result<Vec<LibraryFileRecord>> {
        on_pool!(self, "library_files", list(owner, collection))
    }

    /// `owner`'s file `id`.
    pub async fn library_file(&self, owner: &str, id: &str) -> Result<Option<LibraryFileRecord>> {
        on_pool!(self, "library_file", one(owner, id))
    }

    /// The original bytes of `owner`'s file `id`.
    pub async fn library_content(&self, owner: &str, id: &str) -> Result<Option<Vec<u8>>> {
        on_pool!(self, "library_content", content(owner, id))
    }

    /// Deletes `owner`'s file `id` with its chunks; `false` when there was none.
    pub async fn delete_library_file(&self, owner: &str, id: &str) -> Result<bool> {
        measured(
            self.backend_name(),
            "delete_library_file",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => {
                        let mut tx = db.write_tx().await?;
                        let deleted = on_sqlite::delete(&mut *tx, owner, id).await?;
                        tx.commit().await?;
                        Ok(deleted)
                    }
                    Backend::Postgres(db) => on_postgres::delete(db.pool(), owner, id).await,
                }
            },
        )
        .await
    }

    /// Takes the oldest file waiting for processing that no live instance holds, for
    /// `instance`, another person's before `last_owner`'s (module rules).
    pub async fn claim_library_file(
        &self,
        instance: &str,
        last_owner: &str,
    ) -> Result<Option<Claimed>> {
        measured(
            self.backend_name(),
            "claim_library_file",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => {
                        if !on_sqlite::waiting(db.pool(), WAITING_SQLITE).await? {
                            return Ok(None);
                        }
                        let mut tx = db.write_tx().await?;
                        let claimed =
                            on_sqlite::claim(&mut *tx, CLAIM_SQLITE, instance, last_owner).await?;
                        tx.commit().await?;
                        Ok(claimed)
                    }
                    Backend::Postgres(db) => {
                        if !on_postgres::waiting(db.pool(), WAITING_POSTGRES).await? {
                            return Ok(None);
                        }
                        on_postgres::claim(db.pool(), CLAIM_POSTGRES, instance, last_owner).await
                    }
                }
            },
        )
        .await
    }

    /// Stores file `id`'s chunks (and their vectors, one per chunk) and makes it ready, in one
    /// transaction, if `instance` still holds it; `false` when it does not (deleted meanwhile,
    /// or taken over).
    pub async fn finish_library_file(
        &self,
        id: &str,
        instance: &str,
        pages: Option<u32>,
        chunks: Vec<NewChunk>,
        vectors: Option<ChunkVectors>,
    ) -> Result<bool> {
        let pages = pages.map(i64::from);
        // Thousands of chunks for a large file: more than one request's bound.
        let timeout = self.timeout * FINISH_TIMEOUT_FACTOR;
        measured(self.backend_name(), "finish_library_file", timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    let done =
                        on_sqlite::ready(&mut tx, id, instance, pages, chunks, vectors).await?;
                    tx.commit().await?;
                    Ok(done)
                }
                Backend::Postgres(db) => {
                    let mut tx = db.tx().await?;
                    let done =
                        on_postgres::ready(&mut tx, id, instance, pages, chunks, vectors).await?;
                    tx.commit().await?;
                    Ok(done)
                }
            }
        })
        .await
    }

    /// Ends file `id` as failed with `error`, if `instance` still holds it.
    pub async fn fail_library_file(&self, id: &str, instance: &str, error: &str) -> Result<bool> {
        measured(
            self.backend_name(),
            "fail_library_file",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => {
                        let mut tx = db.write_tx().await?;
                        let done = on_sqlite::failed(&mut *tx, id, instance, error).await?;
                        tx.commit().await?;
                        Ok(done)
                    }
                    Backend::Postgres(db) => {
                        on_postgres::failed(db.pool(), id, instance, error).await
                    }
                }
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_bytes_have_the_same_digest() {
        assert_eq!(
            digest(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_ne!(digest(b"abc"), digest(b"abd"));
    }
}
