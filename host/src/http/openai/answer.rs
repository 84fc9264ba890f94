//! What a finished run answers on `/openai/v1`, streamed or not: its failure as OpenAI's error,
//! the model that answered, the usage in OpenAI's names.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::errors::OpenAiError;
use crate::chat::completion::Finished;
use crate::chat::events::Usage;
use crate::chat::failure::CompletionError;
use crate::http::completions::finished;
use crate::plugins::worlds::provider::FinishReason;
use crate::runs::chat::{Completed, RunError};

/// How a run ended, as these routes answer it: the contract's mapping
/// (`completions::finished`), except an upstream's 429 that chatd's own tries did not get past,
/// which is OpenAI's 429 with the wait the upstream asked for (its SDKs retry on it), and a
/// model the upstream does not have (its 404 about the model: the plugin SDK's reading of
/// OpenAI's `model_not_found`, Anthropic's `not_found_error` on `model`), which is OpenAI's 404
/// `model_not_found`, as a provider chatd does not serve is. Another 404 (a base URL with a
/// wrong path) stays the provider's failure.
pub(super) fn outcome(completed: Completed) -> Result<Finished, OpenAiError> {
    if let Completed::Ended(Err(RunError::Completion(
        error @ CompletionError::Provider {
            upstream_status: Some(status @ (429 | 404)),
            retry_after,
            refused,
            detail,
            ..
        },
    ))) = &completed
    {
        match status {
            429 => return Err(OpenAiError::rate_limited(error.to_string(), *retry_after)),
            _ if *refused && detail.to_ascii_lowercase().contains("model") => {
                let message = format!("model: the provider does not have it ({error})");
                return Err(OpenAiError::new(StatusCode::NOT_FOUND, message)
                    .param("model")
                    .code("model_not_found"));
            }
            _ => {}
        }
    }
    finished(completed).map_err(OpenAiError::from)
}

/// The model that answered, as `PROVIDER/MODEL`: the fallback's when it did, else the one asked.
pub(super) fn answering_model(finished: &Finished, requested: String) -> String {
    match &finished.fallback {
        Some((provider, model)) => format!("{provider}/{model}"),
        None => requested,
    }
}

/// OpenAI's `usage` object.
pub(super) fn usage_json(usage: Usage) -> Value {
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    })
}

/// OpenAI's `finish_reason`: `tool_calls` when the client has calls to run, else the last
/// turn's reason as its provider gave it (`length`, `content_filter`); `stop` otherwise (a
/// round of chatd's own tool calls that reached the limit ended with chatd's text).
pub(super) fn finish_reason(finished: &Finished) -> &'static str {
    if !finished.client_calls.is_empty() {
        return "tool_calls";
    }
    match finished.finish {
        Some(FinishReason::Length) => "length",
        Some(FinishReason::ContentFilter) => "content_filter",
        _ => "stop",
    }
}
