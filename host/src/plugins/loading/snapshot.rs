//! What serves right now, and how it is assembled from the bundled plugins, PLUGINS_DIR's and
//! the operator's providers.
//!
//! Rules of assembly, in order: bundled plugins first, in their fixed order; then PLUGINS_DIR's
//! `.wasm` files by name. A folder plugin with a bundled plugin's id replaces it; two folder
//! plugins with one id, or a plugin providing a tool name another already provides, are refused
//! (the first one stays; tool names are claimed by the bundled plugins and their replacements
//! first). A refused replacement leaves the bundled plugin it meant to replace serving. A
//! devbox tool (bundled or not) serves only while its CHAT_*_ENABLED is true. A
//! folder plugin that fails to load is refused with a log line, and its last good version, if
//! any, keeps serving.
//!
//! Providers are assembled last, from the operator's [`ProviderSpec`]s: each default provider
//! is the provider plugin of its id; each declared provider is its adapter's component (the
//! provider plugin whose profile names that adapter, else the one with that id) linked under the
//! provider's id and upstream; each provider plugin from the folder whose id no spec takes serves
//! under its own id.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::config::file::DeclaredProvider;
use crate::plugins::capabilities::operator::{OperatorSettings, ProviderSpec, Runs};
use crate::plugins::loading::folder::FolderEntry;
use crate::plugins::loading::load::{Loader, Plugin};
use crate::plugins::worlds::provider::Profile;
use crate::plugins::worlds::tool::ToolSpec;

/// The plugins serving right now.
#[derive(Default)]
pub struct Snapshot {
    /// In assembly order.
    pub plugins: Vec<Arc<Plugin>>,
    /// Tool name → the plugin providing it.
    tools: BTreeMap<String, Arc<Plugin>>,
    /// Provider id → what serves it.
    providers: BTreeMap<String, Arc<ServedProvider>>,
    /// Default providers not served, and why.
    unserved: Vec<(String, String)>,
    /// A declared provider whose adapter no loaded plugin offers, and the message saying so.
    missing_adapter: Option<String>,
}

/// Why a declared provider has no plugin.
enum NotLinked {
    /// No loaded provider offers its adapter: the configuration's problem.
    NoAdapter(String),
    /// Its adapter would not link under its id and upstream.
    Link(String),
}

/// A provider this server serves.
pub struct ServedProvider {
    pub id: String,
    /// What runs its turns, linked under its id; `None` when nothing does (`error` says why).
    pub plugin: Option<Arc<Plugin>>,
    pub profile: Profile,
    /// A declared provider's fixed model list.
    pub models: Option<Vec<String>>,
    /// A declared provider's label and featured models, for clients (`GET /v1/models`).
    pub display_name: Option<String>,
    pub featured_models: Vec<String>,
    /// Added to its listed models.
    pub extra_model: Option<String>,
    /// Listed with this error instead of asking for a list.
    pub error: Option<String>,
    /// How its refused turns are tried again (`[retry]` of the configuration file).
    pub retry: crate::config::retry::RetryPolicy,
}

impl Snapshot {
    /// The provider `id`, when this server has it.
    pub fn provider(&self, id: &str) -> Option<&Arc<ServedProvider>> {
        self.providers.get(id)
    }

    /// Every provider, by id.
    pub fn providers(&self) -> impl Iterator<Item = &Arc<ServedProvider>> {
        self.providers.values()
    }

    /// Why a request's `provider` naming `id` is refused (the rule, said after the field's
    /// name): the providers this server has (and any default one it does not serve, with the
    /// reason).
    pub fn unknown_provider(&self, id: &str) -> String {
        let ids: Vec<&str> = self.providers.keys().map(String::as_str).collect();
        let mut message = format!(
            "{id:?} is not a provider of this server; it has: {}",
            ids.join(", ")
        );
        for (unserved, why) in &self.unserved {
            message.push_str(&format!(" ({unserved} is not served: {why})"));
        }
        message
    }

    /// Default providers not served, and why.
    pub fn unserved(&self) -> &[(String, String)] {
        &self.unserved
    }

    pub fn plugin(&self, id: &str) -> Option<&Arc<Plugin>> {
        self.plugins.iter().find(|p| p.id() == id)
    }

    pub fn tool(&self, name: &str) -> Option<&Arc<Plugin>> {
        self.tools.get(name)
    }

    /// Every tool, in plugin order.
    pub fn tool_specs(&self) -> Vec<&ToolSpec> {
        self.plugins.iter().flat_map(|p| p.tools.iter()).collect()
    }

    /// The extractor that reads `media_type`: the last in plugin order that lists it, so a
    /// folder plugin's replaces a bundled one's (the operator's word is last).
    pub fn extractor(&self, media_type: &str) -> Option<&Arc<Plugin>> {
        self.plugins.iter().rev().find(|p| {
            p.as_extractor()
                .is_some_and(|e| e.formats().iter().any(|f| f == media_type))
        })
    }
}

/// A declared provider's link: its spec, the adapter it was linked from, the plugin it runs.
pub(super) type DeclaredLink = (DeclaredProvider, Arc<Plugin>, Arc<Plugin>);

/// Bundled plugins, then folder plugins by file name, then the providers, under the rules
/// of the module docs and `loader`'s settings.
pub(super) async fn assemble(
    loader: &Loader,
    declared: &Mutex<Vec<DeclaredLink>>,
    bundled: &[Arc<Plugin>],
    folder: &mut BTreeMap<PathBuf, FolderEntry>,
) -> Snapshot {
    let settings = loader.settings();
    let plugins = served(&settings, bundled, folder);
    let (plugins, tools) = claim_tools(bundled, plugins, folder);
    let (providers, missing_adapter) = providers(loader, declared, &settings, &plugins).await;
    Snapshot {
        plugins,
        tools,
        providers,
        unserved: settings.unserved.clone(),
        missing_adapter,
    }
}

/// The providers of `settings` and the folder, served by `plugins` (see the module docs).
async fn providers(
    loader: &Loader,
    last: &Mutex<Vec<DeclaredLink>>,
    settings: &OperatorSettings,
    plugins: &[Arc<Plugin>],
) -> (BTreeMap<String, Arc<ServedProvider>>, Option<String>) {
    let provider_plugin = |id: &str| {
        plugins
            .iter()
            .find(|p| p.id() == id && p.as_provider().is_some())
            .cloned()
    };
    let mut served = BTreeMap::new();
    let mut declared_now = Vec::new();
    let mut missing_adapter = None;
    for spec in &settings.providers {
        let (plugin, error) = match &spec.runs {
            Runs::Plugin(id) => match provider_plugin(id) {
                Some(plugin) => (Some(plugin), None),
                None => (None, Some(format!("no provider plugin {id} is loaded"))),
            },
            Runs::Declared(declared) => {
                match declared_provider(loader, last, plugins, declared).await {
                    Ok((adapter, plugin)) => {
                        declared_now.push(((**declared).clone(), adapter, plugin.clone()));
                        (Some(plugin), None)
                    }
                    Err(NotLinked::Link(why)) => (None, Some(why)),
                    Err(NotLinked::NoAdapter(why)) => {
                        missing_adapter.get_or_insert(why.clone());
                        (None, Some(why))
                    }
                }
            }
        };
        served.insert(
            spec.id.clone(),
            Arc::new(served_provider(spec, plugin, error, settings)),
        );
    }
    *last.lock().unwrap_or_else(|e| e.into_inner()) = declared_now;
    for plugin in plugins {
        let own_id = plugin.as_provider().is_some()
            && matches!(plugin.source, crate::plugins::package::Source::File(_))
            && !served.contains_key(plugin.id());
        if own_id {
            let provider = ServedProvider {
                id: plugin.id().to_string(),
                profile: plugin.profile.clone().unwrap_or_default(),
                plugin: Some(plugin.clone()),
                models: None,
                display_name: None,
                featured_models: Vec::new(),
                extra_model: None,
                error: None,
                retry: settings.retry.policy(plugin.id()),
            };
            served.insert(plugin.id().to_string(), Arc::new(provider));
        }
    }
    (served, missing_adapter)
}

/// A declared provider's plugin: its adapter (the provider plugin whose profile names it,
/// else the provider plugin of that id) linked under its id and upstream; the last one linked
/// when neither changed. The adapter and the result, or why there is none.
async fn declared_provider(
    loader: &Loader,
    last: &Mutex<Vec<DeclaredLink>>,
    plugins: &[Arc<Plugin>],
    spec: &DeclaredProvider,
) -> Result<(Arc<Plugin>, Arc<Plugin>), NotLinked> {
    let providers = || plugins.iter().filter(|p| p.as_provider().is_some());
    let adapter = providers()
        .find(|p| p.profile.as_ref().and_then(|x| x.adapter.as_deref()) == Some(&spec.adapter))
        .or_else(|| providers().find(|p| p.id() == spec.adapter))
        .ok_or_else(|| {
            let mut known: Vec<String> = providers()
                .filter_map(|p| p.profile.as_ref()?.adapter.clone())
                .collect();
            known.extend(
                providers()
                    .filter(|p| matches!(p.source, crate::plugins::package::Source::File(_)))
                    .map(|p| p.id().to_string()),
            );
            NotLinked::NoAdapter(format!(
                "providers.{}.adapter: no loaded provider offers {:?}; adapters: {}",
                spec.id,
                spec.adapter,
                known.join(", ")
            ))
        })?;
    let reused = last
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(old, old_adapter, _)| old == spec && Arc::ptr_eq(old_adapter, adapter))
        .map(|(_, _, plugin)| plugin.clone());
    if let Some(plugin) = reused {
        return Ok((adapter.clone(), plugin));
    }
    let plugin = loader
        .declared(adapter, spec)
        .await
        .map_err(|e| NotLinked::Link(format!("providers.{}: {e}", spec.id)))?;
    tracing::info!(
        provider = spec.id,
        adapter = adapter.id(),
        "declared provider linked; grants: {}",
        plugin.grants.join("; ")
    );
    Ok((adapter.clone(), Arc::new(plugin)))
}

/// A provider of `spec`, served by `plugin`.
fn served_provider(
    spec: &ProviderSpec,
    plugin: Option<Arc<Plugin>>,
    error: Option<String>,
    settings: &OperatorSettings,
) -> ServedProvider {
    ServedProvider {
        retry: settings.retry.policy(&spec.id),
        id: spec.id.clone(),
        profile: plugin
            .as_ref()
            .and_then(|p| p.profile.clone())
            .unwrap_or_default(),
        plugin,
        models: match &spec.runs {
            Runs::Declared(declared) => declared.models.clone(),
            Runs::Plugin(_) => None,
        },
        display_name: match &spec.runs {
            Runs::Declared(declared) => declared.display_name.clone(),
            Runs::Plugin(_) => None,
        },
        featured_models: match &spec.runs {
            Runs::Declared(declared) => declared.featured_models.clone(),
            Runs::Plugin(_) => Vec::new(),
        },
        extra_model: spec.extra_model.clone(),
        error: error.or_else(|| spec.listing_error.clone()),
    }
}

impl Snapshot {
    /// A declared provider whose adapter no loaded plugin offers: the configuration's problem,
    /// refused at startup and on reload.
    pub fn missing_adapter(&self) -> Option<String> {
        self.missing_adapter.clone()
    }
}

/// The plugins that may serve, by id: the bundled ones (a devbox tool only while the
/// operator enables it), each replaced by a folder plugin with its id, then the folder's
/// others. A folder plugin refused here has its entry's `conflict` say why.
fn served(
    settings: &OperatorSettings,
    bundled: &[Arc<Plugin>],
    folder: &mut BTreeMap<PathBuf, FolderEntry>,
) -> Vec<Arc<Plugin>> {
    let mut plugins: Vec<Arc<Plugin>> = bundled
        .iter()
        .filter(|p| settings.refusal(p.id()).is_none())
        .cloned()
        .collect();
    let mut from_folder: Vec<String> = Vec::new();
    for (path, entry) in folder.iter_mut() {
        entry.conflict = None;
        let Some(plugin) = entry.good.clone() else {
            continue;
        };
        let id = plugin.id();
        // By id and by tool name: a plugin under another id cannot list a disabled
        // devbox tool either.
        let refused = settings.refusal(id).or_else(|| {
            plugin
                .tools
                .iter()
                .find_map(|tool| settings.refusal(&tool.name))
        });
        if let Some(why) = refused {
            let why = format!("plugin {id} is not served: {why}");
            tracing::error!("plugin file {} refused: {why}", path.display());
            entry.conflict = Some(why);
            continue;
        }
        if from_folder.iter().any(|taken| taken == id) {
            let why = format!("another file in PLUGINS_DIR already provides plugin {id}");
            tracing::error!("plugin file {} refused: {why}", path.display());
            entry.conflict = Some(why);
            continue;
        }
        from_folder.push(id.to_string());
        match plugins.iter().position(|p| p.id() == id) {
            Some(at) => {
                tracing::debug!(
                    plugin = id,
                    "{} overrides the bundled plugin",
                    path.display()
                );
                plugins[at] = plugin;
            }
            None => plugins.push(plugin),
        }
    }
    plugins
}

/// Tool names, claimed by the bundled plugins (as overridden) first, then by the folder's
/// in file order: a folder plugin never displaces a bundled tool except by replacing its
/// plugin. A plugin whose tool is taken does not serve (a refused override leaves the
/// bundled plugin it meant to replace serving). The plugins that serve, and the tools.
fn claim_tools(
    bundled: &[Arc<Plugin>],
    mut plugins: Vec<Arc<Plugin>>,
    folder: &mut BTreeMap<PathBuf, FolderEntry>,
) -> (Vec<Arc<Plugin>>, BTreeMap<String, Arc<Plugin>>) {
    let mut tools: BTreeMap<String, Arc<Plugin>> = BTreeMap::new();
    // Position in `plugins` → what serves there instead (`None`: nothing).
    let mut replaced: Vec<(usize, Option<Arc<Plugin>>)> = Vec::new();
    type Placed<'a> = Vec<(usize, &'a Arc<Plugin>)>;
    let (first, later): (Placed, Placed) = plugins.iter().enumerate().partition(|(_, p)| {
        p.source == crate::plugins::package::Source::Bundled
            || bundled.iter().any(|b| b.id() == p.id())
    });
    for (at, plugin) in first.into_iter().chain(later) {
        let Some((name, other)) = taken_tool(&tools, plugin) else {
            for tool in &plugin.tools {
                tools.insert(tool.name.clone(), plugin.clone());
            }
            continue;
        };
        let why = format!("tool {name} is already provided by plugin {other}");
        tracing::error!(plugin = plugin.id(), "plugin refused: {why}");
        if let crate::plugins::package::Source::File(path) = &plugin.source
            && let Some(entry) = folder.get_mut(path)
        {
            entry.conflict = Some(why);
        }
        let fallback = bundled
            .iter()
            .find(|b| b.id() == plugin.id() && !Arc::ptr_eq(b, plugin))
            .filter(|b| taken_tool(&tools, b).is_none())
            .cloned();
        if let Some(bundled) = &fallback {
            for tool in &bundled.tools {
                tools.insert(tool.name.clone(), bundled.clone());
            }
        }
        replaced.push((at, fallback));
    }
    for (at, instead) in &replaced {
        if let Some(instead) = instead {
            plugins[*at] = instead.clone();
        }
    }
    let gone: Vec<usize> = replaced
        .iter()
        .filter(|(_, instead)| instead.is_none())
        .map(|(at, _)| *at)
        .collect();
    let serving = plugins
        .into_iter()
        .enumerate()
        .filter(|(at, _)| !gone.contains(at))
        .map(|(_, p)| p)
        .collect();
    (serving, tools)
}

/// The first of `plugin`'s tools another plugin in `tools` already provides: its name and that
/// plugin's id; `None` when every name is free.
fn taken_tool(tools: &BTreeMap<String, Arc<Plugin>>, plugin: &Plugin) -> Option<(String, String)> {
    plugin.tools.iter().find_map(|t| {
        tools
            .get(&t.name)
            .map(|other| (t.name.clone(), other.id().to_string()))
    })
}
