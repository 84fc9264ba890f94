//! What each backend must do, stated once: the write side of every area, one trait each, so a
//! backend that lacks an operation, or has it with another signature, does not compile. Each
//! method does what the [`Store`](super::Store) method of the same name documents; `Store`
//! calls them through `on_backend!`. The reads are not here: they are written once for both
//! (`read.rs`). What only one backend has (PostgreSQL's shared runs and lease) is its own.

use super::{
    CallUsage, ChatPatch, ChatRecord, ChatSettings, MessageRecord, NewCall, NewChat, NewMessage,
    NewSearch, Result, SearchDetailRecord, SearchRecord, SearchRunOutcome,
};

/// Chats and their messages.
pub(super) trait Chats {
    async fn create_chat(&self, chat: NewChat) -> Result<ChatRecord>;
    /// A read, but each backend takes its own way to one snapshot of both.
    async fn get_chat_with_messages(
        &self,
        id: &str,
    ) -> Result<Option<(ChatRecord, Vec<MessageRecord>)>>;
    async fn chat_to_continue(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<(ChatSettings, Option<Vec<MessageRecord>>)>>;
    async fn update_chat(&self, id: &str, patch: ChatPatch) -> Result<Option<ChatRecord>>;
    async fn set_chat_starred(&self, id: &str, starred: bool) -> Result<Option<ChatRecord>>;
    async fn delete_chat(&self, id: &str) -> Result<bool>;
    async fn append_message(
        &self,
        chat_id: &str,
        message: NewMessage,
    ) -> Result<Option<MessageRecord>>;
}

/// Model calls and the chat writes around them.
pub(super) trait Calls {
    async fn begin_call(
        &self,
        call: NewCall,
        read: Option<Vec<MessageRecord>>,
        new_rows: impl Fn(&[MessageRecord]) -> Vec<NewMessage>,
    ) -> Result<bool>;
    async fn finish_call(
        &self,
        call_id: &str,
        chat_id: Option<&str>,
        assistant: Option<NewMessage>,
        usage: Option<CallUsage>,
        latency_ms: u64,
        answered_by: Option<&(String, String)>,
    ) -> Result<()>;
    async fn fail_call(
        &self,
        call_id: &str,
        error: &str,
        usage: Option<CallUsage>,
        latency_ms: u64,
    ) -> Result<()>;
    async fn set_title_if_unset(&self, chat_id: &str, title: &str) -> Result<Option<ChatRecord>>;
}

/// Searches and their runs' outcomes.
pub(super) trait Searches {
    async fn create_search(
        &self,
        search: NewSearch,
        reuse_by_query: bool,
    ) -> Result<(SearchRecord, bool)>;
    async fn record_search_run(
        &self,
        id: &str,
        outcome: SearchRunOutcome,
    ) -> Result<Option<SearchDetailRecord>>;
    async fn set_search_starred(&self, id: &str, starred: bool) -> Result<Option<SearchRecord>>;
    async fn delete_search(&self, id: &str) -> Result<bool>;
}

/// The servers' signs of life, and the calls a lost server left open.
pub(super) trait Liveness {
    async fn close_lost_calls(&self) -> Result<usize>;
    async fn register_instance(&self) -> Result<String>;
    async fn heartbeat(&self, id: &str) -> Result<()>;
}
