//! What the routes that set cookies share: reading one from a request, and where browsers reach
//! chatd (the cookie's `Secure` follows from it). The cookies themselves are their routes':
//! MCP logins' (`mcp_servers.rs`), the session's (`sessions.rs`) and a sign-in's binding
//! (`oidc.rs`).

use axum::extract::OriginalUri;
use axum::http::{HeaderMap, header};

use super::AppState;

/// Where browsers reach chatd: CHATD_PUBLIC_URL, else this request's Host over http, with the
/// `/api` prefix the request came under. Then whether that is https.
pub fn public_base(state: &AppState, headers: &HeaderMap, uri: &OriginalUri) -> (String, bool) {
    if let Some(url) = &state.public_url {
        let base = url.as_str().trim_end_matches('/').to_string();
        return (base, secure(state));
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

/// Whether browsers reach chatd over https (CHATD_PUBLIC_URL says so): its cookies are then
/// `Secure`, and named with `__Host-` before them ([`named`]).
pub fn secure(state: &AppState) -> bool {
    state
        .public_url
        .as_ref()
        .is_some_and(|url| url.scheme() == "https")
}

/// A cookie's name as chatd sets and reads it: `__Host-` before `name` over https, so the
/// browser takes it only from this host, over https, for the whole site, and neither a sibling
/// subdomain nor a plain-http answer can plant one (a session of its choosing, say).
pub fn named(name: &str, secure: bool) -> String {
    match secure {
        true => format!("__Host-{name}"),
        false => name.to_string(),
    }
}

/// The value of the cookie `name`, if the request carries it.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
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
    fn a_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, "a=1; the_one=xyz; b=2".parse().unwrap());
        headers.append(header::COOKIE, "c=3".parse().unwrap());
        assert_eq!(cookie(&headers, "the_one").as_deref(), Some("xyz"));
        assert_eq!(cookie(&headers, "c").as_deref(), Some("3"));
        assert_eq!(cookie(&headers, "the"), None);
        assert_eq!(named("chatd_session", true), "__Host-chatd_session");
        assert_eq!(named("chatd_session", false), "chatd_session");
    }
}
