//! The combined workspace list: the most recently updated chats and searches, merged.

use super::chats::{SELECT_CHAT, chat_from_row};
use super::searches::{SELECT_SEARCH, search_from_row};
use super::{ChatRecord, Result, SearchRecord, Store};

#[derive(Clone, Debug, PartialEq)]
pub enum WorkspaceRecord {
    Chat(ChatRecord),
    Search(SearchRecord),
}

impl WorkspaceRecord {
    /// The list's sort key: `updatedAt`, then id. Ids are UUIDv7, ordered by creation, so a tie
    /// within one millisecond still puts the newer item first.
    fn sort_key(&self) -> (&str, &str) {
        match self {
            WorkspaceRecord::Chat(c) => (&c.updated_at, &c.id),
            WorkspaceRecord::Search(s) => (&s.updated_at, &s.id),
        }
    }
}

impl Store {
    /// Up to `per_kind` chats and `per_kind` searches, newest `updatedAt` first. Both reads run in
    /// one transaction so the list is a single snapshot.
    pub async fn workspace_items(&self, per_kind: u32) -> Result<Vec<WorkspaceRecord>> {
        let mut tx = self.pool.begin().await?;
        let chats = sqlx::query(&format!(
            "{SELECT_CHAT} ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
        ))
        .bind(per_kind)
        .fetch_all(&mut *tx)
        .await?;
        let searches = sqlx::query(&format!(
            "{SELECT_SEARCH} ORDER BY s.updated_at DESC, s.id DESC LIMIT ?"
        ))
        .bind(per_kind)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let mut items = Vec::with_capacity(chats.len() + searches.len());
        for row in &chats {
            items.push(WorkspaceRecord::Chat(chat_from_row(row)?));
        }
        for row in &searches {
            items.push(WorkspaceRecord::Search(search_from_row(row)?));
        }
        // Timestamps are fixed-width ISO 8601, so text order is time order.
        items.sort_by(|a, b| b.sort_key().cmp(&a.sort_key()));
        Ok(items)
    }
}
