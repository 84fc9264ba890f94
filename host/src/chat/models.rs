//! `GET /v1/models`: each provider's model list, asked of its plugin at startup and every
//! MODELS_REFRESH_SECS after. A failed refresh keeps the last good list and sets `error`.
//!
//! The providers are the plugin host's: the lists follow its snapshots. A provider that appears
//! (declared in the configuration file, dropped into PLUGINS_DIR) is listed as soon as its first
//! list has loaded; one that goes is dropped; one whose plugin or settings changed is listed
//! again. A declared provider with `models` in the file is listed with those, without asking.
//!
//! The first load starts with the server and the endpoint waits for it, so no client (and no
//! test) sees an empty list that is merely not loaded yet. Each listing is bounded by
//! [`LIST_TIMEOUT`] so a dead upstream cannot hold the endpoint for the plugin's whole limit.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use tokio::sync::watch;

use crate::plugins::failure::describe_plugin_error;
use crate::plugins::loading::load::Plugin;
use crate::plugins::loading::plugin_host::PluginHost;
use crate::plugins::loading::snapshot::ServedProvider;
use crate::vocabulary::{now, to_millis};

/// The longest one model listing may take.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(20);

/// One provider's entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelList {
    pub models: Vec<String>,
    /// When the list was last loaded (clients' millisecond form).
    pub loaded_at: Option<String>,
    pub error: Option<String>,
}

/// What a provider's list was loaded from: when this changes, it is loaded again. The plugin is
/// held weakly, so its address is not reused while this compares against it.
#[derive(Clone, Debug)]
struct Source {
    plugin: Option<Weak<Plugin>>,
    models: Option<Vec<String>>,
    extra_model: Option<String>,
    error: Option<String>,
}

impl Source {
    fn of(provider: &ServedProvider) -> Self {
        Self {
            plugin: provider.plugin.as_ref().map(Arc::downgrade),
            models: provider.models.clone(),
            extra_model: provider.extra_model.clone(),
            error: provider.error.clone(),
        }
    }
}

impl PartialEq for Source {
    fn eq(&self, other: &Self) -> bool {
        let same_plugin = match (&self.plugin, &other.plugin) {
            (Some(a), Some(b)) => Weak::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        same_plugin
            && self.models == other.models
            && self.extra_model == other.extra_model
            && self.error == other.error
    }
}

pub struct Models {
    lists: RwLock<BTreeMap<String, ModelList>>,
    /// What each list was loaded from.
    sources: Mutex<BTreeMap<String, Source>>,
    /// Becomes true when the first load has finished.
    loaded: watch::Sender<bool>,
    /// Counts finished loads (tests await it).
    updates: watch::Sender<u64>,
    plugins: Arc<PluginHost>,
}

impl Models {
    pub fn new(plugins: Arc<PluginHost>) -> Arc<Self> {
        Arc::new(Self {
            lists: RwLock::default(),
            sources: Mutex::default(),
            loaded: watch::Sender::new(false),
            updates: watch::Sender::new(0),
            plugins,
        })
    }

    /// Loads now, then every `every` and whenever the providers change, for as long as the
    /// returned task runs.
    pub fn spawn_refresh(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let models = self.clone();
        let mut changes = self.plugins.scans();
        tokio::spawn(async move {
            changes.mark_unchanged();
            models.refresh().await;
            models.loaded.send_replace(true);
            let mut next = tokio::time::Instant::now() + every;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(next) => {
                        models.refresh().await;
                        next = tokio::time::Instant::now() + every;
                    }
                    changed = changes.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        models.follow().await;
                    }
                }
            }
        })
    }

    /// Counts finished loads, of all providers or of those that changed.
    pub fn updates(&self) -> watch::Receiver<u64> {
        self.updates.subscribe()
    }

    /// The lists, after the first load.
    pub async fn current(&self) -> BTreeMap<String, ModelList> {
        let _ = self.loaded.subscribe().wait_for(|loaded| *loaded).await;
        self.lists.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether `provider`'s loaded list has `model` (false before the first load).
    pub fn lists(&self, provider: &str, model: &str) -> bool {
        let lists = self.lists.read().unwrap_or_else(|e| e.into_inner());
        lists
            .get(provider)
            .is_some_and(|list| list.models.iter().any(|m| m == model))
    }

    /// Asks every provider for its list, concurrently.
    pub async fn refresh(&self) {
        self.load_where(|_, _| true).await;
    }

    /// Lists the providers that appeared or changed, drops those that went.
    async fn follow(&self) {
        self.load_where(|provider, loaded| loaded != Some(&Source::of(provider)))
            .await;
    }

    /// Loads the lists of the current providers `which` picks (given what each was loaded from),
    /// and drops those of providers the server no longer has.
    async fn load_where(&self, which: impl Fn(&ServedProvider, Option<&Source>) -> bool) {
        let snapshot = self.plugins.snapshot();
        let todo: Vec<Arc<ServedProvider>> = {
            let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
            sources.retain(|id, _| snapshot.provider(id).is_some());
            snapshot
                .providers()
                .filter(|p| which(p, sources.get(&p.id)))
                .cloned()
                .collect()
        };
        let loads = todo
            .iter()
            .map(|provider| async move { (provider.clone(), load(provider).await) });
        let outcomes = futures::future::join_all(loads).await;
        let mut lists = self.lists.write().unwrap_or_else(|e| e.into_inner());
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        lists.retain(|id, _| snapshot.provider(id).is_some());
        for (provider, outcome) in outcomes {
            let entry = lists.entry(provider.id.clone()).or_default();
            apply(entry, &provider, outcome);
            sources.insert(provider.id.clone(), Source::of(&provider));
        }
        drop((lists, sources));
        self.updates.send_modify(|n| *n += 1);
    }
}

/// A load's outcome in `entry`: a new list, or the error beside the last good one. The
/// provider's extra model (AGENT_MODEL) is listed first, whatever happened.
fn apply(entry: &mut ModelList, provider: &ServedProvider, outcome: Result<Vec<String>, String>) {
    match outcome {
        Ok(mut models) => {
            if let Some(extra) = &provider.extra_model
                && !models.contains(extra)
            {
                models.insert(0, extra.clone());
            }
            entry.models = models;
            entry.loaded_at = Some(to_millis(&now()));
            entry.error = None;
        }
        Err(error) => {
            if entry.models.is_empty()
                && let Some(extra) = &provider.extra_model
            {
                entry.models = vec![extra.clone()];
            }
            entry.error = Some(error);
        }
    }
}

async fn load(provider: &ServedProvider) -> Result<Vec<String>, String> {
    if let Some(error) = &provider.error {
        return Err(error.clone());
    }
    if let Some(models) = &provider.models {
        return Ok(models.clone());
    }
    let plugin = provider
        .plugin
        .as_ref()
        .and_then(|p| p.as_provider())
        .ok_or_else(|| format!("no provider plugin {} is loaded", provider.id))?;
    match tokio::time::timeout(LIST_TIMEOUT, plugin.list_models()).await {
        Err(_) => Err(format!(
            "listing models took longer than {} s",
            LIST_TIMEOUT.as_secs()
        )),
        Ok(Err(call)) => Err(call.to_string()),
        Ok(Ok(Err(error))) => Err(describe_plugin_error(&error)),
        Ok(Ok(Ok(models))) => Ok(models),
    }
}
