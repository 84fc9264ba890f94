//! Host-driven turns of a `codec-provider` component. Here the instances a provider's turns
//! decode in (shared or a turn's own, created, retired, called); the turn itself, from the
//! request to the last event, is `turn.rs`.
//!
//! A `codec-provider` component: the plugin encodes a turn as an upstream
//! request and decodes the answer (`turn-codec`); the host sends the request under the plugin's
//! HTTP grant and feeds the body to the plugin's decoder as it arrives.
//!
//! Why: a turn the plugin drives itself holds a whole instance (its memory, a fiber stack
//! suspended in `next-chunk`) for as long as the upstream streams, which was most of a live
//! stream's memory. Here a streaming turn of a bundled provider holds only its decoder, a
//! resource inside an instance that many turns share, and touches the instance for the
//! microseconds a chunk takes to decode.
//!
//! Sharing is for chatd's own (bundled) providers only ([`Instances::Shared`]): a provider from
//! PLUGINS_DIR gets a fresh instance per turn ([`Instances::PerTurn`]), so no state of one
//! chat's turn can reach another's, as for every other plugin call. A turn that does not stream
//! has its body gathered by the host and decoded in one call, so a whole answer sits in a shared
//! instance's memory only while it is decoded (one call at a time per instance).
//!
//! The trade sharing makes, documented in ARCHITECTURE.md: a decoder call that traps or runs
//! past its time limit breaks its instance, and every turn decoding in that instance ends with
//! the error. New turns get a fresh instance. A turn dropped mid-call (its client gone, its
//! deadline passed) hands the call to a task that finishes it, so the instance stays sound; only
//! a call past its own limit is cut short, and its instance is discarded.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wasmtime::component::ResourceAny;
use wasmtime::{Engine, Store};

use crate::egress::{self, Refusal};
use crate::plugins::bindings::codec_provider::exports::chatd::plugin::turn_codec::Decoded;
use crate::plugins::bindings::codec_provider::{CodecProvider, CodecProviderPre};
use crate::plugins::bindings::imports::chatd::plugin::types::PluginError;
use crate::plugins::bindings::provider::chatd::plugin::provider_types::{
    FinishReason, TurnEvent, TurnOutcome, TurnRequest,
};
use crate::plugins::capabilities::Capabilities;
use crate::plugins::capabilities::http::host as http_host;
use crate::plugins::manifest::Manifest;
use crate::plugins::runtime::CallError;
use crate::plugins::runtime::Core;
use crate::plugins::runtime::log_stderr;
use crate::plugins::runtime::new_store;
use crate::plugins::runtime::state::PluginState;
use crate::plugins::worlds::provider::TurnAsks;
use crate::plugins::worlds::provider::references::{ExpandError, Refs};
use crate::plugins::worlds::provider::upstream_seen::UpstreamSeen;
use crate::telemetry;

mod turn;
use tracing::Instrument as _;

/// The longest one decoder call (`start`, `head`, `feed`, `finish`) may take. Decoding a chunk
/// takes microseconds and a whole answer milliseconds; an instance busy for longer holds up every
/// turn that shares it. A quarter of the manifest's time limit when that is shorter, so a turn
/// always has time left for the upstream.
pub const CALL_LIMIT: Duration = Duration::from_secs(10);

/// The largest whole (non-streaming) answer decoded in a shared instance: one at a time is in
/// an instance's memory, and with its parse it must fit well inside the manifest's cap. An
/// answer of a model turn is far smaller.
const MAX_WHOLE_BODY: usize = 8 * 1024 * 1024;

/// How much of a cut error body goes to the decoder (it reads 64 KiB of one for the message).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Guest stderr an instance may collect before it is retired (its pipe would fill, and a later
/// panic message would be lost). New turns go to a fresh instance; the old one ends with its
/// last turn.
const RETIRE_AT_STDERR: usize = 32 * 1024;

/// How many instances of one bundled provider decode its turns: enough that the workers do not
/// queue on one, few enough that an idle provider costs little. Turns take them round robin.
pub fn shared_instances() -> usize {
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
    context: Arc<Context>,
    /// Empty for [`Instances::PerTurn`].
    slots: Vec<Mutex<Arc<DecodingInstance>>>,
    next: AtomicUsize,
}

/// What a call needs of its plugin, owned, so the call can run in a task of its own.
struct Context {
    pre: CodecProviderPre<PluginState>,
    engine: Engine,
    manifest: Manifest,
    caps: Capabilities,
    call_limit: Duration,
    /// Calls waiting for an instance while another call runs in it; here rather than per
    /// instance, so calls queued on an instance that has since left its slot still count.
    waiting: AtomicUsize,
}

/// One instance that turns decode in: shared by many turns of a bundled provider, or a single
/// turn's own for a provider from PLUGINS_DIR. Created at its first call.
struct DecodingInstance {
    // A tokio Mutex, not a std one: a call into the guest is awaited (it yields at epoch ticks).
    live: tokio::sync::Mutex<Option<Live>>,
    /// Set when a call broke the instance: its decoders are gone.
    broken: AtomicBool,
    /// Set when new turns should go elsewhere (its stderr or its memory is filling up).
    retired: AtomicBool,
    /// Decoders of turns that have ended, dropped in the guest at the next call.
    ended: Mutex<Vec<ResourceAny>>,
}

struct Live {
    store: Store<PluginState>,
    codec: CodecProvider,
    /// Bytes of stderr already logged.
    logged: usize,
}

/// Why a call into a shared instance did not give its value.
enum Failure {
    /// The instance had already broken in another turn's call.
    AlreadyBroken,
    /// This call trapped or ran out of time (and broke the instance).
    Failed(CallError),
}

impl Failure {
    fn into_call_error(self, id: &str) -> CallError {
        match self {
            Failure::AlreadyBroken => CallError::Trap {
                id: id.to_string(),
                reason: "the instance this turn was decoded in broke in another turn's call".into(),
            },
            Failure::Failed(error) => error,
        }
    }
}

/// The body of one call into an instance.
type Call<'a, R> = Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 'a>>;

/// A call on its way, owning all it needs.
type Pending<R> = Pin<Box<dyn Future<Output = Result<R, Failure>> + Send>>;

impl Codecs {
    pub(crate) fn new(pre: CodecProviderPre<PluginState>, sharing: Instances, core: &Core) -> Self {
        let limit = Duration::from_millis(core.manifest.limits.timeout_ms);
        let slots = match sharing {
            Instances::Shared => shared_instances(),
            Instances::PerTurn => 0,
        };
        Self {
            context: Arc::new(Context {
                pre,
                engine: core.engine.clone(),
                manifest: core.manifest.clone(),
                caps: core.caps.clone(),
                call_limit: CALL_LIMIT.min(limit / 4),
                waiting: AtomicUsize::new(0),
            }),
            slots: (0..slots)
                .map(|_| Mutex::new(Arc::new(DecodingInstance::new())))
                .collect(),
            next: AtomicUsize::new(0),
        }
    }

    pub fn sharing(&self) -> Instances {
        if self.slots.is_empty() {
            Instances::PerTurn
        } else {
            Instances::Shared
        }
    }

    /// How many calls wait for an instance that another call is running in, now. A turn waits
    /// there for the microseconds a chunk takes to decode, unless a call runs long; tests use it
    /// to act while a call waits.
    pub fn calls_waiting(&self) -> usize {
        self.context.waiting.load(Ordering::Relaxed)
    }

    /// The instance a new turn decodes in: a fresh one for a provider whose turns do not
    /// share, else the next one round the slots, replaced first if it broke or was retired.
    fn pick(&self) -> Arc<DecodingInstance> {
        if self.slots.is_empty() {
            return Arc::new(DecodingInstance::new());
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let mut slot = self.slots[i].lock().expect("codec slot lock");
        if slot.broken.load(Ordering::Acquire) || slot.retired.load(Ordering::Acquire) {
            *slot = Arc::new(DecodingInstance::new());
        }
        slot.clone()
    }
}

/// Counts a call in [`Context::waiting`] until it has the instance or is given up (dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn count(waiting: &'a AtomicUsize) -> Self {
        // Relaxed: the count publishes nothing; it is only read.
        waiting.fetch_add(1, Ordering::Relaxed);
        Self(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A call into an instance, polled by its caller; dropped once it holds the instance, it goes
/// on in a task of its own (dropped before, it never runs). Boxed either way: the call's state is not part of the turn's future (and so of a
/// live stream's memory) while the turn waits for the upstream.
struct InFlight<R: Send + 'static> {
    call: Option<Pending<R>>,
    /// The call holds the instance's lock: it must run to its end.
    entered: Arc<AtomicBool>,
    instance: Arc<DecodingInstance>,
    made: fn(&R) -> Option<ResourceAny>,
}

impl<R: Send + 'static> Future for InFlight<R> {
    type Output = Result<R, Failure>;

    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let call = self.call.as_mut().expect("polled after it finished");
        let done = std::task::ready!(call.as_mut().poll(cx));
        self.call = None;
        std::task::Poll::Ready(done)
    }
}

impl<R: Send + 'static> Drop for InFlight<R> {
    fn drop(&mut self) {
        let Some(call) = self.call.take() else {
            return;
        };
        // Still waiting for the lock (a tokio Mutex's wait is safe to give up): the call never
        // happens. It must not happen later either: its turn's decoder is being dropped.
        if !self.entered.load(Ordering::Acquire) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime left to finish it (the process is ending): the instance cannot be
            // trusted any more.
            self.instance.broken.store(true, Ordering::Release);
            return;
        };
        let (shared, made) = (self.instance.clone(), self.made);
        runtime.spawn(async move {
            if let Ok(value) = call.await
                && let Some(decoder) = made(&value)
            {
                shared
                    .ended
                    .lock()
                    .expect("ended decoders lock")
                    .push(decoder);
            }
        });
    }
}

/// A turn's decoder in its instance. When the turn ends, however it ends, the decoder joins the
/// instance's list of ended ones, dropped in the guest at the next call: the turn's outcome does
/// not wait for it.
struct Decoder {
    instance: Arc<DecodingInstance>,
    handle: ResourceAny,
}

impl Drop for Decoder {
    fn drop(&mut self) {
        self.instance
            .ended
            .lock()
            .expect("ended decoders lock")
            .push(self.handle);
    }
}

impl DecodingInstance {
    fn new() -> Self {
        Self {
            live: tokio::sync::Mutex::new(None),
            broken: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            ended: Mutex::new(Vec::new()),
        }
    }

    /// Runs `f` in the instance. The call is never cut short, which would leave the instance
    /// in a state nothing can trust: a caller that goes away mid-call hands it to a task that
    /// finishes it ([`InFlight`]). `made` names a decoder in the call's value; when the caller
    /// has gone by then, that decoder is dropped like an ended turn's.
    fn call<R: Send + 'static>(
        self: &Arc<Self>,
        context: &Arc<Context>,
        f: impl for<'a> FnOnce(&'a mut Store<PluginState>, &'a CodecProvider) -> Call<'a, R>
        + Send
        + 'static,
        made: fn(&R) -> Option<ResourceAny>,
    ) -> InFlight<R> {
        let (shared, context) = (self.clone(), context.clone());
        let entered = Arc::new(AtomicBool::new(false));
        let started = entered.clone();
        InFlight {
            call: Some(Box::pin(
                async move { shared.run(&context, &started, f).await },
            )),
            entered,
            instance: self.clone(),
            made,
        }
    }

    /// The call itself: instantiates at the first call, drops ended decoders, runs `f` under
    /// the call limit, logs the guest's stderr. A trap or a timeout breaks the instance.
    async fn run<R>(
        &self,
        context: &Context,
        entered: &AtomicBool,
        f: impl for<'a> FnOnce(&'a mut Store<PluginState>, &'a CodecProvider) -> Call<'a, R>,
    ) -> Result<R, Failure> {
        let id = &context.manifest.id;
        // Counted only when another call holds the instance. `try_lock` cannot pass calls
        // already queued: a released lock goes to the first of them.
        let mut live = match self.live.try_lock() {
            Ok(live) => live,
            Err(_) => {
                let _waiting = Waiting::count(&context.waiting);
                self.live.lock().await
            }
        };
        // Set in the same poll that took the lock: from here on the call is not given up.
        entered.store(true, Ordering::Release);
        if self.broken.load(Ordering::Acquire) {
            return Err(Failure::AlreadyBroken);
        }
        let outcome = tokio::time::timeout(context.call_limit, async {
            if live.is_none() {
                let state = PluginState::new(&context.manifest, context.caps.clone());
                let mut store = new_store(&context.engine, state);
                let codec = context.pre.instantiate_async(&mut store).await?;
                *live = Some(Live {
                    store,
                    codec,
                    logged: 0,
                });
            }
            let Live { store, codec, .. } = live.as_mut().expect("instantiated above");
            // The per-call log cap counts this call's lines, not the instance's lifetime.
            store.data_mut().log_lines = 0;
            let ended = std::mem::take(&mut *self.ended.lock().expect("ended decoders lock"));
            for decoder in ended {
                decoder.resource_drop_async(&mut *store).await?;
            }
            f(store, codec).await
        })
        .await;
        let memory_cap = live
            .as_mut()
            .is_some_and(|live| live.store.data_mut().limits.take_cap_hit());
        let stderr = match live.as_mut() {
            Some(live) => {
                let (new, total) = live.store.data().stderr_since(live.logged);
                live.logged = total;
                if total >= RETIRE_AT_STDERR || live.store.data().limits.more_than_half_used() {
                    self.retired.store(true, Ordering::Release);
                }
                new
            }
            None => String::new(),
        };
        log_stderr(id, &stderr);
        let failed = match outcome {
            Ok(Ok(value)) => {
                telemetry::metrics::plugin_call(id, "ok", memory_cap);
                return Ok(value);
            }
            Ok(Err(trap)) => CallError::trap(id, trap, &stderr),
            Err(_) => CallError::Timeout {
                id: id.clone(),
                after: context.call_limit,
            },
        };
        telemetry::metrics::plugin_call(id, failed.kind(), memory_cap);
        self.broken.store(true, Ordering::Release);
        *live = None;
        Err(Failure::Failed(failed))
    }
}
