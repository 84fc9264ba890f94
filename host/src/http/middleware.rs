//! Cross-cutting request handling: the token check, the one-line request log, and turning a
//! handler panic into a JSON 500.
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
use super::error::{ApiError, ErrorCause};
use crate::config::MetricsAccess;
use crate::telemetry::{metrics, trace};

/// Paths (relative to the root or to `/api`) that need no token.
pub const OPEN_PATHS: &[&str] = &["/health", "/ready", "/openapi.json"];

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

/// Open mode (no ADMIN_TOKEN) serves only requests whose `Host` is a loopback name or one of
/// CHATD_ALLOWED_HOSTS, on every route: a web page that rebinds its own name to 127.0.0.1 sends
/// its name as the Host, and is refused before it can read a chat or drive a tool. A request
/// with no Host (not HTTP/1.1, or an in-process call) is no page's and is served. Token mode
/// serves any Host: such a page cannot know the token, and a deployment behind a proxy may be
/// reached under any name.
pub async fn require_served_host(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if state.token.is_some() {
        return next.run(req).await;
    }
    let host = match req.headers().get(axum::http::header::HOST) {
        Some(value) => Some(value.to_str().unwrap_or("(not text)").trim().to_string()),
        None => req.uri().authority().map(|a| a.as_str().to_string()),
    };
    match host.as_deref() {
        Some(host) if host_served(host, &state.allowed_hosts) => next.run(req).await,
        Some(host) => ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            format!(
                "Host: {:?} is not served: without ADMIN_TOKEN chatd answers only loopback names \
                 and CHATD_ALLOWED_HOSTS",
                host.chars().take(100).collect::<String>()
            ),
        )
        .into_response(),
        // No Host at all is no browser's request (a browser always sends one), so no page's.
        None => next.run(req).await,
    }
}

/// Whether `host` (a Host header: a name or an address, maybe a port) is a loopback name or
/// one of `allowed`.
fn host_served(host: &str, allowed: &[String]) -> bool {
    let host = host.to_ascii_lowercase();
    // `[::1]:8787`, `127.0.0.1:8787`, `localhost`: the name without its port.
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or(rest, |(addr, _)| addr),
        None => host.rsplit_once(':').map_or(host.as_str(), |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host.as_str()
            }
        }),
    };
    let loopback = name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback
        || allowed
            .iter()
            .any(|a| a.trim_start_matches('[').trim_end_matches(']') == name)
}

pub async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(expected) = &state.token else {
        return next.run(req).await;
    };
    // Inside the `/api` nest the URI has the prefix stripped, so one list serves both mounts.
    let path = req.uri().path();
    let metrics_open = state.metrics == MetricsAccess::Open && path == super::metrics::PATH;
    if OPEN_PATHS.contains(&path) || super::web::is_open(path) || metrics_open {
        return next.run(req).await;
    }
    let presented = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    match presented {
        Some(token) if expected.matches(token) => next.run(req).await,
        _ => ApiError::unauthorized().into_response(),
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
    #[test]
    fn loopback_names_and_allowed_hosts_are_served() {
        let allowed = vec!["chat.lan".to_string(), "192.168.1.5".to_string()];
        for served in [
            "127.0.0.1:8787",
            "127.1.2.3",
            "localhost",
            "LOCALHOST:8787",
            "app.localhost:1",
            "[::1]:8787",
            "chat.lan:8787",
            "192.168.1.5",
        ] {
            assert!(super::host_served(served, &allowed), "{served}");
        }
        for refused in [
            "rebind.attacker.example",
            "rebind.attacker.example:8787",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
            "[::2]:8787",
            "10.0.0.1",
            "",
        ] {
            assert!(!super::host_served(refused, &allowed), "{refused}");
        }
    }

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
