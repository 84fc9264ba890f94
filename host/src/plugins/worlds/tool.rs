//! A loaded `tool` component: describe its tools, invoke one. Each call gets a fresh store and
//! instance (no state survives between calls or chats), the plugin's memory cap, and a
//! wall-clock deadline; the one exception is a session ([`ToolSession`], the interpreter's),
//! whose instance lives across its calls.

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::plugins::LoadError;
use crate::plugins::bindings::tool::{Tool, ToolPre};
use crate::plugins::capabilities::Capabilities;
use crate::plugins::capabilities::files::FilesGrant;
use crate::plugins::capabilities::files::tree::Folder;
use crate::plugins::capabilities::ssh::host::SshHost;
use crate::plugins::manifest::{Kind, Manifest};
use crate::plugins::runtime::CallError;
use crate::plugins::runtime::Core;
use crate::plugins::runtime::capture::Captured;
use crate::plugins::runtime::linker;
use crate::plugins::runtime::records::Records;
use crate::plugins::runtime::session::Kept;
use crate::plugins::runtime::state::PluginState;
use wasmtime::component::Linker;

pub use crate::plugins::bindings::imports::chatd::plugin::types::{PluginError, ToolSpec};
pub use crate::plugins::bindings::tool::chatd::plugin::tool_types::ToolOutput;

/// A near-copy of `search.rs`'s wrapper on purpose: each world has its own generated types, and
/// what they share (linking, the call with its limits) is `Core`'s already.
pub struct ToolPlugin {
    core: Core,
    pre: ToolPre<PluginState>,
}

/// The `tool` world's linker: the shared imports, `ssh` (the only world importing it) and its
/// record types; with `files`, the session's folder and refusing sockets too.
fn link(engine: &Engine, files: bool) -> wasmtime::Result<Linker<PluginState>> {
    use crate::plugins::bindings::imports::chatd::plugin::ssh;
    use crate::plugins::bindings::tool::chatd::plugin::tool_types;
    let mut linker = linker::shared(engine)?;
    ssh::add_to_linker::<PluginState, SshHost>(&mut linker, PluginState::ssh)?;
    tool_types::add_to_linker::<PluginState, Records>(&mut linker, |_| Records)?;
    if files {
        linker::files(&mut linker)?;
    }
    Ok(linker)
}

/// A tool instance kept across calls, with its folder (`capabilities/files`).
pub struct ToolSession {
    kept: Kept,
    tool: Option<Tool>,
}

impl ToolSession {
    /// A call trapped or timed out: the session cannot go on.
    pub fn poisoned(&self) -> bool {
        self.kept.poisoned()
    }

    /// What the last call printed: its stdout and its stderr, each within the session's cap.
    pub fn take_output(&mut self) -> (Captured, Captured) {
        self.kept.take_output()
    }
}

impl ToolPlugin {
    /// Links a compiled component against the `tool` world (once; calls reuse the result).
    pub fn new(
        engine: &Engine,
        manifest: Manifest,
        component: &Component,
        caps: Capabilities,
    ) -> Result<Self, LoadError> {
        let linker = link(engine, caps.files.is_some());
        let (core, pre) = Core::link(
            engine,
            manifest,
            Kind::Tool,
            linker,
            component,
            caps,
            ToolPre::new,
        )?;
        Ok(Self { core, pre })
    }

    pub fn manifest(&self) -> &Manifest {
        self.core.manifest()
    }

    /// Its `files` grant: held by the bundled interpreter only, which runs in sessions.
    pub fn files_grant(&self) -> Option<FilesGrant> {
        self.core.caps.files
    }

    /// The tools the component provides.
    pub async fn describe(&self) -> Result<Vec<ToolSpec>, CallError> {
        let pre = self.pre.clone();
        self.core
            .call("describe", None, move |store| {
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
        self.invoke_measured(name, arguments_json).await.0
    }

    /// [`ToolPlugin::invoke`], and the most memory its instance held at once (bytes).
    pub async fn invoke_measured(
        &self,
        name: &str,
        arguments_json: &str,
    ) -> (Result<Result<ToolOutput, PluginError>, CallError>, usize) {
        let (pre, name, args) = (
            self.pre.clone(),
            name.to_string(),
            arguments_json.to_string(),
        );
        self.core
            .call_measured("invoke", None, move |store| {
                Box::pin(async move {
                    let tool = pre.instantiate_async(&mut *store).await?;
                    tool.call_invoke(&mut *store, &name, &args).await
                })
            })
            .await
    }

    /// A session: a store whose instance will live across calls, with `folder` as its
    /// filesystem and its stdout and stderr kept by the host, at most `output_chars`
    /// characters each per call ([`ToolSession::take_output`]). Nothing runs until its first
    /// call.
    pub fn open_session(&self, folder: Folder, output_chars: usize) -> ToolSession {
        ToolSession {
            kept: self.core.kept_store(Some(folder), output_chars),
            tool: None,
        }
    }

    /// Runs tool `name` in `session` (instantiating it on its first call): as
    /// [`ToolPlugin::invoke_measured`], with the globals of its earlier calls.
    pub async fn invoke_in(
        &self,
        session: &mut ToolSession,
        name: &str,
        arguments_json: &str,
    ) -> (Result<Result<ToolOutput, PluginError>, CallError>, usize) {
        // Taken for the call and put back after it; a failed call leaves the session poisoned.
        let (pre, made) = (self.pre.clone(), session.tool.take());
        let (name, args) = (name.to_string(), arguments_json.to_string());
        let (outcome, peak) = self
            .core
            .call_kept(&mut session.kept, "invoke", move |store| {
                Box::pin(async move {
                    let tool = match made {
                        Some(tool) => tool,
                        None => pre.instantiate_async(&mut *store).await?,
                    };
                    let result = tool.call_invoke(&mut *store, &name, &args).await?;
                    Ok((tool, result))
                })
            })
            .await;
        match outcome {
            Ok((tool, result)) => {
                session.tool = Some(tool);
                (Ok(result), peak)
            }
            Err(e) => (Err(e), peak),
        }
    }
}
