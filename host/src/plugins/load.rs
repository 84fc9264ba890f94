//! From bytes to a loaded plugin: parse the manifest, decide its grants, compile (through the
//! disk cache, off the async runtime), link against its world, and for tools ask what they
//! provide. Every step's failure is a [`LoadError`] naming the plugin; nothing half-loaded
//! escapes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::Engine;
use wasmtime::component::Component;

use super::LoadError;
use super::cache::{self, CompileCache};
use super::codec::Instances;
use super::grants;
use super::manifest::{Kind, Manifest};
use super::memory::TotalMemory;
use super::operator::OperatorSettings;
use super::provider::{Profile, ProviderPlugin};
use super::search::SearchPlugin;
use super::tool::{ToolPlugin, ToolSpec};
use crate::config::file::DeclaredProvider;
use crate::config::names::Auth;
use crate::egress::services::{Owner, Service, SetBy};

/// How long a plugin may take to describe its tools (or a provider its profile) at load.
const DESCRIBE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Where a plugin came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Built with chatd and embedded in the binary.
    Bundled,
    /// A `.wasm` file in PLUGINS_DIR (its manifest beside it as `.json`, or inside it).
    File(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Bundled => f.write_str("bundled"),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A plugin before loading: its manifest's text and its component's bytes.
pub struct Package {
    pub manifest_json: String,
    pub wasm: Arc<[u8]>,
    pub source: Source,
    /// The manifest came from `NAME.json` beside the component, not from inside it: what a
    /// signature or the lock file covers is the component alone (`trust/`).
    pub manifest_beside: bool,
}

impl Package {
    /// Reads `path` (the `.wasm`) and the manifest beside it (`.json`). Either path may be given.
    pub fn read(path: &Path) -> Result<Self, LoadError> {
        let wasm_path = path.with_extension("wasm");
        let manifest_path = path.with_extension("json");
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| LoadError::Io {
                path: p.to_path_buf(),
                reason: e.to_string(),
            })
        };
        let wasm = read(&wasm_path)?;
        let not_utf8 = |path: &Path| LoadError::Io {
            path: path.to_path_buf(),
            reason: "the manifest is not UTF-8".into(),
        };
        // The file beside the component, as before; else the one the component carries.
        let mut manifest_beside = false;
        let manifest_json = match std::fs::read(&manifest_path) {
            Ok(bytes) => {
                manifest_beside = true;
                String::from_utf8(bytes).map_err(|_| not_utf8(&manifest_path))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match embedded_manifest(&wasm) {
                Ok(Some(bytes)) => String::from_utf8(bytes).map_err(|_| not_utf8(&wasm_path))?,
                Ok(None) => {
                    return Err(LoadError::Io {
                        path: manifest_path,
                        reason: format!(
                            "no manifest: neither this file nor a `{MANIFEST_SECTION}` \
                                 section in the component"
                        ),
                    });
                }
                Err(reason) => {
                    return Err(LoadError::Io {
                        path: wasm_path,
                        reason,
                    });
                }
            },
            Err(e) => {
                return Err(LoadError::Io {
                    path: manifest_path,
                    reason: e.to_string(),
                });
            }
        };
        Ok(Self {
            manifest_json,
            wasm: wasm.into(),
            source: Source::File(wasm_path),
            manifest_beside,
        })
    }
}

/// The custom section a component may carry its manifest in
/// (`chatd_plugin_sdk::embed_manifest!`), so that a plugin is one `.wasm` file.
pub const MANIFEST_SECTION: &str = "chatd-manifest";

/// The manifest a component carries, if any: the first [`MANIFEST_SECTION`] anywhere in it (the
/// linker keeps a core module's custom sections inside the component).
pub(super) fn embedded_manifest(wasm: &[u8]) -> Result<Option<Vec<u8>>, String> {
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| format!("not a WebAssembly component: {e}"))? {
            wasmparser::Payload::CustomSection(section) if section.name() == MANIFEST_SECTION => {
                return Ok(Some(section.data().to_vec()));
            }
            _ => {}
        }
    }
    Ok(None)
}

/// A loaded plugin of any world.
pub enum Instance {
    Tool(ToolPlugin),
    Provider(ProviderPlugin),
    Search(SearchPlugin),
}

/// One loaded plugin: what it is, where it came from, what it holds, and for tools what it
/// provides (asked once at load).
pub struct Plugin {
    pub source: Source,
    /// Its grants, a line each, for operators.
    pub grants: Vec<String>,
    /// The tools of a `tool` plugin; empty for other kinds.
    pub tools: Vec<ToolSpec>,
    pub instance: Instance,
    /// Whether the code came from the compile cache.
    pub from_cache: bool,
    /// The compiled code, kept to link it again when the operator's configuration changes, or
    /// under a declared provider's id.
    pub component: Component,
    /// A provider's profile; `None` for other kinds.
    pub profile: Option<Profile>,
}

impl Plugin {
    pub fn manifest(&self) -> &Manifest {
        match &self.instance {
            Instance::Tool(tool) => tool.manifest(),
            Instance::Provider(provider) => provider.manifest(),
            Instance::Search(search) => search.manifest(),
        }
    }

    pub fn id(&self) -> &str {
        &self.manifest().id
    }

    pub fn as_tool(&self) -> Option<&ToolPlugin> {
        match &self.instance {
            Instance::Tool(tool) => Some(tool),
            _ => None,
        }
    }

    pub fn as_provider(&self) -> Option<&ProviderPlugin> {
        match &self.instance {
            Instance::Provider(provider) => Some(provider),
            _ => None,
        }
    }

    pub fn as_search(&self) -> Option<&SearchPlugin> {
        match &self.instance {
            Instance::Search(search) => Some(search),
            _ => None,
        }
    }
}

/// Loads packages with one engine, the operator's settings (replaced when the configuration file
/// changes) and one HTTP connection pool.
#[derive(Clone)]
pub struct Loader {
    pub engine: Engine,
    settings: Arc<std::sync::RwLock<Arc<OperatorSettings>>>,
    pub cache: Option<CompileCache>,
    clients: crate::egress::Clients,
    /// The memory all instances of the plugins it loads share (CHATD_PLUGIN_MEMORY_TOTAL_MIB).
    memory: TotalMemory,
}

impl Loader {
    pub fn new(engine: Engine, settings: OperatorSettings, cache: Option<CompileCache>) -> Self {
        Self {
            engine,
            settings: Arc::new(std::sync::RwLock::new(Arc::new(settings))),
            cache,
            clients: crate::egress::Clients::new(),
            memory: TotalMemory::unlimited(),
        }
    }

    /// This loader, its plugins' instances holding at most `memory` together.
    pub fn with_total_memory(self, memory: TotalMemory) -> Self {
        Self { memory, ..self }
    }

    /// The memory its plugins' instances share.
    pub fn total_memory(&self) -> &TotalMemory {
        &self.memory
    }

    /// The operator's settings plugins are granted under now.
    pub fn settings(&self) -> Arc<OperatorSettings> {
        self.settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A loader like this one (engine, cache, connection pools) whose grants follow `settings`.
    pub fn with_settings(&self, settings: OperatorSettings) -> Self {
        Self {
            settings: Arc::new(std::sync::RwLock::new(Arc::new(settings))),
            ..self.clone()
        }
    }

    /// Grants from now on follow `settings`; plugins loaded before keep theirs until linked
    /// again.
    pub fn set_settings(&self, settings: OperatorSettings) {
        *self.settings.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(settings);
    }

    pub async fn load(&self, package: Package) -> Result<Plugin, LoadError> {
        self.load_admitted(package, false).await
    }

    /// [`Self::load`] of a package admitted by the operator's trust (`trust::Scan::admit`);
    /// `signed`: by its signature, which the compile cache must not undercut (`cache.rs`).
    pub async fn load_admitted(&self, package: Package, signed: bool) -> Result<Plugin, LoadError> {
        let manifest = Manifest::parse(&package.manifest_json)?;
        let (component, from_cache) = self.compile(&manifest.id, package.wasm, signed).await?;
        self.link(package.source, manifest, component, from_cache, None, None)
            .await
    }

    /// `plugin` linked again under the current settings (its grants decided again).
    pub async fn relink(&self, plugin: &Plugin) -> Result<Plugin, LoadError> {
        self.link(
            plugin.source.clone(),
            plugin.manifest().clone(),
            plugin.component.clone(),
            plugin.from_cache,
            None,
            plugin.profile.clone(),
        )
        .await
    }

    /// A declared provider: `adapter`'s component under `spec`'s id, with `spec`'s upstream as
    /// its service and nothing of the adapter's grants. Its key goes on the wire as `spec.auth`
    /// says, else as the adapter's profile says its upstream expects.
    pub async fn declared(
        &self,
        adapter: &Plugin,
        spec: &DeclaredProvider,
    ) -> Result<Plugin, LoadError> {
        let profile = adapter.profile.clone().unwrap_or_default();
        let auth = spec.auth.clone().unwrap_or(match &profile.key_header {
            Some(header) => Auth::Header(header.clone()),
            None => Auth::Bearer,
        });
        let service = Service {
            name: spec.id.clone(),
            base_url: Some(spec.base_url.clone()),
            key: spec.api_key.clone(),
            auth,
            headers: spec.headers.clone(),
            owners: vec![Owner::of_kind(&spec.id, Kind::Provider.as_str())],
            base_url_key: format!("{}_base_url", spec.id),
            set_by: SetBy::File(format!("[providers.{}]", spec.id)),
        };
        self.link(
            adapter.source.clone(),
            grants::declared_manifest(adapter.manifest(), &spec.id),
            adapter.component.clone(),
            adapter.from_cache,
            Some(&service),
            Some(profile),
        )
        .await
    }

    /// Decides `manifest`'s grants under the current settings (with `own`, a declared provider's
    /// upstream) and links `component` against its world; for a tool asks what it provides, for
    /// a provider its profile (unless `profile` is already known).
    async fn link(
        &self,
        source: Source,
        manifest: Manifest,
        component: Component,
        from_cache: bool,
        own: Option<&Service>,
        profile: Option<Profile>,
    ) -> Result<Plugin, LoadError> {
        let granted = grants::resolve(&manifest, &self.settings(), self.clients.clone(), own)?;
        for warning in &granted.warnings {
            tracing::warn!(plugin = manifest.id, "{warning}");
        }
        let (mut caps, grant_lines) = (granted.caps, granted.lines);
        caps.memory = self.memory.clone();
        let (engine, id, kind) = (&self.engine, manifest.id.clone(), manifest.kind);
        let (instance, tools, profile) = match kind {
            Kind::Tool => {
                let tool = ToolPlugin::new(engine, manifest, &component, caps)?;
                // Its own limit, not the manifest's (up to 15 minutes): a plugin that cannot say
                // what it provides must not hold up a reload for long.
                let tools = match tokio::time::timeout(DESCRIBE_LIMIT, tool.describe()).await {
                    Ok(Ok(tools)) => tools,
                    failed => {
                        let reason = match failed {
                            Ok(Err(e)) => e.to_string(),
                            _ => format!("describe did not finish within {DESCRIBE_LIMIT:?}"),
                        };
                        return Err(LoadError::Describe { id, reason });
                    }
                };
                check_tools(&id, &tools)?;
                (Instance::Tool(tool), tools, None)
            }
            Kind::Provider => {
                // Only chatd's own providers decode turns in shared instances.
                let sharing = match &source {
                    Source::Bundled => Instances::Shared,
                    Source::File(_) => Instances::PerTurn,
                };
                let provider = ProviderPlugin::new(engine, manifest, &component, caps, sharing)?;
                let profile = match profile {
                    Some(known) => known,
                    None => match tokio::time::timeout(DESCRIBE_LIMIT, provider.profile()).await {
                        Ok(Ok(Ok(profile))) => profile,
                        Ok(Ok(Err(reason))) => return Err(LoadError::Profile { id, reason }),
                        Ok(Err(e)) => {
                            return Err(LoadError::Profile {
                                id,
                                reason: e.to_string(),
                            });
                        }
                        Err(_) => {
                            return Err(LoadError::Profile {
                                id,
                                reason: format!(
                                    "its profile did not come within {DESCRIBE_LIMIT:?}"
                                ),
                            });
                        }
                    },
                };
                (Instance::Provider(provider), Vec::new(), Some(profile))
            }
            Kind::Search => {
                let search = SearchPlugin::new(engine, manifest, &component, caps)?;
                (Instance::Search(search), Vec::new(), None)
            }
        };
        Ok(Plugin {
            source,
            grants: grant_lines,
            tools,
            instance,
            from_cache,
            component,
            profile,
        })
    }

    /// Compiling is seconds of CPU work: it runs on the blocking pool, never on a runtime worker.
    async fn compile(
        &self,
        id: &str,
        wasm: Arc<[u8]>,
        signed: bool,
    ) -> Result<(Component, bool), LoadError> {
        let (engine, cache, owned_id) = (self.engine.clone(), self.cache.clone(), id.to_string());
        let task = tokio::task::spawn_blocking(move || match cache {
            Some(cache) => cache
                .load(&engine, &owned_id, &wasm, signed)
                .map(|(c, origin)| (c, origin == cache::Origin::Cache)),
            None => cache::compile(&engine, &owned_id, &wasm).map(|c| (c, false)),
        });
        task.await.map_err(|e| LoadError::Compile {
            id: id.to_string(),
            reason: format!("the compile task failed: {e}"),
        })?
    }
}

/// Tool names are what models call and what chats store: `[a-z0-9_]{1,64}`, once per plugin, with
/// a description and a JSON-object parameter schema.
fn check_tools(id: &str, tools: &[ToolSpec]) -> Result<(), LoadError> {
    let bad = |reason: String| LoadError::Describe {
        id: id.to_string(),
        reason,
    };
    for (i, tool) in tools.iter().enumerate() {
        let name = &tool.name;
        if !crate::config::names::is_name(name, b"") {
            return Err(bad(format!(
                "tool name {name:?} must match [a-z0-9_]{{1,64}}"
            )));
        }
        if tools[..i].iter().any(|t| &t.name == name) {
            return Err(bad(format!("tool {name} is described twice")));
        }
        if tool.description.trim().is_empty() {
            return Err(bad(format!("tool {name} has no description")));
        }
        match serde_json::from_str::<serde_json::Value>(&tool.parameters_schema_json) {
            Ok(serde_json::Value::Object(_)) => {}
            _ => {
                return Err(bad(format!(
                    "tool {name}: parameters-schema-json must be a JSON object"
                )));
            }
        }
    }
    Ok(())
}
