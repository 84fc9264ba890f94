//! Chat completions: the model↔tool loop ([`completion`]; a round as it streams in `round`,
//! its tool calls in [`tool_calls`], refused turns tried again in `retry`), the transcript rules ([`history`]),
//! the stream's events ([`events`]), model lists ([`models`]) and title suggestion ([`title`]).
//! The HTTP layer (`http/completions.rs`) validates requests and runs these; the run registry
//! (`runs`) keeps streams going without their clients.
//!
//! Deliberately absent: any vendor payload. Providers are plugins; this module speaks only the
//! WIT types (`plugins::provider`).

pub mod completion;
pub mod events;
pub mod failure;
pub mod history;
pub mod models;
mod retry;
mod round;
pub mod sink;
pub mod title;
pub mod tool_calls;

/// The operator's settings for chat completions.
#[derive(Clone, Debug)]
pub struct ChatSettings {
    /// CHAT_MAX_TOOL_ROUNDS.
    pub max_tool_rounds: u32,
    /// TITLE_MODEL.
    pub title_model: String,
}

pub use crate::plugins::builtin::TOOL_LOOP_INSTRUCTION;
