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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::LoadError;
use super::cache::CompileCache;
use super::grants::HostSettings;
use super::load::{Loader, Package, Plugin};
use super::tool::ToolSpec;
use crate::config::Config;
use crate::tools::{ToolCatalog, ToolInfo};

/// The plugins serving right now.
#[derive(Default)]
pub struct Snapshot {
    /// In assembly order.
    pub plugins: Vec<Arc<Plugin>>,
    /// Tool name → the plugin providing it.
    tools: BTreeMap<String, Arc<Plugin>>,
}

impl Snapshot {
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

/// What the folder held at the last scan, per `.wasm` file.
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
    bundled: Vec<Arc<Plugin>>,
    dir: Option<PathBuf>,
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
    pub(super) watcher: Mutex<Option<notify::RecommendedWatcher>>,
}

/// A plugin that could not be used, and why.
#[derive(Clone, Debug)]
pub struct Refused {
    pub path: PathBuf,
    pub reason: String,
}

impl PluginHost {
    /// The server's plugins: the bundled ones and PLUGINS_DIR's, compiled through the disk
    /// cache, with the folder watched for changes.
    pub async fn start(config: &Config) -> Result<Arc<Self>, LoadError> {
        let host = Self::from_config(config).await?;
        super::watch::start(&host).map_err(|e| LoadError::Io {
            path: host.dir().map(Path::to_path_buf).unwrap_or_default(),
            reason: format!("cannot watch PLUGINS_DIR: {e}"),
        })?;
        // What changed between the first scan and the watch starting has no event: look again
        // (unchanged files are not loaded twice).
        if host.dir().is_some() {
            host.rescan().await;
        }
        Ok(host)
    }

    /// As [`Self::start`], without watching the folder (`chatd plugins list`).
    pub async fn from_config(config: &Config) -> Result<Arc<Self>, LoadError> {
        let engine =
            super::engine::new_engine().map_err(|e| LoadError::Engine(format!("{e:#}")))?;
        let loader = Loader::new(
            engine,
            HostSettings::from_config(config),
            config.plugin_cache_dir().map(CompileCache::new),
        );
        Self::load(
            loader,
            super::bundled::packages(),
            config.plugins_dir.clone(),
        )
        .await
    }

    /// Loads `bundled` (all must load: a bundled plugin that does not is a bug of this build)
    /// and, when `dir` is given, the folder's plugins. Does not watch the folder; see
    /// [`super::watch`].
    pub async fn load(
        loader: Loader,
        bundled: Vec<Package>,
        dir: Option<PathBuf>,
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
        let bundled = bundled.into_iter().filter(|package| {
            super::manifest::Manifest::parse(&package.manifest_json)
                .map_or(true, |m| loader.settings.refusal(&m.id).is_none())
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
            bundled: loaded,
            dir,
            folder: Default::default(),
            current: Default::default(),
            catalog: Arc::new(ToolCatalog::default()),
            refused: Mutex::default(),
            scans: watch::Sender::new(0),
            watcher: Mutex::new(None),
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
        let snapshot = self.assemble(&mut folder);
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
        drop(folder);
        self.scans.send_modify(|n| *n += 1);
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
                entry.good = Some(Arc::new(plugin));
                entry.load_error = None;
            }
            Err(e) => {
                let keeps = match &entry.good {
                    Some(old) => format!("; the previous version of {} keeps serving", old.id()),
                    None => String::new(),
                };
                tracing::error!("plugin file {} refused: {e}{keeps}", path.display());
                entry.load_error = Some(e.to_string());
            }
        }
    }

    /// Bundled plugins, then folder plugins by file name, under the rules of the module docs.
    fn assemble(&self, folder: &mut BTreeMap<PathBuf, FolderEntry>) -> Snapshot {
        let plugins = self.served(folder);
        let (plugins, tools) = self.claim_tools(plugins, folder);
        Snapshot { plugins, tools }
    }

    /// The plugins that may serve, by id: the bundled ones (a devbox tool only while the
    /// operator enables it), each replaced by a folder plugin with its id, then the folder's
    /// others. A folder plugin refused here has its entry's `conflict` say why.
    fn served(&self, folder: &mut BTreeMap<PathBuf, FolderEntry>) -> Vec<Arc<Plugin>> {
        let settings = &self.loader.settings;
        let mut plugins: Vec<Arc<Plugin>> = self
            .bundled
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
        &self,
        mut plugins: Vec<Arc<Plugin>>,
        folder: &mut BTreeMap<PathBuf, FolderEntry>,
    ) -> (Vec<Arc<Plugin>>, BTreeMap<String, Arc<Plugin>>) {
        let mut tools: BTreeMap<String, Arc<Plugin>> = BTreeMap::new();
        // Position in `plugins` → what serves there instead (`None`: nothing).
        let mut replaced: Vec<(usize, Option<Arc<Plugin>>)> = Vec::new();
        type Placed<'a> = Vec<(usize, &'a Arc<Plugin>)>;
        let (first, later): (Placed, Placed) = plugins.iter().enumerate().partition(|(_, p)| {
            p.source == super::load::Source::Bundled
                || self.bundled.iter().any(|b| b.id() == p.id())
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
            let fallback = self
                .bundled
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
