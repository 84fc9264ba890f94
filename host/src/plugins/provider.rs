//! A loaded `provider` component: list models, run a model turn. The turn's events go to a
//! bounded channel the caller reads: a slow reader holds the turn back, and a dropped receiver
//! stops it reading its upstream.
//!
//! Two ways to run a turn, chosen at load by what the component exports:
//! * a `codec-provider` component's turns are driven by the host ([`super::codec`]): the plugin
//!   encodes and decodes, in instances shared by many turns;
//! * a `provider` component drives its own turn: a fresh store and instance per turn, its
//!   events through `turn-events.emit` (which answers `false` once the receiver is gone).
//!
//! Listing models is always a call of its own, in a fresh store and instance.

use std::sync::Arc;

use tokio::sync::mpsc;
use wasmtime::Engine;
use wasmtime::component::Component;

use super::bindings::codec_provider::CodecProviderPre;
use super::bindings::provider::ProviderPre;
use super::codec::{Codecs, Instances};
use super::manifest::{Kind, Manifest};
use super::refs::Refs;
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
    /// Present when the component exports `turn-codec`: its turns are host-driven.
    codecs: Option<Codecs>,
}

impl ProviderPlugin {
    /// Links a compiled component against the `provider` world, and the `codec-provider` world
    /// when it exports `turn-codec`; `sharing` says whether its turns may share instances.
    pub fn new(
        engine: &Engine,
        manifest: Manifest,
        component: &Component,
        caps: Capabilities,
        sharing: Instances,
    ) -> Result<Self, LoadError> {
        let linker = linker::provider(engine);
        let (core, (pre, codec)) = Core::link(
            engine,
            manifest,
            Kind::Provider,
            linker,
            component,
            caps,
            |instance_pre| {
                // The codec world includes the provider world, so every provider links as one.
                let codec = CodecProviderPre::new(instance_pre.clone()).ok();
                Ok((ProviderPre::new(instance_pre)?, codec))
            },
        )?;
        if core.manifest().provider.references && codec.is_none() {
            return Err(LoadError::Link {
                id: core.manifest().id.clone(),
                reason: "provider.references is for codec-provider components (the host sends \
                         their requests); this one does not export turn-codec"
                    .into(),
            });
        }
        let codecs = codec.map(|pre| Codecs::new(pre, sharing, &core));
        Ok(Self { core, pre, codecs })
    }

    /// Whether a turn's large values go to it by reference (its manifest's
    /// `provider.references`; see `plugins/refs.rs`).
    pub fn takes_references(&self) -> bool {
        self.codecs.is_some() && self.manifest().provider.references
    }

    /// Whether the host drives this provider's turns (`codec-provider`).
    pub fn host_driven(&self) -> bool {
        self.codecs.is_some()
    }

    /// Whether its turns decode in shared instances (`None`: not a codec).
    pub fn sharing(&self) -> Option<Instances> {
        self.codecs.as_ref().map(Codecs::sharing)
    }

    /// Calls of its turns waiting for a shared decoding instance, now (see
    /// [`Codecs::calls_waiting`]).
    pub fn calls_waiting(&self) -> usize {
        self.codecs.as_ref().map_or(0, Codecs::calls_waiting)
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

    /// Runs one turn; its events arrive on `events` as they are decoded.
    /// `refs` holds the values `request` names by reference; only for a provider that
    /// [`takes_references`](Self::takes_references).
    pub async fn turn(
        &self,
        request: TurnRequest,
        refs: Option<Arc<Refs>>,
        events: mpsc::Sender<TurnEvent>,
    ) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        match &self.codecs {
            Some(codecs) => codecs.turn(request, refs, events).await,
            // Boxed: inline, this path's state would be part of every codec turn's future too.
            None => Box::pin(self.plugin_driven_turn(request, events)).await,
        }
    }

    /// Has the plugin build `request`'s upstream request, and drops it: the plugin's refusal of
    /// a request it finds invalid, before anything is sent. Only a `codec-provider` can be
    /// asked; another answers `Ok`.
    pub async fn check(&self, request: TurnRequest) -> Result<Result<(), PluginError>, CallError> {
        match &self.codecs {
            Some(codecs) => codecs.check(request).await,
            None => Ok(Ok(())),
        }
    }

    /// A turn the plugin drives itself, through the `http` import and `turn-events.emit`.
    pub async fn plugin_driven_turn(
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
