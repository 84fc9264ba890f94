//! Signing in to the web client and the sessions it leaves (docs/teams.md, "Signing in"):
//! `POST /v1/auth/link` uses a login link (`chatd users login-link NAME`; no token needed, the
//! link is the proof) and sets the session cookie; `POST /v1/auth/logout` ends the session the
//! request carries; `GET /v1/auth/sessions` lists the caller's sessions and `DELETE
//! /v1/auth/sessions/{sessionId}` ends one. The cookie is HttpOnly, SameSite=Lax, and `Secure`
//! and named `__Host-chatd_session` when CHATD_PUBLIC_URL is https (`cookies.rs`); what it
//! reaches is `people::Caller::with_session`'s, and the token check reads it (`middleware.rs`).
//! The rules are `people/sessions.rs`'s.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::cookies::{named, secure};
use super::error::{ApiError, ApiJson, ApiPath, ApiResult, ErrorBody};
use super::meta::SessionUser;
use crate::people::Caller;
use crate::people::sessions::{self, COOKIE, SESSION_FOR};
use crate::store::sessions::SessionRecord;
use crate::vocabulary::to_millis;

/// Where a login link is used; needs no token (`middleware::OPEN_PATHS`).
pub const LINK_PATH: &str = "/v1/auth/link";

pub const SESSION_NOT_FOUND: &str = "session not found";

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkRequest {
    /// The login link's secret: what follows `#login=` in the link.
    #[schema(max_length = 200)]
    pub token: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignedIn {
    pub user: SessionUser,
    /// The new session (`GET /v1/auth/sessions` lists it).
    pub session: SessionSummary,
}

/// A session as its owner sees it: never its secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    /// How it began: `link` (a login link) or `oidc` (the identity provider).
    pub via: String,
    /// The browser's `User-Agent` when it began (cut to 200 characters).
    pub user_agent: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    /// Whether this request carries it.
    pub current: bool,
}

impl SessionSummary {
    fn new(record: SessionRecord, caller: Option<&Caller>) -> Self {
        Self {
            current: caller.and_then(Caller::session_id) == Some(record.id.as_str()),
            id: record.id,
            via: record.via,
            user_agent: record.user_agent,
            created_at: to_millis(&record.created_at),
            expires_at: to_millis(&record.expires_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionsResponse {
    /// Oldest first; only sessions neither ended nor expired.
    pub sessions: Vec<SessionSummary>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionEnded {
    pub ended: bool,
}

#[utoipa::path(post, path = "/auth/link", tag = "sessions",
    request_body = LinkRequest,
    security(()),
    responses((status = 200, body = SignedIn, description = "signed in: the response sets the session cookie"),
              (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody, description = "the link is unknown, was used, or expired, or its person is disabled")))]
pub async fn use_link(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<LinkRequest>,
) -> ApiResult<Response> {
    let Some(token) = body.token.filter(|t| !t.trim().is_empty()) else {
        return Err(ApiError::bad_request(
            "token: required, the login link's secret",
        ));
    };
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let Some((session, secret)) =
        sessions::sign_in_with_link(&state.store, token.trim(), user_agent).await?
    else {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "token: this login link is unknown, was used, or expired (links work once, for 15 \
             minutes); ask for a new one (`chatd users login-link NAME`)",
        ));
    };
    let person = state
        .store
        .person(&session.user_id)
        .await?
        .ok_or_else(|| ApiError::internal("a session's person is gone"))?;
    let secure = secure(&state);
    let body = SignedIn {
        user: SessionUser {
            id: person.id,
            name: person.name,
            role: person.role,
        },
        session: SessionSummary {
            // The session this response sets.
            current: true,
            ..SessionSummary::new(session, None)
        },
    };
    let mut response = Json(body).into_response();
    set_cookie(&mut response, &session_cookie(&secret, secure));
    Ok(response)
}

#[utoipa::path(post, path = "/auth/logout", tag = "sessions",
    responses((status = 200, body = SessionEnded, description = "the session this request carries ended here at once, on every other instance within a second; the response clears the cookie"),
              (status = 400, body = ErrorBody, description = "the request carries no session (it was made with a key or ADMIN_TOKEN)")))]
pub async fn logout(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    let Some(id) = caller.session_id() else {
        return Err(ApiError::bad_request(
            "this request carries no session cookie (it was made with a key or ADMIN_TOKEN); a \
             key ends with DELETE /v1/keys/{keyId}",
        ));
    };
    // Ended meanwhile (from the list, on another instance): signed out all the same.
    match sessions::end(&state.store, &state.people, caller.owner(), id).await {
        Ok(()) | Err(crate::people::manage::Refusal::NotFound(_)) => {}
        Err(other) => return Err(other.into()),
    }
    let mut response = Json(SessionEnded { ended: true }).into_response();
    set_cookie(&mut response, &cleared_cookie(secure(&state)));
    Ok(response)
}

#[utoipa::path(get, path = "/auth/sessions", tag = "sessions",
    responses((status = 200, body = SessionsResponse)))]
pub async fn list_sessions(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<SessionsResponse>> {
    let live = state.store.live_sessions_of(caller.owner()).await?;
    Ok(Json(SessionsResponse {
        sessions: live
            .into_iter()
            .map(|s| SessionSummary::new(s, Some(&caller)))
            .collect(),
    }))
}

#[utoipa::path(delete, path = "/auth/sessions/{sessionId}", tag = "sessions",
    params(("sessionId" = String, Path)),
    responses((status = 200, body = SessionEnded, description = "ended here at once, on every other instance within a second"),
              (status = 404, body = ErrorBody)))]
pub async fn end_session(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(session_id): ApiPath<String>,
) -> ApiResult<Response> {
    sessions::end(&state.store, &state.people, caller.owner(), &session_id)
        .await
        .map_err(|e| match e {
            crate::people::manage::Refusal::NotFound(_) => ApiError::not_found(SESSION_NOT_FOUND),
            other => other.into(),
        })?;
    let mut response = Json(SessionEnded { ended: true }).into_response();
    if caller.session_id() == Some(session_id.as_str()) {
        set_cookie(&mut response, &cleared_cookie(secure(&state)));
    }
    Ok(response)
}

/// The session cookie carrying `secret`: the whole site (both mounts), for the session's life.
pub fn session_cookie(secret: &str, secure: bool) -> String {
    format!(
        "{}={secret}; Path=/; Max-Age={}; HttpOnly; SameSite=Lax{}",
        named(COOKIE, secure),
        SESSION_FOR.as_secs(),
        if secure { "; Secure" } else { "" }
    )
}

/// What makes the browser drop the session cookie.
pub fn cleared_cookie(secure: bool) -> String {
    format!(
        "{}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{}",
        named(COOKIE, secure),
        if secure { "; Secure" } else { "" }
    )
}

fn set_cookie(response: &mut Response, cookie: &str) {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_http_only_lax_and_secure_over_https() {
        let plain = session_cookie("s3cret", false);
        assert_eq!(
            plain,
            format!(
                "chatd_session=s3cret; Path=/; Max-Age={}; HttpOnly; SameSite=Lax",
                14 * 24 * 3600
            )
        );
        let secure = session_cookie("s3cret", true);
        assert!(
            secure.starts_with("__Host-chatd_session=s3cret; Path=/;"),
            "{secure}"
        );
        assert!(
            secure.ends_with("; HttpOnly; SameSite=Lax; Secure"),
            "{secure}"
        );
        assert!(cleared_cookie(false).contains("Max-Age=0"));
        assert!(cleared_cookie(true).starts_with("__Host-chatd_session=;"));
    }
}
