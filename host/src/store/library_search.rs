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
//! that finds nothing, the common words are tried, then the question as asked. SQLite counts a
//! word's chunks in its index ([`sqlite_held`]); PostgreSQL, whose count would read a row per
//! chunk, estimates it from ANALYZE's statistics ([`postgres_held`]).
//!
//! Nothing is rebuilt per query. Only the owner's files are searched ([`Scope`]).

use super::row::from_row;
use super::{Backend, Result, Store, measured};

/// The most words of a question searched for; the rest are left out.
pub const MAX_WORDS: usize = 32;

/// A chunk to store: its text and, where the format has pages, its 1-based page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewChunk {
    pub page: Option<u32>,
    pub text: String,
}

from_row! {
    /// A chunk found.
    #[derive(Clone, Debug, PartialEq)]
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

/// When a word is common: held by more chunks than a backend's share of them all
/// ([`SQLITE_SHARE`](Common::SQLITE_SHARE), [`POSTGRES_SHARE`](Common::POSTGRES_SHARE)), and by
/// more than [`FEW`](Common::FEW).
struct Common;

impl Common {
    /// SQLite's share: past it a word's BM25 weight is small.
    const SQLITE_SHARE: f64 = 0.1;
    /// PostgreSQL's, lower: `ts_rank` weighs a frequent word as much as a rare one (no rarity
    /// term), and costs more per chunk than FTS5's `bm25` (`bench library`: BENCHMARKS.md).
    const POSTGRES_SHARE: f64 = 0.02;
    /// Ranking this many chunks is quick: a word held by no more is never left out.
    const FEW: i64 = 2_000;

    /// The most chunks a word may hold and not be common, of `total` chunks, at `share`.
    fn most(total: i64, share: f64) -> i64 {
        ((total as f64 * share) as i64).max(Self::FEW)
    }
}

/// The searches to try in turn, given how many chunks hold each word (counted up to `most + 1`,
/// or estimated), when some words are common: the others, any of them; then (when those are in
/// none of the person's chunks, or there are none: a typo, a stop word) chunks holding all the
/// common ones, then the two rarest of them, then the rarest (common words rarely meet in one
/// chunk, and ranking every chunk holding any of them is the slowest search there is). Empty:
/// search as asked (no word is common). The caller searches as asked too when none finds
/// anything: the counts are of everyone's chunks, and the words kept may be in none of the
/// person's.
fn choose(words: &[String], held: &[i64], most: i64) -> Vec<(Vec<String>, Join)> {
    let mut counted: Vec<(&String, i64)> = words.iter().zip(held.iter().copied()).collect();
    if !counted.iter().any(|&(_, n)| n > most) {
        return Vec::new();
    }
    let rare: Vec<String> = counted
        .iter()
        .filter(|&&(_, n)| n > 0 && n <= most)
        .map(|&(w, _)| w.clone())
        .collect();
    let mut tries = Vec::new();
    if !rare.is_empty() {
        tries.push((rare, Join::Any));
    }
    counted.retain(|&(_, n)| n > most);
    let all: Vec<String> = counted.iter().map(|&(w, _)| w.clone()).collect();
    counted.sort_by_key(|&(_, n)| n);
    let rarest = |k: usize| -> Vec<String> {
        let mut kept: Vec<&String> = counted.iter().take(k).map(|&(w, _)| w).collect();
        // In the question's order, as the other searches.
        kept.sort_by_key(|w| all.iter().position(|a| a == *w));
        kept.into_iter().cloned().collect()
    };
    tries.push((all.clone(), Join::All));
    if all.len() > 2 {
        tries.push((rarest(2), Join::All));
    }
    if all.len() > 1 {
        tries.push((rarest(1), Join::Any));
    }
    tries
}

/// An estimate of the chunks stored (their highest id: deleted ones still count).
const SQLITE_TOTAL: &str = "SELECT COALESCE(MAX(id), 0) FROM library_chunks";
/// How many chunks hold `$1`, counted up to `$2`.
const SQLITE_HOLDING: &str = "SELECT COUNT(*) FROM (SELECT 1 FROM library_chunks_fts \
     WHERE library_chunks_fts MATCH $1 LIMIT $2)";

/// SQLite: the chunks stored and how many hold each word (up to the most not common), or
/// `None` when no word can be common (too few chunks). FTS5 counts from its index alone.
async fn sqlite_held(pool: &sqlx::SqlitePool, words: &[String]) -> Result<Option<(Vec<i64>, i64)>> {
    let total: i64 = sqlx::query_scalar(SQLITE_TOTAL).fetch_one(pool).await?;
    let most = Common::most(total, Common::SQLITE_SHARE);
    if total <= most {
        return Ok(None);
    }
    let mut held = Vec::with_capacity(words.len());
    for word in words {
        let n: i64 = sqlx::query_scalar(SQLITE_HOLDING)
            .bind(fts5_query(std::slice::from_ref(word), Join::Any))
            .bind(most + 1)
            .fetch_one(pool)
            .await?;
        held.push(n);
    }
    Ok(Some((held, most)))
}

/// PostgreSQL: the planner's estimate of the chunks stored (0 before the first ANALYZE) and,
/// for each of the words `$1` in order, the share of chunks holding it, from the statistics
/// ANALYZE keeps of the `words` column: its most common lexemes (the default statistics target
/// keeps the 1,000 most common) and their shares; a word not among them 0; and whether the word
/// is indexed at all (a stop word is not). Counting in the table instead reads a heap row per
/// chunk counted: 8 to 20 ms a common word at 100,000 chunks (`bench library`).
const POSTGRES_HELD: &str = "WITH stats AS (SELECT \
     CAST(CAST(s.most_common_elems AS TEXT) AS TEXT[]) AS elems, \
     s.most_common_elem_freqs AS freqs FROM pg_stats s \
     JOIN pg_class c ON c.relname = s.tablename \
     JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname \
     WHERE c.oid = CAST('library_chunks' AS regclass) AND s.attname = 'words') \
     SELECT CAST((SELECT GREATEST(reltuples, 0) FROM pg_class \
     WHERE oid = CAST('library_chunks' AS regclass)) AS BIGINT) AS total, \
     CAST(COALESCE(MAX(x.freq), 0) AS DOUBLE PRECISION) AS share, \
     COUNT(l.lexeme) > 0 AS indexed \
     FROM unnest(CAST($1 AS TEXT[])) WITH ORDINALITY AS w(word, i) \
     LEFT JOIN LATERAL unnest(tsvector_to_array(to_tsvector('english', w.word))) \
     AS l(lexeme) ON TRUE \
     LEFT JOIN LATERAL (SELECT e.freq FROM stats, unnest(stats.elems, stats.freqs) \
     AS e(elem, freq) WHERE e.elem = l.lexeme) AS x ON TRUE \
     GROUP BY w.i ORDER BY w.i";

/// PostgreSQL: as [`sqlite_held`], the counts estimated from the statistics ([`POSTGRES_HELD`]).
async fn postgres_held(pool: &sqlx::PgPool, words: &[String]) -> Result<Option<(Vec<i64>, i64)>> {
    let rows: Vec<(i64, f64, bool)> = sqlx::query_as(POSTGRES_HELD)
        .bind(words)
        .fetch_all(pool)
        .await?;
    let total = rows.first().map_or(0, |(total, _, _)| *total);
    let most = Common::most(total, Common::POSTGRES_SHARE);
    if total <= most {
        return Ok(None);
    }
    // A word indexed but not among the most common is taken as held by a few: whether by any
    // is learnt by searching (a typo is searched for, finds nothing, and the common words are
    // tried next: `choose`).
    let held = rows
        .iter()
        .map(|&(_, share, indexed)| match indexed {
            true => ((share * total as f64).round() as i64).max(1),
            false => 0,
        })
        .collect();
    Ok(Some((held, most)))
}

/// One backend's search: `$held` its [`sqlite_held`] or [`postgres_held`], `$search` its query,
/// `$query` how it joins words, `$ids` its binding of the file ids.
macro_rules! search {
    ($pool:expr, $scope:expr, $words:expr, $limit:expr, $held:expr, $search:expr,
     $query:expr, $ids:expr) => {{
        let pool = $pool;
        let asked = $words;
        let mut tries = Vec::new();
        if asked.len() > 1 {
            if let Some((held, most)) = $held(pool, asked).await? {
                tries = choose(asked, &held, most);
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
        let mut found: Vec<Passage> = Vec::new();
        for (words, join) in &tries {
            found = run(words, *join).await?;
            if !found.is_empty() {
                break;
            }
        }
        if found.is_empty() {
            found = run(asked, Join::Any).await?;
        }
        found
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
                    let ids = scope.file_ids.map(serde_json::to_string).transpose()?;
                    search!(
                        db.pool(),
                        scope,
                        words,
                        limit,
                        sqlite_held,
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
                    postgres_held,
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
        // Of 100,000 chunks, a word in more than 10,000 is common on SQLite, 2,000 on PostgreSQL.
        let most = Common::most(100_000, Common::SQLITE_SHARE);
        assert_eq!(most, 10_000);
        assert_eq!(Common::most(100_000, Common::POSTGRES_SHARE), 2_000);
        assert_eq!(Common::most(3_000, Common::SQLITE_SHARE), Common::FEW);
        // The rarer words, then the common ones (should the rarer be in none of the person's
        // chunks).
        let kept = choose(&words, &[10_001, 10_001, 1, 1], most);
        assert_eq!(
            kept,
            [
                (vec!["trv".into(), "2291".into()], Join::Any),
                (vec!["the".into(), "policy".into()], Join::All),
                (vec!["the".into()], Join::Any),
            ]
        );
        let kept = choose(&words, &[10_001, 9_000, 1, 10_002], most);
        assert_eq!(
            kept,
            [
                (vec!["policy".into(), "trv".into()], Join::Any),
                (vec!["the".into(), "2291".into()], Join::All),
                (vec!["the".into()], Join::Any),
            ]
        );
        // No word common: as asked.
        assert_eq!(choose(&words, &[1, 2, 3, 4], most), []);
        // Every word held common (PostgreSQL holds no stop word; SQLite counts a typo as held
        // by none):
        // chunks holding all the common ones, then the rarest (in the question's order).
        let kept = choose(&words, &[0, 10_001, 0, 10_002], most);
        let both = vec!["policy".into(), "2291".into()];
        assert_eq!(
            kept,
            [(both, Join::All), (vec!["policy".into()], Join::Any)]
        );
        let kept = choose(&words, &[50_000, 10_003, 20_000, 10_002], most);
        assert_eq!(
            kept,
            [
                (words.clone(), Join::All),
                (vec!["policy".into(), "2291".into()], Join::All),
                (vec!["2291".into()], Join::Any),
            ]
        );
    }
}
