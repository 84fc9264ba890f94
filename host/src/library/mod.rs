//! Each person's library of documents (docs/files.md): what makes a file's text ([`text`]: an
//! extractor plugin, by the format [`formats::Format`] gave it at upload), how the text is cut
//! ([`chunks`]), their vectors ([`embeddings`]), the search that fuses keywords and meaning
//! ([`search`]), and the worker that takes each uploaded file from `processing` to `ready` or
//! `failed` ([`Library`]). The files, their chunks, the full-text index and the vectors are the
//! store's (`store/library.rs`, `store/library_search.rs`, `store/library_vectors.rs`); the
//! routes are `http/files.rs`, the tool `tools/file_search.rs`.
//!
//! This layer sits above the plugin host (the extractors it runs are plugins) and below the
//! tools (`file_search` searches what it made).

pub mod backfill;
pub mod chunks;
pub mod embeddings;
pub mod formats;
pub mod search;
pub mod text;

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;

use crate::config::embedding::EmbeddingModel;
use crate::plugins::loading::plugin_host::PluginHost;
use crate::store::Store;
use crate::store::library::{ChunkVectors, Claimed, MAX_ATTEMPTS};
use crate::store::library_search::{NewChunk, Passage, Scope};

use backfill::Backfill;
use embeddings::{Embedder, FILE_LIMIT};

/// How often the worker looks for files without being woken: files another instance left when
/// it stopped, on a shared database.
const LOOK_EVERY: Duration = Duration::from_secs(5);

/// The library of one server: its store and its worker.
pub struct Library {
    store: Store,
    /// The extractors are its plugins.
    plugins: Arc<PluginHost>,
    /// This instance, as the store's `instances` knows it: the holder of the files it works on.
    instance: String,
    /// Woken by an upload (a permit is kept when the worker is busy: it looks again after).
    wake: Arc<Notify>,
    /// Texts to vectors, by the model configured.
    embedder: Arc<Embedder>,
}

impl Library {
    /// The library on `store`, its text made by `plugins`' extractors and its vectors by
    /// `embedding` (none: keywords only), with its worker started for `instance`.
    pub fn start(
        store: Store,
        plugins: Arc<PluginHost>,
        instance: String,
        embedding: Option<EmbeddingModel>,
    ) -> Arc<Self> {
        let embedder = Arc::new(Embedder::new(plugins.clone(), embedding));
        embedder.check();
        let library = Arc::new(Self {
            store,
            embedder,
            plugins,
            instance,
            wake: Arc::new(Notify::new()),
        });
        tokio::spawn(work(Arc::downgrade(&library)));
        library
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A file was added: the worker looks now.
    pub fn added(&self) {
        self.wake.notify_one();
    }

    /// The `limit` best passages for `query` among the files `scope` reaches ([`search`]).
    pub async fn search(
        &self,
        scope: Scope<'_>,
        query: &str,
        limit: u32,
    ) -> crate::store::Result<Vec<Passage>> {
        search::search(&self.store, &self.embedder, scope, query, limit).await
    }
}

/// The worker: takes one file at a time, oldest first and people in turn (`store/library.rs`),
/// until none waits; between files, makes the vectors chunks lack ([`Backfill`]); then sleeps
/// until a file is added or [`LOOK_EVERY`] passes. Ends with the library, or when the store
/// closes.
async fn work(library: Weak<Library>) {
    // The owner of the file taken last: another person's goes first next.
    let mut last_owner = String::new();
    let mut backfill = match library.upgrade() {
        Some(this) => Backfill::new(this.embedder.clone()),
        None => return,
    };
    loop {
        let Some(this) = library.upgrade() else {
            return;
        };
        if this.store.is_closed() {
            return;
        }
        match this
            .store
            .claim_library_file(&this.instance, &last_owner)
            .await
        {
            Ok(Some(claimed)) => {
                last_owner = claimed.file.owner_id.clone();
                process(&this, claimed).await;
                continue;
            }
            Ok(None) => {
                if backfill.step(&this.store).await {
                    continue;
                }
            }
            Err(_) if this.store.is_closed() => return,
            Err(e) => tracing::warn!(error = %e, "library: could not look for files to process"),
        }
        // Not holding the library while asleep: dropping it ends the worker.
        let wake = this.wake.clone();
        drop(this);
        let _ = tokio::time::timeout(LOOK_EVERY, wake.notified()).await;
    }
}

/// The vectors of a file's `chunks` by the model configured, if there is one and it answers
/// (not resting after a failure); when it does not, the file is ready without them and the
/// worker makes them later (`backfill.rs`).
async fn vectors_of(library: &Library, id: &str, chunks: &[NewChunk]) -> Option<ChunkVectors> {
    let model = library.embedder.target()?;
    if !library.embedder.may_ask(model) {
        return None;
    }
    let texts: Vec<String> = chunks.iter().map(|c| c.text.clone()).collect();
    match library.embedder.embed(model, &texts, FILE_LIMIT).await {
        Ok(vectors) => Some(ChunkVectors {
            model: model.to_string(),
            vectors,
        }),
        Err(why) => {
            tracing::warn!(file = %id, model = %model, error = %why,
                           "library: could not embed a file's chunks; found by keywords until it is");
            None
        }
    }
}

/// Makes `claimed`'s chunks and stores them, or its error.
async fn process(library: &Library, claimed: Claimed) {
    let Claimed {
        file,
        content,
        attempts,
    } = claimed;
    let outcome = if attempts >= MAX_ATTEMPTS {
        Err(format!(
            "processing was interrupted {attempts} times (each time the instance working on it \
             stopped); not tried again"
        ))
    } else {
        match text::text_of(&library.plugins, &file.mime_type, content).await {
            // Cutting megabytes of text is CPU work: off the runtime's workers.
            Ok(pages) => tokio::task::spawn_blocking(move || {
                let count = pages.iter().filter_map(|p| p.page).max();
                (count, chunks::chunks(&pages))
            })
            .await
            .map_err(|e| format!("processing failed: {e}")),
            Err(why) => Err(why),
        }
    };
    let stored = match outcome {
        Ok((pages, chunks)) => {
            let count = chunks.len();
            let vectors = vectors_of(library, &file.id, &chunks).await;
            let done = library
                .store
                .finish_library_file(&file.id, &library.instance, pages, chunks, vectors)
                .await;
            if let Ok(true) = done {
                tracing::info!(file = %file.id, chunks = count, "library: file ready");
            }
            done
        }
        Err(error) => {
            let done = library
                .store
                .fail_library_file(&file.id, &library.instance, &error)
                .await;
            if let Ok(true) = done {
                tracing::info!(file = %file.id, %error, "library: file failed");
            }
            done
        }
    };
    let Err(e) = stored else { return };
    // Its outcome could not be stored (the database away, the chunks past its time): the file
    // ends failed, saying so, rather than held by this instance until it stops. Adding the same
    // bytes again tries it again.
    tracing::warn!(file = %file.id, error = %e, "library: could not store a file's outcome");
    let error = format!("its text could not be stored: {e}");
    if let Err(e) = library
        .store
        .fail_library_file(&file.id, &library.instance, &error)
        .await
    {
        // Still `processing`, held by this instance: taken again after a restart, or by
        // another instance once this one's lease runs out.
        tracing::warn!(file = %file.id, error = %e, "library: could not store a file's failure");
    }
}
