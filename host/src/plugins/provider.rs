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
use super::{CallError, CallFn, LoadError, call_in_fresh_store, linker};

pub use super::bindings::imports::chatd::plugin::types::{
    ContentPart, Message, PluginError, Role, ToolCall, ToolSpec, Usage,
};
pub use super::bindings::provider::chatd::plugin::provider_types::{
    FinishReason, TurnEvent, TurnOutcome, TurnRequest,
};

pub struct ProviderPlugin {
    manifest: Manifest,
    engine: Engine,
    pre: ProviderPre<PluginState>,
    caps: Capabilities,
}

impl ProviderPlugin {
    /// Links a compiled component against the `provider` world.
    pub fn new(
        engine: &Engine,
        manifest: Manifest,
        component: &Component,
        caps: Capabilities,
    ) -> Result<Self, LoadError> {
        if manifest.kind != Kind::Provider {
            return Err(LoadError::WrongKind {
                id: manifest.id,
                expected: Kind::Provider,
                found: manifest.kind,
            });
        }
        let linker = linker::provider(engine).map_err(LoadError::link(&manifest.id))?;
        let instance_pre = linker
            .instantiate_pre(component)
            .map_err(LoadError::link(&manifest.id))?;
        let pre = ProviderPre::new(instance_pre).map_err(LoadError::link(&manifest.id))?;
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

    /// The upstream's model ids.
    pub async fn list_models(&self) -> Result<Result<Vec<String>, PluginError>, CallError> {
        let pre = self.pre.clone();
        self.call(None, move |store| {
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
        self.call(Some(events), move |store| {
            Box::pin(async move {
                let provider = pre.instantiate_async(&mut *store).await?;
                provider.call_turn(&mut *store, &request).await
            })
        })
        .await
    }

    async fn call<R: Send + 'static>(
        &self,
        events: Option<mpsc::Sender<TurnEvent>>,
        f: impl CallFn<R>,
    ) -> Result<R, CallError> {
        let mut state = PluginState::new(&self.manifest, self.caps.clone());
        state.events = events;
        call_in_fresh_store(&self.engine, &self.manifest, state, f).await
    }
}
