//! The library's embeddings (docs/files.md, "The embedding model"): texts to vectors through
//! the provider `CHATD_EMBEDDING_MODEL` names (its `embeddings` export, WIT 0.1.4). The rules,
//! once:
//! - a file's chunks are embedded once, in batches of [`BATCH`], when it is processed; a file
//!   whose chunks could not be embedded (the embedder down, refusing, or silent past
//!   [`FILE_LIMIT`]) is ready anyway, found by keywords, and its vectors are made later
//!   (`backfill.rs`);
//! - a question is embedded once, by the model that serves, within [`QUESTION_LIMIT`];
//! - after a failure a model rests ([`Embedder::may_ask`]): 5 s, then twice as long after
//!   each failure, at most 5 minutes; meanwhile files are ready without its vectors and
//!   questions it would embed are answered by keywords, at once.
//!
//! A model is stored by its full name, `PROVIDER/MODEL`, so the same model id behind another
//! provider is another model.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::embedding::EmbeddingModel;
use crate::plugins::failure::{describe_call_error, describe_plugin_error};
use crate::plugins::loading::plugin_host::PluginHost;
use crate::plugins::worlds::provider::PluginError;
use crate::store::Store;
use crate::store::library_vectors::unit;

/// Texts per embedding call: a few calls for a large file, each answer a few MiB at most.
pub const BATCH: usize = 64;
/// The longest one batch of a file's chunks may take to embed.
pub const FILE_LIMIT: Duration = Duration::from_secs(30);
/// The longest a question may take to embed: past it, keywords answer alone.
pub const QUESTION_LIMIT: Duration = Duration::from_secs(10);
/// How long the embedder rests after a failure, at first; doubled after each failure up to
/// [`MOST_REST`].
const FIRST_REST: Duration = Duration::from_secs(5);
const MOST_REST: Duration = Duration::from_secs(300);

/// Why texts were not embedded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedError {
    /// The upstream refused these texts (a 4xx: one too long, say): others may embed.
    Refused(String),
    /// The embedder could not be asked, or did not answer: nothing will embed now.
    Unavailable(String),
}

impl std::fmt::Display for EmbedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmbedError::Refused(why) | EmbedError::Unavailable(why) => f.write_str(why),
        }
    }
}

/// An embedder's rest after failures: until when, and how long the next one is.
#[derive(Debug)]
struct Rest {
    until: Option<Instant>,
    next: Duration,
}

impl Rest {
    fn new() -> Self {
        Self {
            until: None,
            next: FIRST_REST,
        }
    }

    fn over(&self, now: Instant) -> bool {
        self.until.is_none_or(|until| now >= until)
    }

    fn failed(&mut self, now: Instant) {
        self.until = Some(now + self.next);
        self.next = (self.next * 2).min(MOST_REST);
    }
}

/// The embedder of one server: the provider plugins, the model configured, and each model's
/// rest (the model before a change still answers questions while the new one fails).
pub struct Embedder {
    plugins: Arc<PluginHost>,
    target: Option<EmbeddingModel>,
    rests: Mutex<HashMap<String, Rest>>,
}

impl Embedder {
    pub fn new(plugins: Arc<PluginHost>, target: Option<EmbeddingModel>) -> Self {
        Self {
            plugins,
            target,
            rests: Mutex::new(HashMap::new()),
        }
    }

    /// The model configured, if any.
    pub fn target(&self) -> Option<&EmbeddingModel> {
        self.target.as_ref()
    }

    /// Whether `model` may be asked now (it is not resting after a failure).
    pub fn may_ask(&self, model: &EmbeddingModel) -> bool {
        self.rests()
            .get(&model.to_string())
            .is_none_or(|rest| rest.over(Instant::now()))
    }

    fn rests(&self) -> std::sync::MutexGuard<'_, HashMap<String, Rest>> {
        self.rests.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The vectors of `texts` by `model`, at unit length, in order, each batch within `limit`;
    /// a vector with no direction is kept as zeros (it is never found). A failure other than a
    /// refusal of the texts rests the embedder.
    pub async fn embed(
        &self,
        model: &EmbeddingModel,
        texts: &[String],
        limit: Duration,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let outcome = self.embed_unrested(model, texts, limit).await;
        let name = model.to_string();
        match &outcome {
            Ok(_) | Err(EmbedError::Refused(_)) => {
                self.rests().remove(&name);
            }
            Err(EmbedError::Unavailable(_)) => {
                self.rests()
                    .entry(name)
                    .or_insert_with(Rest::new)
                    .failed(Instant::now());
            }
        }
        outcome
    }

    async fn embed_unrested(
        &self,
        model: &EmbeddingModel,
        texts: &[String],
        limit: Duration,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let snapshot = self.plugins.snapshot();
        let provider = snapshot
            .provider(&model.provider)
            .and_then(|p| p.plugin.clone())
            .ok_or_else(|| {
                EmbedError::Unavailable(format!(
                    "{} is not a provider of this server",
                    model.provider
                ))
            })?;
        let embedder = provider.as_provider().expect("a provider");
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let call = embedder.embed(&model.model, batch.to_vec());
            let embedded = match tokio::time::timeout(limit, call).await {
                Ok(Ok(Ok(embedded))) => embedded,
                Ok(Ok(Err(e @ PluginError::Upstream(_)))) if refusal(&e) => {
                    return Err(EmbedError::Refused(describe_plugin_error(&e)));
                }
                Ok(Ok(Err(e))) => return Err(EmbedError::Unavailable(describe_plugin_error(&e))),
                Ok(Err(stopped)) => {
                    return Err(EmbedError::Unavailable(describe_call_error(&stopped)));
                }
                Err(_) => {
                    return Err(EmbedError::Unavailable(format!(
                        "no answer within {} s",
                        limit.as_secs()
                    )));
                }
            };
            if embedded.vectors.len() != batch.len() {
                return Err(EmbedError::Unavailable(format!(
                    "{} vectors for {} texts",
                    embedded.vectors.len(),
                    batch.len()
                )));
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
    /// configured (none configured: keywords only) and it is not resting.
    pub async fn serving(&self, store: &Store) -> Option<EmbeddingModel> {
        self.target.as_ref()?;
        let serving = match store.embedding_serving().await {
            Ok(serving) => serving.and_then(|name| EmbeddingModel::parse(&name).ok()),
            Err(e) => {
                tracing::warn!(error = %e, "library: could not read the embedding model serving");
                None
            }
        }?;
        self.may_ask(&serving).then_some(serving)
    }

    /// Says in the log, once at start, when the model configured cannot embed here (its
    /// provider missing, or not an `embedding-provider`): the library keeps to keywords.
    pub fn check(&self) {
        let Some(target) = &self.target else {
            return;
        };
        let snapshot = self.plugins.snapshot();
        let why = match snapshot.provider(&target.provider) {
            None => Some(format!(
                "provider: {}",
                snapshot.unknown_provider(&target.provider)
            )),
            Some(p) => match p.plugin.as_ref().and_then(|p| p.as_provider()) {
                Some(plugin) if plugin.embeds() => None,
                Some(_) => Some(format!(
                    "provider {} has no embeddings (not an embedding-provider, WIT 0.1.4)",
                    target.provider
                )),
                None => p.error.clone(),
            },
        };
        match why {
            None => tracing::info!(model = %target, "library: embeddings by this model"),
            Some(why) => tracing::warn!(model = %target, reason = %why,
                "library: CHATD_EMBEDDING_MODEL cannot embed here; the library searches by \
                 keywords until it can"),
        }
    }
}

/// Whether an upstream's error refuses the texts themselves (a 4xx other than rate limits and
/// authentication), rather than saying the embedder cannot serve now.
fn refusal(error: &PluginError) -> bool {
    matches!(error, PluginError::Upstream(e)
        if (400..500).contains(&e.status) && ![401, 403, 404, 408, 429].contains(&e.status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::worlds::provider::UpstreamError;

    #[test]
    fn a_failing_embedder_rests_twice_as_long_each_time_up_to_five_minutes() {
        let now = Instant::now();
        let mut rest = Rest::new();
        assert!(rest.over(now));
        rest.failed(now);
        assert!(!rest.over(now + Duration::from_secs(4)));
        assert!(rest.over(now + Duration::from_secs(5)));
        rest.failed(now);
        assert!(!rest.over(now + Duration::from_secs(9)));
        for _ in 0..10 {
            rest.failed(now);
        }
        assert!(rest.over(now + MOST_REST));
    }

    #[test]
    fn only_a_refusal_of_the_texts_is_a_refusal() {
        let upstream = |status| {
            PluginError::Upstream(UpstreamError {
                status,
                message: "m".into(),
            })
        };
        assert!(refusal(&upstream(400)));
        assert!(refusal(&upstream(413)));
        for status in [401, 403, 404, 429, 500, 503] {
            assert!(!refusal(&upstream(status)), "{status}");
        }
        assert!(!refusal(&PluginError::Transport("reset".into())));
    }
}
