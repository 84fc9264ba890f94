//! Messages found by their text, from `messages.search_words` (the words of each message's
//! first 100,000 characters, a stored column with a GIN index: its migration says why). Hits
//! come newest first by id (UUIDv7, ordered by creation): for a rare word the planner takes the
//! index; for a common one it walks the primary key backwards and stops at the page's end.

use super::PgStore;
use crate::store::read::HitRow;
use crate::store::{MessageHit, Result};

/// The hits in the owner's chats, with their chat's title; `$1` the `tsquery`, `$2` the page's
/// size, `$3` the owner, and (`AFTER`) `$4` the id the page starts below.
macro_rules! hits {
    ($after:literal) => {
        concat!(
            "SELECT m.id AS position, m.chat_id, c.title AS chat_title, m.id AS message_id, \
             m.created_at, m.role, m.content \
             FROM messages m JOIN chats c ON c.id = m.chat_id \
             WHERE m.search_words @@ to_tsquery('simple', $1) \
             AND m.role IN ('user', 'assistant') AND c.owner_id = $3",
            $after,
            " ORDER BY m.id DESC LIMIT $2"
        )
    };
}
const HITS: &str = hits!("");
const HITS_AFTER: &str = hits!(" AND m.id < $4");

/// The `tsquery` for `words`: whole words, all required, as on SQLite. The words are letters
/// and digits only (the HTTP layer split them so), and each is quoted besides, so none is
/// syntax.
fn tsquery(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', "''").replace('\\', "\\\\")))
        .collect::<Vec<_>>()
        .join(" & ")
}

impl PgStore {
    pub async fn search_messages(
        &self,
        words: &[String],
        limit: u32,
        after: Option<&str>,
        owner: &str,
    ) -> Result<Option<Vec<MessageHit>>> {
        let query = sqlx::query_as(if after.is_some() { HITS_AFTER } else { HITS })
            .bind(tsquery(words))
            .bind(i64::from(limit))
            .bind(owner);
        let query = match after {
            Some(after) => query.bind(after),
            None => query,
        };
        let rows: Vec<HitRow> = query.fetch_all(self.pool()).await?;
        rows.into_iter()
            .map(HitRow::record)
            .collect::<Result<_>>()
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted() {
        let words = ["rust".to_string(), "o'k".to_string()];
        assert_eq!(tsquery(&words), "'rust' & 'o''k'");
    }
}
