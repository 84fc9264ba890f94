//! A loaded `provider` component: list models, run a model turn. The turn's events go to a
//! bounded channel the caller reads: a slow reader holds the turn back, and a dropped receiver
//! stops it reading its upstream.
//!
//! Two ways to run a turn, chosen at load by what the component exports:
//! * a `codec-provider` component's turns are driven by the host ([`crate::plugins::worlds::provider::codec`]): the plugin
//!   encodes and decodes, in instances shared by many turns;
//! * a `provider` component drives its own turn: a fresh store and instance per turn, its
//!   events through `turn-events.emit` (which answers `false` once the receiver is gone).
//!
//! Listing models is always a call of its own, in a fresh store and instance, and so is asking a
//! `profiled-codec-provider` for its [`Profile`], an `optioned-codec-provider` for the turn
//! options it honours and a `tuned-codec-provider` for the tuning it honours (once each, at
//! load), and so is each batch an `embedding-provider` embeds ([`ProviderPlugin::embed`]). A turn's options and tuning ([`TurnAsks`]) reach the plugin through the store's state
//! while it builds the turn (`turn_options.rs`, `turn_tuning.rs`).

pub mod codec;
pub mod references;
pub mod turn_events;
pub mod turn_options;
pub mod turn_tuning;
pub mod upstream_seen;

use std::sync::Arc;

use tokio::sync::mpsc;
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::plugins::LoadError;
use crate::plugins::bindings::codec_provider::CodecProviderPre;
use crate::plugins::bindings::embedding_provider::EmbeddingProviderPre;
pub use crate::plugins::bindings::embedding_provider::exports::chatd::plugin::embeddings::Embedded;
use crate::plugins::bindings::optioned_codec_provider::OptionedCodecProviderPre;
use crate::plugins::bindings::profiled_codec_provider::ProfiledCodecProviderPre;
use crate::plugins::bindings::provider::ProviderPre;
use crate::plugins::bindings::tuned_codec_provider::TunedCodecProviderPre;
use crate::plugins::capabilities::Capabilities;
use crate::plugins::manifest::{Kind, Manifest};
use crate::plugins::runtime::CallError;
use crate::plugins::runtime::Core;
use crate::plugins::runtime::linker;
use crate::plugins::runtime::records::Records;
use crate::plugins::runtime::state::PluginState;
pub use crate::plugins::runtime::state::TurnAsks;
use crate::plugins::worlds::provider::codec::{Codecs, Instances};
use crate::plugins::worlds::provider::references::Refs;
use crate::plugins::worlds::provider::turn_events::TurnEventsHost;
use crate::plugins::worlds::provider::turn_options::{OptionKind, TurnOptionsHost};
use crate::plugins::worlds::provider::turn_tuning::{TuningKind, TurnTuningHost};
pub use crate::plugins::worlds::provider::upstream_seen::UpstreamSeen;
use wasmtime::component::Linker;

pub use crate::plugins::bindings::imports::chatd::plugin::types::{
    ContentPart, Image, Message, PluginError, Role, TextFile, ToolCall, ToolResult, ToolSpec,
    UpstreamError, Usage,
};
pub use crate::plugins::bindings::provider::chatd::plugin::provider_types::{
    FinishReason, TurnEvent, TurnOutcome, TurnRequest,
};

/// A turn that asks nothing beyond its request: no options, no tuning (a title, a test).
pub fn no_asks() -> TurnAsks {
    TurnAsks {
        options: turn_options::none(),
        tuning: turn_tuning::none(),
    }
}

/// What a provider declares about itself (the WIT `provider-profile`); [`Profile::default`] for
/// one that does not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Its wire format's name, which a declared provider's `adapter` may give.
    pub adapter: Option<String>,
    /// The header its upstream takes the key in; `None`: `Authorization: Bearer`.
    pub key_header: Option<reqwest::header::HeaderName>,
    /// It takes the host's tools.
    pub tools: bool,
    /// It wants the tool-loop instruction first when tools are on.
    pub tool_instruction: bool,
    /// It understands image attachments.
    pub images: bool,
    /// It understands text-file attachments.
    pub text_files: bool,
    /// The turn options it puts on its upstream's wire (`turn-options-support`); none for a
    /// provider without it.
    pub options: Vec<OptionKind>,
    /// The tuning it puts on its upstream's wire (`turn-tuning-support`); none for a provider
    /// without it.
    pub tuning: Vec<TuningKind>,
}

impl Default for Profile {
    fn default() -> Self {
        Self {
            adapter: None,
            key_header: None,
            tools: true,
            tool_instruction: false,
            images: true,
            text_files: true,
            options: Vec::new(),
            tuning: Vec::new(),
        }
    }
}

pub struct ProviderPlugin {
    core: Core,
    pre: ProviderPre<PluginState>,
    /// Present when the component exports `turn-codec`: its turns are host-driven.
    codecs: Option<Codecs>,
    /// Present when it exports `provider-profile`.
    profiled: Option<ProfiledCodecProviderPre<PluginState>>,
    /// Present when it exports `turn-options-support` (0.1.2). Boxed: asked once, at load.
    optioned: Option<Box<OptionedCodecProviderPre<PluginState>>>,
    /// Present when it exports `turn-tuning-support` (0.1.3). Boxed: asked once, at load.
    tuned: Option<Box<TunedCodecProviderPre<PluginState>>>,
    /// Present when it exports `embeddings` (0.1.4).
    embedding: Option<Box<EmbeddingProviderPre<PluginState>>>,
}

/// The `provider` worlds' linker (the codec worlds import the same): the shared imports, the
/// provider record types, `turn-events`, `turn-options` and `turn-tuning`.
fn link(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    use crate::plugins::bindings::optioned_codec_provider::chatd::plugin::turn_options as options;
    use crate::plugins::bindings::provider::chatd::plugin::{provider_types, turn_events as wit};
    use crate::plugins::bindings::tuned_codec_provider::chatd::plugin::turn_tuning as tuning;
    let mut linker = linker::shared(engine)?;
    provider_types::add_to_linker::<PluginState, Records>(&mut linker, |_| Records)?;
    wit::add_to_linker::<PluginState, TurnEventsHost>(&mut linker, turn_events::view)?;
    options::add_to_linker::<PluginState, TurnOptionsHost>(&mut linker, turn_options::view)?;
    tuning::add_to_linker::<PluginState, TurnTuningHost>(&mut linker, turn_tuning::view)?;
    Ok(linker)
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
        let linker = link(engine);
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
                let profiled = ProfiledCodecProviderPre::new(instance_pre.clone()).ok();
                let optioned = OptionedCodecProviderPre::new(instance_pre.clone())
                    .ok()
                    .map(Box::new);
                let tuned = TunedCodecProviderPre::new(instance_pre.clone())
                    .ok()
                    .map(Box::new);
                let embedding = EmbeddingProviderPre::new(instance_pre.clone())
                    .ok()
                    .map(Box::new);
                Ok((
                    ProviderPre::new(instance_pre)?,
                    (codec, profiled, optioned, tuned, embedding),
                ))
            },
        )?;
        let (codec, profiled, optioned, tuned, embedding) = codec;
        if core.manifest().provider.references && codec.is_none() {
            return Err(LoadError::Link {
                id: core.manifest().id.clone(),
                reason: "provider.references is for codec-provider components (the host sends \
                         their requests); this one does not export turn-codec"
                    .into(),
            });
        }
        let codecs = codec.map(|pre| Codecs::new(pre, sharing, &core));
        Ok(Self {
            core,
            pre,
            codecs,
            profiled,
            optioned,
            tuned,
            embedding,
        })
    }

    /// Whether it exports `embeddings` (an `embedding-provider`).
    pub fn embeds(&self) -> bool {
        self.embedding.is_some()
    }

    /// The vectors of `inputs` by the upstream's embedding model `model`, in a fresh store and
    /// instance; the plugin sends the request itself, under its grant. A provider that does not
    /// embed answers `unsupported`.
    pub async fn embed(
        &self,
        model: &str,
        inputs: Vec<String>,
    ) -> Result<Result<Embedded, PluginError>, CallError> {
        let Some(pre) = self.embedding.as_deref().cloned() else {
            return Ok(Err(PluginError::Unsupported(format!(
                "provider {} has no embeddings (it is not an embedding-provider, WIT 0.1.4)",
                self.manifest().id
            ))));
        };
        let model = model.to_string();
        self.core
            .call("embed", None, move |store| {
                Box::pin(async move {
                    let provider = pre.instantiate_async(&mut *store).await?;
                    provider
                        .chatd_plugin_embeddings()
                        .call_embed(&mut *store, &model, &inputs)
                        .await
                })
            })
            .await
    }

    /// Its profile: asked of a `profiled-codec-provider`, the default for any other. A profile
    /// that cannot be used is the plugin's error.
    pub async fn profile(&self) -> Result<Result<Profile, String>, CallError> {
        let Some(pre) = self.profiled.clone() else {
            return Ok(Ok(Profile::default()));
        };
        let wit = self
            .core
            .call("profile", None, move |store| {
                Box::pin(async move {
                    let provider = pre.instantiate_async(&mut *store).await?;
                    provider
                        .chatd_plugin_provider_profile()
                        .call_describe(&mut *store)
                        .await
                })
            })
            .await?;
        let options = self.honoured().await?;
        let tuning = self.tuned().await?;
        Ok(profile_of(wit).map(|profile| Profile {
            options,
            tuning,
            ..profile
        }))
    }

    /// The tuning it honours: asked of a `tuned-codec-provider`, none for any other.
    async fn tuned(&self) -> Result<Vec<TuningKind>, CallError> {
        let Some(pre) = self.tuned.as_deref().cloned() else {
            return Ok(Vec::new());
        };
        let mut kinds = self
            .core
            .call("tuned", None, move |store| {
                Box::pin(async move {
                    let provider = pre.instantiate_async(&mut *store).await?;
                    provider
                        .chatd_plugin_turn_tuning_support()
                        .call_honoured(&mut *store)
                        .await
                })
            })
            .await?;
        kinds.sort_by_key(|k| *k as u8);
        kinds.dedup();
        Ok(kinds)
    }

    /// The turn options it honours: asked of an `optioned-codec-provider`, none for any other.
    async fn honoured(&self) -> Result<Vec<OptionKind>, CallError> {
        let Some(pre) = self.optioned.as_deref().cloned() else {
            return Ok(Vec::new());
        };
        let mut kinds = self
            .core
            .call("honoured", None, move |store| {
                Box::pin(async move {
                    let provider = pre.instantiate_async(&mut *store).await?;
                    provider
                        .chatd_plugin_turn_options_support()
                        .call_honoured(&mut *store)
                        .await
                })
            })
            .await?;
        kinds.sort_by_key(|k| *k as u8);
        kinds.dedup();
        Ok(kinds)
    }

    /// Whether a turn's large values go to it by reference (its manifest's
    /// `provider.references`; see `plugins/worlds/provider/references.rs`).
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
            .call("list-models", None, move |store| {
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
        let asks = Arc::new(no_asks());
        self.turn_seen(request, asks, refs, events, &UpstreamSeen::default())
            .await
    }

    /// [`turn`](Self::turn), telling `seen` what the host saw of the upstream's answer (a
    /// host-driven turn's; a plugin-driven turn's requests are the plugin's own, and tell
    /// nothing).
    /// `asks` are the turn's options and tuning beyond `request`'s, which the plugin reads
    /// through `turn-options` and `turn-tuning` (only those [`Profile::options`] and
    /// [`Profile::tuning`] name: the caller checks).
    pub async fn turn_seen(
        &self,
        request: TurnRequest,
        asks: Arc<TurnAsks>,
        refs: Option<Arc<Refs>>,
        events: mpsc::Sender<TurnEvent>,
        seen: &UpstreamSeen,
    ) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        match &self.codecs {
            Some(codecs) => codecs.turn(request, asks, refs, events, seen).await,
            // Boxed: inline, this path's state would be part of every codec turn's future too.
            None => Box::pin(self.plugin_driven_turn(request, asks, events)).await,
        }
    }

    /// Has the plugin build `request`'s upstream request, and drops it: the plugin's refusal of
    /// a request it finds invalid, before anything is sent. Only a `codec-provider` can be
    /// asked; another answers `Ok`.
    pub async fn check(
        &self,
        request: TurnRequest,
        asks: Arc<TurnAsks>,
    ) -> Result<Result<(), PluginError>, CallError> {
        match &self.codecs {
            Some(codecs) => codecs.check(request, asks).await,
            None => Ok(Ok(())),
        }
    }

    /// A turn the plugin drives itself, through the `http` import and `turn-events.emit`.
    pub async fn plugin_driven_turn(
        &self,
        request: TurnRequest,
        asks: Arc<TurnAsks>,
        events: mpsc::Sender<TurnEvent>,
    ) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        let pre = self.pre.clone();
        self.core
            .call("turn", Some(events), move |store| {
                Box::pin(async move {
                    store.data_mut().turn_asks = Some(asks);
                    let provider = pre.instantiate_async(&mut *store).await?;
                    provider.call_turn(&mut *store, &request).await
                })
            })
            .await
    }
}

/// A declared profile, checked: an adapter name like an id, a key header the host may set.
fn profile_of(
    wit: crate::plugins::bindings::profiled_codec_provider::exports::chatd::plugin::provider_profile::Profile,
) -> Result<Profile, String> {
    if let Some(name) = wit
        .adapter
        .as_ref()
        .filter(|n| !crate::config::names::is_name(n, b"-"))
    {
        return Err(format!(
            "its profile's adapter {name:?} must match [a-z0-9_-]{{1,64}}"
        ));
    }
    let key_header = match &wit.key_header {
        None => None,
        Some(name) => {
            let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("its profile's key-header {name:?} is not a header name"))?;
            if crate::config::names::is_host_header(&header) {
                return Err(format!(
                    "its profile's key-header {header} is a header the host sets itself"
                ));
            }
            Some(header)
        }
    };
    Ok(Profile {
        adapter: wit.adapter,
        key_header,
        tools: wit.tools,
        tool_instruction: wit.tool_instruction,
        images: wit.images,
        text_files: wit.text_files,
        options: Vec::new(),
        tuning: Vec::new(),
    })
}
