//! Calls in a store that outlives them: a session. Every other plugin call gets a fresh store
//! and instance ([`Core::call`]); the interpreter keeps one per session, so the code's globals
//! and imports persist from one call to the next (ARCHITECTURE.md says why this is the one
//! exception). Each call still has its own deadline and its own count in the metrics and
//! traces; the store's memory cap holds for the session's whole life.
//!
//! A call that traps or runs out of time leaves its instance unusable (it stopped mid-way):
//! [`Kept::poisoned`] says so, and the owner drops the session.

use std::time::Duration;

use tracing::Instrument as _;
use wasmtime::Store;

use super::capture::Captured;
use super::state::PluginState;
use super::{CallError, CallFn, Core, log_stderr, new_store};
use crate::plugins::capabilities::files::tree::Folder;
use crate::telemetry;

/// A session's store and what the host tracks of it between calls.
pub struct Kept {
    pub(crate) store: Store<PluginState>,
    /// Bytes of stderr already logged.
    stderr_seen: usize,
    /// A call trapped or timed out: the instance must not be used again.
    poisoned: bool,
}

impl Kept {
    pub fn poisoned(&self) -> bool {
        self.poisoned
    }

    /// What the last call wrote to stdout and to stderr; both start empty again.
    pub fn take_output(&mut self) -> (Captured, Captured) {
        match &self.store.data().output {
            Some(output) => (output.stdout.take(), output.stderr.take()),
            None => Default::default(),
        }
    }
}

impl Core {
    /// A store for a session whose filesystem is `folder` (given only with the `files` grant),
    /// keeping at most `output_chars` characters of each of stdout and stderr per call.
    pub(crate) fn kept_store(&self, folder: Option<Folder>, output_chars: usize) -> Kept {
        let mut state = PluginState::session(&self.manifest, self.caps.clone(), output_chars);
        state.folder = folder.filter(|_| self.caps.files.is_some());
        // A session outlives a failed allocation: the guest is told no, and goes on.
        state.limits.quiet = true;
        Kept {
            store: new_store(&self.engine, state),
            stderr_seen: 0,
            poisoned: false,
        }
    }

    /// Runs one call of `operation` in `kept` under the manifest's deadline, counted and traced
    /// as every call is; the result, and the most memory the instance held during it.
    pub(crate) async fn call_kept<R>(
        &self,
        kept: &mut Kept,
        operation: &'static str,
        f: impl CallFn<R>,
    ) -> (Result<R, CallError>, usize) {
        let id = &self.manifest.id;
        let span = telemetry::trace::plugin_call(id, operation);
        let deadline = Duration::from_millis(self.manifest.limits.timeout_ms);
        if kept.poisoned {
            let reason = "the session's last call did not finish; it must be started again";
            return (
                Err(CallError::Trap {
                    id: id.clone(),
                    reason: reason.into(),
                }),
                0,
            );
        }
        kept.store.data_mut().limits.reset_peak();
        // A call whose future is dropped midway (its run stopped) leaves the session poisoned,
        // and what it printed is not the next call's.
        kept.poisoned = true;
        if let Some(output) = &kept.store.data().output {
            output.stdout.take();
            output.stderr.take();
        }
        let outcome = tokio::time::timeout(deadline, f(&mut kept.store))
            .instrument(span.clone())
            .await;
        // A session's stderr is its caller's (the code's output), quoted in a trap's reason but
        // not logged; a store without a session output logs it as every call does.
        let stderr = match &kept.store.data().output {
            Some(output) => output.stderr.peek(),
            None => {
                let (stderr, seen) = kept.store.data().stderr_since(kept.stderr_seen);
                kept.stderr_seen = seen;
                log_stderr(id, &stderr);
                stderr
            }
        };
        let memory_cap = kept.store.data_mut().limits.take_cap_hit();
        let peak = kept.store.data().limits.memory_peak();
        let outcome = match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(trap)) => Err(CallError::trap(id, trap, &stderr)),
            Err(_) => Err(CallError::Timeout {
                id: id.clone(),
                after: deadline,
            }),
        };
        kept.poisoned = outcome.is_err();
        let kind = outcome.as_ref().err().map(CallError::kind);
        telemetry::metrics::plugin_call(id, kind.unwrap_or("ok"), memory_cap);
        telemetry::trace::failed(&span, kind);
        (outcome, peak)
    }
}
