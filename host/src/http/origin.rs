//! Requests from other origins: a browser sends some of them with no preflight (a form POST, a
//! `text/plain` body, `fetch(…, {mode: "no-cors"})`), and in open mode nothing else would stop a
//! web page from spending the operator's provider keys, steering the model and its tools, or
//! writing into the history. [`cross_origin_refusal`] is the one rule: a request that can
//! change state (any method but GET, HEAD and OPTIONS, and every request to `/mcp`, whose
//! transport requires the check) is refused with 403 when its `Origin` is neither the request's
//! own Host nor one of CHATD_ALLOWED_ORIGINS. The scheme is not compared, so a TLS-terminating
//! proxy (an `https` Origin, a plain-HTTP request) works, and default ports are the same as
//! none. Clients that are not browsers send no Origin and are unaffected. Open and token mode
//! alike.
//!
//! [`cors`]: those origins also get CORS answers (preflights answered before the token check),
//! so a frontend hosted elsewhere works in token mode; with none listed there is no CORS at all.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::AppState;
use super::error::{ApiError, quoted};
use super::host::RequestHost;
use crate::config::exposure::serialized_origin;

/// Why a request from a browser page may not go on, or `None` when it may. `host` is the
/// request's checked Host (`host.rs`); `allowed` CHATD_ALLOWED_ORIGINS, serialized.
pub fn cross_origin_refusal(
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    host: Option<&RequestHost>,
    allowed: &[String],
) -> Option<String> {
    let changes_state = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if !changes_state && path != super::mcp::PATH {
        return None;
    }
    let mut origins = headers.get_all(header::ORIGIN).iter();
    let (origin, second) = (origins.next(), origins.next());
    if second.is_some() {
        return Some("Origin: sent more than once".into());
    }
    let Some(origin) = origin else {
        // Browsers send Origin on every request that can change state; Fetch Metadata says
        // the same where an old or unusual client left it out.
        let site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        return matches!(site, "cross-site" | "same-site").then(|| {
            format!(
                "Sec-Fetch-Site: {site}: chatd refuses requests that can change state from \
                 another site's page"
            )
        });
    };
    let text = origin.to_str().unwrap_or("(not text)");
    let serialized = serialized_origin(text);
    if let Some(serialized) = &serialized {
        if allowed.contains(serialized) {
            return None;
        }
        let own = url::Url::parse(serialized)
            .ok()
            .and_then(|url| RequestHost::parse(&authority(&url)).ok());
        if let (Some(own), Some(host)) = (own, host)
            && own.same_as(host)
        {
            return None;
        }
    }
    let host = host.map_or_else(|| "none".to_string(), |h| quoted(&shown(h)));
    Some(format!(
        "Origin: {} is not this server's (Host {host}): chatd refuses requests that can change \
         state from another origin's page; CHATD_ALLOWED_ORIGINS lists those it accepts",
        quoted(text)
    ))
}

/// `host[:port]` of an origin URL, IPv6 in brackets, as a Host header would carry it.
fn authority(url: &url::Url) -> String {
    let host = match url.host() {
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        Some(host) => host.to_string(),
        None => String::new(),
    };
    match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    }
}

fn shown(host: &RequestHost) -> String {
    let name = match host.name.contains(':') {
        true => format!("[{}]", host.name),
        false => host.name.clone(),
    };
    match host.port {
        Some(port) => format!("{name}:{port}"),
        None => name,
    }
}

/// The origin check of every route ([`cross_origin_refusal`]).
pub async fn refuse_cross_origin(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    let refusal = cross_origin_refusal(
        req.method(),
        req.uri().path(),
        req.headers(),
        req.extensions().get::<RequestHost>(),
        &state.allowed_origins,
    );
    match refusal {
        Some(why) => ApiError::new(StatusCode::FORBIDDEN, why).into_response(),
        None => next.run(req).await,
    }
}

/// CORS for exactly CHATD_ALLOWED_ORIGINS, or none when it is empty: the origin echoed (never
/// `*`), `Vary: Origin`, the headers a client of this API sends (the token, JSON, a stream's
/// `Last-Event-ID`, MCP's session and version), no cookies (the token is a header).
pub fn cors(allowed: Arc<[String]>) -> Option<CorsLayer> {
    if allowed.is_empty() {
        return None;
    }
    let layer = CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin: &HeaderValue, _| {
            origin
                .to_str()
                .ok()
                .and_then(serialized_origin)
                .is_some_and(|o| allowed.contains(&o))
        }))
        .allow_methods([
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            HeaderName::from_static("last-event-id"),
            HeaderName::from_static("mcp-session-id"),
            HeaderName::from_static("mcp-protocol-version"),
        ])
        .expose_headers([
            HeaderName::from_static("mcp-session-id"),
            header::RETRY_AFTER,
        ])
        .max_age(Duration::from_secs(600));
    Some(layer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(method: Method, path: &str, headers: &[(&str, &str)], host: &str) -> Option<String> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        let host = RequestHost::parse(host).unwrap();
        let allowed = ["https://app.example".to_string()];
        cross_origin_refusal(&method, path, &map, Some(&host), &allowed)
    }

    #[test]
    fn another_origin_may_not_change_state() {
        let evil = [("origin", "https://evil.example")];
        for method in [Method::POST, Method::PATCH, Method::DELETE, Method::PUT] {
            let why = refusal(method, "/v1/chats", &evil, "127.0.0.1:8787").unwrap();
            assert!(
                why.starts_with("Origin: \"https://evil.example\" is not this server's")
                    && why.contains("CHATD_ALLOWED_ORIGINS"),
                "{why}"
            );
        }
        // Reading is not changing: a page cannot read the answer without CORS.
        assert_eq!(
            refusal(Method::GET, "/v1/chats", &evil, "127.0.0.1:8787"),
            None
        );
        // /mcp is checked whatever the method (its transport says so).
        assert!(refusal(Method::GET, "/mcp", &evil, "127.0.0.1:8787").is_some());
        // Same host, other port: another origin (same-site is not same-origin).
        let other_port = [("origin", "http://127.0.0.1:9999")];
        assert!(refusal(Method::POST, "/v1/chats", &other_port, "127.0.0.1:8787").is_some());
        let other_name = [("origin", "http://localhost:8787")];
        assert!(refusal(Method::POST, "/v1/chats", &other_name, "127.0.0.1:8787").is_some());
        for opaque in ["null", "file://", "not an origin"] {
            let why = refusal(
                Method::POST,
                "/mcp",
                &[("origin", opaque)],
                "127.0.0.1:8787",
            );
            assert!(why.is_some(), "{opaque}");
        }
        let twice = [("origin", "http://127.0.0.1:8787"), ("origin", "http://x")];
        assert!(refusal(Method::POST, "/v1/chats", &twice, "127.0.0.1:8787").is_some());
        let fetch_metadata = [("sec-fetch-site", "cross-site")];
        assert!(refusal(Method::POST, "/v1/chats", &fetch_metadata, "127.0.0.1:8787").is_some());
    }

    #[test]
    fn the_servers_own_origin_and_the_allowed_ones_may() {
        let own = [("origin", "http://127.0.0.1:8787")];
        assert_eq!(
            refusal(Method::POST, "/v1/chats", &own, "127.0.0.1:8787"),
            None
        );
        // Behind a TLS-terminating proxy: an https Origin on the default port, a plain Host.
        let proxied = [("origin", "https://chat.example")];
        assert_eq!(
            refusal(Method::POST, "/mcp", &proxied, "chat.example"),
            None
        );
        assert_eq!(
            refusal(Method::POST, "/mcp", &proxied, "Chat.Example:443"),
            None
        );
        let v6 = [("origin", "http://[::1]:8787")];
        assert_eq!(refusal(Method::POST, "/v1/chats", &v6, "[::1]:8787"), None);
        let allowed = [("origin", "https://app.example")];
        assert_eq!(
            refusal(Method::POST, "/v1/chats", &allowed, "api.example"),
            None
        );
        // No Origin: not a browser's page (curl, SDKs, other servers).
        assert_eq!(
            refusal(Method::POST, "/v1/chats", &[], "127.0.0.1:8787"),
            None
        );
        let same_origin = [("sec-fetch-site", "same-origin")];
        assert_eq!(refusal(Method::POST, "/v1/chats", &same_origin, "x"), None);
    }
}
