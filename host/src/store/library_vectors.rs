//! The vector half of the library's search (`library_vectors`, `library_embedding`; both
//! backends): each chunk's embedding by a named model, and the model whose vectors answer
//! questions. The rules are here, once:
//! - a vector is stored at unit length (the caller's [`unit`]), so a question's score against a
//!   chunk is their dot product, computed exactly here over the owner's stored vectors: neither
//!   database here has a vector index (no sqlite-vec, no pgvector), and exact scoring needs none;
//! - only vectors of the model asked are compared (another model's space is another space), and
//!   a vector of another length is skipped;
//! - a chunk with no similarity at all (a score of zero or less) is not found by meaning;
//! - vectors go with their chunk (a foreign key), and one for a chunk deleted meanwhile is not
//!   stored;
//! - the vectors chunks lack are made by one instance at a time ([`EmbeddingTurn`]), so two
//!   instances on one database never pay for the same chunk twice.
//!
//! The library decides which model serves and when it changes (`library/backfill.rs`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use futures::TryStreamExt as _;

use super::library_search::{Passage, Scope};
use super::row::from_row;
use super::{Backend, Result, Store, measured};

from_row! {
    /// A chunk waiting for its vector: which, and its text.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Unembedded {
        pub file_id: String,
        pub seq: i64,
        pub text: String,
    }
}

/// A chunk found by meaning: which, and its score (a cosine, -1..1).
#[derive(Clone, Debug, PartialEq)]
pub struct Near {
    pub file_id: String,
    pub seq: i64,
    pub score: f64,
}

/// `vector` scaled to unit length; `None` for one that has no direction (all zeros) or holds
/// a value that is not finite.
pub fn unit(vector: &[f32]) -> Option<Vec<f32>> {
    let norm = vector
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    (norm.is_finite() && norm > 0.0).then(|| {
        vector
            .iter()
            .map(|x| (f64::from(*x) / norm) as f32)
            .collect()
    })
}

/// A vector as stored: little-endian f32s.
pub fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The dot product of `query` and a stored vector; `None` when their lengths differ.
fn dot(query: &[f32], stored: &[u8]) -> Option<f64> {
    (stored.len() == query.len() * 4).then(|| {
        stored
            .chunks_exact(4)
            .zip(query)
            .map(|(b, q)| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]) * q))
            .sum()
    })
}

/// One of the best found so far, ordered worst first (the heap's top is the one to drop).
struct Best(Near);

impl PartialEq for Best {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Best {}
impl PartialOrd for Best {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Best {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: a lower score is "greater", so it sits on top to be dropped first; among
        // equals the later chunk goes first, so the result does not depend on row order.
        other
            .0
            .score
            .total_cmp(&self.0.score)
            .then_with(|| (&self.0.file_id, self.0.seq).cmp(&(&other.0.file_id, other.0.seq)))
    }
}

const SERVING: &str = "SELECT serving FROM library_embedding WHERE one = 1";
const SET_SERVING: &str = "INSERT INTO library_embedding (one, serving) VALUES (1, $1) \
                           ON CONFLICT (one) DO UPDATE SET serving = excluded.serving";
/// Chunks of ready files without a vector of `$1`, oldest file first.
const UNEMBEDDED: &str = "SELECT c.file_id, c.seq, c.text FROM library_chunks c \
     JOIN library_files f ON f.id = c.file_id \
     WHERE f.status = 'ready' AND NOT EXISTS (SELECT 1 FROM library_vectors v \
     WHERE v.model = $1 AND v.file_id = c.file_id AND v.seq = c.seq) \
     ORDER BY f.created_at, c.file_id, c.seq LIMIT $2";
/// One vector, unless its chunk is gone or it has one of this model already.
const STORE_ONE: &str = "INSERT INTO library_vectors (model, file_id, seq, vector) \
     SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM library_chunks \
     WHERE file_id = $2 AND seq = $3) ON CONFLICT DO NOTHING";
pub(super) const VECTORS: &str = "INSERT INTO library_vectors (model, file_id, seq, vector) ";
/// Up to `$2` vectors of models other than `$1`, deleted.
const DROP_OTHERS_SQLITE: &str = "DELETE FROM library_vectors WHERE rowid IN \
     (SELECT rowid FROM library_vectors WHERE model <> $1 LIMIT $2)";
const DROP_OTHERS_POSTGRES: &str = "DELETE FROM library_vectors WHERE ctid IN \
     (SELECT ctid FROM library_vectors WHERE model <> $1 LIMIT $2)";
const SCAN_SQLITE: &str = "SELECT v.file_id, v.seq, v.vector FROM library_vectors v \
     JOIN library_files f ON f.id = v.file_id \
     WHERE v.model = $1 AND f.owner_id = $2 AND ($3 IS NULL OR f.collection = $3) \
     AND ($4 IS NULL OR f.id IN (SELECT value FROM json_each($4)))";
const SCAN_POSTGRES: &str = "SELECT v.file_id, v.seq, v.vector FROM library_vectors v \
     JOIN library_files f ON f.id = v.file_id \
     WHERE v.model = $1 AND f.owner_id = $2 AND (CAST($3 AS TEXT) IS NULL OR f.collection = $3) \
     AND (CAST($4 AS TEXT[]) IS NULL OR f.id = ANY($4))";
const PASSAGE: &str = "SELECT f.id AS file_id, f.name, c.page, c.seq AS chunk, c.text, \
     CAST(0 AS DOUBLE PRECISION) AS score FROM library_chunks c \
     JOIN library_files f ON f.id = c.file_id \
     WHERE f.owner_id = $1 AND c.file_id = $2 AND c.seq = $3";

/// One instance's turn at making the vectors chunks lack: on PostgreSQL a session's advisory
/// lock, on a connection of its own that is closed, never pooled, when the turn is dropped
/// (closing it releases the lock, whatever happened meanwhile); on SQLite, which serves one
/// instance, always had.
pub struct EmbeddingTurn {
    _held: Option<sqlx::pool::PoolConnection<sqlx::Postgres>>,
}

const TRY_TURN: &str = "SELECT pg_try_advisory_lock(hashtextextended('library:embedding', 0))";

/// Keeps the `limit` best of `rows` whose score is above zero, best first.
async fn best<S>(mut rows: S, query: &[f32], limit: usize) -> Result<Vec<Near>>
where
    S: futures::Stream<Item = std::result::Result<(String, i64, Vec<u8>), sqlx::Error>> + Unpin,
{
    let mut heap: BinaryHeap<Best> = BinaryHeap::with_capacity(limit + 1);
    while let Some((file_id, seq, stored)) = rows.try_next().await? {
        let Some(score) = dot(query, &stored).filter(|s| *s > 0.0) else {
            continue;
        };
        heap.push(Best(Near {
            file_id,
            seq,
            score,
        }));
        if heap.len() > limit {
            heap.pop();
        }
    }
    Ok(heap.into_sorted_vec().into_iter().map(|b| b.0).collect())
}

impl Store {
    /// This instance's turn at making missing vectors, unless another instance has it now.
    pub async fn embedding_turn(&self) -> Result<Option<EmbeddingTurn>> {
        measured(self.backend_name(), "embedding_turn", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(_) => Ok(Some(EmbeddingTurn { _held: None })),
                Backend::Postgres(db) => {
                    let mut connection = db.pool().acquire().await?;
                    // Closed, never pooled, however this ends: a lock granted just as the
                    // store's time limit cut the query short must not live on in the pool.
                    connection.close_on_drop();
                    let got: bool = sqlx::query_scalar(TRY_TURN)
                        .fetch_one(&mut *connection)
                        .await?;
                    Ok(got.then(|| EmbeddingTurn {
                        _held: Some(connection),
                    }))
                }
            }
        })
        .await
    }

    /// The model whose vectors answer questions, if one was ever named.
    pub async fn embedding_serving(&self) -> Result<Option<String>> {
        measured(
            self.backend_name(),
            "embedding_serving",
            self.timeout,
            async {
                Ok(match &self.backend {
                    Backend::Sqlite(db) => {
                        sqlx::query_scalar(SERVING)
                            .fetch_optional(db.pool())
                            .await?
                    }
                    Backend::Postgres(db) => {
                        sqlx::query_scalar(SERVING)
                            .fetch_optional(db.pool())
                            .await?
                    }
                })
            },
        )
        .await
    }

    /// Makes `model` the one whose vectors answer questions.
    pub async fn serve_embedding(&self, model: &str) -> Result<()> {
        measured(
            self.backend_name(),
            "serve_embedding",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => {
                        let mut tx = db.write_tx().await?;
                        sqlx::query(SET_SERVING)
                            .bind(model)
                            .execute(&mut *tx)
                            .await?;
                        tx.commit().await?;
                    }
                    Backend::Postgres(db) => {
                        sqlx::query(SET_SERVING)
                            .bind(model)
                            .execute(db.pool())
                            .await?;
                    }
                }
                Ok(())
            },
        )
        .await
    }

    /// Deletes up to `limit` vectors of models other than `model`: how many went.
    pub async fn drop_vectors_except(&self, model: &str, limit: u32) -> Result<u64> {
        measured(
            self.backend_name(),
            "drop_vectors_except",
            self.timeout,
            async {
                let done = match &self.backend {
                    Backend::Sqlite(db) => {
                        let mut tx = db.write_tx().await?;
                        let done = sqlx::query(DROP_OTHERS_SQLITE)
                            .bind(model)
                            .bind(i64::from(limit))
                            .execute(&mut *tx)
                            .await?;
                        tx.commit().await?;
                        done.rows_affected()
                    }
                    Backend::Postgres(db) => sqlx::query(DROP_OTHERS_POSTGRES)
                        .bind(model)
                        .bind(i64::from(limit))
                        .execute(db.pool())
                        .await?
                        .rows_affected(),
                };
                Ok(done)
            },
        )
        .await
    }

    /// Up to `limit` chunks of ready files that have no vector of `model`, oldest file first.
    pub async fn unembedded_chunks(&self, model: &str, limit: u32) -> Result<Vec<Unembedded>> {
        measured(
            self.backend_name(),
            "unembedded_chunks",
            self.timeout,
            async {
                Ok(match &self.backend {
                    Backend::Sqlite(db) => {
                        sqlx::query_as(UNEMBEDDED)
                            .bind(model)
                            .bind(i64::from(limit))
                            .fetch_all(db.pool())
                            .await?
                    }
                    Backend::Postgres(db) => {
                        sqlx::query_as(UNEMBEDDED)
                            .bind(model)
                            .bind(i64::from(limit))
                            .fetch_all(db.pool())
                            .await?
                    }
                })
            },
        )
        .await
    }

    /// Stores `vectors` (each a chunk's, at unit length) of `model`, in one transaction; those
    /// whose chunk is gone, or that have one already, are left out.
    pub async fn store_vectors(
        &self,
        model: &str,
        vectors: Vec<(String, i64, Vec<f32>)>,
    ) -> Result<()> {
        macro_rules! store {
            ($tx:expr) => {{
                let mut tx = $tx;
                for (file_id, seq, vector) in &vectors {
                    sqlx::query(STORE_ONE)
                        .bind(model)
                        .bind(file_id)
                        .bind(seq)
                        .bind(encode(vector))
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
            }};
        }
        measured(self.backend_name(), "store_vectors", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => store!(db.write_tx().await?),
                Backend::Postgres(db) => store!(db.tx().await?),
            }
            Ok(())
        })
        .await
    }

    /// The `limit` chunks of the files `scope` reaches nearest to `query` (at unit length) by
    /// `model`'s vectors, best first (module rules).
    pub async fn nearest_chunks(
        &self,
        scope: Scope<'_>,
        model: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<Near>> {
        if limit == 0 || scope.file_ids.is_some_and(|ids| ids.is_empty()) {
            return Ok(Vec::new());
        }
        measured(self.backend_name(), "nearest_chunks", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => {
                    let ids = scope.file_ids.map(serde_json::to_string).transpose()?;
                    let rows = sqlx::query_as(SCAN_SQLITE)
                        .bind(model)
                        .bind(scope.owner)
                        .bind(scope.collection)
                        .bind(ids)
                        .fetch(db.pool());
                    best(rows, query, limit).await
                }
                Backend::Postgres(db) => {
                    let rows = sqlx::query_as(SCAN_POSTGRES)
                        .bind(model)
                        .bind(scope.owner)
                        .bind(scope.collection)
                        .bind(scope.file_ids)
                        .fetch(db.pool());
                    best(rows, query, limit).await
                }
            }
        })
        .await
    }

    /// `owner`'s chunks `keys` (file id, index) as passages, in that order, with a score of
    /// zero (the caller's to set); a chunk gone meanwhile is left out.
    pub async fn library_passages(
        &self,
        owner: &str,
        keys: &[(String, i64)],
    ) -> Result<Vec<Passage>> {
        measured(
            self.backend_name(),
            "library_passages",
            self.timeout,
            async {
                let mut found = Vec::with_capacity(keys.len());
                for (file_id, seq) in keys {
                    let passage: Option<Passage> = match &self.backend {
                        Backend::Sqlite(db) => {
                            sqlx::query_as(PASSAGE)
                                .bind(owner)
                                .bind(file_id)
                                .bind(seq)
                                .fetch_optional(db.pool())
                                .await?
                        }
                        Backend::Postgres(db) => {
                            sqlx::query_as(PASSAGE)
                                .bind(owner)
                                .bind(file_id)
                                .bind(seq)
                                .fetch_optional(db.pool())
                                .await?
                        }
                    };
                    found.extend(passage);
                }
                Ok(found)
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_stored_at_unit_length_and_scored_by_their_dot_product() {
        let a = unit(&[3.0, 4.0]).unwrap();
        assert_eq!(a, vec![0.6, 0.8]);
        assert!(unit(&[0.0, 0.0]).is_none());
        assert!(unit(&[f32::NAN, 1.0]).is_none());
        assert!(unit(&[f32::INFINITY, 1.0]).is_none());
        let stored = encode(&a);
        assert_eq!(stored.len(), 8);
        assert!((dot(&a, &stored).unwrap() - 1.0).abs() < 1e-6);
        assert!(dot(&[1.0, 0.0, 0.0], &stored).is_none(), "another length");
    }

    #[tokio::test]
    async fn the_best_are_kept_best_first_and_no_similarity_is_not_found() {
        let q = [1.0f32, 0.0];
        let rows = vec![
            ("a".to_string(), 0, encode(&[0.5, 0.5])),
            ("b".to_string(), 0, encode(&[0.0, 1.0])),
            ("c".to_string(), 0, encode(&[0.9, 0.1])),
            ("d".to_string(), 0, encode(&[-1.0, 0.0])),
            ("e".to_string(), 0, encode(&[0.7, 0.3])),
            ("f".to_string(), 0, encode(&[0.5])),
        ];
        let stream = futures::stream::iter(rows.into_iter().map(Ok));
        let found = best(stream, &q, 2).await.unwrap();
        let ids: Vec<&str> = found.iter().map(|n| n.file_id.as_str()).collect();
        assert_eq!(ids, ["c", "e"]);
        let stream = futures::stream::iter(
            [("x".to_string(), 0, encode(&[0.0, 1.0]))]
                .into_iter()
                .map(Ok),
        );
        assert!(best(stream, &q, 5).await.unwrap().is_empty());
    }
}
