//! The library's embeddings (docs/files.md, "Search by meaning"): texts to vectors through the
//! provider `CHATD_EMBEDDING_MODEL` names (its `embeddings` export, WIT 0.1.4), and which
//! model's vectors answer questions. The rules, once:
//! - a file's chunks are embedded once, in batches of [`BATCH`], when it is processed; a file
//!   whose chunks could not be embedded (the embedder down) is ready anyway, found by keywords,
//!   and its vectors are made later by [`Backfill`];
//! - a question is embedded once, by the model that serves ([`Serving`]);
//! - a new model is the one that serves once every chunk has its vector; until then the model
//!   before it still does, its vectors kept. Then the old vectors go. Never an error: at worst
//!   a search is by keywords alone.
//!
//! A model is stored by its full name, `PROVIDER/MODEL`, so the same model id behind another
//! provider is another model.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::embedding::EmbeddingModel;
use crate::plugins::failure::{describe_call_error, describe_plugin_error};
use crate::plugins::loading::plugin_host::PluginHost;
use crate::store::Store;
use crate::store::library_vectors::unit;

/// Texts per embedding call: a few calls for a large file, each answer a few MiB at most.
pub const BATCH: usize = 64;
/// How long the worker waits before it asks a failing embedder again, at first; doubled after
/// each failure up to [`MOST_PATIENCE`].
const FIRST_PATIENCE: Duration = Duration::from_secs(5);
const MOST_PATIENCE: Duration = Duration::from_secs(300);

/// The embedder of one server: the provider plugins, and the model configured.
pub struct Embedder {
    plugins: Arc<PluginHost>,
    target: Option<EmbeddingModel>,
}

impl Embedder {
    pub fn new(plugins: Arc<PluginHost>, target: Option<EmbeddingModel>) -> Self {
        Self { plugins, target }
    }

    /// The model configured, if any.
    pub fn target(&self) -> Option<&EmbeddingModel> {
        self.target.as_ref()
    }

    /// The vectors of `texts` by `model`, at unit length, in order; a vector with no direction
    /// is kept as zeros (it is never found). Or why not, in words for the log.
    pub async fn embed(
        &self,
        model: &EmbeddingModel,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, String> {
        let snapshot = self.plugins.snapshot();
        let provider = snapshot
            .provider(&model.provider)
            .and_then(|p| p.plugin.clone())
            .ok_or_else(|| format!("{} is not a provider of this server", model.provider))?;
        let embedder = provider.as_provider().expect("a provider");
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let embedded = match embedder.embed(&model.model, batch.to_vec()).await {
                Ok(Ok(embedded)) => embedded,
                Ok(Err(e)) => return Err(describe_plugin_error(&e)),
                Err(stopped) => return Err(describe_call_error(&stopped)),
            };
            if embedded.vectors.len() != batch.len() {
                return Err(format!(
                    "{} vectors for {} texts",
                    embedded.vectors.len(),
                    batch.len()
                ));
            }
            vectors.extend(
                embedded
                    .vectors
                    .iter()
                    .map(|v| unit(v).unwrap_or_else(|| vec![0.0; v.len()])),
            );
        }
        Ok(vectors)
    }

    /// The model whose vectors answer a question now: the one that serves, while a model is
    /// configured (none configured: keywords only).
    pub async fn serving(&self, store: &Store) -> Option<EmbeddingModel> {
        self.target.as_ref()?;
        match store.embedding_serving().await {
            Ok(serving) => serving.and_then(|name| EmbeddingModel::parse(&name).ok()),
            Err(e) => {
                tracing::warn!(error = %e, "library: could not read the embedding model serving");
                None
            }
        }
    }
}

/// What the worker does for the vectors between files: makes those the configured model lacks,
/// a batch at a time, and makes it the serving model once none lacks one.
pub struct Backfill {
    embedder: Arc<Embedder>,
    /// When the embedder may be asked again after a failure, and how long the next wait is.
    not_before: Option<Instant>,
    patience: Duration,
}

impl Backfill {
    pub fn new(embedder: Arc<Embedder>) -> Self {
        Self {
            embedder,
            not_before: None,
            patience: FIRST_PATIENCE,
        }
    }

    /// A failure: the embedder is left alone for a while, longer each time.
    pub fn failed(&mut self) {
        self.not_before = Some(Instant::now() + self.patience);
        self.patience = (self.patience * 2).min(MOST_PATIENCE);
    }

    fn succeeded(&mut self) {
        self.not_before = None;
        self.patience = FIRST_PATIENCE;
    }

    /// Whether the embedder may be asked now.
    pub fn may_ask(&self) -> bool {
        self.not_before.is_none_or(|t| Instant::now() >= t)
    }

    /// One step: embeds one batch of chunks that lack the configured model's vectors, or, when
    /// none lacks one, makes that model serve. `true` when there may be more to do.
    pub async fn step(&mut self, store: &Store) -> bool {
        let Some(target) = self.embedder.target().cloned() else {
            return false;
        };
        if !self.may_ask() {
            return false;
        }
        let name = target.to_string();
        let outcome: Result<bool, String> = async {
            let serving = store.embedding_serving().await.map_err(|e| e.to_string())?;
            let todo = store
                .unembedded_chunks(&name, BATCH as u32)
                .await
                .map_err(|e| e.to_string())?;
            if todo.is_empty() {
                if serving.as_deref() != Some(name.as_str()) {
                    store
                        .serve_embedding(&name)
                        .await
                        .map_err(|e| e.to_string())?;
                    tracing::info!(model = %name, "library: the embedding model serves");
                }
                return Ok(false);
            }
            // Nothing served before: this model serves at once, its vectors filled in as made.
            if serving.is_none() {
                store
                    .serve_embedding(&name)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            let texts: Vec<String> = todo.iter().map(|c| c.text.clone()).collect();
            let vectors = self.embedder.embed(&target, &texts).await?;
            let rows = todo
                .into_iter()
                .zip(vectors)
                .map(|(c, v)| (c.file_id, c.seq, v))
                .collect();
            store
                .store_vectors(&name, rows)
                .await
                .map_err(|e| e.to_string())?;
            Ok(true)
        }
        .await;
        match outcome {
            Ok(more) => {
                self.succeeded();
                more
            }
            Err(why) => {
                tracing::warn!(model = %name, error = %why, "library: could not embed chunks; \
                               they are found by keywords until they are");
                self.failed();
                false
            }
        }
    }
}
