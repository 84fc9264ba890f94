//! Search mode: one run of a stored search against the search plugin
//! ([`crate::plugins::builtin::SEARCH_PLUGIN`], the `search` world). The engine's search and its
//! answer run side by side; each part reports its own event as soon as it ends ([`events`]), and
//! the run's outcome is what the store persists in place of the previous run's. The seed message
//! of a chat started from a search is built in [`seed`].
//!
//! What is deliberately here and not in the plugin: which parts run, in parallel, the latency,
//! and what happens when one or both fail. What is deliberately in the plugin: every field of
//! the engine's wire format. Result and citation items cross WIT as JSON arrays the host keeps
//! as they are (the contract leaves their fields open).

pub mod events;
pub mod seed;

use std::time::Instant;

use serde_json::Value;

use crate::plugins::builtin::SEARCH_PLUGIN;
use crate::plugins::failure::{describe_call_error, describe_plugin_error};
use crate::plugins::runtime::CallError;
use crate::plugins::worlds::search::{PluginError, SearchPlugin, SearchRequest};
use crate::store::SearchRunOutcome;
use crate::usage::Spender;
use crate::vocabulary::SearchType;
pub use events::SearchEvent;

/// The model an answer is recorded under in the usage ledger, beside the search plugin's id:
/// `[pricing."search_engine_a/answer"]` prices it (`per_call`).
pub const ANSWER_MODEL: &str = "answer";

/// The contract's 404 message for a search that does not exist (or no longer does).
pub const SEARCH_NOT_FOUND: &str = "search not found";

/// One run, validated: the query to send (the override or the stored one) and the options.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRequest {
    pub query: String,
    /// Persisted as the search's title when given.
    pub title: Option<String>,
    /// Persisted as the search's query when given (then equal to `query`).
    pub query_override: Option<String>,
    pub search_type: Option<SearchType>,
    pub num_results: Option<u32>,
    pub include_domains: Vec<String>,
    pub exclude_domains: Vec<String>,
}

/// Both parts of a run failed: nothing is persisted (the previous run's outcome stays).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the search engine failed: search: {search}; answer: {answer}")]
pub struct BothFailed {
    pub search: String,
    pub answer: String,
}

/// Runs the search and the answer concurrently, reporting each part's event to `report` as it
/// ends. `Ok` when at least one part succeeded: the outcome carries the other's error. An
/// answer is a model's, recorded in `spender`'s account ([`ANSWER_MODEL`]; the engine reports
/// no tokens).
pub async fn run(
    plugin: &SearchPlugin,
    request: &RunRequest,
    report: &(dyn Fn(&SearchEvent) + Sync),
    spender: Option<&Spender>,
) -> Result<SearchRunOutcome, BothFailed> {
    let started = Instant::now();
    let search = async {
        let part = search_part(plugin, request).await;
        report(&match &part {
            Ok((request_id, results)) => SearchEvent::Results {
                request_id: request_id.clone(),
                results: results.clone(),
            },
            Err(error) => SearchEvent::SearchError(error.clone()),
        });
        part
    };
    let answer = async {
        let part = answer_part(plugin, &request.query).await;
        if let (Some(spender), Ok(_)) = (spender, &part) {
            spender.record(SEARCH_PLUGIN, ANSWER_MODEL, None).await;
        }
        report(&match &part {
            Ok(answer) => SearchEvent::Answer(answer.clone()),
            Err(error) => SearchEvent::AnswerError(error.clone()),
        });
        part
    };
    let (search, answer) = futures::join!(search, answer);
    let latency_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let mut outcome = SearchRunOutcome {
        title: request.title.clone(),
        query: request.query_override.clone(),
        latency_ms: Some(latency_ms),
        ..SearchRunOutcome::default()
    };
    match (search, answer) {
        (Err(search), Err(answer)) => return Err(BothFailed { search, answer }),
        (search, answer) => {
            match search {
                Ok((request_id, results)) => {
                    outcome.request_id = request_id;
                    outcome.results = results;
                }
                Err(error) => outcome.error = Some(error),
            }
            match answer {
                Ok(answer) => {
                    outcome.answer_text = Some(answer.text);
                    outcome.answer_request_id = answer.request_id;
                    outcome.answer_citations = answer.citations;
                }
                Err(error) => outcome.answer_error = Some(error),
            }
        }
    }
    Ok(outcome)
}

/// A successful answer part.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub text: String,
    pub request_id: Option<String>,
    pub citations: Vec<Value>,
}

async fn search_part(
    plugin: &SearchPlugin,
    request: &RunRequest,
) -> Result<(Option<String>, Vec<Value>), String> {
    let call = plugin
        .search(SearchRequest {
            query: request.query.clone(),
            search_type: request.search_type.map(|t| t.as_str().to_string()),
            num_results: request.num_results,
            include_domains: request.include_domains.clone(),
            exclude_domains: request.exclude_domains.clone(),
        })
        .await;
    let response = outcome(call)?;
    let results = items(&response.results_json, "results")?;
    Ok((non_blank(response.request_id), results))
}

async fn answer_part(plugin: &SearchPlugin, query: &str) -> Result<Answer, String> {
    let response = outcome(plugin.answer(query).await)?;
    Ok(Answer {
        text: response.text,
        request_id: non_blank(response.request_id),
        citations: items(&response.citations_json, "citations")?,
    })
}

fn outcome<T>(call: Result<Result<T, PluginError>, CallError>) -> Result<T, String> {
    match call {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(describe_plugin_error(&error)),
        Err(error) => Err(describe_call_error(&error)),
    }
}

/// A plugin's JSON array of items; anything else is the plugin's bug, reported as that part's
/// failure rather than stored.
fn items(json: &str, what: &str) -> Result<Vec<Value>, String> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(_) => Err(format!("the search plugin's {what} are not a JSON array")),
        Err(e) => Err(format!("the search plugin's {what} are not JSON: {e}")),
    }
}

fn non_blank(id: Option<String>) -> Option<String> {
    id.filter(|id| !id.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_must_be_a_json_array() {
        assert_eq!(
            items(r#"[{"url":"https://a/"}]"#, "results").unwrap().len(),
            1
        );
        assert!(
            items(r#"{"url":"https://a/"}"#, "results")
                .unwrap_err()
                .contains("not a JSON array")
        );
        assert!(
            items("nope", "citations")
                .unwrap_err()
                .contains("citations are not JSON")
        );
    }
}
