//! The files the `python` tool's code wrote in chats (`tools/python/`): stored with the chat
//! (`chat_files`, both backends, deleted with it by cascade), each row a version of a name, the
//! newest of a name what a new session of the chat starts with. A chat holds at most
//! [`MAX_CHAT_FILES`] rows and [`MAX_CHAT_FILE_BYTES`] bytes in all; files past that are not
//! kept, and the tool result says so.
//!
//! Written once for both databases (their `$n` placeholders are PostgreSQL's and, through sqlx,
//! SQLite's too): [`files!`] makes the functions for one database type.

use super::row::from_row;
use super::{Backend, Result, Store, measured, read};
use crate::vocabulary::{new_id, now};

/// Rows (file versions) one chat may hold.
pub const MAX_CHAT_FILES: i64 = 1_000;
/// Bytes one chat's files may hold together.
pub const MAX_CHAT_FILE_BYTES: i64 = 256 << 20;

/// A file to keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewChatFile {
    pub name: String,
    pub mime_type: String,
    pub data: Vec<u8>,
}

/// A kept file, without its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatFileRecord {
    pub id: String,
    pub chat_id: String,
    pub name: String,
    pub mime_type: String,
    pub size_bytes: i64,
    pub created_at: String,
}

/// What became of files to keep.
#[derive(Debug, PartialEq, Eq)]
pub enum Kept {
    /// Stored, in the order given.
    Stored(Vec<ChatFileRecord>),
    /// The chat does not exist (deleted meanwhile): nothing stored.
    NoChat,
    /// They would pass the chat's caps: nothing stored.
    Full,
}

from_row! {
    struct FileRow {
        id: String,
        chat_id: String,
        name: String,
        mime_type: String,
        size_bytes: i64,
        created_at: String,
    }
}

impl FileRow {
    fn record(self) -> ChatFileRecord {
        ChatFileRecord {
            id: self.id,
            chat_id: self.chat_id,
            name: self.name,
            mime_type: self.mime_type,
            size_bytes: self.size_bytes,
            created_at: self.created_at,
        }
    }
}

const USAGE: &str = "SELECT COUNT(*), CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT), COALESCE(MAX(seq), 0) \
                     FROM chat_files WHERE chat_id = $1";
const INSERT: &str = "INSERT INTO chat_files \
                      (id, chat_id, name, mime_type, size_bytes, created_at, seq, data) \
                      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const ONE: &str = "SELECT id, chat_id, name, mime_type, size_bytes, created_at, data \
                   FROM chat_files WHERE chat_id = $1 AND id = $2";
/// The newest version of each name.
const LATEST: &str = "SELECT f.name, f.data FROM chat_files f WHERE f.chat_id = $1 \
                      AND f.seq = (SELECT MAX(g.seq) FROM chat_files g \
                      WHERE g.chat_id = f.chat_id AND g.name = f.name) ORDER BY f.name";

macro_rules! files {
    ($db:ty) => {
        use super::*;

        /// Stores `files` in `tx`, whose chat the caller made sure exists (and, on PostgreSQL,
        /// locked, so two instances cannot both pass the caps).
        pub async fn add(
            tx: &mut sqlx::Transaction<'_, $db>,
            chat_id: &str,
            files: Vec<NewChatFile>,
        ) -> Result<Kept> {
            let (count, bytes, seq): (i64, i64, i64) = sqlx::query_as(USAGE)
                .bind(chat_id)
                .fetch_one(&mut **tx)
                .await?;
            let more: i64 = files.iter().map(|f| f.data.len() as i64).sum();
            if count + files.len() as i64 > MAX_CHAT_FILES || bytes + more > MAX_CHAT_FILE_BYTES {
                return Ok(Kept::Full);
            }
            let mut stored = Vec::with_capacity(files.len());
            for (i, file) in files.into_iter().enumerate() {
                let record = ChatFileRecord {
                    id: new_id(),
                    chat_id: chat_id.to_string(),
                    name: file.name,
                    mime_type: file.mime_type,
                    size_bytes: file.data.len() as i64,
                    created_at: now(),
                };
                sqlx::query(INSERT)
                    .bind(&record.id)
                    .bind(chat_id)
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
            Ok(Kept::Stored(stored))
        }

        pub async fn one<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            chat_id: &str,
            file_id: &str,
        ) -> Result<Option<(ChatFileRecord, Vec<u8>)>> {
            let row: Option<(String, String, String, String, i64, String, Vec<u8>)> =
                sqlx::query_as(ONE)
                    .bind(chat_id)
                    .bind(file_id)
                    .fetch_optional(ex)
                    .await?;
            Ok(row.map(
                |(id, chat_id, name, mime_type, size_bytes, created_at, data)| {
                    let row = FileRow {
                        id,
                        chat_id,
                        name,
                        mime_type,
                        size_bytes,
                        created_at,
                    };
                    (row.record(), data)
                },
            ))
        }

        pub async fn latest<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            chat_id: &str,
        ) -> Result<Vec<(String, Vec<u8>)>> {
            Ok(sqlx::query_as(LATEST).bind(chat_id).fetch_all(ex).await?)
        }
    };
}

mod on_sqlite {
    files!(sqlx::Sqlite);
}

mod on_postgres {
    files!(sqlx::Postgres);
}

impl Store {
    /// Keeps `files` with chat `chat_id`, all or none (within the chat's caps).
    pub async fn add_chat_files(&self, chat_id: &str, files: Vec<NewChatFile>) -> Result<Kept> {
        measured(self.backend_name(), "add_chat_files", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    if read::sqlite::chat(&mut *tx, chat_id).await?.is_none() {
                        return Ok(Kept::NoChat);
                    }
                    let kept = on_sqlite::add(&mut tx, chat_id, files).await?;
                    tx.commit().await?;
                    Ok(kept)
                }
                Backend::Postgres(db) => {
                    let mut tx = db.tx().await?;
                    let locked: Option<(String,)> =
                        sqlx::query_as("SELECT id FROM chats WHERE id = $1 FOR UPDATE")
                            .bind(chat_id)
                            .fetch_optional(&mut *tx)
                            .await?;
                    if locked.is_none() {
                        return Ok(Kept::NoChat);
                    }
                    let kept = on_postgres::add(&mut tx, chat_id, files).await?;
                    tx.commit().await?;
                    Ok(kept)
                }
            }
        })
        .await
    }

    /// File `file_id` of chat `chat_id`, with its bytes.
    pub async fn chat_file(
        &self,
        chat_id: &str,
        file_id: &str,
    ) -> Result<Option<(ChatFileRecord, Vec<u8>)>> {
        measured(self.backend_name(), "chat_file", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => on_sqlite::one(db.pool(), chat_id, file_id).await,
                Backend::Postgres(db) => on_postgres::one(db.pool(), chat_id, file_id).await,
            }
        })
        .await
    }

    /// The newest version of each of the chat's file names, by name.
    pub async fn latest_chat_files(&self, chat_id: &str) -> Result<Vec<(String, Vec<u8>)>> {
        measured(
            self.backend_name(),
            "latest_chat_files",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => on_sqlite::latest(db.pool(), chat_id).await,
                    Backend::Postgres(db) => on_postgres::latest(db.pool(), chat_id).await,
                }
            },
        )
        .await
    }
}
