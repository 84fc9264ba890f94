//! Cross-cutting request handling: the token check, the one-line request log, and turning a
//! handler panic into a JSON 500. The Host check is `host.rs`'s, the origin check `origin.rs`'s.
//!
//! The token check is deny-by-default: it runs on every route and on the fallback, and only the
//! paths in [`OPEN_PATHS`], the web client's own files ([`super::web::is_open`]) and, when the
//! operator says so (CHATD_METRICS=open), `/metrics` skip it, so a route added later is
//! protected without anyone remembering to protect it.

use std::any::Any;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use tracing::Instrument as _;

use super::AppState;
use super::cookies::{cookie, named, secure};
use super::error::{ApiError, ErrorCause};
use crate::config::MetricsAccess;
use crate::people::sessions::COOKIE;
use crate::people::{Caller, Via, keys, scope_for};
use crate::telemetry::{metrics, trace};
use crate::vocabulary::Scope;

/// Paths (relative to the root or to `/api`) that need no token; with MCP logins' callbacks,
/// [`is_open`]. Signing in needs none: a login link, or the identity provider's flow, is the
/// proof.
pub const OPEN_PATHS: &[&str] = &[
    "/health",
    "/ready",
    "/openapi.json",
    super::sessions::LINK_PATH,
    super::oidc::METHODS_PATH,
    super::oidc::START_PATH,
    super::oidc::CALLBACK_PATH,
];

/// Whether `path` (relative to the root or to `/api`) needs no token: [`OPEN_PATHS`], and an
/// MCP login's callbacks, whose redirect carries no token: `state` (made by an authenticated
/// Connect, single use, ten minutes) and the cookie that Connect set decide it
/// (`mcp_servers.rs`).
pub fn is_open(path: &str) -> bool {
    OPEN_PATHS.contains(&path) || super::mcp_servers::is_callback(path)
}

/// The admin token, kept only as its SHA-256 digest. Comparing fixed-size digests in constant
/// time leaks neither the token's bytes nor its length through timing.
#[derive(Clone)]
pub struct TokenDigest([u8; 32]);

impl TokenDigest {
    pub fn new(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }
    fn matches(&self, presented: &str) -> bool {
        Sha256::digest(presented.as_bytes()).ct_eq(&self.0).into()
    }
}

/// Decides the request's [`Caller`] and whether it may reach the route: ADMIN_TOKEN is the
/// built-in admin, a `chatd_` key its person (`people::Directory`), a request without
/// `Authorization` the person signed in with its session cookie (never under `/openai/v1` or
/// at `/mcp`, whose clients hold keys), anything else a 401; then the route's scope
/// (`people::scope_for`) must be one the caller holds (403 naming it). In open mode every
/// caller is the built-in admin.
pub async fn require_token(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(expected) = &state.token else {
        req.extensions_mut()
            .insert(Caller::builtin_admin(Via::Open));
        return next.run(req).await;
    };
    // Inside the `/api` nest the URI has the prefix stripped, so one list serves both mounts.
    let path = req.uri().path();
    let metrics_open = state.metrics == MetricsAccess::Open && path == super::metrics::PATH;
    if is_open(path) || super::web::is_open(path) || metrics_open {
        return next.run(req).await;
    }
    let needed = scope_for(path);
    let presented = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    // Only a request without `Authorization` is taken as signed in, and never where keys go.
    let session = match req.headers().contains_key(AUTHORIZATION) {
        false if !matches!(needed, Scope::Openai | Scope::Mcp) => {
            cookie(req.headers(), &named(COOKIE, secure(&state)))
        }
        _ => None,
    };
    let caller = match presented {
        Some(token) if expected.matches(token) => Caller::builtin_admin(Via::AdminToken),
        Some(token) if keys::is_key(token) => match state.people.caller(token).await {
            Ok(Some(caller)) => caller,
            Ok(None) => return ApiError::refused_key().into_response(),
            Err(e) => return ApiError::from(e).into_response(),
        },
        None if let Some(secret) = &session => match state.people.session(secret).await {
            Ok(Some(caller)) => caller,
            Ok(None) => return session_ended(secure(&state)),
            Err(e) => return ApiError::from(e).into_response(),
        },
        _ => return ApiError::unauthorized().into_response(),
    };
    if !caller.may(needed) {
        return ApiError::out_of_scope(&caller, needed).into_response();
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}

/// A session cookie that opens nothing (ended, expired, its person disabled): a 401 that
/// clears it, so the browser asks its person to sign in again.
fn session_ended(secure: bool) -> Response {
    let mut response = ApiError::new(
        axum::http::StatusCode::UNAUTHORIZED,
        "your session ended (signed out, expired, or ended from another session): sign in again",
    )
    .into_response();
    if let Ok(value) = axum::http::HeaderValue::from_str(&super::sessions::cleared_cookie(secure)) {
        response
            .headers_mut()
            .append(axum::http::header::SET_COOKIE, value);
    }
    response
}

/// The request's caller, as [`require_token`] decided it. Missing only on a route the token
/// check lets through without one ([`is_open`]), which must not ask for it: a bug, not a 401.
impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
            ApiError::internal("a route outside the token check asked for its caller")
        })
    }
}

/// One line per request: method, route (the matched pattern, so no ids or query strings, and
/// never a header or body; `<unmatched>` when no route matched), status and latency; a 5xx adds
/// its internal cause. The same facts go to the request metrics and the request's span, the
/// root of its trace (or a child of the caller's `traceparent`), which the line is logged in.
pub async fn log_request(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().clone();
    let method_label = metrics::method_label(&method);
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "<unmatched>".to_string(), |m| m.as_str().to_string());
    let span = trace::http(method_label, &route, req.headers());
    let response = next.run(req).instrument(span.clone()).await;
    let status = response.status().as_u16();
    let took = start.elapsed();
    trace::http_status(&span, status);
    metrics::http_request(method_label, &route, status, took);
    let latency_ms = took.as_secs_f64() * 1000.0;
    let _in_span = span.enter();
    match response.extensions().get::<ErrorCause>() {
        Some(ErrorCause(cause)) => {
            tracing::error!(%method, %route, status, latency_ms, error = %cause, "request failed")
        }
        None => tracing::info!(%method, %route, status, latency_ms, "request"),
    }
    response
}

/// For `CatchPanicLayer`: a panic is a bug, answered as a JSON 500 whose cause reaches the log.
pub fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("panic");
    ApiError::internal(format!("handler panicked: {what}")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_json_500_with_its_cause_for_the_log() {
        let response = panic_response(Box::new("boom".to_string()));
        assert_eq!(
            response.status(),
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        );
        let ErrorCause(cause) = response.extensions().get::<ErrorCause>().unwrap();
        assert_eq!(cause, "handler panicked: boom");
        assert_eq!(response.headers()["content-type"], "application/json");
    }

    #[test]
    fn token_digest_matches_only_the_token() {
        let digest = TokenDigest::new("s3cret");
        assert!(digest.matches("s3cret"));
        assert!(!digest.matches("s3cre"));
        assert!(!digest.matches("s3cret "));
        assert!(!digest.matches(""));
    }
}
