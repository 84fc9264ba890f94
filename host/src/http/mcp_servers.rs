//! The declared MCP servers and their logins (docs/mcp-tools.md, "Servers that need a login"):
//! `GET /v1/mcp-servers` lists them with their state; `POST /v1/mcp-servers/{name}/connect`
//! begins a login and answers the URL to send the browser to, setting a cookie that binds the
//! login to that browser (HttpOnly, SameSite=Lax, scoped to the callback's path, ten minutes);
//! the authorization server redirects to `GET /v1/mcp-servers/callback`, which needs no token
//! (a redirect carries none): the `state` an authenticated Connect made (unguessable, single
//! use, ten minutes) and that cookie decide it, then the browser goes back to the web client;
//! `POST /v1/mcp-servers/{name}/disconnect` ends a login. The work is `tools/mcp/logins.rs`'s.

use axum::Json;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::error::{ApiError, ApiPath, ApiQuery, ApiResult, ErrorBody};
use crate::tools::mcp::logins::LoginError;
use crate::tools::mcp::oauth::Callback;
use crate::tools::mcp::oauth::login::PENDING_FOR;
use crate::tools::mcp::oauth::token::random;

/// The callback's path, under `/v1` (and `/api/v1`).
pub const CALLBACK: &str = "/v1/mcp-servers/callback";
/// The cookie binding a login to the browser that began it.
const COOKIE: &str = "chatd_mcp_login";

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServer {
    /// The `[mcp.NAME]` of the configuration file.
    pub name: String,
    pub url: String,
    /// Whether it needs a login (`auth = "oauth"`).
    pub login: bool,
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
pub async fn list_servers(State(state): State<AppState>) -> Json<McpServerList> {
    let data = state
        .tools
        .mcp()
        .states()
        .into_iter()
        .map(|s| McpServer {
            name: s.name,
            url: s.url,
            login: s.login,
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
        LoginError::Unavailable(why) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

/// Where browsers reach chatd: CHATD_PUBLIC_URL, else this request's Host over http, with the
/// `/api` prefix the request came under. Then whether that is https.
fn public_base(state: &AppState, headers: &HeaderMap, uri: &OriginalUri) -> (String, bool) {
    if let Some(url) = &state.public_url {
        let base = url.as_str().trim_end_matches('/').to_string();
        return (base, url.scheme() == "https");
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let prefix = if uri.path().starts_with("/api/") {
        "/api"
    } else {
        ""
    };
    (format!("http://{host}{prefix}"), false)
}

#[utoipa::path(post, path = "/mcp-servers/{name}/connect", tag = "mcp",
    params(("name" = String, Path, description = "the server's `[mcp.NAME]`")),
    responses((status = 200, body = ConnectResponse, description = "the login began: send the browser to `authorizationUrl`; the response sets the cookie its callback needs"),
              (status = 404, body = ErrorBody, description = "no such server, or it needs no login"),
              (status = 503, body = ErrorBody, description = "its authorization server could not be found or reached, or the login could not be stored")))]
pub async fn connect(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    headers: HeaderMap,
    uri: OriginalUri,
) -> ApiResult<Response> {
    let (base, secure) = public_base(&state, &headers, &uri);
    let redirect_uri = format!("{base}{CALLBACK}");
    let browser = random(32);
    let url = state
        .tools
        .mcp()
        .begin_login(&name, &redirect_uri, &browser)
        .await
        .map_err(login_error)?;
    let path = url::Url::parse(&redirect_uri)
        .map(|u| u.path().to_string())
        .unwrap_or_else(|_| CALLBACK.to_string());
    let cookie = format!(
        "{COOKIE}={browser}; Path={path}; Max-Age={}; HttpOnly; SameSite=Lax{}",
        PENDING_FOR.as_secs(),
        if secure { "; Secure" } else { "" }
    );
    let body = ConnectResponse {
        authorization_url: url.to_string(),
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
              (status = 404, body = ErrorBody, description = "no such server, or it needs no login"),
              (status = 503, body = ErrorBody, description = "the login could not be deleted")))]
pub async fn disconnect(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<DisconnectResponse>> {
    state
        .tools
        .mcp()
        .disconnect(&name)
        .await
        .map_err(login_error)?;
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
              (status = 400, body = ErrorBody, description = "no `state`, another browser's login, or the authorization server refused it"),
              (status = 404, body = ErrorBody, description = "no such login: its `state` is unknown, already used or older than ten minutes"),
              (status = 503, body = ErrorBody, description = "the token endpoint or the store could not be reached")))]
pub async fn callback(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<CallbackQuery>,
    headers: HeaderMap,
    uri: OriginalUri,
) -> ApiResult<Response> {
    let browser = cookie(&headers, COOKIE);
    let callback = Callback {
        code: query.code,
        state: query.state,
        error: query.error,
        iss: query.iss,
    };
    let name = state
        .tools
        .mcp()
        .finish_login(callback, browser.as_deref())
        .await
        .map_err(login_error)?;
    let (base, _) = public_base(&state, &headers, &uri);
    // The web client is served at the root and under `/api/` alike: back to its servers page.
    tracing::debug!("MCP server {name}: login finished in the browser");
    let location = format!("{base}/#/mcp-servers");
    let expired = format!(
        "{COOKIE}=; Path={}; Max-Age=0; HttpOnly; SameSite=Lax",
        uri.path()
    );
    Ok((
        StatusCode::SEE_OTHER,
        [(header::LOCATION, location), (header::SET_COOKIE, expired)],
    )
        .into_response())
}

/// The value of the cookie `name`, if the request carries it.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            "a=1; chatd_mcp_login=xyz; b=2".parse().unwrap(),
        );
        assert_eq!(cookie(&headers, COOKIE).as_deref(), Some("xyz"));
        assert_eq!(cookie(&headers, "c"), None);
    }
}
