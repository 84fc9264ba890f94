//! The plugins this server runs: the bundled ones, overridden or joined by PLUGINS_DIR's, swapped
//! atomically when that folder changes.
//!
//! Readers take the current [`Snapshot`] (an `Arc`) and keep it for the call: a reload builds a
//! new snapshot and swaps the pointer, so a call in flight finishes on the version it started
//! with, and no reader ever sees half a reload.
//! How a snapshot is assembled is `snapshot.rs`'s; the folder's files are `folder.rs`'s. The
//! configuration file is applied the same way ([`PluginHost::reconfigure`]): every plugin is
//! linked again under the new settings and the result swapped in at once, or, when the new
//! settings break a bundled plugin or name an adapter no plugin offers, nothing changes.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::watch;

use crate::config::Config;
use crate::config::file::FileConfig;
use crate::plugins::LoadError;
use crate::plugins::capabilities::operator::OperatorSettings;
use crate::plugins::loading::folder::FolderEntry;
use crate::plugins::loading::load::{Loader, Plugin};
use crate::plugins::loading::snapshot::{DeclaredLink, Snapshot};
use crate::plugins::memory::TotalMemory;
use crate::plugins::package::Package;
use crate::plugins::trust::Trust;
use crate::telemetry;

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
    /// The configuration file as last applied.
    config_file: watch::Sender<Option<Arc<FileConfig>>>,
    /// What the last scan refused (a std lock: read without awaiting, e.g. by `plugins list`).
    refused: Mutex<Vec<Refused>>,
    /// Bumped after every scan of the folder, whatever it found (tests and tools await it).
    scans: watch::Sender<u64>,
    /// Keeps the folder watcher alive; dropped with the host.
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    /// Keeps the configuration file's watcher alive.
    config_watcher: Mutex<Option<notify::RecommendedWatcher>>,
    /// PLUGINS_DIR's first load is still running ([`Self::start_in_background`]).
    folder_loading: AtomicBool,
    /// The bundled interpreter is compiling after the server started listening (a first boot:
    /// [`Self::start_in_background`]).
    interpreter_loading: AtomicBool,
    /// Which folder files may load (the lock file, the operator's signing keys).
    trust: Trust,
}

/// A plugin that could not be used, and why.
#[derive(Clone, Debug)]
pub struct Refused {
    pub path: PathBuf,
    pub reason: String,
}

impl PluginHost {
    /// The server's plugins: the bundled ones and PLUGINS_DIR's, compiled through the disk
    /// cache, with the folder and the configuration file watched for changes. Returns once the
    /// folder has loaded (tests, benchmarks); the server uses [`Self::start_in_background`].
    pub async fn start(config: &Config) -> Result<Arc<Self>, LoadError> {
        let host = Self::from_config_with(config, true).await?;
        host.watch(config)?;
        // What changed between the first scan and the watch starting has no event: look again
        // (unchanged files are not loaded twice).
        if host.dir().is_some() {
            host.rescan().await;
        }
        Ok(host)
    }

    /// As [`Self::start`], but returns once the bundled plugins have loaded: PLUGINS_DIR's are
    /// compiled in a task (a Python component takes seconds), and each serves once the folder's
    /// first scan publishes it; [`Self::folder_loading`] says until when. The one exception:
    /// when the configuration file declares a provider on an adapter only a folder plugin
    /// offers, the folder loads first, so such a file is still refused at startup.
    ///
    /// The bundled interpreter is compiled in a task too when the compile cache does not hold
    /// it (a first boot: 54 MB of Python take seconds of Cranelift); the `python` tool is
    /// offered once it is, and [`Self::loading`] says until when.
    pub async fn start_in_background(config: &Config) -> Result<Arc<Self>, LoadError> {
        let (host, deferred) = Self::from_config_deferring(config, false).await?;
        host.watch(config)?;
        if !deferred.is_empty() {
            host.interpreter_loading.store(true, Ordering::Relaxed);
            let host = host.clone();
            tokio::spawn(async move { host.load_deferred(deferred).await });
        }
        if host.dir().is_some() {
            host.folder_loading.store(true, Ordering::Relaxed);
            let host = host.clone();
            tokio::spawn(async move {
                // Cleared however the scan ends (a panic in it too): `/ready` must not wait on a
                // scan that is gone.
                struct Loaded<'a>(&'a AtomicBool);
                impl Drop for Loaded<'_> {
                    fn drop(&mut self) {
                        self.0.store(false, Ordering::Relaxed);
                    }
                }
                let loaded = Loaded(&host.folder_loading);
                let started = std::time::Instant::now();
                host.rescan().await;
                drop(loaded);
                let snapshot = host.snapshot();
                tracing::info!(
                    "{} plugins loaded in {} ms ({} from the compile cache), PLUGINS_DIR's \
                     {} in the background",
                    snapshot.plugins.len(),
                    started.elapsed().as_millis(),
                    snapshot.plugins.iter().filter(|p| p.from_cache).count(),
                    host.folder_plugins(),
                );
            });
        }
        Ok(host)
    }

    /// Whether PLUGINS_DIR's first load is still running (`/ready` waits for it).
    pub fn folder_loading(&self) -> bool {
        self.folder_loading.load(Ordering::Relaxed)
    }

    /// What is still loading after the server started listening, if anything (`/ready` waits
    /// for it).
    pub fn loading(&self) -> Option<&'static str> {
        if self.folder_loading() {
            return Some(
                "the plugins in PLUGINS_DIR are still loading (compiling); their tools are not \
                 served yet",
            );
        }
        self.interpreter_loading
            .load(Ordering::Relaxed)
            .then_some("the python tool's interpreter is still compiling (a first start)")
    }

    /// Loads bundled packages left for after the start, adds them to the bundled plugins and
    /// publishes them. One that fails is logged: the rest of chatd serves on.
    async fn load_deferred(self: Arc<Self>, deferred: Vec<Package>) {
        let started = std::time::Instant::now();
        let mut loaded = Vec::new();
        for package in deferred {
            match self.loader.load(package).await {
                Ok(plugin) => {
                    loaded.push(plugin.id().to_string());
                    self.bundled
                        .write()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(Arc::new(plugin));
                }
                Err(e) => tracing::error!("a bundled plugin did not load: {e}"),
            }
        }
        self.scan(false).await;
        self.interpreter_loading.store(false, Ordering::Relaxed);
        // Said once it serves and /ready counts it (tests wait for this line).
        for id in loaded {
            tracing::info!(
                plugin = id,
                "compiled in the background in {} ms",
                started.elapsed().as_millis()
            );
        }
    }

    /// How many of the serving plugins came from PLUGINS_DIR.
    fn folder_plugins(&self) -> usize {
        let bundled = self.bundled();
        let snapshot = self.snapshot();
        snapshot
            .plugins
            .iter()
            .filter(|p| !bundled.iter().any(|b| Arc::ptr_eq(b, p)))
            .count()
    }

    fn watch(self: &Arc<Self>, config: &Config) -> Result<(), LoadError> {
        self.watch_folder().map_err(|e| LoadError::Io {
            path: self.dir().map(Path::to_path_buf).unwrap_or_default(),
            reason: format!("cannot watch PLUGINS_DIR: {e}"),
        })?;
        self.watch_config().map_err(|e| LoadError::Io {
            path: config.config.clone().unwrap_or_default(),
            reason: format!("cannot watch the configuration file: {e}"),
        })
    }

    /// Rescans the folder when it changes (nothing to do without one). The watcher lives as
    /// long as the host; the task holds only a weak handle, so it ends when the host is dropped.
    fn watch_folder(self: &Arc<Self>) -> notify::Result<()> {
        let Some(dir) = self.dir() else {
            return Ok(());
        };
        let weak = Arc::downgrade(self);
        let watcher = crate::plugins::loading::watcher::folder(dir, move || {
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
        let watcher = crate::plugins::loading::watcher::file(&path, move || {
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
        Self::from_config_with(config, true).await
    }

    /// [`Self::from_config`]; the folder is read only when `scan_folder` is set (or a declared
    /// provider's adapter is not among the bundled plugins').
    async fn from_config_with(config: &Config, scan_folder: bool) -> Result<Arc<Self>, LoadError> {
        let (host, deferred) = Self::from_config_deferring(config, scan_folder).await?;
        if !deferred.is_empty() {
            // Not a server start: whoever asked waits for all of it.
            host.clone().load_deferred(deferred).await;
        }
        Ok(host)
    }

    /// [`Self::from_config_with`], leaving out (and returning) the bundled interpreter when
    /// `scan_folder` is unset (a server start) and the compile cache does not hold it.
    async fn from_config_deferring(
        config: &Config,
        scan_folder: bool,
    ) -> Result<(Arc<Self>, Vec<Package>), LoadError> {
        let engine = crate::plugins::runtime::engine::new_engine()
            .map_err(|e| LoadError::Engine(format!("{e:#}")))?;
        let file = match &config.config {
            Some(path) => Some(read_file(path).map_err(LoadError::Config)?),
            None => None,
        };
        for warning in file.iter().flat_map(|f| &f.warnings) {
            tracing::warn!("configuration file: {warning}");
        }
        let settings = match &file {
            Some(file) => OperatorSettings::new(
                config,
                file,
                crate::plugins::capabilities::ssh::DevboxAccess::from_config(config),
            )
            .map_err(LoadError::Config)?,
            None => OperatorSettings::from_config(config),
        };
        let loader = Loader::new(
            engine,
            settings,
            crate::plugins::runtime::cache::for_server(config),
        )
        .with_total_memory(TotalMemory::new(
            (config.plugin_memory_total_mib() as usize).saturating_mul(1 << 20),
        ));
        let trust = Trust::from_config(config).map_err(LoadError::Config)?;
        let (mut packages, mut deferred) = (crate::plugins::loading::embedded::packages(), vec![]);
        if !scan_folder {
            let slow = |p: &Package| {
                crate::plugins::manifest::Manifest::parse(&p.manifest_json)
                    .is_ok_and(|m| m.id == crate::plugins::builtin::INTERPRETER)
                    && !loader.is_cached(p)
            };
            (deferred, packages) = packages.into_iter().partition(slow);
        }
        let host = Self::load_with(
            loader,
            packages,
            config.plugins_dir.clone(),
            Some(config.clone()),
            scan_folder,
            trust,
        )
        .await?;
        if !scan_folder && host.snapshot().missing_adapter().is_some() {
            host.rescan().await;
        }
        if let Some(problem) = host.snapshot().missing_adapter() {
            return Err(LoadError::Config(problem));
        }
        if let Some(file) = file {
            host.config_file.send_replace(Some(Arc::new(file)));
        }
        Ok((host, deferred))
    }

    /// Loads `bundled` (all must load: a bundled plugin that does not is a bug of this build)
    /// and, when `dir` is given, the folder's plugins. Does not watch the folder; see
    /// [`crate::plugins::loading::watcher`].
    pub async fn load(
        loader: Loader,
        bundled: Vec<Package>,
        dir: Option<PathBuf>,
    ) -> Result<Arc<Self>, LoadError> {
        Self::load_with(loader, bundled, dir, None, true, Trust::default()).await
    }

    async fn load_with(
        loader: Loader,
        bundled: Vec<Package>,
        dir: Option<PathBuf>,
        config: Option<Config>,
        scan_folder: bool,
        trust: Trust,
    ) -> Result<Arc<Self>, LoadError> {
        if let Some(dir) = &dir
            && !dir.is_dir()
        {
            return Err(LoadError::Io {
                path: dir.clone(),
                reason: "PLUGINS_DIR is not a folder".into(),
            });
        }
        // A devbox tool the operator did not enable, or the interpreter its variable turned off,
        // is not even compiled.
        let settings = loader.settings();
        let bundled = bundled.into_iter().filter(|package| {
            crate::plugins::manifest::Manifest::parse(&package.manifest_json)
                .map_or(true, |m| settings.not_compiled(&m.id).is_none())
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
            config_file: watch::Sender::new(None),
            refused: Mutex::default(),
            scans: watch::Sender::new(0),
            watcher: Mutex::new(None),
            config_watcher: Mutex::new(None),
            folder_loading: AtomicBool::new(false),
            interpreter_loading: AtomicBool::new(false),
            trust,
        });
        host.scan(scan_folder).await;
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
        let applied = match read_file(path) {
            Ok(file) => {
                for warning in &file.warnings {
                    tracing::warn!("configuration file: {warning}");
                }
                self.reconfigure(&file).await
            }
            Err(e) => Err(e),
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

    /// Bytes of freed plugin instance slots kept resident for the next call
    /// (`runtime::engine::KEEP_RESIDENT`); 0 without the instance pool.
    pub fn kept_memory_bytes(&self) -> usize {
        crate::plugins::runtime::engine::kept_bytes(&self.loader.engine)
    }

    /// The plugins serving now; keep the `Arc` for as long as a call runs.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
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
        self.scan(true).await
    }

    /// [`Self::rescan`], or without reading the folder: the bundled plugins alone, published.
    async fn scan(&self, read_folder: bool) {
        let mut folder = self.folder.lock().await;
        if let Some(dir) = self.dir.as_ref().filter(|_| read_folder) {
            let files = match crate::plugins::loading::folder::wasm_files(dir) {
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
            let scan = self.trust.scan();
            for path in files {
                crate::plugins::loading::folder::scan_file(&self.loader, &scan, &mut folder, path)
                    .await;
            }
        }
        let bundled = self.bundled();
        let snapshot = crate::plugins::loading::snapshot::assemble(
            &self.loader,
            &self.declared,
            &bundled,
            &mut folder,
        )
        .await;
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

    /// Makes `snapshot` the one serving, with the refusals in step.
    fn publish(&self, snapshot: Snapshot, folder: &BTreeMap<PathBuf, FolderEntry>) {
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

    /// The configuration file as last applied (`None` without one): the tools layer reads its
    /// `[mcp.NAME]` tables from it.
    pub fn config_file(&self) -> watch::Receiver<Option<Arc<FileConfig>>> {
        self.config_file.subscribe()
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
            crate::plugins::capabilities::config::check(
                manifest,
                id,
                file.plugin_settings.get(id),
            )?;
        }
        let current = self.loader.settings();
        let settings = OperatorSettings::new(config, file, current.devbox.clone())?;
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
        let snapshot = crate::plugins::loading::snapshot::assemble(
            &loader,
            &self.declared,
            &bundled,
            &mut next,
        )
        .await;
        if let Some(problem) = snapshot.missing_adapter() {
            return Err(problem);
        }
        self.loader.set_settings((*loader.settings()).clone());
        *self.bundled.write().unwrap_or_else(|e| e.into_inner()) = bundled;
        *folder = next;
        self.config_file.send_replace(Some(Arc::new(file.clone())));
        self.publish(snapshot, &folder);
        drop(folder);
        self.scans.send_modify(|n| *n += 1);
        Ok(())
    }
}

/// The configuration file at `path`, read and checked whole, the built-in table included; an
/// error is one line naming the file, the key and the rule.
fn read_file(path: &Path) -> Result<FileConfig, String> {
    let file = FileConfig::load(path).map_err(|e| e.to_string())?;
    crate::plugins::capabilities::operator::check_against_builtins(&file)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(file)
}
