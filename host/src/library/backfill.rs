//! Making the vectors chunks lack (docs/files.md, "The embedding model"): those of files read
//! while the embedder was down, every chunk after a change of model, an import's. The worker
//! takes a [`Backfill::step`] between files. The rules, once:
//! - a step embeds one batch, by the model configured, on one instance at a time (the store's
//!   `EmbeddingTurn`), and nothing while that model rests;
//! - a chunk the model refuses on its own (a 4xx for it alone, not for its batch) gets an empty
//!   vector: never found by meaning, still by keywords, and not asked for again;
//! - the model configured serves once no chunk lacks its vector (and at once when no model
//!   served before); then the vectors of every other model are deleted, a batch per step.

use std::sync::Arc;

use crate::config::embedding::EmbeddingModel;
use crate::store::{Store, StoreError};

use super::embeddings::{BATCH, EmbedError, Embedder, FILE_LIMIT};

/// Old vectors deleted per step once a new model serves: each deletion a short statement.
const DROP_BATCH: u32 = 5_000;

/// The worker's part in making vectors.
pub struct Backfill {
    embedder: Arc<Embedder>,
}

impl Backfill {
    pub fn new(embedder: Arc<Embedder>) -> Self {
        Self { embedder }
    }

    /// One step (module rules). `true` when there may be more to do at once.
    pub async fn step(&mut self, store: &Store) -> bool {
        let Some(target) = self.embedder.target().cloned() else {
            return false;
        };
        if !self.embedder.may_ask(&target) {
            return false;
        }
        let name = target.to_string();
        match self.batch(store, &target, &name).await {
            Ok(more) => more,
            Err(why) => {
                tracing::warn!(model = %name, error = %why,
                    "library: could not embed chunks; they are found by keywords until they are");
                false
            }
        }
    }

    async fn batch(
        &self,
        store: &Store,
        target: &EmbeddingModel,
        name: &str,
    ) -> Result<bool, String> {
        let error = |e: StoreError| e.to_string();
        let serving = store.embedding_serving().await.map_err(error)?;
        // A look first, without the turn: an idle worker takes no lock.
        if store
            .unembedded_chunks(name, 1)
            .await
            .map_err(error)?
            .is_empty()
        {
            if serving.as_deref() != Some(name) {
                store.serve_embedding(name).await.map_err(error)?;
                tracing::info!(model = %name, "library: the embedding model serves");
            }
            let dropped = store
                .drop_vectors_except(name, DROP_BATCH)
                .await
                .map_err(error)?;
            return Ok(dropped > 0);
        }
        // Another instance makes them now: this one waits for its next look.
        let Some(_turn) = store.embedding_turn().await.map_err(error)? else {
            return Ok(false);
        };
        // Read again under the turn: the other instance may have made these meanwhile.
        let todo = store
            .unembedded_chunks(name, BATCH as u32)
            .await
            .map_err(error)?;
        if todo.is_empty() {
            return Ok(true);
        }
        let texts: Vec<String> = todo.iter().map(|c| c.text.clone()).collect();
        let vectors = match self.embedder.embed(target, &texts, FILE_LIMIT).await {
            Ok(vectors) => vectors,
            Err(EmbedError::Refused(_)) => self.one_by_one(target, &texts).await?,
            Err(EmbedError::Unavailable(why)) => return Err(why),
        };
        let rows = todo
            .into_iter()
            .zip(vectors)
            .map(|(c, v)| (c.file_id, c.seq, v))
            .collect();
        store.store_vectors(name, rows).await.map_err(error)?;
        if serving.is_none() {
            store.serve_embedding(name).await.map_err(error)?;
        }
        Ok(true)
    }

    /// `texts` embedded one at a time, after their batch was refused: the one refused alone
    /// gets an empty vector (module rules).
    async fn one_by_one(
        &self,
        target: &EmbeddingModel,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, String> {
        let mut vectors = Vec::with_capacity(texts.len());
        for text in texts {
            let one = std::slice::from_ref(text);
            match self.embedder.embed(target, one, FILE_LIMIT).await {
                Ok(mut v) => vectors.push(v.remove(0)),
                Err(EmbedError::Refused(why)) => {
                    tracing::warn!(model = %target, error = %why,
                        "library: the embedding model refused a chunk; it is found by keywords");
                    vectors.push(Vec::new());
                }
                Err(EmbedError::Unavailable(why)) => return Err(why),
            }
        }
        Ok(vectors)
    }
}
