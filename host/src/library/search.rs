//! The library's search (docs/files.md, "How a question is answered"): the keyword half (the
//! store's full-text index, `store/library_search.rs`) and, while an embedding model serves,
//! the vector half (`store/library_vectors.rs`, the question embedded once), fused by
//! reciprocal rank fusion ([`fuse`]). Without a model, or when embedding the question fails,
//! the keyword half answers alone, with its own scores.

use crate::store::Store;
use crate::store::library_search::{Passage, Scope, keywords};

use super::embeddings::{Embedder, QUESTION_LIMIT};

/// How many of each half's best are fused: enough that a chunk ranked well by one half and
/// poorly by the other still counts.
const CANDIDATES: u32 = 50;
/// Reciprocal rank fusion's constant (Cormack, Clarke and Büttcher, 2009): a chunk ranked `r`
/// (from 1) in a half adds `1 / (K + r)`.
const K: f64 = 60.0;

/// Fuses rankings of chunks (each a list of keys, best first) into one, best first, with each
/// key's fused score: the sum over the rankings that hold it of `1 / (K + rank)`. A tie goes to
/// the key found by more rankings, then to the earlier ranking's order.
pub fn fuse<T: Clone + PartialEq>(rankings: &[&[T]]) -> Vec<(T, f64)> {
    let mut fused: Vec<(T, f64, usize, (usize, usize))> = Vec::new();
    for (which, ranking) in rankings.iter().enumerate() {
        for (rank, key) in ranking.iter().enumerate() {
            let add = 1.0 / (K + rank as f64 + 1.0);
            match fused.iter_mut().find(|(k, ..)| k == key) {
                Some((_, score, found, _)) => {
                    *score += add;
                    *found += 1;
                }
                None => fused.push((key.clone(), add, 1, (which, rank))),
            }
        }
    }
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.2.cmp(&a.2)).then(a.3.cmp(&b.3)));
    fused
        .into_iter()
        .map(|(key, score, ..)| (key, score))
        .collect()
}

/// The `limit` best passages of the files `scope` reaches for `query`, best first.
pub async fn search(
    store: &Store,
    embedder: &Embedder,
    scope: Scope<'_>,
    query: &str,
    limit: u32,
) -> crate::store::Result<Vec<Passage>> {
    let words = keywords(query);
    // Without a model, the keyword half answers alone: only its `limit` best are read.
    let Some(model) = embedder.serving(store).await else {
        return store.search_library(scope, &words, limit).await;
    };
    let by_words = store
        .search_library(scope, &words, CANDIDATES.max(limit))
        .await?;
    let vector = match embedder
        .embed(&model, &[query.to_string()], QUESTION_LIMIT)
        .await
    {
        Ok(mut vectors) => vectors.remove(0),
        Err(why) => {
            tracing::warn!(model = %model, error = %why,
                           "library: could not embed a question; searched by keywords alone");
            return Ok(by_words.into_iter().take(limit as usize).collect());
        }
    };
    let near = store
        .nearest_chunks(scope, &model.to_string(), &vector, CANDIDATES as usize)
        .await?;
    let word_keys: Vec<(String, i64)> = by_words
        .iter()
        .map(|p| (p.file_id.clone(), p.chunk))
        .collect();
    let near_keys: Vec<(String, i64)> = near.into_iter().map(|n| (n.file_id, n.seq)).collect();
    let best: Vec<((String, i64), f64)> = fuse(&[&word_keys, &near_keys])
        .into_iter()
        .take(limit as usize)
        .collect();
    // The passages the keyword half did not bring, read now (a few at most).
    let missing: Vec<(String, i64)> = best
        .iter()
        .map(|(key, _)| key.clone())
        .filter(|key| !word_keys.contains(key))
        .collect();
    let mut read = store.library_passages(scope.owner, &missing).await?;
    let mut by_words = by_words;
    let mut passages = Vec::with_capacity(best.len());
    for ((file_id, seq), score) in best {
        let at = |p: &Passage| p.file_id == file_id && p.chunk == seq;
        let found = match by_words.iter().position(at) {
            Some(i) => Some(by_words.swap_remove(i)),
            None => read.iter().position(at).map(|i| read.swap_remove(i)),
        };
        // A chunk deleted between the halves and the read is left out.
        if let Some(mut passage) = found {
            passage.score = score;
            passages.push(passage);
        }
    }
    Ok(passages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rankings_fuse_by_reciprocal_rank() {
        let words = ["a", "b", "c"];
        let meaning = ["c", "d", "a"];
        let fused = fuse(&[&words[..], &meaning[..]]);
        let order: Vec<&str> = fused.iter().map(|(k, _)| *k).collect();
        // a: 1/61 + 1/63; c: 1/63 + 1/61 (a tie, both in two rankings: the first ranking's
        // order); then b (1/62) and d (1/62): b first, from the earlier ranking.
        assert_eq!(order, ["a", "c", "b", "d"]);
        assert!((fused[0].1 - (1.0 / 61.0 + 1.0 / 63.0)).abs() < 1e-12);
        assert!(fuse::<&str>(&[&[], &[]]).is_empty());
        // One ranking alone keeps its order.
        let alone: Vec<&str> = fuse(&[&["x", "y"][..]])
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(alone, ["x", "y"]);
    }

    #[test]
    fn a_chunk_both_halves_found_beats_one_each_found_first() {
        // "both" is second in each; "w" and "m" are first in one each.
        let fused = fuse(&[&["w", "both"][..], &["m", "both"][..]]);
        assert_eq!(fused[0].0, "both");
    }
}
