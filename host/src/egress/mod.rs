//! Outbound HTTP under a grant: what a caller may reach, checked on every request and every
//! redirect, with credentials added by the host and size and time caps. The Wasm `http`
//! capability (`plugins/capabilities/http/`), MCP servers (`tools/mcp/`) and every later client of an
//! operator-configured upstream send through [`send`] under an [`HttpGrant`].
//!
//! A URL is allowed when its origin (`scheme://host:port`) is an operator-configured base URL
//! granted to the caller (trusted: reachable whatever its address, loopback included), or one
//! of the grant's own origins, or the grant is the public web, and every address the host name
//! resolves to is public (private ones too with CHATD_ALLOW_PRIVATE_NETWORKS), and never a
//! cloud metadata address ([`address::is_metadata`]) but for a trusted origin. Redirects are
//! followed by hand, so each hop is checked the same way.
//!
//! - here: [`HttpGrant`], [`Origin`], [`Credential`], and the route each request takes;
//! - [`transport`]: [`send`], hop by hop, and the answer read chunk by chunk;
//! - [`address`]: what "public" means, and the resolver that enforces it at connect time;
//! - [`scrub`]: keys removed from what comes back;
//! - [`query`]: a key as a query parameter, and keys kept out of URLs bound elsewhere;
//! - [`services`]: the operator's upstreams with their keys; [`reach`]: what granting one gives.

pub mod address;
pub mod query;
pub mod reach;
pub mod scrub;
pub mod services;
mod transport;

pub use transport::{Clients, Incoming, MAX_BODY_BYTES, MAX_REQUEST_BODY_BYTES, Outgoing, send};

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderName;
use url::Url;

use crate::config::Secret;
use address::{PrivateAddress, is_local, is_metadata, is_private};

/// Redirect hops followed at most.
pub const MAX_REDIRECTS: usize = 10;

/// `scheme://host:port`, the unit of an HTTP grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    pub fn of(url: &Url) -> Option<Self> {
        Some(Self {
            scheme: url.scheme().to_ascii_lowercase(),
            host: url.host_str()?.trim_end_matches('.').to_ascii_lowercase(),
            port: url.port_or_known_default()?,
        })
    }

    pub fn parse(text: &str) -> Option<Self> {
        Url::parse(text).ok().as_ref().and_then(Self::of)
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// A value the host adds to requests to one origin (an API key, or a service's non-secret
/// header). The plugin never sees it.
#[derive(Clone, Debug)]
pub struct Credential {
    pub origin: Origin,
    pub to: Place,
    pub value: Secret,
    /// The key inside the value, when it is one: scrubbed from what comes back ([`scrub`]).
    pub secret: Option<Secret>,
}

/// Where a credential goes on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// This header's value (set, replacing what the plugin set).
    Header(HeaderName),
    /// This query parameter of the URL (replacing any the plugin wrote), for upstreams that take
    /// their key there. It is set on each hop's request only; the URL the plugin reads back is
    /// its own, or a redirect's with every key scrubbed.
    Query(String),
}

/// What one caller (a plugin, an MCP server's session) may do over HTTP.
#[derive(Clone, Debug)]
pub struct HttpGrant {
    /// Operator-configured origins: reachable whatever their address.
    pub trusted: Vec<Origin>,
    /// The manifest's origins: reachable when their addresses are public.
    pub origins: Vec<Origin>,
    /// Any origin whose addresses are all public.
    pub public_web: bool,
    /// CHATD_ALLOW_PRIVATE_NETWORKS: the public web includes private addresses too.
    pub allow_private: bool,
    /// The public web includes loopback and private addresses, never link-local or metadata
    /// ones ([`address::is_local`]): an MCP server's OAuth endpoints when the server is itself
    /// on a local network (`tools/mcp/oauth/`).
    pub local_network: bool,
    pub credentials: Vec<Credential>,
    /// The keys among the credentials, removed from responses ([`scrub`]).
    pub scrubbed: Arc<[Box<[u8]>]>,
    /// Response bodies larger than this fail with `too-large`.
    pub max_body_bytes: u64,
    /// The longest a request (all hops and the whole body) may take.
    pub max_timeout: Duration,
}

impl HttpGrant {
    /// Nothing: every request is denied.
    pub fn none() -> Self {
        Self {
            trusted: Vec::new(),
            origins: Vec::new(),
            public_web: false,
            allow_private: false,
            local_network: false,
            credentials: Vec::new(),
            scrubbed: Arc::new([]),
            max_body_bytes: 0,
            max_timeout: Duration::ZERO,
        }
    }
}

/// Why a request was refused or failed; mapped onto the WIT `http-error` by the import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Denied(String),
    Invalid(String),
    Timeout,
    Connection(String),
    TooLarge(u64),
}

/// How a permitted URL is reached.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    /// Any address: a trusted origin (the operator's own base URL).
    Direct,
    /// Any address but a cloud metadata one ([`address::is_metadata`]): private networks are
    /// allowed.
    NotMetadata,
    /// Public addresses only, enforced by the resolver when connecting.
    PublicOnly,
    /// Public or local ones ([`address::is_local`]), enforced the same way.
    PublicOrLocal,
}

/// Whether `url` may be requested and how. Names are checked by the resolver as the connection
/// is made; IP literals, which never reach a resolver, are checked here.
fn route(grant: &HttpGrant, url: &Url) -> Result<Route, Refusal> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refusal::Invalid(format!(
            "{url}: only http and https are allowed"
        )));
    }
    let origin = Origin::of(url).ok_or_else(|| Refusal::Invalid(format!("{url}: no host")))?;
    if grant.trusted.contains(&origin) {
        return Ok(Route::Direct);
    }
    if !grant.public_web && !grant.origins.contains(&origin) {
        return Err(Refusal::Denied(format!(
            "{origin} is not granted to this plugin"
        )));
    }
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    let refused = |ip| {
        let private = PrivateAddress {
            host: origin.host.clone(),
            ip,
        };
        Refusal::Denied(private.to_string())
    };
    if grant.allow_private {
        return match literal.filter(|ip| is_metadata(*ip)) {
            Some(ip) => Err(refused(ip)),
            None => Ok(Route::NotMetadata),
        };
    }
    if grant.local_network {
        return match literal.filter(|ip| is_private(*ip) && !is_local(*ip)) {
            Some(ip) => Err(refused(ip)),
            None => Ok(Route::PublicOrLocal),
        };
    }
    if let Some(ip) = literal.filter(|ip| is_private(*ip)) {
        return Err(refused(ip));
    }
    Ok(Route::PublicOnly)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let a = Origin::parse("https://API.example.com/v1/x").unwrap();
        assert_eq!(a, Origin::parse("https://api.example.com:443").unwrap());
        assert_ne!(a, Origin::parse("http://api.example.com").unwrap());
        assert_ne!(a, Origin::parse("https://api.example.com:8443").unwrap());
        assert_eq!(a.to_string(), "https://api.example.com:443");
    }

    fn grant(trusted: &[&str], public_web: bool) -> HttpGrant {
        HttpGrant {
            trusted: trusted.iter().map(|o| Origin::parse(o).unwrap()).collect(),
            public_web,
            ..HttpGrant::none()
        }
    }

    #[tokio::test]
    async fn a_request_body_over_the_cap_is_refused_before_anything_is_sent() {
        let request = Outgoing {
            method: reqwest::Method::POST,
            url: "http://127.0.0.1:9/".into(),
            headers: Vec::new(),
            body: Some(vec![0; MAX_REQUEST_BODY_BYTES + 1]),
            timeout: None,
            follow_redirects: true,
        };
        let grant = HttpGrant {
            max_timeout: Duration::from_secs(5),
            ..grant(&["http://127.0.0.1:9"], false)
        };
        match send(&Clients::new(), &grant, request).await {
            Err(Refusal::Invalid(why)) => assert!(why.contains("33554432-byte cap"), "{why}"),
            other => panic!("{:?}", other.map(|r| r.status)),
        }
    }

    #[test]
    fn routes_follow_the_grant() {
        let url = |u: &str| Url::parse(u).unwrap();
        // Operator-configured origins are trusted, loopback included.
        assert_eq!(
            route(
                &grant(&["http://127.0.0.1:9000"], false),
                &url("http://127.0.0.1:9000/x")
            ),
            Ok(Route::Direct)
        );
        // Anything else needs the public web, and goes through the checking resolver.
        assert!(matches!(
            route(&grant(&[], false), &url("https://93.184.216.34/")),
            Err(Refusal::Denied(_))
        ));
        assert_eq!(
            route(&grant(&[], true), &url("https://example.org/")),
            Ok(Route::PublicOnly)
        );
        assert_eq!(
            route(&grant(&[], true), &url("https://93.184.216.34/")),
            Ok(Route::PublicOnly)
        );
        // Private IP literals are refused here (names are refused by the resolver).
        for private in [
            "http://127.0.0.1/",
            "http://10.0.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]/",
            "http://[::ffff:10.0.0.1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://0x7f000001/",
            "http://2130706433/",
            "http://127.1/",
        ] {
            match route(&grant(&[], true), &url(private)) {
                Err(Refusal::Denied(why)) => assert!(
                    why.contains("private") || why.contains("cloud metadata"),
                    "{private}: {why}"
                ),
                other => panic!("{private}: {other:?}"),
            }
        }
        // A manifest's own origin is reachable, but only at a public address.
        let declared = |origin: &str, allow_private: bool| HttpGrant {
            origins: vec![Origin::parse(origin).unwrap()],
            allow_private,
            ..grant(&[], false)
        };
        assert_eq!(
            route(
                &declared("https://api.example.org", false),
                &url("https://api.example.org/x")
            ),
            Ok(Route::PublicOnly)
        );
        assert!(matches!(
            route(
                &declared("http://169.254.169.254", false),
                &url("http://169.254.169.254/x")
            ),
            Err(Refusal::Denied(_))
        ));
        assert_eq!(
            route(
                &declared("http://127.0.0.1:9000", true),
                &url("http://127.0.0.1:9000/")
            ),
            Ok(Route::NotMetadata)
        );
        assert!(matches!(
            route(
                &declared("https://api.example.org", false),
                &url("https://1.1.1.1/")
            ),
            Err(Refusal::Denied(_))
        ));
        let local = HttpGrant {
            local_network: true,
            ..grant(&[], true)
        };
        assert_eq!(
            route(&local, &url("http://127.0.0.1:9/")),
            Ok(Route::PublicOrLocal)
        );
        assert_eq!(
            route(&local, &url("https://example.org/")),
            Ok(Route::PublicOrLocal)
        );
        assert!(matches!(
            route(&local, &url("http://169.254.169.254/")),
            Err(Refusal::Denied(_))
        ));
        let open = HttpGrant {
            allow_private: true,
            ..grant(&[], true)
        };
        assert_eq!(
            route(&open, &url("http://127.0.0.1:9/")),
            Ok(Route::NotMetadata)
        );
        // Cloud metadata addresses: refused to every grant, local networks and private ones
        // included, in every spelling; an operator's own base URL alone reaches one.
        for metadata in [
            "http://169.254.169.254/",
            "http://169.254.170.2/v2/credentials",
            "http://100.100.100.200/latest/meta-data/",
            "http://192.0.0.192/",
            "http://[fd00:ec2::254]/",
            "http://[::ffff:100.100.100.200]/",
            "http://[::ffff:6464:64c8]/",
            "http://[::100.100.100.200]/",
            "http://1684301000/",
        ] {
            for (name, grant) in [("local", &local), ("private", &open)] {
                match route(grant, &url(metadata)) {
                    Err(Refusal::Denied(why)) => {
                        assert!(why.contains("cloud metadata"), "{name} {metadata}: {why}")
                    }
                    other => panic!("{name} {metadata}: {other:?}"),
                }
            }
        }
        assert_eq!(
            route(
                &grant(&["http://100.100.100.200"], false),
                &url("http://100.100.100.200/x")
            ),
            Ok(Route::Direct)
        );
        assert!(matches!(
            route(&grant(&[], true), &url("file:///etc/passwd")),
            Err(Refusal::Invalid(_))
        ));
    }
}
