//! Chat completions below the HTTP layer: the model↔tool loop and what it rests on (the files:
//! ARCHITECTURE.md). This file owns the loop's settings ([`ChatSettings`]).
//!
//! Deliberately absent: any vendor payload. Providers are plugins; this module speaks only the
//! WIT types (`plugins::provider`).

pub mod completion;
pub mod events;
pub mod failure;
pub mod history;
pub mod kept;
pub mod models;
mod paid;
mod retry;
mod round;
pub mod sink;
pub mod strict;
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
