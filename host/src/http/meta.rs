//! Health and readiness, session, active runs and the combined workspace list.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use super::chats::ChatSummary;
use super::error::{ApiResult, ErrorBody};
use super::searches::SearchSummary;
use crate::store::WorkspaceRecord;

/// Chats and searches each, at most, in the workspace list.
pub const WORKSPACE_LIMIT_PER_KIND: u32 = 100;

#[derive(Debug, Serialize, ToSchema)]
pub struct HealthResponse {
    pub ok: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    Open,
    Token,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionResponse {
    pub authenticated: bool,
    pub mode: AuthMode,
    /// The person whose key or session cookie made the request; absent for ADMIN_TOKEN and in
    /// open mode, whose caller is the built-in admin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<SessionUser>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionUser {
    pub id: String,
    pub name: String,
    pub role: crate::vocabulary::PersonRole,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ActiveRunsResponse {
    /// Chat ids with a running stream.
    pub chats: Vec<String>,
    /// Search ids with a running stream.
    pub searches: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ChatTool {
    pub name: String,
    pub description: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ChatToolsResponse {
    /// The tools of the loaded tool plugins, which can be enabled for the providers that take
    /// the host's tools.
    pub tools: Vec<ChatTool>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum WorkspaceItem {
    Chat(ChatSummary),
    Search(SearchSummary),
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspaceItemsResponse {
    /// Up to 100 chats and 100 searches, newest `updatedAt` first.
    pub items: Vec<WorkspaceItem>,
}

/// Liveness; needs no token.
#[utoipa::path(get, path = "/health", tag = "meta", security(()),
    responses((status = 200, body = HealthResponse)))]
pub async fn health() -> Json<HealthResponse> {
    Json(HealthResponse { ok: true })
}

/// Readiness; needs no token. 200 while the database answers (and, on PostgreSQL, this
/// instance holds its lease); otherwise 503 naming what is missing (the cause is in the log),
/// within DATABASE_TIMEOUT_SECS and a second of the database going away (`runs::ready`).
#[utoipa::path(get, path = "/ready", tag = "meta", security(()),
    responses((status = 200, body = HealthResponse),
              (status = 503, body = ErrorBody, description = "the database is unavailable, or this instance does not hold its lease on it")))]
pub async fn ready(State(state): State<AppState>) -> ApiResult<Json<HealthResponse>> {
    let plugins = state.plugins.loading().map(str::to_string);
    match state.ready.missing().or(plugins) {
        None => Ok(Json(HealthResponse { ok: true })),
        Some(why) => Err(super::error::ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            why,
        )),
    }
}

#[utoipa::path(get, path = "/auth/session", tag = "meta",
    responses((status = 200, body = SessionResponse), (status = 401, body = ErrorBody)))]
pub async fn session(
    State(state): State<AppState>,
    caller: crate::people::Caller,
) -> Json<SessionResponse> {
    let mode = if state.token.is_some() {
        AuthMode::Token
    } else {
        AuthMode::Open
    };
    let user = caller.credential_id().is_some().then(|| SessionUser {
        id: caller.id.clone(),
        name: caller.name.clone(),
        role: caller.role,
    });
    Json(SessionResponse {
        authenticated: true,
        mode,
        user,
    })
}

#[utoipa::path(get, path = "/active-runs", tag = "meta",
    responses((status = 200, body = ActiveRunsResponse)))]
pub async fn active_runs(
    State(state): State<AppState>,
    caller: crate::people::Caller,
) -> ApiResult<Json<ActiveRunsResponse>> {
    use crate::store::owners::Owned;
    let (chats, searches) = state.runs.snapshot().await?;
    // The caller's own runs only. Runs are few (one per chat or search streaming now).
    let mut mine = ActiveRunsResponse {
        chats: Vec::new(),
        searches: Vec::new(),
    };
    for (ids, what, kept) in [
        (chats, Owned::Chat, &mut mine.chats),
        (searches, Owned::Search, &mut mine.searches),
    ] {
        for id in ids {
            if state.store.owns(caller.owner(), what, &id).await? {
                kept.push(id);
            }
        }
    }
    Ok(Json(mine))
}

#[utoipa::path(get, path = "/chat-tools", tag = "meta",
    responses((status = 200, body = ChatToolsResponse)))]
pub async fn chat_tools(
    State(state): State<AppState>,
    caller: crate::people::Caller,
) -> Json<ChatToolsResponse> {
    let tools = state
        .tools
        .offered(caller.owner())
        .await
        .list()
        .iter()
        .map(|t| ChatTool {
            name: t.name.clone(),
            description: t.description.clone(),
        })
        .collect();
    Json(ChatToolsResponse { tools })
}

#[utoipa::path(get, path = "/workspace-items", tag = "meta",
    responses((status = 200, body = WorkspaceItemsResponse)))]
pub async fn workspace_items(
    State(state): State<AppState>,
    caller: crate::people::Caller,
) -> ApiResult<Json<WorkspaceItemsResponse>> {
    let records = state
        .store
        .workspace_items(WORKSPACE_LIMIT_PER_KIND, caller.owner())
        .await?;
    let items = records
        .into_iter()
        .map(|record| match record {
            WorkspaceRecord::Chat(chat) => WorkspaceItem::Chat(chat.into()),
            WorkspaceRecord::Search(search) => WorkspaceItem::Search(search.into()),
        })
        .collect();
    Ok(Json(WorkspaceItemsResponse { items }))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelListEntry {
    pub models: Vec<String>,
    /// When the list was last loaded; null until a load succeeded.
    pub loaded_at: Option<String>,
    /// The latest failure; the last good list is kept.
    pub error: Option<String>,
    /// A declared provider's label from the configuration file (an addition); absent: show
    /// the id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The models the configuration file features, to list first (an addition); absent when
    /// none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub featured_models: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ModelsResponse {
    /// By provider id: every provider this server has (the contract's, those the configuration
    /// file declares, those PLUGINS_DIR adds).
    pub providers: std::collections::BTreeMap<String, ModelListEntry>,
}

#[utoipa::path(get, path = "/models", tag = "meta",
    responses((status = 200, body = ModelsResponse)))]
pub async fn models(State(state): State<AppState>) -> Json<ModelsResponse> {
    let snapshot = state.plugins.snapshot();
    let providers = state
        .models
        .current()
        .await
        .into_iter()
        .map(|(provider, list)| {
            let served = snapshot.provider(&provider);
            let entry = ModelListEntry {
                models: list.models,
                loaded_at: list.loaded_at,
                error: list.error,
                display_name: served.and_then(|p| p.display_name.clone()),
                featured_models: served
                    .map(|p| p.featured_models.clone())
                    .unwrap_or_default(),
            };
            (provider, entry)
        })
        .collect();
    Json(ModelsResponse { providers })
}
