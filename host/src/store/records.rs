//! What the store takes and gives: plain records, the same whichever database is behind it.
//! Neither backend's rows leave the store.

use serde_json::Value;

use crate::vocabulary::Role;

#[derive(Clone, Debug, PartialEq)]
pub struct ChatRecord {
    pub id: String,
    pub title: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// When the chat joined the `starred` project; `None` when not starred.
    pub starred_at: Option<String>,
    pub initiated_provider: Option<String>,
    pub initiated_model: Option<String>,
    pub last_used_provider: Option<String>,
    pub last_used_model: Option<String>,
    pub additional_system_prompt: Option<String>,
    pub enabled_tools: Vec<String>,
    /// Whose chat it is: never shown, compared (`people::Caller::owner`).
    pub owner_id: String,
}

impl ChatRecord {
    /// What a completion on the chat falls back on where its request is silent.
    pub fn settings(&self) -> ChatSettings {
        ChatSettings {
            additional_system_prompt: self.additional_system_prompt.clone(),
            enabled_tools: self.enabled_tools.clone(),
        }
    }
}

/// A chat's settings that a completion on it falls back on (`Store::chat_to_continue`).
#[derive(Clone, Debug, PartialEq)]
pub struct ChatSettings {
    pub additional_system_prompt: Option<String>,
    pub enabled_tools: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MessageRecord {
    pub id: String,
    pub created_at: String,
    pub role: Role,
    pub content: String,
    pub name: Option<String>,
    pub metadata: Option<Value>,
}

#[derive(Clone, Debug)]
pub struct NewChat {
    /// Whose chat it is (`people::Caller::owner`).
    pub owner_id: String,
    pub title: Option<String>,
    /// Sets both the initiated and the last-used provider/model.
    pub provider_model: Option<(String, String)>,
    pub additional_system_prompt: Option<String>,
    pub enabled_tools: Vec<String>,
    pub messages: Vec<NewMessage>,
}

impl NewChat {
    /// An empty chat of `owner`'s: no title, model, prompt, tools or messages. No `Default`:
    /// every chat is someone's.
    pub fn owned_by(owner: &str) -> Self {
        Self {
            owner_id: owner.to_string(),
            title: None,
            provider_model: None,
            additional_system_prompt: None,
            enabled_tools: Vec::new(),
            messages: Vec::new(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct NewMessage {
    pub role: Role,
    pub content: String,
    pub name: Option<String>,
    pub metadata: Option<Value>,
}

/// A chat settings update; `None` leaves a field unchanged.
#[derive(Clone, Debug, Default)]
pub struct ChatPatch {
    pub title: Option<String>,
    /// `Some(None)` clears the prompt.
    pub additional_system_prompt: Option<Option<String>>,
    pub enabled_tools: Option<Vec<String>>,
}

/// Token accounting of a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

impl CallUsage {
    /// The usage stored as three nullable token columns: `None` unless all three are set.
    pub(super) fn from_columns(
        input: Option<i64>,
        output: Option<i64>,
        total: Option<i64>,
    ) -> Option<Self> {
        let count = |n: i64| n.max(0) as u64;
        Some(Self {
            input_tokens: count(input?),
            output_tokens: count(output?),
            total_tokens: count(total?),
        })
    }
}

/// A call going to a provider.
#[derive(Clone, Debug)]
pub struct NewCall {
    /// Chosen by the caller, which announces it (`meta.callId`) before this is stored.
    pub id: String,
    /// The chat it belongs to, if any (a non-streaming completion without `chatId` has none).
    pub chat_id: Option<String>,
    pub provider: String,
    pub model: String,
}

/// A stored call, as tests and operators read it.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    pub id: String,
    pub chat_id: Option<String>,
    pub provider: String,
    pub model: String,
    pub created_at: String,
    pub completed_at: Option<String>,
    pub usage: Option<CallUsage>,
    pub latency_ms: Option<i64>,
    pub error: Option<String>,
    /// The provider and model that answered, when not the requested ones (the fallback).
    pub answered_by: Option<(String, String)>,
}

/// A search without its results (what lists show).
#[derive(Clone, Debug, PartialEq)]
pub struct SearchRecord {
    pub id: String,
    pub title: Option<String>,
    pub query: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub starred_at: Option<String>,
    /// Whether a run persisted results or a non-empty answer (one half of `cacheHit`).
    pub has_output: bool,
}

/// A search with the outcome of its last run.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchDetailRecord {
    pub search: SearchRecord,
    pub request_id: Option<String>,
    pub latency_ms: Option<i64>,
    pub error: Option<String>,
    pub results: Vec<Value>,
    pub answer_text: Option<String>,
    pub answer_request_id: Option<String>,
    pub answer_citations: Vec<Value>,
    pub answer_error: Option<String>,
}

#[derive(Clone, Debug)]
pub struct NewSearch {
    /// Whose search it is; reuse by query finds only theirs.
    pub owner_id: String,
    pub title: Option<String>,
    pub query: Option<String>,
}

/// What one run of a search produced; it replaces the previous run's outcome.
#[derive(Clone, Debug, Default)]
pub struct SearchRunOutcome {
    /// Overrides given to the run; `None` keeps the stored value.
    pub title: Option<String>,
    pub query: Option<String>,
    pub request_id: Option<String>,
    pub latency_ms: Option<i64>,
    pub error: Option<String>,
    pub results: Vec<Value>,
    pub answer_text: Option<String>,
    pub answer_request_id: Option<String>,
    pub answer_citations: Vec<Value>,
    pub answer_error: Option<String>,
}

/// The reuseByQuery key: trimmed and lower-cased.
pub fn normalize_query(query: &str) -> String {
    query.trim().to_lowercase()
}

#[derive(Clone, Debug, PartialEq)]
pub enum WorkspaceRecord {
    Chat(ChatRecord),
    Search(SearchRecord),
}

/// One event of a shared run (PostgreSQL): as its owner writes it and its followers read it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunEvent {
    pub run_id: std::sync::Arc<str>,
    /// The event's 1-based position in its run.
    pub seq: u32,
    pub name: String,
    /// The event's JSON text, exactly as sent.
    pub data: String,
    /// `done` or `error`: the run's last event, which ends it.
    pub terminal: bool,
}

/// Whether a shared run was registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunStart {
    Started,
    /// The chat or search has a live run already (on this instance or another).
    Running,
}

/// Where a page of a list starts: after the row with this `updatedAt` (as stored) and id, in
/// the lists' order (newest `updatedAt` first, then newest id).
#[derive(Clone, Debug, PartialEq)]
pub struct PageAfter {
    pub updated_at: String,
    pub id: String,
}

/// Rows whose title holds some text, case ignored as the database's `lower()` ignores it (ASCII
/// letters on SQLite, the locale's on PostgreSQL; both sides are lowered alike, so the text as
/// written always matches): a `LIKE` pattern with the text's own `%`, `_` and `\` escaped so
/// they match themselves.
#[derive(Clone, Debug, PartialEq)]
pub struct TitleMatch(String);

impl TitleMatch {
    pub fn containing(text: &str) -> Self {
        let mut pattern = String::with_capacity(text.len() + 2);
        pattern.push('%');
        for c in text.chars() {
            if matches!(c, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push('%');
        Self(pattern)
    }

    /// The pattern, for `LIKE … ESCAPE '\'`.
    pub fn pattern(&self) -> &str {
        &self.0
    }
}

/// A message whose text matched a search, with its chat's title.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageHit {
    /// Where the next page starts when this is a page's last hit; opaque, and each backend's
    /// own (SQLite: the row's position in the text index; PostgreSQL: the message's id).
    pub position: String,
    pub chat_id: String,
    pub chat_title: Option<String>,
    pub message_id: String,
    pub created_at: String,
    pub role: Role,
    pub content: String,
}
