//! Moving data in and out with chatd itself (`chatd export`, `chatd import`, `chatd backup`).
//!
//! The export is JSON Lines: a header line ([`header`], versioned), then one line per row of the
//! tables that hold users' data, parents before children ([`TABLES`]): chats (with their owner),
//! their messages (attachments are in a message's metadata), the files the python tool wrote in
//! them (their bytes in base64), searches with their results and answers, projects and their
//! memberships (the stars), LLM calls, the people (the built-in admin aside) and their keys
//! (each its secret's hash, never the secret), what they spent, and their libraries (files with
//! their bytes in base64, and chunks). A row is its columns as they are stored (text,
//! integers, booleans and base64 bytes, the same on both databases), so an import reads back
//! exactly what was exported, ids, timestamps and transcript positions included, into either
//! database.
//! The export reads one snapshot (a read transaction) through a connection of its own: it runs
//! beside a serving chatd, and on SQLite it neither migrates nor takes the serving lock.
//!
//! An import is one transaction into a migrated database: all of the file or nothing. A row
//! whose id (or transcript position) exists already stops it, unless the operator asked to
//! skip such rows; the reserved `starred` project and memberships already there are never a
//! conflict. A chat the file stored messages in whose positions do not then run 1, 2, 3, ...
//! stops it too ([`ImportError::Transcript`]). `backup` copies a live SQLite database to a file
//! (`VACUUM INTO`, a consistent, compacted copy); PostgreSQL has its own tools
//! (docs/operating.md).

use std::io::{BufRead, Write};
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use futures::TryStreamExt as _;
use serde_json::{Map, Value};

use super::{Backend, Result, Store, StoreError};
use crate::config::DatabaseUrl;

/// An export's first line: `{"format": FORMAT, "version": VERSION, "exportedAt": …, "from":
/// "sqlite" | "postgresql"}` (built as JSON here: the store declares no wire types).
fn header(from: &str) -> Value {
    serde_json::json!({
        "format": FORMAT,
        "version": VERSION,
        "exportedAt": crate::vocabulary::now(),
        "from": from,
    })
}

pub const FORMAT: &str = "chatd-export";
/// 2 added people, their keys and owners; a version 1 export (made before people existed)
/// imports with everything the built-in admin's ([`DEFAULTS`]). 3 added budgets and the usage
/// ledger (a version 2 export has neither: no budgets). 4 added who each person is at the
/// identity provider (`oidc_subject`; an older export's people have none, and are matched by
/// name at their next sign-in). 5 added each person's library: its files (their bytes in
/// base64), their chunks and their vectors (an older export has none).
pub const VERSION: u32 = 5;
/// The oldest version an import reads.
const OLDEST: u32 = 1;

use super::transfer_tables::{DEFAULTS, Kind, TABLES, Table};

/// Rows by table line name, in [`TABLES`] order: what an export wrote or an import stored.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts(pub Vec<(&'static str, u64)>);

impl Counts {
    fn add(&mut self, table: &'static str) {
        match self.0.iter_mut().find(|(name, _)| *name == table) {
            Some((_, n)) => *n += 1,
            None => self.0.push((table, 1)),
        }
    }

    pub fn get(&self, table: &str) -> u64 {
        self.0
            .iter()
            .find(|(n, _)| *n == table)
            .map_or(0, |(_, n)| *n)
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = TABLES
            .iter()
            .map(|t| format!("{} {}", self.get(t.line), t.sql))
            .collect();
        f.write_str(&parts.join(", "))
    }
}

/// What an import did: rows stored, and rows skipped because they existed.
#[derive(Debug, Default)]
pub struct Imported {
    pub stored: Counts,
    pub skipped: Counts,
}

/// Why an import stopped; nothing of the file is stored.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("line {line}: {reason}")]
    Line { line: usize, reason: String },
    #[error(
        "line {line}: {what} exists in the database (nothing was imported; --skip-existing skips such rows)"
    )]
    Exists { line: usize, what: String },
    /// SQLite's record of a call's start trusts that a transcript's length is its last `seq`
    /// (`store/sqlite/calls.rs`, `begin_call`), as every row chatd writes keeps it.
    #[error(
        "chat {chat}: its messages' seq must run 1, 2, 3, ... without a gap (nothing was imported)"
    )]
    Transcript { chat: String },
    #[error("cannot read the file: {0}")]
    Read(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for ImportError {
    fn from(e: sqlx::Error) -> Self {
        ImportError::Store(e.into())
    }
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot write the export: {0}")]
    Write(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for ExportError {
    fn from(e: sqlx::Error) -> Self {
        ExportError::Store(e.into())
    }
}

/// Writes the header, then every table's rows read in transaction `$tx`, to `$out`; counted in
/// `$counts`. A macro: the two databases' transactions and rows are different types.
macro_rules! write_tables {
    ($tx:expr, $from:literal, $out:expr, $counts:expr) => {{
        line($out, &header($from))?;
        for table in TABLES {
            let sql = select(table);
            let mut rows = sqlx::query(&sql).fetch(&mut *$tx);
            while let Some(row) = rows.try_next().await? {
                line($out, &row_line(table, &row)?)?;
                $counts.add(table.line);
            }
        }
    }};
}

/// Writes every row of the database at `url` to `out` (see the module doc); the counts.
pub async fn export(
    url: &DatabaseUrl,
    out: &mut impl Write,
) -> std::result::Result<Counts, ExportError> {
    let mut counts = Counts::default();
    match url {
        DatabaseUrl::Sqlite(raw) => {
            let options = sqlx::sqlite::SqliteConnectOptions::from_str(raw)
                .map_err(|source| open_error(raw, source))?
                .read_only(true);
            let mut conn = sqlx::ConnectOptions::connect(&options)
                .await
                .map_err(|source| open_error(raw, source))?;
            let mut tx = sqlx::Connection::begin(&mut conn).await?;
            write_tables!(tx, "sqlite", out, counts);
        }
        DatabaseUrl::Postgres(raw) => {
            let options = sqlx::postgres::PgConnectOptions::from_str(raw)
                .map_err(|source| open_error(raw, source))?;
            let mut conn = sqlx::ConnectOptions::connect(&options)
                .await
                .map_err(|source| open_error(raw, source))?;
            let mut tx = sqlx::Connection::begin(&mut conn).await?;
            // One snapshot for every table.
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .execute(&mut *tx)
                .await?;
            write_tables!(tx, "postgresql", out, counts);
        }
    }
    out.flush()?;
    Ok(counts)
}

fn open_error(raw: &str, source: sqlx::Error) -> StoreError {
    StoreError::Open {
        url: crate::config::redact_url(raw),
        source,
    }
}

fn line(out: &mut impl Write, value: &Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}

fn select(table: &Table) -> String {
    let columns: Vec<&str> = table.columns.iter().map(|(c, _)| *c).collect();
    let key = columns[..table.key].join(", ");
    format!(
        "SELECT {} FROM {} {} ORDER BY {key}",
        columns.join(", "),
        table.sql,
        table.except
    )
}

/// `{"<table>": {column: value, …}}` for one row, whichever database it came from.
fn row_line<R>(table: &Table, row: &R) -> Result<Value>
where
    R: sqlx::Row,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<i64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<Vec<u8>>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<bool>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let mut fields = Map::new();
    for (column, kind) in table.columns {
        let value = match kind {
            Kind::Text => row.try_get::<Option<String>, _>(*column)?.map(Value::from),
            Kind::Integer => row.try_get::<Option<i64>, _>(*column)?.map(Value::from),
            Kind::Bytes => row
                .try_get::<Option<Vec<u8>>, _>(*column)?
                .map(|bytes| Value::from(STANDARD.encode(bytes))),
            Kind::Flag => row.try_get::<Option<bool>, _>(*column)?.map(Value::from),
        };
        fields.insert((*column).to_string(), value.unwrap_or(Value::Null));
    }
    let mut line = Map::new();
    line.insert(table.line.to_string(), Value::Object(fields));
    Ok(Value::Object(line))
}

/// One parsed line of an export: its table and its values in column order.
fn parse_line(text: &str) -> std::result::Result<(&'static Table, Vec<Value>), String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(line) = value else {
        return Err("must be a JSON object".into());
    };
    let mut entries = line.into_iter();
    let (Some((name, fields)), None) = (entries.next(), entries.next()) else {
        return Err("must hold exactly one row, as {\"<table>\": {…}}".into());
    };
    let table = TABLES
        .iter()
        .find(|t| t.line == name)
        .ok_or_else(|| format!("unknown row type {name:?}"))?;
    let Value::Object(mut fields) = fields else {
        return Err(format!("{name}: must be an object of columns"));
    };
    let mut values = Vec::with_capacity(table.columns.len());
    for (column, kind) in table.columns {
        let value = match fields.remove(*column) {
            Some(value) => value,
            None => DEFAULTS
                .iter()
                .find(|(line, c, _)| *line == name && c == column)
                .map_or(Value::Null, |(_, _, value)| Value::from(*value)),
        };
        let fits = match (kind, &value) {
            (_, Value::Null) => true,
            (Kind::Text, Value::String(_)) => true,
            (Kind::Integer, Value::Number(n)) => n.is_i64(),
            (Kind::Bytes, Value::String(s)) => STANDARD.decode(s).is_ok(),
            (Kind::Flag, Value::Bool(_)) => true,
            _ => false,
        };
        if !fits {
            let want = match kind {
                Kind::Text => "a string",
                Kind::Integer => "an integer",
                Kind::Bytes => "a base64 string",
                Kind::Flag => "true or false",
            };
            return Err(format!("{name}.{column}: must be {want} or null"));
        }
        values.push(value);
    }
    if let Some(extra) = fields.keys().next() {
        return Err(format!("{name}.{extra}: not a column of {}", table.sql));
    }
    Ok((table, values))
}

fn insert(table: &Table, postgres: bool) -> String {
    let columns: Vec<&str> = table.columns.iter().map(|(c, _)| *c).collect();
    let marks: Vec<String> = (1..=columns.len())
        .map(|n| {
            if postgres {
                format!("${n}")
            } else {
                "?".into()
            }
        })
        .collect();
    format!(
        "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING",
        table.sql,
        columns.join(", "),
        marks.join(", ")
    )
}

/// The row's key as a message names it: `chat 0193…`.
fn describe(table: &Table, values: &[Value]) -> String {
    let key: Vec<String> = values[..table.key]
        .iter()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .collect();
    format!("{} {}", table.line, key.join("/"))
}

/// Binds `values` (already checked against the table's kinds) in column order.
macro_rules! bind_all {
    ($query:expr, $table:expr, $values:expr) => {{
        let mut query = $query;
        for ((_, kind), value) in $table.columns.iter().zip($values) {
            query = match kind {
                Kind::Text => query.bind(value.as_str().map(str::to_string)),
                Kind::Integer => query.bind(value.as_i64()),
                // Checked to decode by `parse_line`.
                Kind::Bytes => query.bind(value.as_str().and_then(|s| STANDARD.decode(s).ok())),
                Kind::Flag => query.bind(value.as_bool()),
            };
        }
        query
    }};
}

/// One of the chats a file stored messages in (a JSON array of ids) whose messages' `seq` is
/// not 1 to its count (unique per chat, so 1, 2, 3, ...), the rows it had before included. Only
/// those chats: one imported before this check existed does not stop every later import.
const TRANSCRIPT_WITH_A_GAP: &str = "SELECT chat_id FROM messages \
     WHERE chat_id IN (SELECT value FROM json_each(?)) \
     GROUP BY chat_id HAVING MIN(seq) <> 1 OR MAX(seq) <> COUNT(*) LIMIT 1";
/// The same on PostgreSQL.
const PG_TRANSCRIPT_WITH_A_GAP: &str = "SELECT chat_id FROM messages \
     WHERE chat_id IN (SELECT jsonb_array_elements_text($1::jsonb)) \
     GROUP BY chat_id HAVING MIN(seq) <> 1 OR MAX(seq) <> COUNT(*) LIMIT 1";

impl Store {
    /// Stores an export read from `input`, in one transaction (see the module doc).
    pub async fn import(
        &self,
        input: impl BufRead,
        skip_existing: bool,
    ) -> std::result::Result<Imported, ImportError> {
        let mut lines = input.lines().enumerate();
        let header = match lines.next() {
            Some((_, text)) => text?,
            None => {
                return Err(ImportError::Line {
                    line: 1,
                    reason: "the file is empty".into(),
                });
            }
        };
        check_header(&header).map_err(|reason| ImportError::Line { line: 1, reason })?;
        let mut done = Imported::default();
        let rows = lines.filter(|(_, l)| !l.as_ref().is_ok_and(|l| l.trim().is_empty()));
        // The chats this file stored messages in, whose transcripts are checked at the end.
        let mut written = std::collections::BTreeSet::new();
        // The two databases' transactions are different types, and their placeholders differ.
        macro_rules! store_rows {
            ($tx:expr, $postgres:literal) => {{
                for (at, text) in rows {
                    let line = at + 1;
                    let (table, values) =
                        parse_line(&text?).map_err(|reason| ImportError::Line { line, reason })?;
                    let sql = insert(table, $postgres);
                    let query = bind_all!(sqlx::query(&sql), table, &values);
                    let stored = query
                        .execute(&mut *$tx)
                        .await
                        .map_err(|e| refused(line, e))?;
                    let stored = stored.rows_affected();
                    if stored > 0 && table.line == "message" {
                        let chat = table.columns.iter().position(|(c, _)| *c == "chat_id");
                        written.extend(chat.and_then(|i| values[i].as_str()).map(str::to_string));
                    }
                    tally(&mut done, table, &values, stored, skip_existing, line)?;
                }
                let check = match $postgres {
                    true => PG_TRANSCRIPT_WITH_A_GAP,
                    false => TRANSCRIPT_WITH_A_GAP,
                };
                let gap: Option<String> = sqlx::query_scalar(check)
                    .bind(Value::from_iter(written.iter().map(String::as_str)).to_string())
                    .fetch_optional(&mut *$tx)
                    .await?;
                if let Some(chat) = gap {
                    return Err(ImportError::Transcript { chat });
                }
                $tx.commit().await?;
            }};
        }
        match &self.backend {
            Backend::Sqlite(db) => {
                let mut tx = db.pool().begin_with("BEGIN IMMEDIATE").await?;
                store_rows!(tx, false);
            }
            Backend::Postgres(db) => {
                let mut tx = db.pool().begin().await?;
                store_rows!(tx, true);
            }
        }
        // Committed: statistics are only a hint (autovacuum refreshes them later), so a failure
        // here does not make the stored import an error.
        if let Err(e) = self.analyze().await {
            tracing::warn!("after the import, ANALYZE failed (autovacuum will do it): {e}");
        }
        Ok(done)
    }
}

fn check_header(text: &str) -> std::result::Result<(), String> {
    let header: Value =
        serde_json::from_str(text).map_err(|e| format!("not a chatd export header ({e})"))?;
    match (&header["format"], &header["version"]) {
        (Value::String(format), _) if format != FORMAT => {
            Err(format!("format {format:?} is not {FORMAT:?}"))
        }
        (Value::String(_), version)
            if version
                .as_u64()
                .is_some_and(|v| (u64::from(OLDEST)..=u64::from(VERSION)).contains(&v)) =>
        {
            Ok(())
        }
        (Value::String(_), version) => Err(format!(
            "export version {version} is not one this chatd reads ({OLDEST} to {VERSION})"
        )),
        _ => Err("not a chatd export header (no \"format\")".into()),
    }
}

/// A row the database refused (a reference to a chat the file and the database lack, a value
/// past a limit): the line and the database's words.
fn refused(line: usize, e: sqlx::Error) -> ImportError {
    match e {
        sqlx::Error::Database(db) => ImportError::Line {
            line,
            reason: format!("the database refused the row: {}", db.message()),
        },
        other => ImportError::Store(other.into()),
    }
}

/// Counts a row stored or skipped; a skipped one stops the import unless asked otherwise.
fn tally(
    done: &mut Imported,
    table: &'static Table,
    values: &[Value],
    stored: u64,
    skip_existing: bool,
    line: usize,
) -> std::result::Result<(), ImportError> {
    if stored > 0 {
        done.stored.add(table.line);
        return Ok(());
    }
    if table.always_skip {
        // Rows every database has (the reserved project) or that follow their parent.
        return Ok(());
    }
    if skip_existing {
        done.skipped.add(table.line);
        return Ok(());
    }
    Err(ImportError::Exists {
        line,
        what: describe(table, values),
    })
}

/// Copies the SQLite database at `url` to `file` while it may be serving: `VACUUM INTO` reads
/// one snapshot and writes a compacted database, which chatd opens as it is. `file` must not
/// exist. `Err` is the line to print.
pub async fn backup(url: &DatabaseUrl, file: &std::path::Path) -> std::result::Result<(), String> {
    let DatabaseUrl::Sqlite(raw) = url else {
        return Err(
            "chatd backup copies an SQLite database; on PostgreSQL use pg_dump or chatd export \
             (docs/operating.md, \"Backup and restore\")"
                .into(),
        );
    };
    if file.exists() {
        return Err(format!("{} exists: give a new file", file.display()));
    }
    let target = file
        .to_str()
        .ok_or_else(|| format!("{}: the path must be text", file.display()))?;
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(raw)
        .map_err(|e| open_error(raw, e).to_string())?
        .read_only(true);
    let mut conn = sqlx::ConnectOptions::connect(&options)
        .await
        .map_err(|e| open_error(raw, e).to_string())?;
    sqlx::query("VACUUM INTO ?")
        .bind(target)
        .execute(&mut conn)
        .await
        .map_err(|e| format!("backup to {} failed: {e}", file.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An export holding `chat` with messages at `seqs`.
    fn export_with(chat: &str, seqs: &[i64]) -> Vec<u8> {
        let mut text = header("sqlite").to_string() + "\n";
        let at = "2026-01-01T00:00:00.000000Z";
        text += &json!({"chat": {"id": chat, "created_at": at, "updated_at": at,
                                 "enabled_tools": "[]"}})
        .to_string();
        for (i, seq) in seqs.iter().enumerate() {
            text += "\n";
            text += &json!({"message": {"id": format!("{chat}-m{i}"), "chat_id": chat,
                                        "seq": seq, "created_at": at, "role": "user",
                                        "content": "hi"}})
            .to_string();
        }
        (text + "\n").into_bytes()
    }

    #[tokio::test]
    async fn a_transcript_whose_seq_is_not_1_to_its_count_is_refused_whole() {
        let url = DatabaseUrl::Sqlite("sqlite::memory:".into());
        let store = Store::open(&url, 1, std::time::Duration::from_secs(5))
            .await
            .unwrap();
        let done = store
            .import(std::io::Cursor::new(export_with("c1", &[1, 2])), false)
            .await
            .unwrap();
        assert_eq!(done.stored.get("message"), 2);
        for (chat, seqs, why) in [
            ("c2", &[0, 1][..], "starts at 0"),
            ("c3", &[1, 3][..], "a gap"),
            ("c4", &[-1, 1, 2][..], "a negative seq"),
        ] {
            let refused = store
                .import(std::io::Cursor::new(export_with(chat, seqs)), false)
                .await
                .unwrap_err();
            assert!(
                matches!(&refused, ImportError::Transcript { chat: named } if named == chat),
                "{why}: {refused}"
            );
        }
        let Backend::Sqlite(db) = &store.backend else {
            unreachable!()
        };
        // Nothing of the refused files is kept: their chats are not there, c1 is.
        let chats = || async {
            sqlx::query_scalar::<_, String>("SELECT id FROM chats ORDER BY id")
                .fetch_all(db.pool())
                .await
                .unwrap()
        };
        assert_eq!(chats().await, ["c1"]);
        // A message that would leave a gap in a chat already there is refused too.
        let mut text = header("sqlite").to_string() + "\n";
        text += &json!({"message": {"id": "c1-late", "chat_id": "c1", "seq": 4,
                                    "created_at": "2026-01-01T00:00:00.000000Z",
                                    "role": "user", "content": "late"}})
        .to_string();
        let refused = store
            .import(std::io::Cursor::new(text.into_bytes()), false)
            .await
            .unwrap_err();
        assert!(matches!(&refused, ImportError::Transcript { chat } if chat == "c1"));
        // A chat with a gap that is already stored, and that the file does not write to, does
        // not stop it.
        sqlx::query("UPDATE messages SET seq = 7 WHERE id = 'c1-m1'")
            .execute(db.pool())
            .await
            .unwrap();
        store
            .import(std::io::Cursor::new(export_with("c5", &[1, 2, 3])), false)
            .await
            .unwrap();
        assert_eq!(chats().await, ["c1", "c5"]);
    }

    #[test]
    fn a_line_must_be_one_known_row_with_typed_columns() {
        let (table, values) =
            parse_line(r#"{"message":{"id":"m1","chat_id":"c1","seq":3,"role":"user"}}"#).unwrap();
        assert_eq!(table.sql, "messages");
        assert_eq!(values[2], Value::from(3));
        assert_eq!(values[5], Value::Null, "a missing column is null");
        assert_eq!(describe(table, &values), "message m1");
        let err = |text: &str| parse_line(text).unwrap_err();
        assert!(err("[]").contains("JSON object"));
        assert!(err(r#"{"chat":{},"search":{}}"#).contains("exactly one row"));
        assert!(err(r#"{"person":{}}"#).contains("unknown row type"));
        assert_eq!(
            err(r#"{"message":{"seq":"3"}}"#),
            "message.seq: must be an integer or null"
        );
        assert_eq!(
            err(r#"{"chat":{"id":"c","owner":"x"}}"#),
            "chat.owner: not a column of chats"
        );
        // A file's bytes travel as base64.
        let (table, values) = parse_line(r#"{"chatFile":{"id":"f1","data":"PHN2Zy8+"}}"#).unwrap();
        assert_eq!(table.sql, "chat_files");
        assert_eq!(values[7], Value::from("PHN2Zy8+"));
        assert_eq!(
            err(r#"{"chatFile":{"id":"f1","data":"not base64!"}}"#),
            "chatFile.data: must be a base64 string or null"
        );
    }

    #[test]
    fn the_header_is_checked_for_format_and_version() {
        let ok = r#"{"format":"chatd-export","version":1,"exportedAt":"x","from":"sqlite"}"#;
        assert!(check_header(ok).is_ok());
        assert!(check_header(&ok.replace(":1,", ":2,")).is_ok());
        assert!(check_header(&ok.replace(":1,", ":3,")).is_ok());
        assert!(check_header(&ok.replace(":1,", ":4,")).is_ok());
        assert!(check_header(&ok.replace(":1,", ":5,")).is_ok());
        assert!(
            check_header(&ok.replace(":1,", ":6,"))
                .unwrap_err()
                .contains("version 6")
        );
        assert!(
            check_header("{}")
                .unwrap_err()
                .contains("not a chatd export header")
        );
    }

    #[test]
    fn inserts_use_each_database_s_placeholders() {
        let table = |line: &str| TABLES.iter().find(|t| t.line == line).unwrap();
        let chats = table("chat");
        assert!(insert(chats, true).contains("VALUES ($1, $2,"));
        assert!(insert(chats, false).contains("VALUES (?, ?,"));
        assert!(select(table("projectChat")).ends_with("ORDER BY project_id, chat_id"));
        assert!(select(table("user")).contains("WHERE id <> 'admin' ORDER BY id"));
    }

    #[test]
    fn a_row_from_before_people_is_the_builtin_admins() {
        let (table, values) = parse_line(r#"{"chat":{"id":"c1","enabled_tools":"[]"}}"#).unwrap();
        let owner = table.columns.iter().position(|(c, _)| *c == "owner_id");
        assert_eq!(values[owner.unwrap()], "admin");
        let (_, values) =
            parse_line(r#"{"chat":{"id":"c1","enabled_tools":"[]","owner_id":"u1"}}"#).unwrap();
        assert_eq!(values[owner.unwrap()], "u1");
        let (_, values) = parse_line(r#"{"user":{"id":"u1","disabled":true}}"#).unwrap();
        assert_eq!(values[3], true);
        assert!(parse_line(r#"{"user":{"id":"u1","disabled":1}}"#).is_err());
    }
}
