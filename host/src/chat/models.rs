//! `GET /v1/models`: each provider's model list, asked of its plugin at startup and every
//! MODELS_REFRESH_SECS after. A failed refresh keeps the last good list and sets `error`.
//!
//! The first load starts with the server and the endpoint waits for it, so no client (and no
//! test) sees an empty list that is merely not loaded yet. Each listing is bounded by
//! [`LIST_TIMEOUT`] so a dead upstream cannot hold the endpoint for the plugin's whole limit.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::watch;

use super::completion::describe_plugin_error;
use crate::model::{Provider, now, to_millis};
use crate::plugins::registry::PluginHost;

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

/// Which providers are listed and what the operator configured for them.
#[derive(Clone, Debug)]
pub struct ModelSources {
    /// Listed providers, each with the setting that must be set for it to be usable (`None`
    /// when it is), e.g. `Some("PROVIDER_A_API_KEY")`.
    pub providers: Vec<(Provider, Option<&'static str>)>,
    /// AGENT_MODEL: added to provider_agent's list.
    pub agent_model: Option<String>,
}

pub struct Models {
    lists: RwLock<BTreeMap<Provider, ModelList>>,
    /// Becomes true when the first load has finished.
    loaded: watch::Sender<bool>,
    sources: ModelSources,
    plugins: Arc<PluginHost>,
}

impl Models {
    pub fn new(sources: ModelSources, plugins: Arc<PluginHost>) -> Arc<Self> {
        let lists = sources
            .providers
            .iter()
            .map(|(p, _)| (*p, ModelList::default()))
            .collect();
        Arc::new(Self {
            lists: RwLock::new(lists),
            loaded: watch::Sender::new(false),
            sources,
            plugins,
        })
    }

    /// Loads now, then every `every`, for as long as the returned task runs.
    pub fn spawn_refresh(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let models = self.clone();
        tokio::spawn(async move {
            loop {
                models.refresh().await;
                models.loaded.send_replace(true);
                tokio::time::sleep(every).await;
            }
        })
    }

    /// The lists, after the first load.
    pub async fn current(&self) -> BTreeMap<Provider, ModelList> {
        let _ = self.loaded.subscribe().wait_for(|loaded| *loaded).await;
        self.lists.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Asks every provider for its list, concurrently.
    pub async fn refresh(&self) {
        let loads =
            self.sources
                .providers
                .iter()
                .map(|(provider, missing)| async move {
                    (*provider, self.load(*provider, *missing).await)
                });
        for (provider, outcome) in futures::future::join_all(loads).await {
            let mut lists = self.lists.write().unwrap_or_else(|e| e.into_inner());
            let entry = lists.entry(provider).or_default();
            match outcome {
                Ok(mut models) => {
                    if provider == Provider::ProviderAgent
                        && let Some(extra) = &self.sources.agent_model
                        && !models.contains(extra)
                    {
                        models.insert(0, extra.clone());
                    }
                    entry.models = models;
                    entry.loaded_at = Some(to_millis(&now()));
                    entry.error = None;
                }
                Err(error) => {
                    if provider == Provider::ProviderAgent
                        && entry.models.is_empty()
                        && let Some(extra) = &self.sources.agent_model
                    {
                        entry.models = vec![extra.clone()];
                    }
                    entry.error = Some(error);
                }
            }
        }
    }

    async fn load(
        &self,
        provider: Provider,
        missing: Option<&'static str>,
    ) -> Result<Vec<String>, String> {
        if let Some(setting) = missing {
            return Err(format!("{setting} is not set"));
        }
        let snapshot = self.plugins.snapshot();
        let plugin = snapshot
            .plugin(provider.as_str())
            .and_then(|p| p.as_provider())
            .ok_or_else(|| format!("no provider plugin {} is loaded", provider.as_str()))?;
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
}
