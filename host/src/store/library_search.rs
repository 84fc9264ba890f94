//! The keyword half of the library's search: the chunks whose words match a question's, best
//! first, from the index each backend keeps in step with `library_chunks` (its migration).
//! A question's words ([`keywords`]: runs of letters and digits, as both indexes cut a chunk's
//! text) are or-ed, so a chunk holding some of them is found. Both stem English words (SQLite's
//! porter, PostgreSQL's snowball `english`), and rank differently:
//! - SQLite: FTS5's `bm25`, where rarer words weigh more (its statistics are the whole
//!   table's, every person's chunks together);
//! - PostgreSQL: `ts_rank`, by how often the words occur in the chunk (no rarity), with
//!   English stop words ("the", "is") not indexed at all.
//!
//! Nothing is rebuilt per query. Only the owner's files are searched ([`Scope`]).

use super::{Backend, Result, Store, measured};

/// The most words of a question searched for; the rest are left out.
pub const MAX_WORDS: usize = 32;

/// A chunk to store: its text and, where the format has pages, its 1-based page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewChunk {
    pub page: Option<u32>,
    pub text: String,
}

/// A chunk found.
#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct Passage {
    pub file_id: String,
    pub name: String,
    pub page: Option<i64>,
    /// The chunk's index in its file.
    pub chunk: i64,
    pub text: String,
    /// Higher is better; comparable only within one search.
    pub score: f64,
}

/// Which files a search reaches: the owner's, of `collection` when given, among `file_ids`
/// when given.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    pub owner: &'a str,
    pub collection: Option<&'a str>,
    pub file_ids: Option<&'a [String]>,
}

/// The words of `question` searched for: runs of letters and digits, lowercased, each once, at
/// most [`MAX_WORDS`]. Nothing else reaches a query: no word is read as an operator.
pub fn keywords(question: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in question.split(|c: char| !c.is_alphanumeric()) {
        let word = word.to_lowercase();
        if !word.is_empty() && !words.contains(&word) {
            words.push(word);
            if words.len() == MAX_WORDS {
                break;
            }
        }
    }
    words
}

const SQLITE: &str = "SELECT f.id AS file_id, f.name, c.page, c.seq AS chunk, c.text, \
     -library_chunks_fts.rank AS score \
     FROM library_chunks_fts JOIN library_chunks c ON c.id = library_chunks_fts.rowid \
     JOIN library_files f ON f.id = c.file_id \
     WHERE library_chunks_fts MATCH $1 AND f.owner_id = $2 \
     AND ($3 IS NULL OR f.collection = $3) \
     AND ($4 IS NULL OR f.id IN (SELECT value FROM json_each($4))) \
     ORDER BY library_chunks_fts.rank LIMIT $5";

const POSTGRES: &str = "SELECT f.id AS file_id, f.name, c.page, c.seq AS chunk, c.text, \
     CAST(ts_rank(c.words, q) AS DOUBLE PRECISION) AS score \
     FROM to_tsquery('english', $1) q, library_chunks c JOIN library_files f ON f.id = c.file_id \
     WHERE c.words @@ q AND f.owner_id = $2 \
     AND (CAST($3 AS TEXT) IS NULL OR f.collection = $3) \
     AND (CAST($4 AS TEXT[]) IS NULL OR f.id = ANY($4)) \
     ORDER BY score DESC, f.id, c.seq LIMIT $5";

/// FTS5's query for `words`: each a quoted string (never an operator), any of them.
fn fts5_query(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// `to_tsquery`'s text for `words` (letters and digits only: [`keywords`]), any of them.
fn tsquery(words: &[String]) -> String {
    words.join(" | ")
}

impl Store {
    /// Up to `limit` chunks of the files `scope` reaches matching any of `words` (from
    /// [`keywords`]), best first.
    pub async fn search_library(
        &self,
        scope: Scope<'_>,
        words: &[String],
        limit: u32,
    ) -> Result<Vec<Passage>> {
        if words.is_empty() || scope.file_ids.is_some_and(|ids| ids.is_empty()) {
            return Ok(Vec::new());
        }
        measured(self.backend_name(), "search_library", self.timeout, async {
            Ok(match &self.backend {
                Backend::Sqlite(db) => {
                    let ids = scope
                        .file_ids
                        .map(|ids| serde_json::to_string(ids))
                        .transpose()?;
                    sqlx::query_as(SQLITE)
                        .bind(fts5_query(words))
                        .bind(scope.owner)
                        .bind(scope.collection)
                        .bind(ids)
                        .bind(i64::from(limit))
                        .fetch_all(db.pool())
                        .await?
                }
                Backend::Postgres(db) => {
                    sqlx::query_as(POSTGRES)
                        .bind(tsquery(words))
                        .bind(scope.owner)
                        .bind(scope.collection)
                        .bind(scope.file_ids)
                        .bind(i64::from(limit))
                        .fetch_all(db.pool())
                        .await?
                }
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_becomes_plain_words_never_operators() {
        let words = keywords("What is \"code\" ZX-4471 OR near(a b)? what, CODE é");
        assert_eq!(
            words,
            [
                "what", "is", "code", "zx", "4471", "or", "near", "a", "b", "é"
            ]
        );
        assert_eq!(fts5_query(&words[..3]), r#""what" OR "is" OR "code""#);
        assert_eq!(tsquery(&words[3..5]), "zx | 4471");
        assert_eq!(keywords(&"w ".repeat(100)).len(), 1);
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(keywords(&many).len(), MAX_WORDS);
        assert!(keywords("  ,.;  ").is_empty());
    }
}
