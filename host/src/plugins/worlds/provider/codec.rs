//! Host-driven turns of a `codec-provider` component: the plugin encodes a turn as an upstream
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

use tokio::sync::mpsc;
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
use crate::plugins::worlds::provider::references::{ExpandError, Refs};
use crate::plugins::worlds::provider::upstream_seen::UpstreamSeen;
use crate::telemetry;
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

    /// Runs one turn: `start` in the plugin, the request from the host, the body through the
    /// plugin's decoder, each event to `events` (a closed receiver cancels the turn). The
    /// manifest's time limit covers the whole turn.
    pub(crate) async fn turn(
        &self,
        request: TurnRequest,
        refs: Option<Arc<Refs>>,
        events: mpsc::Sender<TurnEvent>,
        seen: &UpstreamSeen,
    ) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        let manifest = &self.context.manifest;
        let limit = Duration::from_millis(manifest.limits.timeout_ms);
        let clock = std::time::Instant::now();
        let out_of_time = || CallError::Timeout {
            id: manifest.id.clone(),
            after: limit,
        };
        match tokio::time::timeout(limit, self.drive(request, refs, events, seen)).await {
            // The upstream request's own deadline is the same limit, started a moment later;
            // when both pass in the same timer tick the request's may be seen first. Either
            // way the turn ran out of time.
            Ok(Ok(Err(PluginError::Transport(why))))
                if why == TIMED_OUT && clock.elapsed() >= limit =>
            {
                Err(out_of_time())
            }
            Ok(outcome) => outcome,
            Err(_) => Err(out_of_time()),
        }
    }

    async fn drive(
        &self,
        request: TurnRequest,
        refs: Option<Arc<Refs>>,
        events: mpsc::Sender<TurnEvent>,
        seen: &UpstreamSeen,
    ) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        let id = &self.context.manifest.id;
        let streaming = request.streaming;
        // Boxed: starting is over in a moment, and inline its state would be part of the turn's
        // future (the memory of every live stream).
        let start = telemetry::trace::plugin_call(id, "start");
        let started = Box::pin(self.start(request))
            .instrument(start.clone())
            .await;
        telemetry::trace::failed(&start, started.as_ref().err().map(CallError::kind));
        let (mut upstream, decoder) = match started? {
            Ok(started) => started,
            Err(e) => return Ok(Err(e)),
        };
        // Only a turn with references has its body taken to be filled in.
        if let Some(refs) = &refs
            && let Some(body) = upstream.body.take()
        {
            let json = upstream.headers.iter().any(|h| {
                h.name.eq_ignore_ascii_case("content-type")
                    && h.value.to_ascii_lowercase().contains("json")
            });
            match refs.expand(body, json, egress::MAX_REQUEST_BODY_BYTES) {
                Ok(body) => upstream.body = Some(body),
                // What the client sent, escaped for the upstream, passes the cap: its request.
                Err(e @ ExpandError::TooLarge(_)) => {
                    return Ok(Err(PluginError::InvalidInput(e.to_string())));
                }
                Err(e) => return Ok(Err(PluginError::Internal(e.to_string()))),
            }
        }
        // One span for the body's decoding, however many calls it takes (one per piece).
        let decode = telemetry::trace::plugin_call(id, "decode");
        let decoded = self
            .decode(&decoder, upstream, streaming, events, seen)
            .instrument(decode.clone())
            .await
            .map_err(|failure| failure.into_call_error(id));
        telemetry::trace::failed(&decode, decoded.as_ref().err().map(CallError::kind));
        decoded
    }

    /// Builds a turn's upstream request in the plugin (`start`) and drops it: the plugin's own
    /// refusal of the request (a parameter the model does not take) before anything is sent.
    pub(crate) async fn check(
        &self,
        request: TurnRequest,
    ) -> Result<Result<(), PluginError>, CallError> {
        Ok(self.start(request).await?.map(|_started| ()))
    }

    /// `start` in the plugin: the turn's upstream request and its decoder.
    async fn start(
        &self,
        request: TurnRequest,
    ) -> Result<Result<(http_host::WitRequest, Decoder), PluginError>, CallError> {
        let id = &self.context.manifest.id;
        let request = Arc::new(request);
        // Twice at most: a turn that picked an instance just as another turn's call broke it
        // tries a fresh one.
        let mut retried = false;
        let (shared, started) = loop {
            let shared = self.pick();
            let request = request.clone();
            let started = shared
                .call(
                    &self.context,
                    move |store, codec| {
                        Box::pin(async move {
                            codec
                                .chatd_plugin_turn_codec()
                                .call_start(store, &request)
                                .await
                        })
                    },
                    // A decoder made for a turn that is gone by then is dropped like any other.
                    |started| started.as_ref().ok().map(|(_, decoder)| *decoder),
                )
                .await;
            match started {
                Err(Failure::AlreadyBroken) if !retried => retried = true,
                Err(failure) => return Err(failure.into_call_error(id)),
                Ok(started) => break (shared, started),
            }
        };
        Ok(started.map(|(upstream, handle)| {
            let decoder = Decoder {
                instance: shared,
                handle,
            };
            (upstream, decoder)
        }))
    }

    async fn decode(
        &self,
        decoder: &Decoder,
        upstream: http_host::WitRequest,
        streaming: bool,
        events: mpsc::Sender<TurnEvent>,
        seen: &UpstreamSeen,
    ) -> Result<Result<TurnOutcome, PluginError>, Failure> {
        let (mut response, status) = match self.open(decoder, upstream, seen).await? {
            Ok(opened) => opened,
            Err(e) => return Ok(Err(e)),
        };
        self.feed(decoder, &mut response, status, streaming, events)
            .await
    }

    /// Sends the turn's request and hands the answer's head to the decoder.
    async fn open(
        &self,
        decoder: &Decoder,
        upstream: http_host::WitRequest,
        seen: &UpstreamSeen,
    ) -> Result<Result<(egress::Incoming, u16), PluginError>, Failure> {
        let caps = &self.context.caps;
        // Sending is over in a moment: boxed, its state is not part of the turn's future (and
        // so of the memory of every live stream) while the turn waits for the next chunk.
        // Matched in place, not bound first: a moved-from binding keeps its room in the future.
        seen.sending();
        let response = match Box::pin(egress::send(
            &caps.clients,
            &caps.http,
            http_host::outgoing(upstream),
        ))
        .await
        {
            Ok(response) => response,
            Err(refusal) => return Ok(Err(transport_error(refusal))),
        };
        seen.head(
            response.status,
            response
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str())),
        );
        let headers: Vec<_> = response
            .headers
            .iter()
            .map(|(name, value)| http_host::WitHeader {
                name: name.clone(),
                value: value.clone(),
            })
            .collect();
        let (status, handle) = (response.status, decoder.handle);
        decoder
            .instance
            .call(
                &self.context,
                move |store, codec| {
                    Box::pin(async move {
                        codec
                            .chatd_plugin_turn_codec()
                            .turn_decoder()
                            .call_head(store, handle, status, &headers)
                            .await
                    })
                },
                |_| None,
            )
            .await?;
        Ok(Ok((response, status)))
    }

    /// Feeds the answer's body to the decoder, chunk by chunk (or whole, for a non-streaming
    /// turn), and its events to the run, until the turn ends.
    async fn feed(
        &self,
        decoder: &Decoder,
        response: &mut egress::Incoming,
        status: u16,
        streaming: bool,
        events: mpsc::Sender<TurnEvent>,
    ) -> Result<Result<TurnOutcome, PluginError>, Failure> {
        let handle = decoder.handle;
        // A whole answer is gathered here and decoded in one call (see the module's docs).
        let mut whole = (!streaming).then(Vec::new);
        loop {
            let (step, refused) = match next_step(response.next_chunk().await, &mut whole, status) {
                Ok(Some(step)) => step,
                Ok(None) => continue,
                Err(e) => return Ok(Err(e)),
            };
            let ends = !matches!(step, Step::Feed(_));
            let decoded = decoder
                .instance
                .call(
                    &self.context,
                    move |store, codec| Box::pin(step.run(store, codec, handle)),
                    |_| None,
                )
                .await?;
            if let Some(refusal) = refused {
                return Ok(match decoded.end {
                    Some(Err(upstream @ PluginError::Upstream(_))) => Err(upstream),
                    _ => Err(transport_error(refusal)),
                });
            }
            for event in decoded.events {
                if events.send(event).await.is_err() {
                    // The run stopped listening: stop reading the upstream.
                    return Ok(Ok(cancelled()));
                }
            }
            match decoded.end {
                Some(end) => return Ok(end),
                // The protocol says the end of the body ends the turn; a decoder that does not
                // would have the host wait on a body that has nothing more to give.
                None if ends => {
                    return Err(Failure::Failed(CallError::Trap {
                        id: self.context.manifest.id.clone(),
                        reason: "its decoder did not end the turn at the end of the body".into(),
                    }));
                }
                None => {}
            }
        }
    }
}

/// What the body's next piece (or its end, or its failure) makes the decoder do: `None` while a
/// whole answer is being gathered (`whole`), else the step and, when the body failed, why. An
/// error status's body cut short still names the upstream's error, which says more than the
/// cut; any other body cut short ends the turn with the cut.
fn next_step(
    chunk: Result<Option<Vec<u8>>, Refusal>,
    whole: &mut Option<Vec<u8>>,
    status: u16,
) -> Result<Option<(Step, Option<Refusal>)>, PluginError> {
    Ok(Some(match chunk {
        Ok(Some(chunk)) => match whole {
            Some(body) if body.len() + chunk.len() > MAX_WHOLE_BODY => {
                return Err(PluginError::Transport(format!(
                    "the answer is larger than the {MAX_WHOLE_BODY}-byte cap of a non-streaming \
                     turn"
                )));
            }
            Some(body) => {
                body.extend_from_slice(&chunk);
                return Ok(None);
            }
            None => (Step::Feed(chunk), None),
        },
        Ok(None) => match whole.take() {
            Some(body) => (Step::FeedAndFinish(body), None),
            None => (Step::Finish, None),
        },
        Err(refusal) if status < 400 || matches!(refusal, Refusal::TooLarge(_)) => {
            return Err(transport_error(refusal));
        }
        Err(refusal) => match whole.take() {
            Some(mut body) => {
                body.truncate(MAX_ERROR_BODY);
                (Step::FeedAndFinish(body), Some(refusal))
            }
            None => (Step::Finish, Some(refusal)),
        },
    }))
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

/// One decoding call: a piece of the body, its end, or a whole body and its end.
enum Step {
    Feed(Vec<u8>),
    Finish,
    FeedAndFinish(Vec<u8>),
}

impl Step {
    async fn run(
        self,
        store: &mut Store<PluginState>,
        codec: &CodecProvider,
        handle: ResourceAny,
    ) -> wasmtime::Result<Decoded> {
        let decoder = codec.chatd_plugin_turn_codec().turn_decoder();
        match self {
            Step::Feed(chunk) => decoder.call_feed(&mut *store, handle, &chunk).await,
            Step::Finish => decoder.call_finish(&mut *store, handle).await,
            Step::FeedAndFinish(body) => {
                let fed = decoder.call_feed(&mut *store, handle, &body).await?;
                if fed.end.is_some() {
                    return Ok(fed);
                }
                let mut ended = decoder.call_finish(&mut *store, handle).await?;
                let mut events = fed.events;
                events.append(&mut ended.events);
                ended.events = events;
                Ok(ended)
            }
        }
    }
}

/// What a turn the run stopped listening to returns; nobody reads it.
fn cancelled() -> TurnOutcome {
    TurnOutcome {
        finish: FinishReason::Other,
        raw_json: None,
    }
}

/// What a request past its deadline fails with.
const TIMED_OUT: &str = "the request timed out";

/// A refused or failed upstream request as the plugin's error, in the words the SDK's
/// `transport_error` gives a plugin that sends it itself.
fn transport_error(refusal: Refusal) -> PluginError {
    match refusal {
        Refusal::Denied(why) => PluginError::Denied(why),
        Refusal::Invalid(why) => PluginError::InvalidInput(why),
        Refusal::Timeout => PluginError::Transport(TIMED_OUT.into()),
        Refusal::Connection(why) => PluginError::Transport(why),
        Refusal::TooLarge(cap) => PluginError::Transport(format!(
            "the response is larger than the host's {cap}-byte cap"
        )),
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
