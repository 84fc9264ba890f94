//! What every plugin call shares, whatever its world: [`Core`] (the engine, a loaded
//! component's manifest and grants, a fresh store and instance per call under the manifest's
//! memory cap and deadline), [`CallError`], and the pieces a call runs on: the engine and its
//! ticker ([`engine`]), compiled code on disk ([`cache`]), the linker and the WIT bindings
//! ([`linker`], [`bindings`], [`records`]), the store's state and views ([`state`]), a
//! session's output ([`capture`]) and the memory all instances share ([`memory`]).

pub mod cache;
pub mod capture;
pub mod engine;
pub mod linker;
pub mod records;
pub mod session;
pub mod state;

use std::pin::Pin;
use std::time::Duration;

use tracing::Instrument as _;
use wasmtime::{Engine, Store};

use crate::plugins::LoadError;
use crate::plugins::bindings::provider::chatd::plugin::provider_types::TurnEvent;
use crate::plugins::manifest::{self, Kind};
use crate::telemetry;
use crate::telemetry::text::escape_controls;
use state::PluginState;

pub use cache::compile;

/// The WASI interfaces chatd does not link (files, sockets, HTTP of its own), named when a
/// component imports one: the one line says what it imports and how its toolchain leaves it out.
/// `files`: the plugin holds the `files` grant, whose filesystem and (refusing) sockets are
/// linked ([`linker::files`]).
pub(crate) fn unlinked_wasi(
    engine: &Engine,
    component: &wasmtime::component::Component,
    files: bool,
) -> Option<String> {
    const NEVER: [&str; 3] = ["wasi:filesystem/", "wasi:sockets/", "wasi:http/"];
    let never = if files { &NEVER[2..] } else { &NEVER[..] };
    let ty = component.component_type();
    let name = ty
        .imports(engine)
        .map(|(name, _)| name)
        .find(|name| never.iter().any(|prefix| name.starts_with(prefix)))?;
    Some(format!(
        "it imports {name}, which chatd never links: a plugin gets no files, sockets or network \
         of its own. Build Python with `componentize-py --stub-wasi`, JavaScript with \
         `componentize-js --disable stdio random clocks http fetch-event` \
         (docs/writing-a-plugin.md)"
    ))
}

/// A call that failed in the sandbox rather than with the plugin's own typed error.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("plugin {id} trapped: {reason}")]
    Trap { id: String, reason: String },
    #[error("plugin {id} did not finish within {after:?}")]
    Timeout { id: String, after: Duration },
}

impl CallError {
    /// Its kind as metrics and traces name it.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::Trap { .. } => "trap",
            CallError::Timeout { .. } => "timeout",
        }
    }

    /// The trap's own words ("wasm `unreachable` instruction executed", "forcing trap when
    /// growing memory…"), without the wasm backtrace wasmtime wraps around them, followed by
    /// what the guest wrote to stderr (a Rust panic's message is there).
    pub(crate) fn trap(id: &str, error: wasmtime::Error, stderr: &str) -> Self {
        let mut reason = match error.downcast_ref::<wasmtime::Trap>() {
            Some(trap) => trap.to_string(),
            None => error.root_cause().to_string(),
        };
        let said: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("note: run with `RUST_BACKTRACE"))
            .collect();
        if !said.is_empty() {
            let said = said.join(" ");
            let cut: String = said.chars().take(MAX_STDERR_IN_ERROR).collect();
            reason.push_str(&format!(" (stderr: {cut})"));
        }
        CallError::Trap {
            id: id.to_string(),
            reason,
        }
    }
}

/// Characters of guest stderr quoted in a trap's error.
pub(crate) const MAX_STDERR_IN_ERROR: usize = 500;

/// Guest stderr goes to the log, a line each, tagged with the plugin id, its control
/// characters escaped (a `\r` inside a line cannot rewrite it).
pub(crate) fn log_stderr(id: &str, stderr: &str) {
    for line in stderr.lines().filter(|l| !l.trim().is_empty()).take(200) {
        tracing::warn!(plugin = id, "stderr: {}", escape_controls(line));
    }
}

/// The body of a plugin call: instantiate from a pre-linked component and call an export, in
/// the store it is given.
pub trait CallFn<R>:
    for<'a> FnOnce(
        &'a mut Store<PluginState>,
    ) -> Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 'a>>
    + Send
{
}

impl<R, F> CallFn<R> for F where
    F: for<'a> FnOnce(
            &'a mut Store<PluginState>,
        ) -> Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 'a>>
        + Send
{
}

/// What every loaded plugin has, whatever its world: its manifest, the engine, its grants.
/// Each call builds a fresh store (and instance) from it.
pub(crate) struct Core {
    pub(crate) manifest: manifest::Manifest,
    pub(crate) engine: Engine,
    pub(crate) caps: crate::plugins::capabilities::Capabilities,
}

impl Core {
    /// Checks the manifest's kind and links the component against `linker` once, into the
    /// world's typed pre-instance (`pre`, e.g. `ToolPre::new`); calls reuse the result.
    pub(crate) fn link<P>(
        engine: &Engine,
        manifest: manifest::Manifest,
        expected: Kind,
        linker: wasmtime::Result<wasmtime::component::Linker<PluginState>>,
        component: &wasmtime::component::Component,
        caps: crate::plugins::capabilities::Capabilities,
        pre: impl FnOnce(wasmtime::component::InstancePre<PluginState>) -> wasmtime::Result<P>,
    ) -> Result<(Self, P), LoadError> {
        if manifest.kind != expected {
            return Err(LoadError::WrongKind {
                id: manifest.id,
                expected,
                found: manifest.kind,
            });
        }
        let id = manifest.id.clone();
        if let Some(reason) = unlinked_wasi(engine, component, caps.files.is_some()) {
            return Err(LoadError::Link { id, reason });
        }
        let link_error = LoadError::link(&id);
        let instance_pre = linker
            .and_then(|linker| linker.instantiate_pre(component))
            .map_err(&link_error)?;
        let pre = pre(instance_pre).map_err(&link_error)?;
        let core = Self {
            manifest,
            engine: engine.clone(),
            caps,
        };
        Ok((core, pre))
    }

    pub fn manifest(&self) -> &manifest::Manifest {
        &self.manifest
    }

    /// Runs one call (of the export `operation`) in a fresh store under the manifest's
    /// deadline; logs the guest's stderr; counts it in the plugin metrics, in a span inside a
    /// trace.
    pub(crate) async fn call<R>(
        &self,
        operation: &'static str,
        events: Option<tokio::sync::mpsc::Sender<TurnEvent>>,
        f: impl CallFn<R>,
    ) -> Result<R, CallError> {
        self.call_measured(operation, events, f).await.0
    }

    /// [`Core::call`], and the most memory the call's instance held at once (bytes).
    pub(crate) async fn call_measured<R>(
        &self,
        operation: &'static str,
        events: Option<tokio::sync::mpsc::Sender<TurnEvent>>,
        f: impl CallFn<R>,
    ) -> (Result<R, CallError>, usize) {
        let span = telemetry::trace::plugin_call(&self.manifest.id, operation);
        let (outcome, memory_cap, peak) =
            self.call_in_store(events, f).instrument(span.clone()).await;
        let kind = outcome.as_ref().err().map(CallError::kind);
        telemetry::metrics::plugin_call(&self.manifest.id, kind.unwrap_or("ok"), memory_cap);
        telemetry::trace::failed(&span, kind);
        (outcome, peak)
    }

    /// [`Core::call`]'s work; also whether the call was refused memory past its cap, and its
    /// memory's peak.
    pub(crate) async fn call_in_store<R>(
        &self,
        events: Option<tokio::sync::mpsc::Sender<TurnEvent>>,
        f: impl CallFn<R>,
    ) -> (Result<R, CallError>, bool, usize) {
        let manifest = &self.manifest;
        let mut state = PluginState::new(manifest, self.caps.clone());
        state.events = events;
        // A devbox tool waits on its command, whose limit is the operator's, not the manifest's.
        let deadline = Duration::from_millis(manifest.limits.timeout_ms).max(
            self.caps
                .ssh
                .as_ref()
                .map_or(Duration::ZERO, |grant| grant.call_deadline()),
        );
        let mut store = new_store(&self.engine, state);
        let outcome = tokio::time::timeout(deadline, f(&mut store)).await;
        let stderr = store.data().stderr_text();
        log_stderr(&manifest.id, &stderr);
        let memory_cap = store.data_mut().limits.take_cap_hit();
        let peak = store.data().limits.memory_peak();
        let outcome = match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(trap)) => Err(CallError::trap(&manifest.id, trap, &stderr)),
            Err(_) => Err(CallError::Timeout {
                id: manifest.id.clone(),
                after: deadline,
            }),
        };
        (outcome, memory_cap, peak)
    }
}

/// A store for one call: the plugin's limiter, and an epoch deadline of one tick that yields to
/// the executor and renews itself, so a busy guest shares the worker and stays cancellable.
///
/// The yield is tokio's own `yield_now`, as wasmtime advises for tokio: it lets the worker poll
/// its I/O driver before the guest runs again. wasmtime's plain yield wakes the task at once, and
/// a worker that always has a ready task polls I/O only every 61 polls, here 61 ticks (0.6 s):
/// a looping guest held up every connection on its worker
/// (`tests/api/python.rs::an_endless_loop_ends_at_its_limit_while_the_server_serves_others`).
pub(crate) fn new_store(engine: &Engine, state: PluginState) -> Store<PluginState> {
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.limits);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|_| {
        Ok(wasmtime::UpdateDeadline::YieldCustom(
            1,
            Box::pin(tokio::task::yield_now()),
        ))
    });
    store
}
