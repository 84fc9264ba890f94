//! A loaded `tool` component: describe its tools, invoke one. Each call gets a fresh store and
//! instance (no state survives between calls or chats), the plugin's memory cap, and a
//! wall-clock deadline.

use wasmtime::Engine;
use wasmtime::component::Component;

use super::bindings::tool::ToolPre;
use super::manifest::{Kind, Manifest};
use super::state::{Capabilities, PluginState};
use super::{CallError, CallFn, LoadError, call_in_fresh_store, linker};

pub use super::bindings::imports::chatd::plugin::types::{PluginError, ToolSpec};
pub use super::bindings::tool::chatd::plugin::tool_types::ToolOutput;

pub struct ToolPlugin {
    manifest: Manifest,
    engine: Engine,
    pre: ToolPre<PluginState>,
    caps: Capabilities,
}

impl ToolPlugin {
    /// Links a compiled component against the `tool` world (once; calls reuse the result).
    pub fn new(
        engine: &Engine,
        manifest: Manifest,
        component: &Component,
        caps: Capabilities,
    ) -> Result<Self, LoadError> {
        if manifest.kind != Kind::Tool {
            return Err(LoadError::WrongKind {
                id: manifest.id,
                expected: Kind::Tool,
                found: manifest.kind,
            });
        }
        let linker = linker::tool(engine).map_err(LoadError::link(&manifest.id))?;
        let instance_pre = linker
            .instantiate_pre(component)
            .map_err(LoadError::link(&manifest.id))?;
        let pre = ToolPre::new(instance_pre).map_err(LoadError::link(&manifest.id))?;
        Ok(Self {
            manifest,
            engine: engine.clone(),
            pre,
            caps,
        })
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The tools the component provides.
    pub async fn describe(&self) -> Result<Vec<ToolSpec>, CallError> {
        let pre = self.pre.clone();
        self.call(move |store| {
            Box::pin(async move {
                let tool = pre.instantiate_async(&mut *store).await?;
                tool.call_describe(&mut *store).await
            })
        })
        .await
    }

    /// Runs tool `name` with its JSON arguments. A plugin's own error is `Ok(Err(…))`; a trap,
    /// a timeout or an exhausted limit is `Err(…)`.
    pub async fn invoke(
        &self,
        name: &str,
        arguments_json: &str,
    ) -> Result<Result<ToolOutput, PluginError>, CallError> {
        let (pre, name, args) = (
            self.pre.clone(),
            name.to_string(),
            arguments_json.to_string(),
        );
        self.call(move |store| {
            Box::pin(async move {
                let tool = pre.instantiate_async(&mut *store).await?;
                tool.call_invoke(&mut *store, &name, &args).await
            })
        })
        .await
    }

    async fn call<R: Send + 'static>(&self, f: impl CallFn<R>) -> Result<R, CallError> {
        let state = PluginState::new(&self.manifest, self.caps.clone());
        call_in_fresh_store(&self.engine, &self.manifest, state, f).await
    }
}
