//! Search routes that use the search engine: run (wait for the outcome), run/stream (a
//! backend-owned run, or the one already running), attach, and a chat started from a search.
//!
//! A run's parts and their failures are [`crate::search`]'s, the run itself (its task, its
//! registration, the outcome stored, the terminal event) `runs::search`'s; this module
//! validates the body, calls, and frames the answer.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::AppState;
use super::chats::ChatResponse;
use super::error::{ApiError, ApiJson, ApiPath, ApiResult, BudgetErrorBody, ErrorBody};
use super::limits::{self, MAX_QUERY_CHARS, MAX_TITLE_CHARS};
use super::searches::{SEARCH_NOT_FOUND, SearchDetail, SearchDetailResponse};
use super::sse::{self, LAST_EVENT_ID_DOC, last_event_id};
use crate::people::Caller;
use crate::plugins::builtin::SEARCH_PLUGIN;
use crate::plugins::loading::load::Plugin;
use crate::runs::search::{self as search_runs, Ended};
use crate::runs::{RunKind, Stopped};
use crate::search::{RunRequest, seed};
use crate::store::{NewChat, NewMessage, SearchDetailRecord};
use crate::telemetry::metrics;
use crate::vocabulary::SearchType;
use crate::vocabulary::{Role, trimmed_or_none};

pub const ACTIVE_SEARCH_NOT_FOUND: &str = "active search stream not found";

/// The most results a run may ask for.
pub const MAX_RESULTS: i64 = 100;
/// The most domains in each of `includeDomains` and `excludeDomains`.
pub const MAX_DOMAINS: usize = 100;
/// The longest domain entry (a DNS name is at most 253 characters; a path prefix adds a little).
pub const MAX_DOMAIN_CHARS: usize = 300;

/// The run body: every field optional.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSearchRequest {
    /// Searches for this instead of the stored query, and stores it as the query.
    pub query: Option<String>,
    /// Stores this as the search's title.
    pub title: Option<String>,
    /// How hard the engine searches (default `auto`).
    #[serde(rename = "type")]
    pub search_type: Option<SearchType>,
    /// How many results, 1 to 100 (default 10).
    #[schema(minimum = 1, maximum = 100)]
    #[serde(default, deserialize_with = "crate::vocabulary::whole::option_i64")]
    pub num_results: Option<i64>,
    /// Only results from these domains (up to 100).
    pub include_domains: Option<Vec<String>>,
    /// No results from these domains (up to 100).
    pub exclude_domains: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct SearchChatRequest {
    /// The chat's title; default `Search: <query or title>`.
    pub title: Option<String>,
}

fn not_found() -> ApiError {
    ApiError::not_found(SEARCH_NOT_FOUND)
}

/// The body, validated against the stored search (which gives the query when the body does not).
pub(super) fn run_request(
    body: RunSearchRequest,
    stored_query: Option<&str>,
) -> ApiResult<RunRequest> {
    let query_override = limits::non_blank(body.query.as_deref(), "query", MAX_QUERY_CHARS)?;
    let title = limits::non_blank(body.title.as_deref(), "title", MAX_TITLE_CHARS)?;
    let num_results = match body.num_results {
        None => None,
        Some(n @ 1..=MAX_RESULTS) => Some(n as u32),
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "numResults: must be an integer from 1 to {MAX_RESULTS}"
            )));
        }
    };
    let include_domains = domains(body.include_domains, "includeDomains")?;
    let exclude_domains = domains(body.exclude_domains, "excludeDomains")?;
    let query = query_override
        .clone()
        .or_else(|| trimmed_or_none(stored_query))
        .ok_or_else(|| {
            ApiError::bad_request("query: the search has no query; give one in the run body")
        })?;
    Ok(RunRequest {
        query,
        title,
        query_override,
        search_type: body.search_type,
        num_results,
        include_domains,
        exclude_domains,
    })
}

fn domains(list: Option<Vec<String>>, field: &str) -> ApiResult<Vec<String>> {
    let list = list.unwrap_or_default();
    if list.len() > MAX_DOMAINS {
        return Err(ApiError::bad_request(format!(
            "{field}: at most {MAX_DOMAINS} domains"
        )));
    }
    list.iter()
        .enumerate()
        .map(|(i, d)| {
            let domain = trimmed_or_none(Some(d)).ok_or_else(|| {
                ApiError::bad_request(format!("{field}[{i}]: must be a non-blank domain"))
            })?;
            if domain.chars().count() > MAX_DOMAIN_CHARS {
                return Err(ApiError::bad_request(format!(
                    "{field}[{i}]: must be at most {MAX_DOMAIN_CHARS} characters"
                )));
            }
            Ok(domain)
        })
        .collect()
}

/// The search plugin serving now; 503 when the operator has none loaded.
pub(super) fn search_plugin(state: &AppState) -> ApiResult<Arc<Plugin>> {
    state
        .plugins
        .snapshot()
        .plugin(SEARCH_PLUGIN)
        .filter(|p| p.as_search().is_some())
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "search mode is unavailable: the search plugin {SEARCH_PLUGIN} is not loaded"
                ),
            )
        })
}

/// The stored search, or 404.
async fn stored(state: &AppState, search_id: &str) -> ApiResult<SearchDetailRecord> {
    state
        .store
        .get_search(search_id)
        .await?
        .ok_or_else(not_found)
}

/// Validates a new run against the stored search: 400 or 503 before anything starts.
fn prepare(
    state: &AppState,
    search: &SearchDetailRecord,
    body: RunSearchRequest,
) -> ApiResult<(RunRequest, Arc<Plugin>)> {
    let request = run_request(body, search.search.query.as_deref())?;
    Ok((request, search_plugin(state)?))
}

/// Admits `caller`'s run before the engine is asked: its answer is a model's (`usage/`).
pub(super) async fn admit_answer(
    state: &AppState,
    caller: &Caller,
) -> ApiResult<Option<Arc<crate::usage::Spender>>> {
    state
        .admit(
            caller,
            &crate::usage::Ask {
                source: crate::usage::Source::Search,
                provider: SEARCH_PLUGIN,
                model: crate::search::ANSWER_MODEL,
                // The engine reports no tokens: what a budget of tokens holds is nothing.
                input_tokens: 0,
                max_output_tokens: 0,
            },
        )
        .await
}

/// What a `/run` whose task stopped early (shutdown, a panic) answers.
fn stopped(state: &AppState) -> ApiError {
    if state.runs.stopping() {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            search_runs::stopped_message(Stopped::Shutdown),
        )
    } else {
        ApiError::internal(search_runs::stopped_message(Stopped::Panicked))
    }
}

#[utoipa::path(post, path = "/searches/{searchId}/run", tag = "searches",
    params(("searchId" = String, Path)), request_body = RunSearchRequest,
    responses((status = 200, body = SearchDetailResponse, description = "the run's outcome, persisted; a failed part has its error field set"),
              (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "a streamed run of this search is going; follow it with run/stream/attach"),
              (status = 403, body = ErrorBody, description = "a USD budget, and the search answers have no price"),
              (status = 429, body = BudgetErrorBody, description = "a budget is spent"),
              (status = 502, body = ErrorBody, description = "both the search and the answer failed; nothing was persisted"),
              (status = 503, body = ErrorBody, description = "the search plugin is not loaded, or the server is shutting down")))]
pub async fn run_search(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(search_id): ApiPath<String>,
    ApiJson(body): ApiJson<RunSearchRequest>,
) -> ApiResult<Json<SearchDetailResponse>> {
    let search = stored(&state, &search_id).await?;
    // A bad body is the client's mistake whatever else is going on: it is a 400 before the 409.
    let (request, plugin) = prepare(&state, &search, body)?;
    // Two runs of one search racing would store whichever ended last; the streaming one is
    // already doing the work, so this one is refused rather than run twice upstream.
    if state.runs.is_running(RunKind::Search, &search_id).await? {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "a run of this search is streaming; follow it with POST /v1/searches/{searchId}/run/stream/attach",
        ));
    }
    let spender = admit_answer(&state, &caller).await?;
    let ended = search_runs::run(&state.run_context(), search_id, plugin, request, spender)
        .await
        .ok_or_else(|| stopped(&state))?;
    match ended {
        Ended::Stored(detail) => Ok(Json(SearchDetailResponse {
            search: (*detail).into(),
        })),
        Ended::Failed(both) => Err(ApiError::new(StatusCode::BAD_GATEWAY, both.to_string())),
        Ended::Gone => Err(not_found()),
        Ended::NotStored(why) => Err(ApiError::internal(why)),
    }
}

#[utoipa::path(post, path = "/searches/{searchId}/run/stream", tag = "searches",
    params(("searchId" = String, Path), ("Last-Event-ID" = Option<String>, Header, description = LAST_EVENT_ID_DOC)),
    request_body = RunSearchRequest,
    responses((status = 200, content_type = "text/event-stream", description = "search_results or search_error, answer or answer_error (in the order they end), then done `{ search }` or error `{ message }`; attaches to the run already streaming for this search, if any"),
              (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "a USD budget, and the search answers have no price"),
              (status = 429, body = BudgetErrorBody, description = "a budget is spent"),
              (status = 503, body = ErrorBody, description = "the search plugin is not loaded")))]
pub async fn stream_search(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(search_id): ApiPath<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<RunSearchRequest>,
) -> ApiResult<Response> {
    // Honoured when the call joins a run, as on attach: a client that reconnects to this URL
    // (as fetch-based SSE clients do, with the last id they saw) gets only what it missed.
    let last = last_event_id(&headers)?;
    let search = stored(&state, &search_id).await?;
    // A run in progress is joined whatever this call's body says (the contract: a second call
    // attaches), so only a call that starts a run needs a query and the plugin.
    if let Some(log) = state.runs.attach(RunKind::Search, &search_id).await? {
        metrics::run_attached(RunKind::Search.as_str());
        return Ok(sse::sse(
            RunKind::Search,
            log.reader_after(last.as_ref()),
            None,
        ));
    }
    let (request, plugin) = prepare(&state, &search, body)?;
    let spender = admit_answer(&state, &caller).await?;
    let reader = search_runs::stream(
        &state.run_context(),
        search_id,
        (plugin, request),
        spender,
        last,
        done_data,
    )
    .await
    .map_err(|e| match e {
        Some(e) => e.into(),
        None => stopped(&state),
    })?;
    Ok(sse::sse(RunKind::Search, reader, None))
}

/// A stored outcome as the `done` event's data: `{ search }`.
fn done_data(detail: SearchDetailRecord) -> String {
    json!({ "search": SearchDetail::from(detail) }).to_string()
}

#[utoipa::path(post, path = "/searches/{searchId}/run/stream/attach", tag = "searches",
    params(("searchId" = String, Path), ("Last-Event-ID" = Option<String>, Header, description = LAST_EVENT_ID_DOC)),
    responses((status = 200, content_type = "text/event-stream", description = "the run's events so far, then new ones until done or error"),
              (status = 400, body = ErrorBody, description = "Last-Event-ID is not an event id"), (status = 404, body = ErrorBody, description = "active search stream not found")))]
pub async fn attach_search(
    State(state): State<AppState>,
    ApiPath(search_id): ApiPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    sse::attach(
        &state,
        RunKind::Search,
        &search_id,
        &headers,
        ACTIVE_SEARCH_NOT_FOUND,
    )
    .await
}

#[utoipa::path(post, path = "/searches/{searchId}/chat", tag = "searches",
    params(("searchId" = String, Path)), request_body = SearchChatRequest,
    responses((status = 200, body = ChatResponse, description = "a new chat seeded with one hidden system message (metadata `{ hidden: true, kind: \"search_context\", searchId }`) holding the query, the answer, its citations and the top results"),
              (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn chat_from_search(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(search_id): ApiPath<String>,
    ApiJson(body): ApiJson<SearchChatRequest>,
) -> ApiResult<Json<ChatResponse>> {
    let title = limits::non_blank(body.title.as_deref(), "title", MAX_TITLE_CHARS)?;
    let search = stored(&state, &search_id).await?;
    let title = title.unwrap_or_else(|| {
        let about = search
            .search
            .query
            .as_deref()
            .or(search.search.title.as_deref())
            .unwrap_or("untitled");
        // A stored query can be long; a title is for a list.
        const PREFIX: &str = "Search: ";
        let about: String = about.chars().take(MAX_TITLE_CHARS - PREFIX.len()).collect();
        format!("{PREFIX}{about}")
    });
    let seed = NewMessage {
        role: Role::System,
        content: seed::seed_text(&search),
        name: None,
        metadata: Some(json!({
            "hidden": true,
            "kind": seed::SEED_KIND,
            "searchId": search_id,
        })),
    };
    let chat = state
        .store
        .create_chat(NewChat {
            owner_id: caller.owner().to_string(),
            title: Some(title),
            provider_model: None,
            additional_system_prompt: None,
            enabled_tools: state.tools.offered(caller.owner()).await.names(),
            messages: vec![seed],
        })
        .await?;
    Ok(Json(ChatResponse { chat: chat.into() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(value: serde_json::Value) -> RunSearchRequest {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_body_is_checked_field_by_field() {
        let ok = run_request(
            body(
                json!({"query": " q ", "title": "t", "type": "deep", "numResults": 100,
                        "includeDomains": ["a.com"], "excludeDomains": []}),
            ),
            None,
        )
        .unwrap();
        assert_eq!(ok.query, "q");
        assert_eq!(ok.query_override.as_deref(), Some("q"));
        assert_eq!(ok.search_type, Some(SearchType::Deep));
        assert_eq!(ok.num_results, Some(100));
        assert_eq!(ok.include_domains, vec!["a.com".to_string()]);

        let stored = run_request(body(json!({})), Some("stored")).unwrap();
        assert_eq!(
            (stored.query.as_str(), stored.query_override),
            ("stored", None)
        );

        let message = |v, stored: Option<&str>| {
            run_request(body(v), stored)
                .unwrap_err()
                .message()
                .to_string()
        };
        assert!(message(json!({"numResults": 0}), Some("q")).starts_with("numResults:"));
        assert!(message(json!({"numResults": 101}), Some("q")).contains("1 to 100"));
        assert!(message(json!({"query": "  "}), Some("q")).starts_with("query: must be"));
        assert!(message(json!({"title": ""}), Some("q")).starts_with("title:"));
        assert!(message(json!({}), None).starts_with("query: the search has no query"));
        assert!(
            message(json!({"includeDomains": ["a", " "]}), Some("q"))
                .starts_with("includeDomains[1]:")
        );
        let many: Vec<String> = (0..101).map(|i| format!("d{i}.com")).collect();
        assert!(
            message(json!({"excludeDomains": many}), Some("q"))
                .starts_with("excludeDomains: at most")
        );
    }
}
