//! From bytes to a loaded plugin: parse the manifest, decide its grants, compile (through the
//! disk cache, off the async runtime), link against its world, and for tools ask what they
//! provide. Every step's failure is a [`LoadError`] naming the plugin; nothing half-loaded
//! escapes.

use crate::plugins::package::{Package, Source};
use std::sync::Arc;

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::config::file::DeclaredProvider;
use crate::config::names::Auth;
use crate::egress::services::{Owner, Service, SetBy};
use crate::plugins::LoadError;
use crate::plugins::capabilities;
use crate::plugins::capabilities::operator::OperatorSettings;
use crate::plugins::manifest::{Kind, Manifest};
use crate::plugins::memory::TotalMemory;
use crate::plugins::runtime::cache::{self, CompileCache};
use crate::plugins::worlds::extractor::ExtractorPlugin;
use crate::plugins::worlds::provider::codec::Instances;
use crate::plugins::worlds::provider::{Profile, ProviderPlugin};
use crate::plugins::worlds::search::SearchPlugin;
use crate::plugins::worlds::tool::{ToolPlugin, ToolSpec};

/// How long a plugin may take to describe its tools (or a provider its profile) at load.
const DESCRIBE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A loaded plugin of any world.
pub enum Instance {
    Tool(ToolPlugin),
    Provider(ProviderPlugin),
    Search(SearchPlugin),
    Extractor(ExtractorPlugin),
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
            Instance::Extractor(extractor) => extractor.manifest(),
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

    pub fn as_extractor(&self) -> Option<&ExtractorPlugin> {
        match &self.instance {
            Instance::Extractor(extractor) => Some(extractor),
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
        let (component, from_cache) = self
            .compile(&manifest.id, package.wasm, signed, package.sha256)
            .await?;
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
            capabilities::declared_manifest(adapter.manifest(), &spec.id),
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
        let settings = self.settings();
        let granted =
            capabilities::resolve(&manifest, &source, &settings, self.clients.clone(), own)?;
        // The interpreter's limits are the operator's (CHAT_PYTHON_*), not its manifest's.
        let mut manifest = manifest;
        if granted.caps.files.is_some() {
            manifest.limits.memory_mib = settings.python.memory_mib;
            manifest.limits.timeout_ms = settings.python.timeout.as_millis() as u64;
        }
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
                let mut tools = match tokio::time::timeout(DESCRIBE_LIMIT, tool.describe()).await {
                    Ok(Ok(tools)) => tools,
                    failed => {
                        let reason = match failed {
                            Ok(Err(e)) => e.to_string(),
                            _ => format!("describe did not finish within {DESCRIBE_LIMIT:?}"),
                        };
                        return Err(LoadError::Describe { id, reason });
                    }
                };
                check_tools(&id, &mut tools)?;
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
            Kind::Extractor => {
                let mut extractor = ExtractorPlugin::new(engine, manifest, &component, caps)?;
                match tokio::time::timeout(DESCRIBE_LIMIT, extractor.ask_formats()).await {
                    Ok(Ok(())) => {}
                    failed => {
                        let reason = match failed {
                            Ok(Err(e)) => e.to_string(),
                            _ => format!("formats did not come within {DESCRIBE_LIMIT:?}"),
                        };
                        return Err(LoadError::Describe { id, reason });
                    }
                }
                (Instance::Extractor(extractor), Vec::new(), None)
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

    /// Whether the compile cache holds `package`'s compiled code (its digest known in advance:
    /// a bundled plugin), so loading it takes no compiling.
    pub fn is_cached(&self, package: &Package) -> bool {
        match (&self.cache, package.sha256) {
            (Some(cache), Some(digest)) => cache.holds(&self.engine, &digest),
            _ => false,
        }
    }

    /// Compiling is seconds of CPU work: it runs on the blocking pool, never on a runtime worker.
    async fn compile(
        &self,
        id: &str,
        wasm: Arc<[u8]>,
        signed: bool,
        digest: Option<[u8; 32]>,
    ) -> Result<(Component, bool), LoadError> {
        let (engine, cache, owned_id) = (self.engine.clone(), self.cache.clone(), id.to_string());
        let task = tokio::task::spawn_blocking(move || match cache {
            Some(cache) => cache
                .load(&engine, &owned_id, &wasm, signed, digest)
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
/// a description and a JSON-object parameter schema. The schema is written again from its value,
/// here, once: providers put a tool's schema into their upstream body as the host gives it
/// (`plugin-sdk`'s `raw_tool_schema`), so every schema they send is the host's writing (compact,
/// keys sorted, a key given twice kept once with its last value, numbers as `serde_json` reads
/// them: `1e2` is written `100.0`), as the schemas of clients', MCP servers' and `file_search`'s
/// tools are, and as chatd's providers wrote every schema before they took it raw.
fn check_tools(id: &str, tools: &mut [ToolSpec]) -> Result<(), LoadError> {
    let bad = |reason: String| LoadError::Describe {
        id: id.to_string(),
        reason,
    };
    for i in 0..tools.len() {
        let (before, rest) = tools.split_at_mut(i);
        let tool = &mut rest[0];
        let name = &tool.name;
        if !crate::config::names::is_name(name, b"") {
            return Err(bad(format!(
                "tool name {name:?} must match [a-z0-9_]{{1,64}}"
            )));
        }
        if before.iter().any(|t| &t.name == name) {
            return Err(bad(format!("tool {name} is described twice")));
        }
        if tool.description.trim().is_empty() {
            return Err(bad(format!("tool {name} has no description")));
        }
        match serde_json::from_str::<serde_json::Value>(&tool.parameters_schema_json) {
            Ok(schema @ serde_json::Value::Object(_)) => {
                tool.parameters_schema_json = schema.to_string();
            }
            _ => {
                return Err(bad(format!(
                    "tool {name}: parameters-schema-json must be a JSON object"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, schema: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "does a thing".into(),
            parameters_schema_json: schema.into(),
        }
    }

    #[test]
    fn a_tools_schema_is_written_again_by_the_host_and_a_bad_one_refused() {
        let mut tools = [tool(
            "lookup",
            "{\n  \"type\": \"string\",\n  \"properties\": {\"q\": {\"type\": \"string\"}},\n  \"type\": \"object\",\n  \"required\": [\"q\"]\n}",
        )];
        check_tools("p", &mut tools).unwrap();
        assert_eq!(
            tools[0].parameters_schema_json,
            r#"{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"}"#,
            "compact, keys sorted, the key given twice once with its last value"
        );
        for bad in ["[]", "{\"type\": ", ""] {
            let err = check_tools("p", &mut [tool("lookup", bad)]).unwrap_err();
            assert!(
                err.to_string().contains("must be a JSON object"),
                "{bad:?}: {err}"
            );
        }
        let err = check_tools("p", &mut [tool("a", "{}"), tool("a", "{}")]).unwrap_err();
        assert!(err.to_string().contains("described twice"), "{err}");
    }
}
