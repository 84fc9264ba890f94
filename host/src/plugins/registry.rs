//! The plugins this server runs: the bundled ones, overridden or joined by PLUGINS_DIR's, swapped
//! atomically when that folder changes.
//!
//! Readers take the current [`Snapshot`] (an `Arc`) and keep it for the call: a reload builds a
//! new snapshot and swaps the pointer, so a call in flight finishes on the version it started
//! with, and no reader ever sees half a reload.
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
//!
//! The configuration file is applied the same way ([`PluginHost::reconfigure`]): every plugin
//! is linked again under the new settings and the result swapped in at once, or, when the new
//! settings break a bundled plugin or name an adapter no plugin offers, nothing changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::LoadError;
use super::cache::CompileCache;
use super::host_settings::{HostSettings, ProviderSpec, Runs};
use super::load::{Loader, Package, Plugin};
use super::provider::Profile;
use super::tool::ToolSpec;
use crate::config::Config;
use crate::config::file::{DeclaredProvider, FileConfig};
use crate::telemetry;
use crate::tools::{ToolCatalog, ToolInfo};

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

    /// Why a request naming `id` is refused: the providers this server has (and any default
    /// one it does not serve, with the reason).
    pub fn unknown_provider(&self, id: &str) -> String {
        let ids: Vec<&str> = self.providers.keys().map(String::as_str).collect();
        let mut message = format!(
            "provider: {id:?} is not a provider of this server; it has: {}",
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
}

/// A declared provider's link: its spec, the adapter it was linked from, the plugin it runs.
type DeclaredLink = (DeclaredProvider, Arc<Plugin>, Arc<Plugin>);

/// What the folder held at the last scan, per `.wasm` file.
#[derive(Clone)]
struct FolderEntry {
    /// SHA-256 of the component and the manifest: unchanged files are not loaded again.
    fingerprint: [u8; 32],
    /// The last version that loaded.
    good: Option<Arc<Plugin>>,
    /// Why the current files did not load, if they did not.
    load_error: Option<String>,
    /// Why the loaded version is not serving (an id or tool name taken), if it is not.
    conflict: Option<String>,
}

pub struct PluginHost {
    loader: Loader,
    // A std lock: replaced whole when the configuration changes, read to clone.
    bundled: RwLock<Vec<Arc<Plugin>>>,
    dir: Option<PathBuf>,
    /// The environment's configuration, which a reloaded file is applied on top of (`None`: a
    /// host that does not reload one).
    config: Option<Config>,
    /// Declared providers as last linked: reused while their spec and adapter are unchanged.
    declared: Mutex<Vec<DeclaredLink>>,
    // A tokio mutex: a scan holds it across loads (awaits), and scans must not interleave.
    folder: tokio::sync::Mutex<BTreeMap<PathBuf, FolderEntry>>,
    // A std lock, not a tokio one: held only to clone or replace an Arc, never across an await.
    current: RwLock<Arc<Snapshot>>,
    catalog: Arc<ToolCatalog>,
    /// What the last scan refused (a std lock: read without awaiting, e.g. by `plugins list`).
    refused: Mutex<Vec<Refused>>,
    /// Bumped after every scan of the folder, whatever it found (tests and tools await it).
    scans: watch::Sender<u64>,
    /// Keeps the folder watcher alive; dropped with the host.
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    /// Keeps the configuration file's watcher alive.
    config_watcher: Mutex<Option<notify::RecommendedWatcher>>,
}

/// A plugin that could not be used, and why.
#[derive(Clone, Debug)]
pub struct Refused {
    pub path: PathBuf,
    pub reason: String,
}

impl PluginHost {
    /// The server's plugins: the bundled ones and PLUGINS_DIR's, compiled through the disk
    /// cache, with the folder and the configuration file watched for changes.
    pub async fn start(config: &Config) -> Result<Arc<Self>, LoadError> {
        let host = Self::from_config(config).await?;
        host.watch_folder().map_err(|e| LoadError::Io {
            path: host.dir().map(Path::to_path_buf).unwrap_or_default(),
            reason: format!("cannot watch PLUGINS_DIR: {e}"),
        })?;
        host.watch_config().map_err(|e| LoadError::Io {
            path: config.config.clone().unwrap_or_default(),
            reason: format!("cannot watch the configuration file: {e}"),
        })?;
        // What changed between the first scan and the watch starting has no event: look again
        // (unchanged files are not loaded twice).
        if host.dir().is_some() {
            host.rescan().await;
        }
        Ok(host)
    }

    /// Rescans the folder when it changes (nothing to do without one). The watcher lives as
    /// long as the host; the task holds only a weak handle, so it ends when the host is dropped.
    fn watch_folder(self: &Arc<Self>) -> notify::Result<()> {
        let Some(dir) = self.dir() else {
            return Ok(());
        };
        let weak = Arc::downgrade(self);
        let watcher = super::watch::folder(dir, move || {
            let host = weak.upgrade();
            async move {
                let Some(host) = host else { return false };
                host.rescan().await;
                true
            }
        })?;
        *self.watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(watcher);
        tracing::info!("watching {} for plugin changes", dir.display());
        Ok(())
    }

    /// Reloads the configuration file when it changes, if there is one: a reload reads and
    /// checks it whole, and a file that cannot be used is refused with one log line while the
    /// last good configuration keeps serving ([`Self::reconfigure`]).
    fn watch_config(self: &Arc<Self>) -> notify::Result<()> {
        let Some(path) = self.config_path().map(Path::to_path_buf) else {
            return Ok(());
        };
        let weak = Arc::downgrade(self);
        let watcher = super::watch::file(&path, move || {
            let host = weak.upgrade();
            async move {
                let Some(host) = host else { return false };
                host.reload_config().await;
                true
            }
        })?;
        *self
            .config_watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(watcher);
        tracing::info!("watching {} for configuration changes", path.display());
        Ok(())
    }

    /// As [`Self::start`], without watching anything (`chatd plugins list`). A configuration
    /// file that cannot be used stops it, as an invalid variable does.
    pub async fn from_config(config: &Config) -> Result<Arc<Self>, LoadError> {
        let engine =
            super::engine::new_engine().map_err(|e| LoadError::Engine(format!("{e:#}")))?;
        let file = match &config.config {
            Some(path) => {
                Some(FileConfig::load(path).map_err(|e| LoadError::Config(e.to_string()))?)
            }
            None => None,
        };
        for warning in file.iter().flat_map(|f| &f.warnings) {
            tracing::warn!("configuration file: {warning}");
        }
        let settings = match &file {
            Some(file) => {
                HostSettings::new(config, file, super::ssh::DevboxAccess::from_config(config))
                    .map_err(LoadError::Config)?
            }
            None => HostSettings::from_config(config),
        };
        let loader = Loader::new(
            engine,
            settings,
            super::cache::folder(config).map(CompileCache::new),
        );
        let host = Self::load_with(
            loader,
            super::bundled::packages(),
            config.plugins_dir.clone(),
            Some(config.clone()),
        )
        .await?;
        if let Some(problem) = host.snapshot().missing_adapter() {
            return Err(LoadError::Config(problem));
        }
        Ok(host)
    }

    /// Loads `bundled` (all must load: a bundled plugin that does not is a bug of this build)
    /// and, when `dir` is given, the folder's plugins. Does not watch the folder; see
    /// [`super::watch`].
    pub async fn load(
        loader: Loader,
        bundled: Vec<Package>,
        dir: Option<PathBuf>,
    ) -> Result<Arc<Self>, LoadError> {
        Self::load_with(loader, bundled, dir, None).await
    }

    async fn load_with(
        loader: Loader,
        bundled: Vec<Package>,
        dir: Option<PathBuf>,
        config: Option<Config>,
    ) -> Result<Arc<Self>, LoadError> {
        if let Some(dir) = &dir
            && !dir.is_dir()
        {
            return Err(LoadError::Io {
                path: dir.clone(),
                reason: "PLUGINS_DIR is not a folder".into(),
            });
        }
        // A devbox tool the operator did not enable is not even compiled.
        let settings = loader.settings();
        let bundled = bundled.into_iter().filter(|package| {
            super::manifest::Manifest::parse(&package.manifest_json)
                .map_or(true, |m| settings.refusal(&m.id).is_none())
        });
        // Compiling runs on the blocking pool, so loading them together uses every core.
        let loads = bundled.map(|package| {
            let loader = loader.clone();
            tokio::spawn(async move { loader.load(package).await })
        });
        let mut loaded = Vec::new();
        for load in loads.collect::<Vec<_>>() {
            let plugin = load.await.map_err(|e| LoadError::Compile {
                id: String::new(),
                reason: format!("a load task failed: {e}"),
            })??;
            loaded.push(Arc::new(plugin));
        }
        let host = Arc::new(Self {
            loader,
            bundled: RwLock::new(loaded),
            dir,
            config,
            declared: Mutex::default(),
            folder: Default::default(),
            current: Default::default(),
            catalog: Arc::new(ToolCatalog::default()),
            refused: Mutex::default(),
            scans: watch::Sender::new(0),
            watcher: Mutex::new(None),
            config_watcher: Mutex::new(None),
        });
        host.rescan().await;
        Ok(host)
    }

    pub fn loader(&self) -> &Loader {
        &self.loader
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The configuration file, when the operator gave one.
    pub fn config_path(&self) -> Option<&Path> {
        self.config.as_ref()?.config.as_deref()
    }

    /// Reads the configuration file again and applies it; a file that cannot be used is refused
    /// with one log line, and the configuration serving keeps serving.
    pub async fn reload_config(&self) {
        let Some(path) = self.config_path() else {
            return;
        };
        let applied = match FileConfig::load(path) {
            Ok(file) => {
                for warning in &file.warnings {
                    tracing::warn!("configuration file: {warning}");
                }
                self.reconfigure(&file).await
            }
            Err(e) => Err(e.to_string()),
        };
        telemetry::metrics::config_reload(applied.is_ok());
        match applied {
            Ok(()) => tracing::info!("configuration file {} applied", path.display()),
            Err(why) => {
                tracing::error!(
                    "configuration file refused: {why}; the previous configuration keeps serving"
                );
                // Observers (tests, `scans`) learn that the file was looked at.
                self.scans.send_modify(|n| *n += 1);
            }
        }
    }

    /// The plugins serving now; keep the `Arc` for as long as a call runs.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The tool list that `GET /v1/chat-tools` and chat defaults read; kept in step with every
    /// swap.
    pub fn catalog(&self) -> Arc<ToolCatalog> {
        self.catalog.clone()
    }

    /// Counts finished folder scans.
    pub fn scans(&self) -> watch::Receiver<u64> {
        self.scans.subscribe()
    }

    /// Folder files that are not serving, with the reason, as of the last scan.
    pub fn refused(&self) -> Vec<Refused> {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Reads the folder again: loads what changed, drops what is gone, swaps in the result.
    pub async fn rescan(&self) {
        let mut folder = self.folder.lock().await;
        if let Some(dir) = &self.dir {
            let files = match wasm_files(dir) {
                Ok(files) => files,
                Err(e) => {
                    tracing::error!("cannot read PLUGINS_DIR {}: {e}", dir.display());
                    drop(folder);
                    self.scans.send_modify(|n| *n += 1);
                    return;
                }
            };
            folder.retain(|path, entry| {
                let kept = files.contains(path);
                if !kept && let Some(plugin) = &entry.good {
                    tracing::info!(plugin = plugin.id(), "plugin removed: {}", path.display());
                }
                kept
            });
            for path in files {
                self.scan_file(&mut folder, path).await;
            }
        }
        let bundled = self.bundled();
        let snapshot = self.assemble(&self.loader, &bundled, &mut folder).await;
        self.publish(snapshot, &folder);
        drop(folder);
        self.scans.send_modify(|n| *n += 1);
    }

    /// The bundled plugins as linked under the current settings.
    fn bundled(&self) -> Vec<Arc<Plugin>> {
        self.bundled
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Makes `snapshot` the one serving, with the tool catalogue and the refusals in step.
    fn publish(&self, snapshot: Snapshot, folder: &BTreeMap<PathBuf, FolderEntry>) {
        self.catalog.replace(
            snapshot
                .tool_specs()
                .into_iter()
                .map(|spec| ToolInfo {
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                })
                .collect(),
        );
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(snapshot);
        *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = folder
            .iter()
            .filter_map(|(path, entry)| {
                let reason = entry.load_error.as_ref().or(entry.conflict.as_ref())?;
                Some(Refused {
                    path: path.clone(),
                    reason: reason.clone(),
                })
            })
            .collect();
    }

    /// Applies a configuration file that was just read: every plugin linked again under the
    /// settings it gives, and the result swapped in. Refused, with nothing changed, when it gives
    /// a loaded plugin a setting of the wrong type, breaks a bundled plugin, or names an adapter no
    /// plugin offers; a folder plugin it refuses otherwise (a service no longer granted to it)
    /// stops serving (its file's entry says why).
    pub async fn reconfigure(&self, file: &FileConfig) -> Result<(), String> {
        let Some(config) = &self.config else {
            return Err("this plugin host does not read a configuration file".into());
        };
        let mut folder = self.folder.lock().await;
        // A wrong type for a loaded plugin's setting is an invalid file, not a plugin to drop.
        let loaded = self.bundled().into_iter();
        for plugin in loaded.chain(folder.values().filter_map(|e| e.good.clone())) {
            let manifest = plugin.manifest();
            let id = manifest.id.as_str();
            super::settings::check(manifest, id, file.plugin_settings.get(id))?;
        }
        let current = self.loader.settings();
        let settings = HostSettings::new(config, file, current.devbox.clone())?;
        let loader = self.loader.with_settings(settings);
        let mut bundled = Vec::new();
        for plugin in self.bundled() {
            bundled.push(Arc::new(
                loader.relink(&plugin).await.map_err(|e| e.to_string())?,
            ));
        }
        let mut next: BTreeMap<PathBuf, FolderEntry> = BTreeMap::new();
        for (path, entry) in folder.iter() {
            let mut entry = entry.clone();
            if let Some(good) = entry.good.take() {
                match loader.relink(&good).await {
                    Ok(plugin) => {
                        entry.good = Some(Arc::new(plugin));
                        entry.load_error = None;
                    }
                    Err(e) => {
                        tracing::error!("plugin file {} refused: {e}", path.display());
                        entry.load_error = Some(e.to_string());
                    }
                }
            }
            next.insert(path.clone(), entry);
        }
        let snapshot = self.assemble(&loader, &bundled, &mut next).await;
        if let Some(problem) = snapshot.missing_adapter() {
            return Err(problem);
        }
        self.loader.set_settings((*loader.settings()).clone());
        *self.bundled.write().unwrap_or_else(|e| e.into_inner()) = bundled;
        *folder = next;
        self.publish(snapshot, &folder);
        drop(folder);
        self.scans.send_modify(|n| *n += 1);
        Ok(())
    }

    async fn scan_file(&self, folder: &mut BTreeMap<PathBuf, FolderEntry>, path: PathBuf) {
        let package = Package::read(&path);
        let fingerprint = match &package {
            Ok(p) => fingerprint(p),
            Err(_) => [0; 32],
        };
        // Unchanged and loaded: nothing to do. A file that failed is tried again (the failure
        // may have been passing: a describe timing out under load).
        if folder.get(&path).is_some_and(|e| {
            e.fingerprint == fingerprint && fingerprint != [0; 32] && e.load_error.is_none()
        }) {
            return;
        }
        let loaded = match package {
            Ok(package) => self.loader.load(package).await,
            Err(e) => Err(e),
        };
        let entry = folder.entry(path.clone()).or_insert(FolderEntry {
            fingerprint,
            good: None,
            load_error: None,
            conflict: None,
        });
        entry.fingerprint = fingerprint;
        match loaded {
            Ok(plugin) => {
                // Operators see what a folder plugin holds when it arrives.
                tracing::info!(
                    plugin = plugin.id(),
                    version = plugin.manifest().version.as_deref().unwrap_or("-"),
                    "plugin loaded from {}; grants: {}",
                    path.display(),
                    if plugin.grants.is_empty() {
                        "none".to_string()
                    } else {
                        plugin.grants.join("; ")
                    }
                );
                telemetry::metrics::plugin_load(plugin.id(), true);
                entry.good = Some(Arc::new(plugin));
                entry.load_error = None;
            }
            Err(e) => {
                // Its id may be unreadable: the file's name, the operator's, stands for it.
                let stem = path.file_stem().unwrap_or_default().to_string_lossy();
                telemetry::metrics::plugin_load(&stem, false);
                let keeps = match &entry.good {
                    Some(old) => format!("; the previous version of {} keeps serving", old.id()),
                    None => String::new(),
                };
                tracing::error!("plugin file {} refused: {e}{keeps}", path.display());
                entry.load_error = Some(e.to_string());
            }
        }
    }

    /// Bundled plugins, then folder plugins by file name, then the providers, under the rules
    /// of the module docs and `loader`'s settings.
    async fn assemble(
        &self,
        loader: &Loader,
        bundled: &[Arc<Plugin>],
        folder: &mut BTreeMap<PathBuf, FolderEntry>,
    ) -> Snapshot {
        let settings = loader.settings();
        let plugins = served(&settings, bundled, folder);
        let (plugins, tools) = claim_tools(bundled, plugins, folder);
        let (providers, missing_adapter) = self.providers(loader, &settings, &plugins).await;
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
        &self,
        loader: &Loader,
        settings: &HostSettings,
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
                    match self.declared_provider(loader, plugins, declared).await {
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
        *self.declared.lock().unwrap_or_else(|e| e.into_inner()) = declared_now;
        for plugin in plugins {
            let own_id = plugin.as_provider().is_some()
                && matches!(plugin.source, super::load::Source::File(_))
                && !served.contains_key(plugin.id());
            if own_id {
                let provider = ServedProvider {
                    id: plugin.id().to_string(),
                    profile: plugin.profile.clone().unwrap_or_default(),
                    plugin: Some(plugin.clone()),
                    models: None,
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
        &self,
        loader: &Loader,
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
                        .filter(|p| matches!(p.source, super::load::Source::File(_)))
                        .map(|p| p.id().to_string()),
                );
                NotLinked::NoAdapter(format!(
                    "providers.{}.adapter: no loaded provider offers {:?}; adapters: {}",
                    spec.id,
                    spec.adapter,
                    known.join(", ")
                ))
            })?;
        let reused = self
            .declared
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
}

/// A provider of `spec`, served by `plugin`.
fn served_provider(
    spec: &ProviderSpec,
    plugin: Option<Arc<Plugin>>,
    error: Option<String>,
    settings: &HostSettings,
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
    settings: &HostSettings,
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
        p.source == super::load::Source::Bundled || bundled.iter().any(|b| b.id() == p.id())
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
        if let super::load::Source::File(path) = &plugin.source
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

/// The folder's `*.wasm` files, sorted by name.
fn wasm_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "wasm") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn fingerprint(package: &Package) -> [u8; 32] {
    let mut digest = Sha256::new();
    digest.update((package.wasm.len() as u64).to_le_bytes());
    digest.update(&package.wasm);
    digest.update(package.manifest_json.as_bytes());
    digest.finalize().into()
}
