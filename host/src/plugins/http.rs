//! The HTTP capability: what a plugin may reach, checked on every request and every redirect,
//! with credentials added by the host and size and time caps.
//!
//! A URL is allowed when its origin (`scheme://host:port`) is an operator-configured base URL
//! that belongs to the plugin (trusted: reachable whatever its address, loopback included), or
//! when it is one of the manifest's own origins or the plugin is granted the public web, and
//! every address the host name resolves to is public (private ones too with
//! CHATD_ALLOW_PRIVATE_NETWORKS). A plugin author's manifest cannot point the host at cloud
//! metadata or the LAN; only the operator can. Checked addresses are pinned for the connection,
//! so a second DNS answer cannot swap in a private one (DNS rebinding), and redirects are
//! followed by hand so each hop is checked the same way.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;
use url::Url;

use crate::config::Secret;

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

/// A header the host adds to requests to one origin (an API key). The plugin never sees it.
#[derive(Clone, Debug)]
pub struct Credential {
    pub origin: Origin,
    pub header: HeaderName,
    pub value: Secret,
}

/// What one plugin may do over HTTP.
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
    pub credentials: Vec<Credential>,
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
            credentials: Vec::new(),
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

/// A request as the plugin asked for it.
pub struct Outgoing {
    pub method: reqwest::Method,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub timeout: Option<Duration>,
    pub follow_redirects: bool,
}

/// A response whose body is still to be read.
pub struct Incoming {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub url: String,
    body: reqwest::Response,
    read: u64,
    cap: u64,
    deadline: Instant,
}

impl Incoming {
    /// The next piece of the body, `None` at its end; enforces the size cap and the deadline.
    pub async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, Refusal> {
        match tokio::time::timeout_at(self.deadline, self.body.chunk()).await {
            Err(_) => Err(Refusal::Timeout),
            Ok(Err(e)) => Err(Refusal::Connection(error_chain(&e))),
            Ok(Ok(None)) => Ok(None),
            Ok(Ok(Some(bytes))) => {
                self.read += bytes.len() as u64;
                if self.read > self.cap {
                    return Err(Refusal::TooLarge(self.cap));
                }
                Ok(Some(bytes.to_vec()))
            }
        }
    }
}

/// Headers a plugin may not set: the host owns the connection, the framing and the content
/// coding (it asks for compressed bodies and decodes them; a plugin asking itself would get
/// undecoded bytes past the size cap's reach).
const FORBIDDEN_HEADERS: &[&str] = &[
    "host",
    "accept-encoding",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
];

/// Headers a plugin set that are not sent on to a redirect's different origin.
const CROSS_ORIGIN_DROPPED: &[&str] = &["authorization", "cookie", "x-api-key", "api-key"];

/// Sends `request` under `grant`, following redirects hop by hop.
pub async fn send(
    client: &reqwest::Client,
    grant: &HttpGrant,
    request: Outgoing,
) -> Result<Incoming, Refusal> {
    let timeout = request
        .timeout
        .unwrap_or(grant.max_timeout)
        .min(grant.max_timeout);
    let deadline = Instant::now() + timeout;
    let mut headers = HeaderMap::new();
    for (name, value) in &request.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| Refusal::Invalid(format!("header name {name:?} is not valid")))?;
        if FORBIDDEN_HEADERS.contains(&name.as_str()) {
            return Err(Refusal::Invalid(format!(
                "header {name} is set by the host"
            )));
        }
        let value = HeaderValue::from_str(value)
            .map_err(|_| Refusal::Invalid(format!("header {name} has an invalid value")))?;
        headers.append(name, value);
    }
    let mut url = Url::parse(&request.url)
        .map_err(|e| Refusal::Invalid(format!("url {:?}: {e}", request.url)))?;
    let mut method = request.method;
    let mut body = request.body;
    for _hop in 0..=MAX_REDIRECTS {
        let pinned = check(grant, &url).await?;
        let response = tokio::time::timeout_at(
            deadline,
            one_hop(client, grant, &url, &method, &headers, body.clone(), pinned),
        )
        .await
        .map_err(|_| Refusal::Timeout)??;
        let status = response.status();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        match (
            request.follow_redirects && status.is_redirection(),
            location,
        ) {
            (true, Some(location)) => {
                let next = url.join(&location).map_err(|e| {
                    Refusal::Connection(format!("bad redirect location {location:?}: {e}"))
                })?;
                // Like browsers: credentials the plugin set itself do not follow it to another
                // origin (the host's own credentials are added per hop, by origin).
                if Origin::of(&next) != Origin::of(&url) {
                    for name in CROSS_ORIGIN_DROPPED {
                        headers.remove(*name);
                    }
                }
                url = next;
                // 303, and 301/302 after a POST, become a GET without a body (what browsers do).
                if status == reqwest::StatusCode::SEE_OTHER
                    || (method == reqwest::Method::POST && matches!(status.as_u16(), 301 | 302))
                {
                    method = reqwest::Method::GET;
                    body = None;
                }
            }
            _ => {
                return Ok(Incoming {
                    status: status.as_u16(),
                    headers: response
                        .headers()
                        .iter()
                        .filter_map(|(k, v)| {
                            Some((k.as_str().to_string(), v.to_str().ok()?.to_string()))
                        })
                        .collect(),
                    url: url.to_string(),
                    body: response,
                    read: 0,
                    cap: grant.max_body_bytes,
                    deadline,
                });
            }
        }
    }
    Err(Refusal::Connection(format!(
        "more than {MAX_REDIRECTS} redirects"
    )))
}

async fn one_hop(
    shared: &reqwest::Client,
    grant: &HttpGrant,
    url: &Url,
    method: &reqwest::Method,
    headers: &HeaderMap,
    body: Option<Vec<u8>>,
    pinned: Option<SocketAddr>,
) -> Result<reqwest::Response, Refusal> {
    // Public-web hops connect to the address that was checked; a client pinned to it is built
    // for the hop. Trusted origins use the shared client and its connection pool.
    let pinned_client;
    let client = match pinned {
        Some(addr) => {
            let host = url.host_str().unwrap_or_default();
            pinned_client = base_client()
                .resolve(host, addr)
                .build()
                .map_err(|e| Refusal::Connection(error_chain(&e)))?;
            &pinned_client
        }
        None => shared,
    };
    let mut headers = headers.clone();
    if let Some(origin) = Origin::of(url) {
        for credential in grant.credentials.iter().filter(|c| c.origin == origin) {
            let mut value = HeaderValue::from_str(credential.value.expose()).map_err(|_| {
                Refusal::Invalid("a configured credential is not a valid header value".into())
            })?;
            value.set_sensitive(true);
            headers.insert(credential.header.clone(), value);
        }
    }
    let mut builder = client.request(method.clone(), url.clone()).headers(headers);
    if let Some(body) = body {
        builder = builder.body(body);
    }
    builder.send().await.map_err(|e| {
        if e.is_timeout() {
            Refusal::Timeout
        } else {
            Refusal::Connection(error_chain(&e))
        }
    })
}

/// The settings every plugin HTTP client shares: no redirects (followed by hand), no proxy from
/// the environment (it would bypass the address checks), a user agent plugins may override.
pub fn base_client() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .tcp_nodelay(true)
        .user_agent(concat!("chatd/", env!("CARGO_PKG_VERSION")))
}

/// Whether `url` may be requested; `Some(addr)` pins the connection to the checked address.
async fn check(grant: &HttpGrant, url: &Url) -> Result<Option<SocketAddr>, Refusal> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refusal::Invalid(format!(
            "{url}: only http and https are allowed"
        )));
    }
    let origin = Origin::of(url).ok_or_else(|| Refusal::Invalid(format!("{url}: no host")))?;
    if grant.trusted.contains(&origin) {
        return Ok(None);
    }
    if !grant.public_web && !grant.origins.contains(&origin) {
        return Err(Refusal::Denied(format!(
            "{origin} is not granted to this plugin"
        )));
    }
    let host = url
        .host()
        .ok_or_else(|| Refusal::Invalid(format!("{url}: no host")))?;
    let addrs: Vec<SocketAddr> = match host {
        url::Host::Ipv4(ip) => vec![SocketAddr::new(IpAddr::V4(ip), origin.port)],
        url::Host::Ipv6(ip) => vec![SocketAddr::new(IpAddr::V6(ip), origin.port)],
        url::Host::Domain(name) => tokio::net::lookup_host((name, origin.port))
            .await
            .map_err(|e| Refusal::Connection(format!("cannot resolve {name}: {e}")))?
            .collect(),
    };
    let first = *addrs
        .first()
        .ok_or_else(|| Refusal::Connection(format!("{origin} resolves to no address")))?;
    if !grant.allow_private
        && let Some(bad) = addrs.iter().find(|a| is_private(a.ip()))
    {
        return Err(Refusal::Denied(format!(
            "{origin} resolves to {}, a loopback, private, link-local or metadata address",
            bad.ip()
        )));
    }
    Ok(Some(first))
}

/// Loopback, private, link-local (cloud metadata lives there), shared, unspecified, multicast,
/// broadcast and documentation addresses: everything that is not the public internet.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private_v4(v4);
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local, fd00:ec2::254 metadata included
                || (first & 0xffc0) == 0xfe80 // link-local
                || (first == 0x2001 && v6.segments()[1] == 0x0db8) // documentation
                || v6 == Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0xa9fe, 0xa9fe) // NAT64 of 169.254.169.254
        }
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && ip.octets()[2] == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240 // reserved
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "2001:db8::1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "172.32.0.1",
            "100.128.0.1",
        ] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

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
    async fn checks_follow_the_grant() {
        let url = |u: &str| Url::parse(u).unwrap();
        // Operator-configured origins are trusted, loopback included, and not pinned.
        assert_eq!(
            check(
                &grant(&["http://127.0.0.1:9000"], false),
                &url("http://127.0.0.1:9000/x")
            )
            .await,
            Ok(None)
        );
        // Anything else needs the public web.
        assert!(matches!(
            check(&grant(&[], false), &url("https://93.184.216.34/")).await,
            Err(Refusal::Denied(_))
        ));
        assert_eq!(
            check(&grant(&[], true), &url("https://93.184.216.34/")).await,
            Ok(Some("93.184.216.34:443".parse().unwrap()))
        );
        for private in [
            "http://127.0.0.1/",
            "http://10.0.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://localhost:8080/",
            "http://[::1]/",
        ] {
            assert!(
                matches!(
                    check(&grant(&[], true), &url(private)).await,
                    Err(Refusal::Denied(_))
                ),
                "{private}"
            );
        }
        // A manifest's own origin is reachable, but only at a public address.
        let declared = |origin: &str, allow_private: bool| HttpGrant {
            origins: vec![Origin::parse(origin).unwrap()],
            allow_private,
            ..grant(&[], false)
        };
        assert_eq!(
            check(
                &declared("https://93.184.216.34", false),
                &url("https://93.184.216.34/x")
            )
            .await,
            Ok(Some("93.184.216.34:443".parse().unwrap()))
        );
        for private in [
            "http://169.254.169.254",
            "http://127.0.0.1:9000",
            "http://localhost:9000",
        ] {
            assert!(
                matches!(
                    check(&declared(private, false), &url(&format!("{private}/x"))).await,
                    Err(Refusal::Denied(_))
                ),
                "{private}"
            );
        }
        assert!(matches!(
            check(
                &declared("http://127.0.0.1:9000", true),
                &url("http://127.0.0.1:9000/")
            )
            .await,
            Ok(Some(_))
        ));
        assert!(matches!(
            check(
                &declared("https://93.184.216.34", false),
                &url("https://1.1.1.1/")
            )
            .await,
            Err(Refusal::Denied(_))
        ));
        let open = HttpGrant {
            allow_private: true,
            ..grant(&[], true)
        };
        assert!(
            check(&open, &url("http://127.0.0.1:9/"))
                .await
                .unwrap()
                .is_some()
        );
        assert!(matches!(
            check(&grant(&[], true), &url("file:///etc/passwd")).await,
            Err(Refusal::Invalid(_))
        ));
    }
}
