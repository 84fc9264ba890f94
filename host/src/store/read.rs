//! The read side, written once for both backends: the `SELECT`s (their `$n` placeholders are
//! PostgreSQL's and, through sqlx, SQLite's too), the rows as `sqlx::FromRow` ([`from_row!`]),
//! and the records they become. [`reads!`] makes the functions for one database type; `read::sqlite` and
//! `read::postgres` are the two. The write paths stay per backend (`sqlite/`, `postgres/`).
//!
//! A SQLite `Batch` (several statements in one query) keeps `?` placeholders: there `$N` would
//! mean the whole query's Nth argument, not the statement's, and bind the wrong value. Batches
//! build their reads from the same column lists ([`select_chat!`], [`select_messages!`],
//! [`select_search_detail!`]) with `?`.

use serde_json::Value;

use super::row::from_row;
use super::text::{Text, opt};
use super::{
    CallRecord, CallUsage, ChatRecord, MessageRecord, PageAfter, Result, SearchDetailRecord,
    SearchRecord, TitleMatch, WorkspaceRecord, json,
};

/// A chat's columns, its star included; `WHERE`/`ORDER BY` follow.
macro_rules! select_chat {
    () => {
        "SELECT c.id, c.title, c.created_at, c.updated_at, s.created_at AS starred_at, \
         c.initiated_provider, c.initiated_model, c.last_used_provider, c.last_used_model, \
         c.additional_system_prompt, c.enabled_tools, c.owner_id \
         FROM chats c LEFT JOIN project_chats s ON s.chat_id = c.id AND s.project_id = 'starred'"
    };
}
pub(super) use select_chat;

/// A search's columns for lists, its star included.
macro_rules! select_search {
    () => {
        "SELECT s.id, s.title, s.query, s.created_at, s.updated_at, \
         p.created_at AS starred_at, \
         (s.results <> '[]' OR COALESCE(s.answer_text, '') <> '') AS has_output \
         FROM searches s LEFT JOIN project_searches p ON p.search_id = s.id AND p.project_id = 'starred'"
    };
}

/// A search's every column, for its detail.
macro_rules! select_search_detail {
    () => {
        "SELECT s.id, s.title, s.query, s.created_at, s.updated_at, \
         p.created_at AS starred_at, \
         (s.results <> '[]' OR COALESCE(s.answer_text, '') <> '') AS has_output, \
         s.request_id, s.latency_ms, s.error, s.results, s.answer_text, s.answer_request_id, \
         s.answer_citations, s.answer_error \
         FROM searches s LEFT JOIN project_searches p ON p.search_id = s.id AND p.project_id = 'starred'"
    };
}
pub(super) use select_search_detail;

const CHAT_BY_ID: &str = concat!(select_chat!(), " WHERE c.id = $1");
const CHATS: &str = concat!(
    select_chat!(),
    " WHERE c.owner_id = $1 ORDER BY c.updated_at DESC, c.id DESC"
);
/// A page of chats: the newest `$1`, or (`_AFTER`) the `$1` after the row `($2, $3)`. A row
/// value comparison, which both databases answer from the owner's `(owner_id, updated_at, id)`
/// index (`chats_by_owner`).
const CHATS_PAGE: &str = concat!(
    select_chat!(),
    " WHERE c.owner_id = $2 ORDER BY c.updated_at DESC, c.id DESC LIMIT $1"
);
const CHATS_PAGE_AFTER: &str = concat!(
    select_chat!(),
    " WHERE (c.updated_at, c.id) < ($2, $3) AND c.owner_id = $4 \
     ORDER BY c.updated_at DESC, c.id DESC LIMIT $1"
);
/// The same pages of the chats whose title holds a text ([`TitleMatch`]): the newest first,
/// the pattern tried on each row (no index answers a substring; a scan of the titles only).
const CHATS_TITLED_PAGE: &str = concat!(
    select_chat!(),
    " WHERE lower(c.title) LIKE lower($2) ESCAPE '\\' AND c.owner_id = $3 \
     ORDER BY c.updated_at DESC, c.id DESC LIMIT $1"
);
const CHATS_TITLED_PAGE_AFTER: &str = concat!(
    select_chat!(),
    " WHERE (c.updated_at, c.id) < ($2, $3) AND lower(c.title) LIKE lower($4) ESCAPE '\\' \
     AND c.owner_id = $5 ORDER BY c.updated_at DESC, c.id DESC LIMIT $1"
);
/// A chat's messages' columns; `WHERE`/`ORDER BY` follow.
macro_rules! select_messages {
    () => {
        "SELECT id, created_at, role, content, name, metadata FROM messages"
    };
}
pub(super) use select_messages;

/// A chat's transcript, in order.
const MESSAGES: &str = concat!(select_messages!(), " WHERE chat_id = $1 ORDER BY seq");
const SEARCHES: &str = concat!(
    select_search!(),
    " WHERE s.owner_id = $1 ORDER BY s.updated_at DESC, s.id DESC"
);
/// A page of searches, as [`CHATS_PAGE`] is of chats.
const SEARCHES_PAGE: &str = concat!(
    select_search!(),
    " WHERE s.owner_id = $2 ORDER BY s.updated_at DESC, s.id DESC LIMIT $1"
);
const SEARCHES_PAGE_AFTER: &str = concat!(
    select_search!(),
    " WHERE (s.updated_at, s.id) < ($2, $3) AND s.owner_id = $4 \
     ORDER BY s.updated_at DESC, s.id DESC LIMIT $1"
);
/// Searches by title as [`CHATS_TITLED_PAGE`]; a search without a title (or a blank one) is known
/// by its query, as lists show it.
const SEARCHES_TITLED_PAGE: &str = concat!(
    select_search!(),
    " WHERE lower(COALESCE(NULLIF(trim(s.title), ''), s.query)) LIKE lower($2) ESCAPE '\\' \
     AND s.owner_id = $3 ORDER BY s.updated_at DESC, s.id DESC LIMIT $1"
);
const SEARCHES_TITLED_PAGE_AFTER: &str = concat!(
    select_search!(),
    " WHERE (s.updated_at, s.id) < ($2, $3) \
     AND lower(COALESCE(NULLIF(trim(s.title), ''), s.query)) LIKE lower($4) ESCAPE '\\' \
     AND s.owner_id = $5 ORDER BY s.updated_at DESC, s.id DESC LIMIT $1"
);
const SEARCH_BY_ID: &str = concat!(select_search!(), " WHERE s.id = $1");
const SEARCH_DETAIL_BY_ID: &str = concat!(select_search_detail!(), " WHERE s.id = $1");
/// The most recently updated search with this normalized query.
const SEARCH_BY_QUERY: &str = concat!(
    select_search!(),
    " WHERE s.normalized_query = $1 AND s.owner_id = $2 \
     ORDER BY s.updated_at DESC, s.id DESC LIMIT 1"
);
const CALL_BY_ID: &str = "SELECT id, chat_id, provider, model, created_at, completed_at, \
     input_tokens, output_tokens, total_tokens, latency_ms, error, answered_provider, \
     answered_model FROM llm_calls WHERE id = $1";
/// Up to `$1` chats and `$1` searches, newest `updatedAt` first (ties: newest id, and ids are
/// UUIDv7, ordered by creation): both kinds in one statement, one snapshot, merged and ordered
/// by the database. The arms pad each other's columns with typed NULLs.
const WORKSPACE: &str = "\
    SELECT * FROM ( \
        SELECT 'chat' AS kind, c.id, c.title, c.created_at, c.updated_at, s.created_at AS starred_at, \
            c.initiated_provider, c.initiated_model, c.last_used_provider, c.last_used_model, \
            c.additional_system_prompt, c.enabled_tools, CAST(NULL AS TEXT) AS query, \
            FALSE AS has_output, c.owner_id \
        FROM chats c LEFT JOIN project_chats s ON s.chat_id = c.id AND s.project_id = 'starred' \
        WHERE c.owner_id = $2 ORDER BY c.updated_at DESC, c.id DESC LIMIT $1 \
    ) AS recent_chats \
    UNION ALL \
    SELECT * FROM ( \
        SELECT 'search' AS kind, s.id, s.title, s.created_at, s.updated_at, p.created_at AS starred_at, \
            CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT), \
            CAST(NULL AS TEXT), CAST(NULL AS TEXT), s.query, \
            (s.results <> '[]' OR COALESCE(s.answer_text, '') <> '') AS has_output, s.owner_id \
        FROM searches s LEFT JOIN project_searches p ON p.search_id = s.id AND p.project_id = 'starred' \
        WHERE s.owner_id = $2 ORDER BY s.updated_at DESC, s.id DESC LIMIT $1 \
    ) AS recent_searches \
    ORDER BY updated_at DESC, id DESC";

from_row! {
    pub(super) struct ChatRow {
        id: String,
        title: Option<Text>,
        created_at: String,
        updated_at: String,
        starred_at: Option<String>,
        initiated_provider: Option<Text>,
        initiated_model: Option<Text>,
        last_used_provider: Option<Text>,
        last_used_model: Option<Text>,
        additional_system_prompt: Option<Text>,
        /// NOT NULL for a chat; `None` only in the workspace list's search rows, which pad it.
        enabled_tools: Option<String>,
        owner_id: String,
    }
}

impl ChatRow {
    pub(super) fn record(self) -> Result<ChatRecord> {
        Ok(ChatRecord {
            id: self.id,
            title: opt(self.title),
            created_at: self.created_at,
            updated_at: self.updated_at,
            starred_at: self.starred_at,
            initiated_provider: opt(self.initiated_provider),
            initiated_model: opt(self.initiated_model),
            last_used_provider: opt(self.last_used_provider),
            last_used_model: opt(self.last_used_model),
            additional_system_prompt: opt(self.additional_system_prompt),
            enabled_tools: json(self.enabled_tools.as_deref().unwrap_or("[]"))?,
            owner_id: self.owner_id,
        })
    }
}

from_row! {
    pub(super) struct MessageRow {
        id: String,
        created_at: String,
        role: String,
        content: Text,
        name: Option<Text>,
        metadata: Option<String>,
    }
}

impl MessageRow {
    pub(super) fn record(self) -> Result<MessageRecord> {
        Ok(MessageRecord {
            id: self.id,
            created_at: self.created_at,
            role: self.role.parse()?,
            content: self.content.0,
            name: opt(self.name),
            metadata: self.metadata.as_deref().map(json::<Value>).transpose()?,
        })
    }
}

from_row! {
    /// A message found by its text (`sqlite/message_search.rs`, `postgres/message_search.rs`).
    pub(super) struct HitRow {
        position: String,
        chat_id: String,
        chat_title: Option<Text>,
        message_id: String,
        created_at: String,
        role: String,
        content: Text,
    }
}

impl HitRow {
    pub(super) fn record(self) -> Result<super::MessageHit> {
        Ok(super::MessageHit {
            position: self.position,
            chat_id: self.chat_id,
            chat_title: opt(self.chat_title),
            message_id: self.message_id,
            created_at: self.created_at,
            role: self.role.parse()?,
            content: self.content.0,
        })
    }
}

from_row! {
    pub(super) struct SearchRow {
        id: String,
        title: Option<Text>,
        query: Option<Text>,
        created_at: String,
        updated_at: String,
        starred_at: Option<String>,
        has_output: bool,
    }
}

impl SearchRow {
    pub(super) fn record(self) -> SearchRecord {
        SearchRecord {
            id: self.id,
            title: opt(self.title),
            query: opt(self.query),
            created_at: self.created_at,
            updated_at: self.updated_at,
            starred_at: self.starred_at,
            has_output: self.has_output,
        }
    }
}

from_row! {
    pub(super) struct SearchDetailRow {
        ..search: SearchRow,
        request_id: Option<Text>,
        latency_ms: Option<i64>,
        error: Option<Text>,
        results: String,
        answer_text: Option<Text>,
        answer_request_id: Option<Text>,
        answer_citations: String,
        answer_error: Option<Text>,
    }
}

impl SearchDetailRow {
    pub(super) fn record(self) -> Result<SearchDetailRecord> {
        Ok(SearchDetailRecord {
            search: self.search.record(),
            request_id: opt(self.request_id),
            latency_ms: self.latency_ms,
            error: opt(self.error),
            results: json(&self.results)?,
            answer_text: opt(self.answer_text),
            answer_request_id: opt(self.answer_request_id),
            answer_citations: json(&self.answer_citations)?,
            answer_error: opt(self.answer_error),
        })
    }
}

from_row! {
    struct CallRow {
        id: String,
        chat_id: Option<String>,
        provider: Option<Text>,
        model: Option<Text>,
        created_at: String,
        completed_at: Option<String>,
        input_tokens: Option<i64>,
        output_tokens: Option<i64>,
        total_tokens: Option<i64>,
        latency_ms: Option<i64>,
        error: Option<Text>,
        answered_provider: Option<Text>,
        answered_model: Option<Text>,
    }
}

impl CallRow {
    fn record(self) -> CallRecord {
        CallRecord {
            id: self.id,
            chat_id: self.chat_id,
            provider: opt(self.provider).unwrap_or_default(),
            model: opt(self.model).unwrap_or_default(),
            created_at: self.created_at,
            completed_at: self.completed_at,
            usage: CallUsage::from_columns(
                self.input_tokens,
                self.output_tokens,
                self.total_tokens,
            ),
            latency_ms: self.latency_ms,
            error: opt(self.error),
            answered_by: opt(self.answered_provider).zip(opt(self.answered_model)),
        }
    }
}

from_row! {
    /// One row of the workspace list: a chat's columns or a search's, by `kind`.
    struct WorkspaceRow {
        ..chat: ChatRow,
        kind: String,
        query: Option<Text>,
        has_output: bool,
    }
}

impl WorkspaceRow {
    fn record(self) -> Result<WorkspaceRecord> {
        Ok(match self.kind.as_str() {
            "chat" => WorkspaceRecord::Chat(self.chat.record()?),
            _ => WorkspaceRecord::Search(SearchRecord {
                id: self.chat.id,
                title: opt(self.chat.title),
                query: opt(self.query),
                created_at: self.chat.created_at,
                updated_at: self.chat.updated_at,
                starred_at: self.chat.starred_at,
                has_output: self.has_output,
            }),
        })
    }
}

/// The read functions over one database type: each takes any executor of it (a pool, or a
/// transaction's connection for a read inside a write).
macro_rules! reads {
    ($db:ty) => {
        use super::*;

        pub async fn chat<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            id: &str,
        ) -> Result<Option<ChatRecord>> {
            let row: Option<ChatRow> = sqlx::query_as(CHAT_BY_ID)
                .bind(id)
                .fetch_optional(ex)
                .await?;
            row.map(ChatRow::record).transpose()
        }

        /// All chats, most recently updated first.
        pub async fn chats<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            owner: &str,
        ) -> Result<Vec<ChatRecord>> {
            let rows: Vec<ChatRow> = sqlx::query_as(CHATS).bind(owner).fetch_all(ex).await?;
            rows.into_iter().map(ChatRow::record).collect()
        }

        /// Up to `limit` chats after `after`, most recently updated first (those titled so).
        pub async fn chats_page<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            limit: u32,
            after: Option<&PageAfter>,
            title: Option<&TitleMatch>,
            owner: &str,
        ) -> Result<Vec<ChatRecord>> {
            let limit = i64::from(limit);
            let query = match (after, title) {
                (None, None) => sqlx::query_as(CHATS_PAGE).bind(limit).bind(owner),
                (Some(after), None) => sqlx::query_as(CHATS_PAGE_AFTER)
                    .bind(limit)
                    .bind(after.updated_at.as_str())
                    .bind(after.id.as_str())
                    .bind(owner),
                (None, Some(title)) => sqlx::query_as(CHATS_TITLED_PAGE)
                    .bind(limit)
                    .bind(title.pattern())
                    .bind(owner),
                (Some(after), Some(title)) => sqlx::query_as(CHATS_TITLED_PAGE_AFTER)
                    .bind(limit)
                    .bind(after.updated_at.as_str())
                    .bind(after.id.as_str())
                    .bind(title.pattern())
                    .bind(owner),
            };
            let rows: Vec<ChatRow> = query.fetch_all(ex).await?;
            rows.into_iter().map(ChatRow::record).collect()
        }

        /// A chat's transcript; empty when the chat does not exist.
        pub async fn messages<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            chat_id: &str,
        ) -> Result<Vec<MessageRecord>> {
            let rows: Vec<MessageRow> =
                sqlx::query_as(MESSAGES).bind(chat_id).fetch_all(ex).await?;
            rows.into_iter().map(MessageRow::record).collect()
        }

        /// All searches, most recently updated first.
        pub async fn searches<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            owner: &str,
        ) -> Result<Vec<SearchRecord>> {
            let rows: Vec<SearchRow> = sqlx::query_as(SEARCHES).bind(owner).fetch_all(ex).await?;
            Ok(rows.into_iter().map(SearchRow::record).collect())
        }

        /// Up to `limit` searches after `after`, most recently updated first (those titled so).
        pub async fn searches_page<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            limit: u32,
            after: Option<&PageAfter>,
            title: Option<&TitleMatch>,
            owner: &str,
        ) -> Result<Vec<SearchRecord>> {
            let limit = i64::from(limit);
            let query = match (after, title) {
                (None, None) => sqlx::query_as(SEARCHES_PAGE).bind(limit).bind(owner),
                (Some(after), None) => sqlx::query_as(SEARCHES_PAGE_AFTER)
                    .bind(limit)
                    .bind(after.updated_at.as_str())
                    .bind(after.id.as_str())
                    .bind(owner),
                (None, Some(title)) => sqlx::query_as(SEARCHES_TITLED_PAGE)
                    .bind(limit)
                    .bind(title.pattern())
                    .bind(owner),
                (Some(after), Some(title)) => sqlx::query_as(SEARCHES_TITLED_PAGE_AFTER)
                    .bind(limit)
                    .bind(after.updated_at.as_str())
                    .bind(after.id.as_str())
                    .bind(title.pattern())
                    .bind(owner),
            };
            let rows: Vec<SearchRow> = query.fetch_all(ex).await?;
            Ok(rows.into_iter().map(SearchRow::record).collect())
        }

        pub async fn search<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            id: &str,
        ) -> Result<Option<SearchRecord>> {
            let row: Option<SearchRow> = sqlx::query_as(SEARCH_BY_ID)
                .bind(id)
                .fetch_optional(ex)
                .await?;
            Ok(row.map(SearchRow::record))
        }

        pub async fn search_by_query<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            normalized: &str,
            owner: &str,
        ) -> Result<Option<SearchRecord>> {
            let row: Option<SearchRow> = sqlx::query_as(SEARCH_BY_QUERY)
                .bind(normalized)
                .bind(owner)
                .fetch_optional(ex)
                .await?;
            Ok(row.map(SearchRow::record))
        }

        pub async fn search_detail<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            id: &str,
        ) -> Result<Option<SearchDetailRecord>> {
            let row: Option<SearchDetailRow> = sqlx::query_as(SEARCH_DETAIL_BY_ID)
                .bind(id)
                .fetch_optional(ex)
                .await?;
            row.map(SearchDetailRow::record).transpose()
        }

        pub async fn call<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            id: &str,
        ) -> Result<Option<CallRecord>> {
            let row: Option<CallRow> = sqlx::query_as(CALL_BY_ID)
                .bind(id)
                .fetch_optional(ex)
                .await?;
            Ok(row.map(CallRow::record))
        }

        /// Up to `per_kind` chats and `per_kind` searches, merged, newest first.
        pub async fn workspace<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            per_kind: u32,
            owner: &str,
        ) -> Result<Vec<WorkspaceRecord>> {
            let rows: Vec<WorkspaceRow> = sqlx::query_as(WORKSPACE)
                .bind(i64::from(per_kind))
                .bind(owner)
                .fetch_all(ex)
                .await?;
            rows.into_iter().map(WorkspaceRow::record).collect()
        }
    };
}

pub(super) mod sqlite {
    reads!(sqlx::Sqlite);
}

pub(super) mod postgres {
    reads!(sqlx::Postgres);
}
