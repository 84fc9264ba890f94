//! A loaded `tool` component: describe its tools, invoke one. Each call gets a fresh store and
//! instance (no state survives between calls or chats), the plugin's memory cap, and a
//! wall-clock deadline.

use std::time::Duration;

use wasmtime::Engine;
use wasmtime::component::Component;

use super::bindings::tool::{Tool, ToolPre};
use super::manifest::{Kind, Manifest};
use super::state::{Capabilities, PluginState};
use super::{CallError, LoadError, linker, log_stderr, new_store};

pub use super::bindings::tool::chatd::plugin::tool_types::ToolOutput;
pub use super::bindings::tool::chatd::plugin::types::{PluginError, ToolSpec};

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

    fn deadline(&self) -> Duration {
        Duration::from_millis(self.manifest.limits.timeout_ms)
    }

    /// The tools the component provides.
    pub async fn describe(&self) -> Result<Vec<ToolSpec>, CallError> {
        self.call(|tool, store| Box::pin(async move { tool.call_describe(store).await }))
            .await
    }

    /// Runs tool `name` with its JSON arguments. A plugin's own error is `Ok(Err(…))`; a trap,
    /// a timeout or an exhausted limit is `Err(…)`.
    pub async fn invoke(
        &self,
        name: &str,
        arguments_json: &str,
    ) -> Result<Result<ToolOutput, PluginError>, CallError> {
        let (name, args) = (name.to_string(), arguments_json.to_string());
        self.call(move |tool, store| {
            Box::pin(async move { tool.call_invoke(store, &name, &args).await })
        })
        .await
    }

    async fn call<R: Send + 'static>(
        &self,
        f: impl for<'a> FnOnce(
            &'a Tool,
            &'a mut wasmtime::Store<PluginState>,
        ) -> std::pin::Pin<
            Box<dyn Future<Output = wasmtime::Result<R>> + Send + 'a>,
        > + Send,
    ) -> Result<R, CallError> {
        let mut store = new_store(
            &self.engine,
            PluginState::new(&self.manifest, self.caps.clone()),
        );
        let work = async {
            let tool = self.pre.instantiate_async(&mut store).await?;
            f(&tool, &mut store).await
        };
        let outcome = tokio::time::timeout(self.deadline(), work).await;
        let stderr = store.data().stderr_text();
        log_stderr(&self.manifest.id, &stderr);
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(trap)) => Err(CallError::trap(&self.manifest.id, trap, &stderr)),
            Err(_) => Err(CallError::Timeout {
                id: self.manifest.id.clone(),
                after: self.deadline(),
            }),
        }
    }
}
