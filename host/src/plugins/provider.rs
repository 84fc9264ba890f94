//! A loaded `provider` component: list models, run a model turn. The turn's events
//! (`turn-events.emit`) go to a bounded channel the caller reads: a slow reader holds the guest
//! back, and a dropped receiver makes `emit` answer `false`, so the plugin stops reading its
//! upstream. Each call gets a fresh store and instance, the memory cap and the deadline.

use tokio::sync::mpsc;
use wasmtime::Engine;
use wasmtime::component::Component;

use super::bindings::provider::ProviderPre;
use super::manifest::{Kind, Manifest};
use super::state::{Capabilities, PluginState};
use super::{CallError, Core, LoadError, linker};

pub use super::bindings::imports::chatd::plugin::types::{
    ContentPart, Image, Message, PluginError, Role, TextFile, ToolCall, ToolResult, ToolSpec,
    UpstreamError, Usage,
};
pub use super::bindings::provider::chatd::plugin::provider_types::{
    FinishReason, TurnEvent, TurnOutcome, TurnRequest,
};

pub struct ProviderPlugin {
    core: Core,
    pre: ProviderPre<PluginState>,
}

impl ProviderPlugin {
    /// Links a compiled component against the `provider` world.
    pub fn new(
        engine: &Engine,
        manifest: Manifest,
        component: &Component,
        caps: Capabilities,
    ) -> Result<Self, LoadError> {
        let linker = linker::provider(engine);
        let (core, pre) = Core::link(
            engine,
            manifest,
            Kind::Provider,
            linker,
            component,
            caps,
            ProviderPre::new,
        )?;
        Ok(Self { core, pre })
    }

    pub fn manifest(&self) -> &Manifest {
        self.core.manifest()
    }

    /// The upstream's model ids.
    pub async fn list_models(&self) -> Result<Result<Vec<String>, PluginError>, CallError> {
        let pre = self.pre.clone();
        self.core
            .call(None, move |store| {
                Box::pin(async move {
                    let provider = pre.instantiate_async(&mut *store).await?;
                    provider.call_list_models(&mut *store).await
                })
            })
            .await
    }

    /// Runs one turn; its events arrive on `events` as the plugin emits them.
    pub async fn turn(
        &self,
        request: TurnRequest,
        events: mpsc::Sender<TurnEvent>,
    ) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        let pre = self.pre.clone();
        self.core
            .call(Some(events), move |store| {
                Box::pin(async move {
                    let provider = pre.instantiate_async(&mut *store).await?;
                    provider.call_turn(&mut *store, &request).await
                })
            })
            .await
    }
}
