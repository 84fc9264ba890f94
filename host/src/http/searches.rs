//! Search routes that need no search engine: list, create (with reuseByQuery and cacheHit), read,
//! star and delete. Running a search and starting a chat from one are in `search_runs`.

use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::AppState;
use super::chats::{DeletedResponse, StarRequest};
use super::error::{ApiError, ApiJson, ApiPath, ApiQuery, ApiResult, ErrorBody};
use super::limits::{self, MAX_QUERY_CHARS, MAX_TITLE_CHARS};
use super::paging::{self, PageQuery, Wanted};
use crate::people::Caller;
use crate::runs::RunKind;
use crate::store::{NewSearch, SearchDetailRecord, SearchRecord};
use crate::vocabulary::to_millis;

pub use crate::search::SEARCH_NOT_FOUND;

/// How long a search's persisted outcome counts as a cache hit.
pub const CACHE_WINDOW: chrono::TimeDelta = chrono::TimeDelta::hours(24);

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchSummary {
    pub id: String,
    pub title: Option<String>,
    pub query: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub starred: bool,
    pub starred_at: Option<String>,
}

impl From<SearchRecord> for SearchSummary {
    fn from(s: SearchRecord) -> Self {
        Self {
            id: s.id,
            title: s.title,
            query: s.query,
            created_at: to_millis(&s.created_at),
            updated_at: to_millis(&s.updated_at),
            starred: s.starred_at.is_some(),
            starred_at: s.starred_at.as_deref().map(to_millis),
        }
    }
}

/// A search with its last run. Before any run, `requestId` is "" and `latencyMs` 0; `title`
/// falls back to the query, and both to "".
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchDetail {
    pub id: String,
    pub title: String,
    pub query: String,
    pub created_at: String,
    pub updated_at: String,
    pub starred: bool,
    pub starred_at: Option<String>,
    pub request_id: String,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub answer_text: Option<String>,
    pub answer_request_id: Option<String>,
    /// The answer's sources (url, title, …; see SearchResultItem).
    #[schema(value_type = Vec<SearchResultItem>)]
    pub answer_citations: Vec<Value>,
    pub answer_error: Option<String>,
    /// Ranked results, best first.
    #[schema(value_type = Vec<SearchResultItem>)]
    pub results: Vec<Value>,
}

impl From<SearchDetailRecord> for SearchDetail {
    fn from(d: SearchDetailRecord) -> Self {
        let s = d.search;
        Self {
            title: s.title.or_else(|| s.query.clone()).unwrap_or_default(),
            query: s.query.unwrap_or_default(),
            id: s.id,
            created_at: to_millis(&s.created_at),
            updated_at: to_millis(&s.updated_at),
            starred: s.starred_at.is_some(),
            starred_at: s.starred_at.as_deref().map(to_millis),
            request_id: d.request_id.unwrap_or_default(),
            latency_ms: d.latency_ms.unwrap_or(0),
            error: d.error,
            answer_text: d.answer_text,
            answer_request_id: d.answer_request_id,
            answer_citations: d.answer_citations,
            answer_error: d.answer_error,
            results: d.results,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateSearchRequest {
    /// Trimmed; blank is stored as null.
    pub title: Option<String>,
    /// Trimmed; blank is stored as null.
    pub query: Option<String>,
    /// Return the most recently updated search with the same trimmed, lower-cased query instead
    /// of creating one. Default false.
    pub reuse_by_query: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateSearchResponse {
    pub search: SearchSummary,
    /// An existing search was returned.
    pub reused: bool,
    /// The reused search has results or an answer, is not streaming, and was updated within 24 hours.
    pub cache_hit: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResponse {
    pub search: SearchSummary,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchDetailResponse {
    pub search: SearchDetail,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchListResponse {
    pub searches: Vec<SearchSummary>,
    /// With `limit` or `cursor`: the cursor of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

fn not_found() -> ApiError {
    ApiError::not_found(SEARCH_NOT_FOUND)
}

/// The contract's cacheHit rule, given the search and whether it is streaming now.
pub fn is_cache_hit(search: &SearchRecord, streaming: bool, now: DateTime<Utc>) -> bool {
    let fresh = DateTime::parse_from_rfc3339(&search.updated_at)
        .is_ok_and(|updated| now.signed_duration_since(updated) <= CACHE_WINDOW);
    search.has_output && !streaming && fresh
}

/// All searches, most recently updated first; with `limit` or `cursor`, one page of them;
/// with `title`, those titled so (`paging.rs`).
#[utoipa::path(get, path = "/searches", tag = "searches", params(PageQuery),
    responses((status = 200, body = SearchListResponse), (status = 400, body = ErrorBody)))]
pub async fn list_searches(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(page): ApiQuery<PageQuery>,
) -> ApiResult<Json<SearchListResponse>> {
    let (searches, next_cursor) = match page.wanted()? {
        Wanted::All => (state.store.list_searches(caller.owner()).await?, None),
        Wanted::Page {
            limit,
            after,
            title,
        } => {
            let rows = state
                .store
                .list_searches_page(
                    limit.saturating_add(1),
                    after.as_ref(),
                    title.as_ref(),
                    caller.owner(),
                )
                .await?;
            paging::split(rows, limit, |s| (&s.updated_at, &s.id))
        }
    };
    Ok(Json(SearchListResponse {
        searches: searches.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}

#[utoipa::path(post, path = "/searches", tag = "searches", request_body = CreateSearchRequest,
    responses((status = 200, body = CreateSearchResponse), (status = 400, body = ErrorBody)))]
pub async fn create_search(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateSearchRequest>,
) -> ApiResult<Json<CreateSearchResponse>> {
    let search = NewSearch {
        owner_id: caller.owner().to_string(),
        title: limits::optional(body.title.as_deref(), "title", MAX_TITLE_CHARS)?,
        query: limits::optional(body.query.as_deref(), "query", MAX_QUERY_CHARS)?,
    };
    let (search, reused) = state
        .store
        .create_search(search, body.reuse_by_query.unwrap_or(false))
        .await?;
    let cache_hit = reused
        && is_cache_hit(
            &search,
            state.runs.is_running(RunKind::Search, &search.id).await?,
            Utc::now(),
        );
    Ok(Json(CreateSearchResponse {
        search: search.into(),
        reused,
        cache_hit,
    }))
}

#[utoipa::path(get, path = "/searches/{searchId}", tag = "searches",
    params(("searchId" = String, Path)),
    responses((status = 200, body = SearchDetailResponse), (status = 404, body = ErrorBody)))]
pub async fn get_search(
    State(state): State<AppState>,
    ApiPath(search_id): ApiPath<String>,
) -> ApiResult<Json<SearchDetailResponse>> {
    let search = state
        .store
        .get_search(&search_id)
        .await?
        .ok_or_else(not_found)?;
    Ok(Json(SearchDetailResponse {
        search: search.into(),
    }))
}

#[utoipa::path(patch, path = "/searches/{searchId}/star", tag = "searches", request_body = StarRequest,
    params(("searchId" = String, Path)),
    responses((status = 200, body = SearchResponse), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn star_search(
    State(state): State<AppState>,
    ApiPath(search_id): ApiPath<String>,
    ApiJson(body): ApiJson<StarRequest>,
) -> ApiResult<Json<SearchResponse>> {
    let search = state
        .store
        .set_search_starred(&search_id, body.starred)
        .await?
        .ok_or_else(not_found)?;
    Ok(Json(SearchResponse {
        search: search.into(),
    }))
}

#[utoipa::path(delete, path = "/searches/{searchId}", tag = "searches",
    params(("searchId" = String, Path)),
    responses((status = 200, body = DeletedResponse), (status = 404, body = ErrorBody)))]
pub async fn delete_search(
    State(state): State<AppState>,
    ApiPath(search_id): ApiPath<String>,
) -> ApiResult<Json<DeletedResponse>> {
    if !state.store.delete_search(&search_id).await? {
        return Err(not_found());
    }
    Ok(Json(DeletedResponse { deleted: true }))
}

/// A ranked result or an answer citation as search mode stores and returns it (engine_a's
/// fields; only `id`, `url` and `title` are always there, and citations carry fewer).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // documents the shape of `results`; the items are stored as the plugin made them
pub struct SearchResultItem {
    /// The engine's id for the result (its URL when the engine gives none).
    pub id: String,
    pub url: String,
    pub title: Option<String>,
    pub published_date: Option<String>,
    pub author: Option<String>,
    /// Relevance, 0 to 1.
    pub score: Option<f64>,
    /// The page's text, up to 2,000 characters.
    pub text: Option<String>,
    /// Passages of the page most relevant to the query.
    pub highlights: Option<Vec<String>>,
    /// A summary of the page.
    pub summary: Option<String>,
    /// An image URL of the page.
    pub image: Option<String>,
    /// The site's icon URL.
    pub favicon: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(updated_at: &str, has_output: bool) -> SearchRecord {
        SearchRecord {
            id: "s".into(),
            title: None,
            query: Some("q".into()),
            created_at: updated_at.into(),
            updated_at: updated_at.into(),
            starred_at: None,
            has_output,
        }
    }

    #[test]
    fn cache_hit_needs_output_freshness_and_no_stream() {
        let now = DateTime::parse_from_rfc3339("2026-11-22T12:00:00.000Z")
            .unwrap()
            .with_timezone(&Utc);
        assert!(is_cache_hit(
            &search("2026-11-21T12:00:00.000Z", true),
            false,
            now
        ));
        assert!(!is_cache_hit(
            &search("2026-11-21T11:59:59.999Z", true),
            false,
            now
        ));
        assert!(!is_cache_hit(
            &search("2026-11-22T11:00:00.000Z", false),
            false,
            now
        ));
        assert!(!is_cache_hit(
            &search("2026-11-22T11:00:00.000Z", true),
            true,
            now
        ));
    }
}
