//! Where a completion's events and tool messages go (a run's log, a chat), and the stop it
//! watches ([`crate::runlog::Stop`]).

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::events::ChatEvent;
use super::failure::CompletionError;
use crate::runlog::{RunLog, Stop};
use crate::store::files::{ChatFileRecord, Kept, MAX_CHAT_FILE_BYTES, MAX_CHAT_FILES, NewChatFile};
use crate::store::{NewMessage, Store};

/// Where a completion's events and tool logs go: a run's log (streams), a route's tap of the
/// reply's text, and a chat (persisted). All optional: a non-streaming completion keeps no log,
/// a `persist: false` stream no chat, and only `/openai/v1`'s streams tap the text.
#[derive(Default)]
pub struct Sink {
    pub log: Option<Arc<RunLog>>,
    /// The reply's text as it is sent (each `delta`), for a route that frames it its own way
    /// (`/openai/v1`'s chunks) rather than as the contract's SSE. Nothing else is sent there:
    /// its reader has no use for it, and the channel holds what it has not read.
    pub tap: Option<mpsc::UnboundedSender<String>>,
    pub chat: Option<ChatWriter>,
    /// A client's request to stop the run.
    pub stop: Stop,
}

/// The chat a completion's tool calls are stored in.
pub struct ChatWriter {
    pub store: Store,
    pub chat_id: String,
    /// Whether the call's own record (and the history rows before it) is written: `None` until
    /// it is (before the first turn). Tool rows wait for it, so they come after the
    /// history in the transcript.
    pub recorded: watch::Receiver<Option<bool>>,
}

impl Sink {
    pub fn emit(&self, event: &ChatEvent) {
        if let Some(log) = &self.log {
            log.push(event.name(), &event.data(), event.is_terminal());
        }
        if let (Some(tap), ChatEvent::Delta(text)) = (&self.tap, event) {
            // A reader gone has its run stopped (`runs::chat::tapped`); nothing to tell here.
            let _ = tap.send(text.clone());
        }
    }

    /// Keeps the files a tool call wrote with the chat: their records, for the tool message's
    /// `metadata.files`; `Ok(None)` without a chat (or once it is deleted), where they are not
    /// kept; `Err` says why they were not kept.
    pub(super) async fn keep_files(
        &self,
        files: Vec<NewChatFile>,
    ) -> Result<Option<Vec<ChatFileRecord>>, String> {
        let Some(chat) = self.chat.as_ref().filter(|_| !files.is_empty()) else {
            return Ok(None);
        };
        match chat.store.add_chat_files(&chat.chat_id, files).await {
            Ok(Kept::Stored(records)) => Ok(Some(records)),
            Ok(Kept::NoChat) => Ok(None),
            Ok(Kept::Full) => Err(format!(
                "the chat already holds its most files ({MAX_CHAT_FILES}, {} MiB in all)",
                MAX_CHAT_FILE_BYTES >> 20
            )),
            Err(e) => Err(e.to_string()),
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
