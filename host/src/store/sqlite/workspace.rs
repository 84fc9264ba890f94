//! The combined workspace list: the most recently updated chats and searches, merged.

use sqlx::Row;

use super::chats::chat_from_row;
use super::searches::search_from_row;
use super::{Result, SqliteStore};
use crate::store::WorkspaceRecord;

/// Both kinds in one statement: one round trip to the database thread and one consistent
/// snapshot, merged and ordered by the database. The arms pad each other's columns with NULL.
const SELECT_WORKSPACE: &str = "\
    SELECT * FROM ( \
        SELECT 'chat' AS kind, c.id, c.title, c.created_at, c.updated_at, s.created_at AS starred_at, \
            c.initiated_provider, c.initiated_model, c.last_used_provider, c.last_used_model, \
            c.additional_system_prompt, c.enabled_tools, NULL AS query, FALSE AS has_output \
        FROM chats c LEFT JOIN project_chats s ON s.chat_id = c.id AND s.project_id = 'starred' \
        ORDER BY c.updated_at DESC, c.id DESC LIMIT ? \
    ) AS recent_chats \
    UNION ALL \
    SELECT * FROM ( \
        SELECT 'search' AS kind, s.id, s.title, s.created_at, s.updated_at, p.created_at AS starred_at, \
            NULL, NULL, NULL, NULL, NULL, NULL, s.query, \
            (s.results <> '[]' OR COALESCE(s.answer_text, '') <> '') AS has_output \
        FROM searches s LEFT JOIN project_searches p ON p.search_id = s.id AND p.project_id = 'starred' \
        ORDER BY s.updated_at DESC, s.id DESC LIMIT ? \
    ) AS recent_searches \
    ORDER BY updated_at DESC, id DESC";

impl SqliteStore {
    /// Up to `per_kind` chats and `per_kind` searches, newest `updatedAt` first (ties: newest id,
    /// and ids are UUIDv7, ordered by creation).
    pub async fn workspace_items(&self, per_kind: u32) -> Result<Vec<WorkspaceRecord>> {
        let rows = sqlx::query(SELECT_WORKSPACE)
            .bind(per_kind)
            .bind(per_kind)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| match row.try_get::<&str, _>("kind")? {
                "chat" => Ok(WorkspaceRecord::Chat(chat_from_row(row)?)),
                _ => Ok(WorkspaceRecord::Search(search_from_row(row)?)),
            })
            .collect()
    }
}
