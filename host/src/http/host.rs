//! The request's `Host`, read once: refused with 400 when it is ambiguous (two of them, none on
//! HTTP/1.1, a request target naming another authority, a malformed name or bracket), then in
//! open mode refused with 403 unless it is a loopback name or one of CHATD_ALLOWED_HOSTS (DNS
//! rebinding: a web page that points its own name at 127.0.0.1 sends its name as the Host).
//! Token mode serves any well-formed Host: such a page cannot know the token, and a deployment
//! behind a proxy may be reached under any name. The parsed Host goes on with the request
//! ([`RequestHost`]), for the origin check (`origin.rs`).
//!
//! Why ambiguity is refused rather than resolved: a check reading one Host while a proxy or
//! the router reads another is how such checks get bypassed (RFC 9112 §3.2 asks for the 400).

use axum::extract::{Request, State};
use axum::http::{StatusCode, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::{ApiError, quoted};

/// A well-formed Host: the name (lower case; an IPv6 address without its brackets) and the
/// port when one was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHost {
    pub name: String,
    pub port: Option<u16>,
}

impl RequestHost {
    /// Parses a Host header's value (RFC 9110 §7.2: `uri-host [ ":" port ]`). Names are
    /// letters, digits, `-`, `.`, `_` and `~`; an IPv6 address is in brackets with nothing but
    /// a port after them.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (name, port) = match text.strip_prefix('[') {
            Some(rest) => {
                let (address, after) = rest
                    .split_once(']')
                    .ok_or("an IPv6 address in brackets must close them")?;
                address
                    .parse::<std::net::Ipv6Addr>()
                    .map_err(|_| "the brackets must hold an IPv6 address")?;
                let port = match after {
                    "" => None,
                    _ => Some(
                        after
                            .strip_prefix(':')
                            .ok_or("only a port may follow the brackets")?,
                    ),
                };
                (address, port)
            }
            None => match text.rsplit_once(':') {
                Some((name, port)) => (name, Some(port)),
                None => (text, None),
            },
        };
        let plain_name = name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
        if !text.starts_with('[') && !plain_name {
            return Err("a host name holds only letters, digits, '-', '.', '_' and '~'".into());
        }
        let port = match port {
            // `host:` is allowed by the grammar: the default port.
            None | Some("") => None,
            Some(port) => Some(
                port.parse::<u16>()
                    .ok()
                    .filter(|_| port.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or("the port must be a number from 0 to 65535")?,
            ),
        };
        Ok(Self {
            name: name.to_ascii_lowercase(),
            port,
        })
    }

    /// Whether this is the same authority as `other`: the same name, or the same address
    /// however written (`::ffff:127.0.0.1` is `::ffff:7f00:1`); a default port (80, 443) or
    /// none being the same. The scheme is not known here (a TLS-terminating proxy speaks plain
    /// HTTP), so 80 and 443 are one: a page at `http://h:443` passes for chatd's own on `h`,
    /// which only whoever serves `h` can arrange.
    pub fn same_as(&self, other: &RequestHost) -> bool {
        let port = |p: Option<u16>| p.filter(|p| !matches!(p, 80 | 443));
        let address = |name: &str| name.parse::<std::net::IpAddr>().ok();
        let same_name = self.name == other.name
            || address(&self.name).is_some_and(|a| Some(a) == address(&other.name));
        same_name && port(self.port) == port(other.port)
    }

    /// A loopback name (`localhost`, `*.localhost`, 127.0.0.0/8, `::1`) or one of `allowed`.
    fn served(&self, allowed: &[String]) -> bool {
        let name = self.name.as_str();
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
}

/// The request's one Host, or why it has none that can be trusted. `Ok(None)`: HTTP/1.0 without
/// one (no browser sends that).
fn request_host(req: &Request) -> Result<Option<RequestHost>, String> {
    let mut values = req.headers().get_all(header::HOST).iter();
    let (first, second) = (values.next(), values.next());
    if second.is_some() {
        return Err("Host: sent more than once; a request has one Host".into());
    }
    let target = req.uri().authority();
    let Some(value) = first else {
        return match (req.version(), target) {
            (_, Some(target)) => RequestHost::parse(target.as_str())
                .map(Some)
                .map_err(|why| format!("the request target's authority: {why}")),
            (Version::HTTP_09 | Version::HTTP_10, None) => Ok(None),
            _ => Err("Host: missing; an HTTP/1.1 request must send one".into()),
        };
    };
    let text = value.to_str().map_err(|_| "Host: not text".to_string())?;
    let host = RequestHost::parse(text).map_err(|why| format!("Host: {}: {why}", quoted(text)))?;
    // An absolute-form target (`GET http://other.example/ HTTP/1.1`) names the authority a
    // proxy would go by: it must be this Host.
    if let Some(target) = target {
        let scheme_port = match req.uri().scheme_str() {
            Some("https") => 443,
            _ => 80,
        };
        let named = RequestHost::parse(target.as_str()).ok();
        let with_port = |h: &RequestHost| (h.name.clone(), h.port.unwrap_or(scheme_port));
        if target.as_str().contains('@') || named.as_ref().map(with_port) != Some(with_port(&host))
        {
            return Err(format!(
                "the request target names {} but Host says {}: they must agree",
                quoted(target.as_str()),
                quoted(text)
            ));
        }
    }
    Ok(Some(host))
}

/// The Host check of every route (see the module docs); the parsed Host joins the request's
/// extensions.
pub async fn check_host(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let host = match request_host(&req) {
        Ok(host) => host,
        Err(why) => return ApiError::bad_request(why).into_response(),
    };
    if state.token.is_none()
        && let Some(host) = &host
        && !host.served(&state.allowed_hosts)
    {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "Host: {} is not served: without ADMIN_TOKEN chatd answers only loopback names \
                 and CHATD_ALLOWED_HOSTS",
                quoted(&host.name)
            ),
        )
        .into_response();
    }
    if let Some(host) = host {
        req.extensions_mut().insert(host);
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(text: &str) -> RequestHost {
        RequestHost::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn hosts_parse_into_a_name_and_a_port() {
        assert_eq!(
            host("LocalHost:8787"),
            RequestHost {
                name: "localhost".into(),
                port: Some(8787)
            }
        );
        assert_eq!(host("[::1]:80").name, "::1");
        assert_eq!(host("[::1]").port, None);
        assert_eq!(host("example.com:").port, None);
        assert_eq!(host("").name, "");
        for bad in [
            "[::1]evil.example",
            "[::1",
            "[evil.example]",
            "[::1]:x",
            "a:b:c",
            "user@host",
            "host/path",
            "host:99999",
            "host:+80",
            "two words",
            "::1",
        ] {
            assert!(RequestHost::parse(bad).is_err(), "{bad}");
        }
    }

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
            assert!(host(served).served(&allowed), "{served}");
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
            assert!(!host(refused).served(&allowed), "{refused}");
        }
    }

    #[test]
    fn default_ports_are_the_same_authority() {
        assert!(host("chat.example").same_as(&host("chat.example:443")));
        assert!(host("chat.example:80").same_as(&host("chat.example:443")));
        assert!(host("127.0.0.1:8787").same_as(&host("127.0.0.1:8787")));
        assert!(!host("127.0.0.1:8787").same_as(&host("127.0.0.1:8788")));
        assert!(!host("localhost:8787").same_as(&host("127.0.0.1:8787")));
        assert!(host("[::ffff:7f00:1]:8787").same_as(&host("[::FFFF:127.0.0.1]:8787")));
        assert!(!host("[::1]:8787").same_as(&host("[::2]:8787")));
    }
}
