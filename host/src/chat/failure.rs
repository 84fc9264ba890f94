//! How a completion fails, and the words its failures are named with: the contract's error
//! events and 502 bodies, metrics and traces (a fixed word each). A plugin's own failure is
//! worded by `plugins/failure.rs`.

use super::events::Usage;
use crate::plugins::runtime::CallError;
use crate::plugins::worlds::provider::{self as wit, PluginError};
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum CompletionError {
    /// The provider's upstream failed, or its plugin did.
    #[error("{provider}: {detail}")]
    Provider {
        provider: String,
        detail: String,
        /// What had been counted before the failure.
        usage: Option<Usage>,
        /// The request was refused for what the client sent ([`refused_request`]), not for a
        /// failure of the upstream or the plugin.
        refused: bool,
        /// The upstream's HTTP status, when it answered with an error (`/openai/v1` answers a
        /// 429 as one, with the wait it asked for).
        upstream_status: Option<u16>,
        /// The wait the upstream asked for (`retry.rs`), after chatd's own tries.
        retry_after: Option<std::time::Duration>,
    },
    #[error("could not store the tool call: {0}")]
    Store(#[from] StoreError),
    /// The call's own record could not be written, so its tool calls cannot be either.
    #[error("the request could not be stored")]
    NotRecorded,
}

impl CompletionError {
    pub fn usage(&self) -> Option<Usage> {
        match self {
            CompletionError::Provider { usage, .. } => *usage,
            CompletionError::Store(_) | CompletionError::NotRecorded => None,
        }
    }
}

/// Whether a provider's failure is the request's fault rather than the upstream's or the
/// plugin's: the plugin found the input invalid before calling (a parameter the model does not
/// take), or the upstream refused it as invalid (400), for a model it does not have (404), as
/// too large (413) or as unprocessable (422). Not 401, 403 or 429: the operator's key and quota
/// are not the client's doing.
pub fn refused_request(error: &PluginError) -> bool {
    match error {
        PluginError::InvalidInput(_) => true,
        PluginError::Upstream(e) => matches!(e.status, 400 | 404 | 413 | 422),
        _ => false,
    }
}

/// A failed turn's kind, as metrics and traces name it (a fixed word).
pub(super) fn error_kind(
    result: &Result<Result<wit::TurnOutcome, PluginError>, CallError>,
) -> Option<&'static str> {
    Some(match result {
        Ok(Ok(_)) => return None,
        Ok(Err(PluginError::Upstream(e))) => match e.status {
            400..=499 => "upstream_4xx",
            500..=599 => "upstream_5xx",
            _ => "upstream",
        },
        Ok(Err(PluginError::Transport(_))) => "transport",
        Ok(Err(PluginError::MalformedResponse(_))) => "malformed_response",
        Ok(Err(PluginError::Denied(_))) => "denied",
        Ok(Err(PluginError::InvalidInput(_))) => "invalid_input",
        Ok(Err(PluginError::Unsupported(_))) => "unsupported",
        Ok(Err(PluginError::Internal(_))) => "internal",
        Err(CallError::Trap { .. }) => "trap",
        Err(CallError::Timeout { .. }) => "timeout",
    })
}
