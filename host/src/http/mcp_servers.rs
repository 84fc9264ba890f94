//! The declared MCP servers and their logins (docs/mcp-tools.md, "Servers that need a login"):
//! `GET /v1/mcp-servers` lists them with their state; `POST /v1/mcp-servers/{name}/connect`
//! begins a login and answers the URL to send the browser to, setting a cookie that binds the
//! login to that browser (named after the login, so two logins in one browser each keep
//! theirs; HttpOnly, SameSite=Lax, scoped to the callback's path, ten minutes); the
//! authorization server redirects to the server's own callback, `GET
//! /v1/mcp-servers/{name}/callback`, or for a client registered beforehand (a configured
//! `client_id`, whose redirect URI is fixed) to `GET /v1/mcp-servers/callback`, where the
//! response must name its issuer (RFC 9207). Neither needs a token (a redirect carries none):
//! the `state` an authenticated Connect made (unguessable, single use, ten minutes), the
//! callback it was made for and that cookie decide it, then the browser goes back to the web
//! client; `POST /v1/mcp-servers/{name}/disconnect` ends a login. Those two are an admin's, for
//! the login every person's calls use; a server declared `per_user = true` is connected by each
//! person for themselves instead: `POST /v1/mcp-servers/{name}/login` begins the caller's own
//! login (the same answer, cookie and callbacks), `DELETE` of it ends theirs. The work is
//! `tools/mcp/logins.rs`'s and `tools/mcp/people.rs`'s.

use axum::Json;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::cookies::{cookie, public_base};
use super::error::{ApiError, ApiPath, ApiQuery, ApiResult, ErrorBody};
use crate::people::Caller;
use crate::store::logins::{LoginKey, OPERATOR};
use crate::tools::mcp::logins::{Arrived, LoginError};
use crate::tools::mcp::oauth::Callback;
use crate::tools::mcp::oauth::login::PENDING_FOR;
use crate::tools::mcp::oauth::login::digest;
use crate::tools::mcp::oauth::token::random;

/// The callback of the clients registered beforehand, under `/v1` (and `/api/v1`).
pub const CALLBACK: &str = "/v1/mcp-servers/callback";
/// What each login's cookie is named after: this, then the first 16 hex digits of the SHA-256
/// of its `state` (the browser binds each login it began, not only its last).
const COOKIE: &str = "chatd_mcp_login_";

/// The callback of server `name`'s logins (a client chatd registered, or a metadata
/// document's): a redirect URI of its own, so no other server's authorization response is
/// taken for its (RFC 9700 §4.4).
fn server_callback(name: &str) -> String {
    format!("/v1/mcp-servers/{name}/callback")
}

/// Whether `path` is a login's callback (the shared one, or a server's own).
pub fn is_callback(path: &str) -> bool {
    path == CALLBACK
        || path
            .strip_prefix("/v1/mcp-servers/")
            .and_then(|rest| rest.strip_suffix("/callback"))
            .is_some_and(|name| !name.is_empty() && !name.contains('/'))
}

/// The cookie of the login whose `state` is `state`.
fn cookie_name(state: &str) -> String {
    format!("{COOKIE}{}", &digest(state)[..16])
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServer {
    /// The `[mcp.NAME]` of the configuration file.
    pub name: String,
    pub url: String,
    /// Whether it needs a login (`auth = "oauth"`).
    pub login: bool,
    /// Whether each person connects it with their own account (`per_user = true`); then
    /// `state` and `tools` are the caller's.
    pub per_user: bool,
    /// `connected`, `needs_login`, `refused`, `unreachable` or `connecting`.
    pub state: String,
    /// Why it is not connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The tools it offers now.
    pub tools: usize,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct McpServerList {
    pub data: Vec<McpServer>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectResponse {
    /// Where to send the browser: the server's authorization page.
    pub authorization_url: String,
}

#[utoipa::path(get, path = "/mcp-servers", tag = "mcp",
    responses((status = 200, body = McpServerList, description = "the declared MCP servers, by name, with their state")))]
pub async fn list_servers(State(state): State<AppState>, caller: Caller) -> Json<McpServerList> {
    let mcp = state.tools.mcp();
    // The caller's own sessions started first, where another instance holds their login.
    mcp.reachable(caller.owner()).await;
    let data = mcp
        .states(caller.owner())
        .into_iter()
        .map(|s| McpServer {
            name: s.name,
            url: s.url,
            login: s.login,
            per_user: s.per_user,
            state: s.state.to_string(),
            reason: s.reason,
            tools: s.tools,
        })
        .collect();
    Json(McpServerList { data })
}

fn login_error(error: LoginError) -> ApiError {
    match error {
        LoginError::NotFound(why) => ApiError::not_found(why),
        LoginError::Invalid(why) => ApiError::bad_request(why),
        LoginError::Conflict(why) => ApiError::new(StatusCode::CONFLICT, why),
        LoginError::Unavailable(why) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

#[utoipa::path(post, path = "/mcp-servers/{name}/connect", tag = "mcp",
    params(("name" = String, Path, description = "the server's `[mcp.NAME]`")),
    responses((status = 200, body = ConnectResponse, description = "the login began: send the browser to `authorizationUrl`; the response sets the cookie its callback needs"),
              (status = 404, body = ErrorBody, description = "no such server, or it needs no login"),
              (status = 409, body = ErrorBody, description = "its `client_id` was registered beforehand, and its authorization server does not say it names itself in its answers (RFC 9207), which such a client needs"),
              (status = 503, body = ErrorBody, description = "its authorization server could not be found or reached, or the login could not be stored")))]
pub async fn connect(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    headers: HeaderMap,
    uri: OriginalUri,
) -> ApiResult<Response> {
    begin(&state, &LoginKey::operator(&name), &headers, &uri).await
}

#[utoipa::path(post, path = "/mcp-servers/{name}/login", tag = "mcp",
    params(("name" = String, Path, description = "the server's `[mcp.NAME]`, declared `per_user = true`")),
    responses((status = 200, body = ConnectResponse, description = "the caller's own login began: send the browser to `authorizationUrl`; the response sets the cookie its callback needs"),
              (status = 403, body = ErrorBody, description = "the caller has no person id, so no login of its own"),
              (status = 404, body = ErrorBody, description = "no such server, or it is not `per_user` (its login is the operator's)"),
              (status = 409, body = ErrorBody, description = "its `client_id` was registered beforehand, and its authorization server does not say it names itself in its answers (RFC 9207), which such a client needs"),
              (status = 503, body = ErrorBody, description = "its authorization server could not be found or reached, or the login could not be stored")))]
pub async fn login(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    headers: HeaderMap,
    uri: OriginalUri,
) -> ApiResult<Response> {
    begin(&state, &own_login(&caller, &name)?, &headers, &uri).await
}

/// The caller's own login to `name`. An empty id is the operator's logins' owner: a caller
/// with one (none is made so) reaches none.
fn own_login(caller: &Caller, name: &str) -> ApiResult<LoginKey> {
    if caller.owner() == OPERATOR {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "this caller has no person id, so it holds no login of its own",
        ));
    }
    Ok(LoginKey::person(name, caller.owner()))
}

/// Begins `login`: the authorization URL, and the cookie binding the login to this browser.
async fn begin(
    state: &AppState,
    login: &LoginKey,
    headers: &HeaderMap,
    uri: &OriginalUri,
) -> ApiResult<Response> {
    let (base, secure) = public_base(state, headers, uri);
    let shared = state
        .tools
        .mcp()
        .shared_callback(login)
        .map_err(login_error)?;
    let path = match shared {
        true => CALLBACK.to_string(),
        false => server_callback(&login.server),
    };
    let redirect_uri = format!("{base}{path}");
    let browser = random(32);
    let begun = state
        .tools
        .mcp()
        .begin_login(login, &redirect_uri, &browser)
        .await
        .map_err(login_error)?;
    let path = url::Url::parse(&redirect_uri)
        .map(|u| u.path().to_string())
        .unwrap_or(path);
    let cookie = format!(
        "{}={browser}; Path={path}; Max-Age={}; HttpOnly; SameSite=Lax{}",
        cookie_name(&begun.state),
        PENDING_FOR.as_secs(),
        if secure { "; Secure" } else { "" }
    );
    let body = ConnectResponse {
        authorization_url: begun.url.to_string(),
    };
    Ok(([(header::SET_COOKIE, cookie)], Json(body)).into_response())
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DisconnectResponse {
    /// Always true: the login is gone.
    pub disconnected: bool,
}

#[utoipa::path(post, path = "/mcp-servers/{name}/disconnect", tag = "mcp",
    params(("name" = String, Path, description = "the server's `[mcp.NAME]`")),
    responses((status = 200, body = DisconnectResponse, description = "the login ended: revoked where the server can, deleted, its tools withdrawn"),
              (status = 404, body = ErrorBody, description = "no such server, it needs no login, or it says `per_user = true` (each person's own; an operator's login left from before is deleted instead)"),
              (status = 503, body = ErrorBody, description = "the login could not be deleted")))]
pub async fn disconnect(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<DisconnectResponse>> {
    end(&state, &LoginKey::operator(&name)).await
}

#[utoipa::path(delete, path = "/mcp-servers/{name}/login", tag = "mcp",
    params(("name" = String, Path, description = "the server's `[mcp.NAME]`, declared `per_user = true`")),
    responses((status = 200, body = DisconnectResponse, description = "the caller's own login ended (or there was none): revoked where the server can, deleted, its tools withdrawn from the caller"),
              (status = 403, body = ErrorBody, description = "the caller has no person id, so no login of its own"),
              (status = 404, body = ErrorBody, description = "no such server, or it is not `per_user` (and no login of the caller's is left from when it was)"),
              (status = 503, body = ErrorBody, description = "the login could not be deleted")))]
pub async fn logout(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<DisconnectResponse>> {
    end(&state, &own_login(&caller, &name)?).await
}

/// Ends `login`.
async fn end(state: &AppState, login: &LoginKey) -> ApiResult<Json<DisconnectResponse>> {
    let mcp = state.tools.mcp();
    mcp.disconnect(login).await.map_err(login_error)?;
    Ok(Json(DisconnectResponse { disconnected: true }))
}

/// The redirect's query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    code: Option<String>,
    /// The login's state; read as optional so its absence is this API's 400, not the
    /// extractor's.
    #[param(required = true)]
    state: Option<String>,
    error: Option<String>,
    iss: Option<String>,
}

#[utoipa::path(get, path = "/mcp-servers/callback", tag = "mcp", security(()),
    params(CallbackQuery),
    responses((status = 303, description = "the login is done: back to the web client's MCP servers page"),
              (status = 400, body = ErrorBody, description = "no `state`, another browser's login, a login made for another callback, no `iss` (RFC 9207), or the authorization server refused it"),
              (status = 404, body = ErrorBody, description = "no such login: its `state` is unknown, already used or older than ten minutes"),
              (status = 503, body = ErrorBody, description = "the token endpoint or the store could not be reached")))]
pub async fn callback(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<CallbackQuery>,
    headers: HeaderMap,
    uri: OriginalUri,
) -> ApiResult<Response> {
    finish(state, query, headers, uri, Arrived::Shared).await
}

#[utoipa::path(get, path = "/mcp-servers/{name}/callback", tag = "mcp", security(()),
    params(("name" = String, Path, description = "the server's `[mcp.NAME]`"), CallbackQuery),
    responses((status = 303, description = "the login is done: back to the web client's MCP servers page"),
              (status = 400, body = ErrorBody, description = "no `state`, another browser's login, a login made for another server or callback, or the authorization server refused it"),
              (status = 404, body = ErrorBody, description = "no such login: its `state` is unknown, already used or older than ten minutes"),
              (status = 503, body = ErrorBody, description = "the token endpoint or the store could not be reached")))]
pub async fn server_callback_route(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiQuery(query): ApiQuery<CallbackQuery>,
    headers: HeaderMap,
    uri: OriginalUri,
) -> ApiResult<Response> {
    finish(state, query, headers, uri, Arrived::Server(name)).await
}

/// A login's redirect that `arrived` at its callback: finished, and the browser sent back to
/// the web client, its cookie expired.
async fn finish(
    state: AppState,
    query: CallbackQuery,
    headers: HeaderMap,
    uri: OriginalUri,
    arrived: Arrived,
) -> ApiResult<Response> {
    let cookie_name = query.state.as_deref().map(cookie_name);
    let browser = cookie_name.as_deref().and_then(|n| cookie(&headers, n));
    let callback = Callback {
        code: query.code,
        state: query.state,
        error: query.error,
        iss: query.iss,
    };
    let name = state
        .tools
        .mcp()
        .finish_login(callback, browser.as_deref(), arrived)
        .await
        .map_err(login_error)?;
    let (base, _) = public_base(&state, &headers, &uri);
    // The web client is served at the root and under `/api/` alike: back to its servers page.
    tracing::debug!("MCP server {name}: login finished in the browser");
    let location = format!("{base}/#/mcp-servers");
    let expired = format!(
        "{}=; Path={}; Max-Age=0; HttpOnly; SameSite=Lax",
        cookie_name.unwrap_or_default(),
        uri.path()
    );
    Ok((
        StatusCode::SEE_OTHER,
        [(header::LOCATION, location), (header::SET_COOKIE, expired)],
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_login_has_a_cookie_of_its_own() {
        let name = cookie_name("the-state");
        assert!(name.starts_with(COOKIE) && name.len() == COOKIE.len() + 16);
        assert_ne!(name, cookie_name("another-state"));
    }

    #[test]
    fn callbacks_are_the_shared_one_and_each_servers_own() {
        assert!(is_callback(CALLBACK));
        assert!(is_callback(&server_callback("github")));
        assert!(is_callback("/v1/mcp-servers/{name}/callback"));
        for other in [
            "/v1/mcp-servers//callback",
            "/v1/mcp-servers/a/b/callback",
            "/v1/mcp-servers/a/connect",
            "/v1/mcp-servers",
            "/v1/chats/x/callback",
        ] {
            assert!(!is_callback(other), "{other}");
        }
    }
}
