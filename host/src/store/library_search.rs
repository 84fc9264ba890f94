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
//! A word most chunks hold is left out of the ranking when the question has rarer ones
//! ([`Common`], [`choose`]): ranking costs a step per chunk holding any word, and such a word
//! weighs little in it (a stop word, in effect, decided by the chunks rather than a list). When
//! that finds nothing, the question is searched as asked.
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

/// The chunks matching first (the words' GIN index, materialized: a generic plan would
/// otherwise walk every chunk of the owner's files, its estimates blind to the parameters), then
/// the owner's best, then their text.
const POSTGRES: &str = "WITH hits AS MATERIALIZED (SELECT c.file_id, c.seq, \
     ts_rank(c.words, to_tsquery('english', $1)) AS rank FROM library_chunks c \
     WHERE c.words @@ to_tsquery('english', $1)), \
     best AS (SELECT h.file_id, h.seq, h.rank, f.name FROM hits h \
     JOIN library_files f ON f.id = h.file_id WHERE f.owner_id = $2 \
     AND (CAST($3 AS TEXT) IS NULL OR f.collection = $3) \
     AND (CAST($4 AS TEXT[]) IS NULL OR f.id = ANY($4)) \
     ORDER BY h.rank DESC, h.file_id, h.seq LIMIT $5) \
     SELECT b.file_id, b.name, c.page, b.seq AS chunk, c.text, \
     CAST(b.rank AS DOUBLE PRECISION) AS score FROM best b \
     JOIN library_chunks c ON c.file_id = b.file_id AND c.seq = b.seq \
     ORDER BY score DESC, b.file_id, b.seq";

/// How a question's words are joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Join {
    /// Chunks holding any of them.
    Any,
    /// Chunks holding all of them.
    All,
}

/// FTS5's query for `words`: each a quoted string (never an operator), joined by `join`.
fn fts5_query(words: &[String], join: Join) -> String {
    let op = match join {
        Join::Any => " OR ",
        Join::All => " AND ",
    };
    words
        .iter()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(op)
}

/// `to_tsquery`'s text for `words` (letters and digits only: [`keywords`]), joined by `join`.
fn tsquery(words: &[String], join: Join) -> String {
    words.join(match join {
        Join::Any => " | ",
        Join::All => " & ",
    })
}

/// When a word is common: held by more chunks than [`SHARE`](Common::SHARE) of them all, and
/// by more than [`FEW`](Common::FEW).
struct Common;

impl Common {
    /// The share of all chunks past which a word is common (its BM25 weight is then small).
    const SHARE: f64 = 0.1;
    /// Ranking this many chunks is quick: a word held by no more is never left out.
    const FEW: i64 = 2_000;

    /// The most chunks a word may hold and not be common, of `total` chunks.
    fn most(total: i64) -> i64 {
        ((total as f64 * Self::SHARE) as i64).max(Self::FEW)
    }
}

/// The words searched for and how they are joined, given how many chunks hold each (counted up
/// to `most + 1`), when some are common: the others held by any chunk, any of them; when every
/// word held is common, all of those at once. `None`: search as asked (no word is common). The
/// caller searches as asked too when this finds nothing: the counts are of everyone's chunks,
/// and the rarer words may be in none of the person's.
fn choose(words: &[String], held: &[i64], most: i64) -> Option<(Vec<String>, Join)> {
    let pick = |keep: &dyn Fn(i64) -> bool| -> Vec<String> {
        words
            .iter()
            .zip(held)
            .filter(|(_, n)| keep(**n))
            .map(|(w, _)| w.clone())
            .collect()
    };
    let common = pick(&|n| n > most);
    if common.is_empty() {
        return None;
    }
    let rare = pick(&|n| n > 0 && n <= most);
    Some(match rare.is_empty() {
        true => (common, Join::All),
        false => (rare, Join::Any),
    })
}

/// An estimate of the chunks stored (their highest id: deleted ones still count).
const SQLITE_TOTAL: &str = "SELECT COALESCE(MAX(id), 0) FROM library_chunks";
/// How many chunks hold `$1`, counted up to `$2`.
const SQLITE_HOLDING: &str = "SELECT COUNT(*) FROM (SELECT 1 FROM library_chunks_fts \
     WHERE library_chunks_fts MATCH $1 LIMIT $2)";
/// The planner's estimate of the chunks stored (none before the first ANALYZE: 0).
const POSTGRES_TOTAL: &str = "SELECT CAST(GREATEST(reltuples, 0) AS BIGINT) FROM pg_class \
     WHERE oid = CAST('library_chunks' AS regclass)";
const POSTGRES_HOLDING: &str = "SELECT COUNT(*) FROM (SELECT 1 FROM library_chunks \
     WHERE words @@ to_tsquery('english', $1) LIMIT $2) AS held";

/// One backend's search: `$total`, `$holding` and `$search` its queries, `$query` how it joins
/// words, `$ids` its binding of the file ids.
macro_rules! search {
    ($pool:expr, $scope:expr, $words:expr, $limit:expr, $total:expr, $holding:expr,
     $search:expr, $query:expr, $ids:expr) => {{
        let pool = $pool;
        let asked = $words;
        let mut chosen = None;
        if asked.len() > 1 {
            let total: i64 = sqlx::query_scalar($total).fetch_one(pool).await?;
            let most = Common::most(total);
            if total > most {
                let mut held = Vec::with_capacity(asked.len());
                for word in asked {
                    let n: i64 = sqlx::query_scalar($holding)
                        .bind($query(std::slice::from_ref(word), Join::Any))
                        .bind(most + 1)
                        .fetch_one(pool)
                        .await?;
                    held.push(n);
                }
                chosen = choose(asked, &held, most);
            }
        }
        let run = |words: &[String], join| {
            sqlx::query_as($search)
                .bind($query(words, join))
                .bind($scope.owner)
                .bind($scope.collection)
                .bind($ids)
                .bind(i64::from($limit))
                .fetch_all(pool)
        };
        let found: Vec<Passage> = match &chosen {
            Some((words, join)) => run(words, *join).await?,
            None => Vec::new(),
        };
        if chosen.is_none() || found.is_empty() {
            run(asked, Join::Any).await?
        } else {
            found
        }
    }};
}

impl Store {
    /// Up to `limit` chunks of the files `scope` reaches matching `words` (from [`keywords`]),
    /// best first: any of them, common ones left out when rarer ones remain (module docs).
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
                    search!(
                        db.pool(),
                        scope,
                        words,
                        limit,
                        SQLITE_TOTAL,
                        SQLITE_HOLDING,
                        SQLITE,
                        fts5_query,
                        ids.as_deref()
                    )
                }
                Backend::Postgres(db) => search!(
                    db.pool(),
                    scope,
                    words,
                    limit,
                    POSTGRES_TOTAL,
                    POSTGRES_HOLDING,
                    POSTGRES,
                    tsquery,
                    scope.file_ids
                ),
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
        assert_eq!(
            fts5_query(&words[..3], Join::Any),
            r#""what" OR "is" OR "code""#
        );
        assert_eq!(fts5_query(&words[..2], Join::All), r#""what" AND "is""#);
        assert_eq!(tsquery(&words[3..5], Join::Any), "zx | 4471");
        assert_eq!(tsquery(&words[3..5], Join::All), "zx & 4471");
        assert_eq!(keywords(&"w ".repeat(100)).len(), 1);
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(keywords(&many).len(), MAX_WORDS);
        assert!(keywords("  ,.;  ").is_empty());
    }

    #[test]
    fn common_words_are_left_out_while_rarer_ones_remain() {
        let words: Vec<String> = ["the", "policy", "trv", "2291"].map(String::from).to_vec();
        // Of 100,000 chunks, a word in more than 10,000 is common.
        let most = Common::most(100_000);
        assert_eq!(most, 10_000);
        assert_eq!(Common::most(3_000), Common::FEW);
        let kept = choose(&words, &[10_001, 10_001, 1, 1], most);
        assert_eq!(kept, Some((vec!["trv".into(), "2291".into()], Join::Any)));
        let kept = choose(&words, &[10_001, 9_000, 1, 10_001], most).unwrap();
        assert_eq!(kept, (vec!["policy".into(), "trv".into()], Join::Any));
        // No word common: as asked.
        assert_eq!(choose(&words, &[1, 2, 3, 4], most), None);
        // Every word held common (PostgreSQL holds no stop word; a typo is held by none):
        // chunks holding all the common ones.
        let kept = choose(&words, &[0, 10_001, 0, 10_001], most).unwrap();
        assert_eq!(kept, (vec!["policy".into(), "2291".into()], Join::All));
    }
}
