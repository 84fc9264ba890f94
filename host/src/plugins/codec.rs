//! Host-driven turns of a `codec-provider` component: the plugin encodes a turn as an upstream
//! request and decodes the answer (`turn-codec`); the host sends the request under the plugin's
//! HTTP grant and feeds the body to the plugin's decoder as it arrives.
//!
//! Why: a turn the plugin drives itself holds a whole instance (its memory, a fiber stack
//! suspended in `next-chunk`) for as long as the upstream streams, which is most of a live
//! stream's memory. Here a turn holds only its decoder, a resource inside an instance that many
//! turns share, and touches the instance for the microseconds a chunk takes to decode.
//!
//! Sharing is for chatd's own (bundled) providers only ([`Instances::Shared`]); a provider from
//! PLUGINS_DIR gets a fresh instance per turn ([`Instances::PerTurn`]), so no state of one chat's
//! turn can reach another's, as for every other plugin call. The trade sharing makes, documented
//! in ARCHITECTURE.md: a decoder call that traps, runs past its time limit ([`CALL_LIMIT`] at
//! most), or is abandoned mid-call breaks its instance, and every turn decoding in that instance
//! ends with the trap's error. New turns get a fresh instance. Each shared provider has
//! [`instances`] instances, and a turn stays on the one it started on.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::bindings::codec_provider::{CodecProvider, CodecProviderPre};
use super::http::{self, Refusal};
use super::provider::{PluginError, TurnEvent, TurnOutcome, TurnRequest};
use super::state::PluginState;
use super::{CallError, Core, log_stderr, new_store};

/// The longest one decoder call (`start`, `head`, `feed`, `finish`) may take, unless the
/// manifest's time limit is shorter. Decoding a chunk takes microseconds and a whole answer
/// milliseconds; an instance busy for longer than this holds up every turn that shares it.
pub const CALL_LIMIT: Duration = Duration::from_secs(10);

fn call_limit(core: &Core) -> Duration {
    CALL_LIMIT.min(Duration::from_millis(core.manifest.limits.timeout_ms))
}

/// Guest stderr an instance may collect before it is retired (its pipe would fill, and a later
/// panic message would be lost). New turns go to a fresh instance; the old one ends with its
/// last turn.
const RETIRE_AT_STDERR: usize = 32 * 1024;

/// How many instances of one provider decode turns: enough that the workers do not queue on one,
/// few enough that an idle provider costs little.
fn instances() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8))
}

/// Whether turns of a provider decode in shared instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instances {
    /// A few instances, each decoding many turns: chatd's own providers.
    Shared,
    /// A fresh instance per turn: providers from PLUGINS_DIR, whose code chatd does not vouch
    /// for.
    PerTurn,
}

/// The instances of one `codec-provider` component that decode its turns.
pub struct Codecs {
    pre: CodecProviderPre<PluginState>,
    /// Empty for [`Instances::PerTurn`].
    slots: Vec<Mutex<Arc<Shared>>>,
    next: AtomicUsize,
}

/// One instance that many turns decode in, created at its first call.
struct Shared {
    // A tokio Mutex, not a std one: a call into the guest is awaited (it yields at epoch ticks).
    live: tokio::sync::Mutex<Option<Live>>,
    /// Set when a call broke the instance: its decoders are gone.
    broken: AtomicBool,
    /// Set when new turns should go elsewhere (its stderr is filling up).
    retired: AtomicBool,
    /// Decoders of turns that ended without dropping theirs (the turn was abandoned); dropped
    /// in the guest at the next call.
    orphans: Mutex<Vec<ResourceAny>>,
}

struct Live {
    store: Store<PluginState>,
    codec: CodecProvider,
    /// Bytes of stderr already logged.
    logged: usize,
}

/// The body of one call into a shared instance.
type Call<'a, R> = Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 'a>>;

impl Codecs {
    pub fn new(pre: CodecProviderPre<PluginState>, sharing: Instances) -> Self {
        let slots = match sharing {
            Instances::Shared => instances(),
            Instances::PerTurn => 0,
        };
        Self {
            pre,
            slots: (0..slots)
                .map(|_| Mutex::new(Arc::new(Shared::new())))
                .collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// The instance a new turn decodes in: a fresh one when turns do not share, else the next
    /// one round the slots, replaced first if it broke or was retired.
    fn pick(&self) -> Arc<Shared> {
        if self.slots.is_empty() {
            return Arc::new(Shared::new());
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let mut slot = self.slots[i].lock().expect("codec slot lock");
        if slot.broken.load(Ordering::Acquire) || slot.retired.load(Ordering::Acquire) {
            *slot = Arc::new(Shared::new());
        }
        slot.clone()
    }

    /// Runs one turn: `start` in the plugin, the request from the host, the body through the
    /// plugin's decoder, each event to `events` (a closed receiver cancels the turn). The
    /// manifest's time limit covers the whole turn.
    pub(crate) async fn turn(
        &self,
        core: &Core,
        request: TurnRequest,
        events: mpsc::Sender<TurnEvent>,
    ) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        let limit = Duration::from_millis(core.manifest.limits.timeout_ms);
        match tokio::time::timeout(limit, self.drive(core, request, events)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(CallError::Timeout {
                id: core.manifest.id.clone(),
                after: limit,
            }),
        }
    }

    async fn drive(
        &self,
        core: &Core,
        request: TurnRequest,
        events: mpsc::Sender<TurnEvent>,
    ) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        let shared = self.pick();
        let started = Box::pin(shared.call(core, &self.pre, move |store, codec| {
            Box::pin(async move {
                codec
                    .chatd_plugin_turn_codec()
                    .call_start(store, &request)
                    .await
            })
        }))
        .await?;
        let (upstream, decoder) = match started {
            Ok(started) => started,
            Err(e) => return Ok(Err(e)),
        };
        let decoder = Decoder {
            shared,
            handle: Some(decoder),
        };
        let outcome = self.decode(core, &decoder, upstream, events).await;
        decoder.close(core, &self.pre).await;
        outcome
    }

    async fn decode(
        &self,
        core: &Core,
        decoder: &Decoder,
        upstream: http::host::WitRequest,
        events: mpsc::Sender<TurnEvent>,
    ) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        let caps = &core.caps;
        // Each step that is over in a moment (sending, a call into the guest) is boxed: inline,
        // its state would sit in the turn's future, and so in the memory of every live stream,
        // while the turn waits for the upstream's next chunk.
        let sent = Box::pin(http::send(
            &caps.clients,
            &caps.http,
            http::host::outgoing(upstream),
        ))
        .await;
        let mut response = match sent {
            Ok(response) => response,
            Err(refusal) => return Ok(Err(transport_error(refusal))),
        };
        let headers: Vec<_> = response
            .headers
            .iter()
            .map(|(name, value)| http::host::WitHeader {
                name: name.clone(),
                value: value.clone(),
            })
            .collect();
        let (status, handle) = (response.status, decoder.handle());
        Box::pin(decoder.shared.call(core, &self.pre, move |store, codec| {
            Box::pin(async move {
                codec
                    .chatd_plugin_turn_codec()
                    .turn_decoder()
                    .call_head(store, handle, status, &headers)
                    .await
            })
        }))
        .await?;
        loop {
            let chunk = match response.next_chunk().await {
                Ok(chunk) => chunk,
                Err(refusal) => return Ok(Err(transport_error(refusal))),
            };
            let decoded = Box::pin(decoder.shared.call(core, &self.pre, move |store, codec| {
                Box::pin(async move {
                    let decoder = codec.chatd_plugin_turn_codec().turn_decoder();
                    match chunk {
                        Some(chunk) => decoder.call_feed(store, handle, &chunk).await,
                        None => decoder.call_finish(store, handle).await,
                    }
                })
            }))
            .await?;
            for event in decoded.events {
                if events.send(event).await.is_err() {
                    // The run stopped listening: stop reading the upstream.
                    return Ok(Ok(cancelled()));
                }
            }
            if let Some(end) = decoded.end {
                return Ok(end);
            }
        }
    }
}

/// What a turn the run stopped listening to returns; nobody reads it.
fn cancelled() -> TurnOutcome {
    TurnOutcome {
        finish: super::provider::FinishReason::Other,
        raw_json: None,
    }
}

/// A refused or failed upstream request as the plugin's error, in the words the SDK's
/// `transport_error` gives a plugin that sends it itself.
fn transport_error(refusal: Refusal) -> PluginError {
    match refusal {
        Refusal::Denied(why) => PluginError::Denied(why),
        Refusal::Invalid(why) => PluginError::InvalidInput(why),
        Refusal::Timeout => PluginError::Transport("the request timed out".into()),
        Refusal::Connection(why) => PluginError::Transport(why),
        Refusal::TooLarge(cap) => PluginError::Transport(format!(
            "the response is larger than the host's {cap}-byte cap"
        )),
    }
}

/// A turn's decoder in its shared instance. Closed explicitly when the turn ends; a turn
/// abandoned before that leaves it to be dropped at the instance's next call.
struct Decoder {
    shared: Arc<Shared>,
    handle: Option<ResourceAny>,
}

impl Decoder {
    fn handle(&self) -> ResourceAny {
        self.handle.expect("the decoder is open until closed")
    }

    async fn close(mut self, core: &Core, pre: &CodecProviderPre<PluginState>) {
        let Some(handle) = self.handle.take() else {
            return;
        };
        // A failure to drop it breaks the instance (and says so there); the turn's own outcome
        // is already decided.
        let _ = Box::pin(self.shared.call(core, pre, move |store, _| {
            Box::pin(async move { handle.resource_drop_async(store).await })
        }))
        .await;
    }
}

impl Drop for Decoder {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            self.shared
                .orphans
                .lock()
                .expect("orphan list lock")
                .push(handle);
        }
    }
}

impl Shared {
    fn new() -> Self {
        Self {
            live: tokio::sync::Mutex::new(None),
            broken: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            orphans: Mutex::new(Vec::new()),
        }
    }

    /// Runs `f` in the instance, instantiating it at the first call, under [`CALL_LIMIT`].
    /// A trap or a timeout breaks the instance.
    async fn call<R>(
        &self,
        core: &Core,
        pre: &CodecProviderPre<PluginState>,
        f: impl for<'a> FnOnce(&'a mut Store<PluginState>, &'a CodecProvider) -> Call<'a, R> + Send,
    ) -> Result<R, CallError> {
        let id = &core.manifest.id;
        let mut live = self.live.lock().await;
        if self.broken.load(Ordering::Acquire) {
            return Err(CallError::Trap {
                id: id.clone(),
                reason: "the instance this turn was decoded in broke in another turn's call".into(),
            });
        }
        // Dropped while set: the guard below did not run, so a call was abandoned mid-way and
        // the instance's state cannot be trusted.
        let mut in_call = Broken(Some(self));
        let limit = call_limit(core);
        let outcome = tokio::time::timeout(limit, async {
            if live.is_none() {
                let mut store = new_store(
                    &core.engine,
                    PluginState::new(&core.manifest, core.caps.clone()),
                );
                let codec = pre.instantiate_async(&mut store).await?;
                *live = Some(Live {
                    store,
                    codec,
                    logged: 0,
                });
            }
            let Live { store, codec, .. } = live.as_mut().expect("instantiated above");
            let orphans = std::mem::take(&mut *self.orphans.lock().expect("orphan list lock"));
            for orphan in orphans {
                orphan.resource_drop_async(&mut *store).await?;
            }
            f(store, codec).await
        })
        .await;
        in_call.0 = None;
        let stderr = live
            .as_mut()
            .map(|live| {
                let all = live.store.data().stderr_text();
                let new = all.get(live.logged..).unwrap_or_default().to_string();
                live.logged = all.len();
                if all.len() >= RETIRE_AT_STDERR {
                    self.retired.store(true, Ordering::Release);
                }
                new
            })
            .unwrap_or_default();
        log_stderr(id, &stderr);
        let failed = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(trap)) => CallError::trap(id, trap, &stderr),
            Err(_) => CallError::Timeout {
                id: id.clone(),
                after: limit,
            },
        };
        self.broken.store(true, Ordering::Release);
        *live = None;
        Err(failed)
    }
}

/// Marks an instance broken when dropped holding it: the call it guards never finished.
struct Broken<'a>(Option<&'a Shared>);

impl Drop for Broken<'_> {
    fn drop(&mut self) {
        if let Some(shared) = self.0 {
            shared.broken.store(true, Ordering::Release);
        }
    }
}
