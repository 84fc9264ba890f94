//! Where a completion's events and tool messages go (a run's log, a chat) and what it watches
//! for a client's stop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{Notify, watch};

use super::events::ChatEvent;
use super::failure::CompletionError;
use crate::runlog::RunLog;
use crate::store::{NewMessage, Store};

/// Where a completion's events and tool logs go: a run's log (streams) and a chat (persisted).
/// Both optional: a non-streaming completion keeps no log, a `persist: false` stream no chat.
pub struct Sink {
    pub log: Option<Arc<RunLog>>,
    pub chat: Option<ChatWriter>,
    /// A client's request to stop the run.
    pub stop: Stop,
}

/// The switch a client's stop throws (`POST /v1/chats/:chatId/stream/cancel`), shared by a run's
/// registry entry (`runs`) and its completion. A flag and a `Notify`: a few dozen bytes per run,
/// where a watch channel took half a KiB (memory per live stream, BENCHMARKS.md).
#[derive(Debug, Default)]
pub struct StopSwitch {
    requested: AtomicBool,
    notify: Notify,
}

impl StopSwitch {
    /// Asks the run to stop; any later wait sees it too.
    pub fn request(&self) {
        self.requested.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }
}

/// What a completion watches for a client's stop; a run nobody can stop has none
/// ([`Stop::default`]).
#[derive(Clone, Debug, Default)]
pub struct Stop(Option<Arc<StopSwitch>>);

impl Stop {
    pub fn new(switch: Arc<StopSwitch>) -> Self {
        Self(Some(switch))
    }

    /// Resolves once a stop is requested; never, for a run nobody can stop.
    pub async fn requested(&self) {
        let Some(switch) = &self.0 else {
            return std::future::pending().await;
        };
        loop {
            // Made before the flag is read: `notify_waiters` wakes every `Notified` that
            // exists, polled or not, so a request between the two is not missed.
            let notified = switch.notify.notified();
            if switch.requested.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// The chat a completion's tool calls are stored in.
pub struct ChatWriter {
    pub store: Store,
    pub chat_id: String,
    /// Whether the call's own record (and the history rows before it) is written: `None` while
    /// it is being written beside the first turn. Tool rows wait for it, so they come after the
    /// history in the transcript.
    pub recorded: watch::Receiver<Option<bool>>,
}

impl Sink {
    pub fn emit(&self, event: &ChatEvent) {
        if let Some(log) = &self.log {
            log.push(event.name(), &event.data(), event.is_terminal());
        }
    }

    pub(super) async fn store_tool_log(&self, message: NewMessage) -> Result<(), CompletionError> {
        if let Some(chat) = &self.chat {
            let mut recorded = chat.recorded.clone();
            match recorded.wait_for(Option::is_some).await.map(|r| *r) {
                Ok(Some(true)) => {}
                _ => return Err(CompletionError::NotRecorded),
            }
            chat.store.append_message(&chat.chat_id, message).await?;
        }
        Ok(())
    }
}
