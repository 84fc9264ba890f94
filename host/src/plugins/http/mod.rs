//! The HTTP capability: what a plugin may reach, checked on every request and every redirect,
//! with credentials added by the host and size and time caps.
//!
//! A URL is allowed when its origin (`scheme://host:port`) is an operator-configured base URL
//! that belongs to the plugin (trusted: reachable whatever its address, loopback included), or
//! when it is one of the manifest's own origins or the plugin is granted the public web, and
//! every address the host name resolves to is public (private ones too with
//! CHATD_ALLOW_PRIVATE_NETWORKS). A plugin author's manifest cannot point the host at cloud
//! metadata or the LAN; only the operator can. Redirects are followed by hand, so each hop is
//! checked the same way.
//!
//! - here: [`grant`], the one function that decides a plugin's [`HttpGrant`], and [`send`];
//! - [`address`]: what "public" means, and the resolver that enforces it at connect time;
//! - [`scrub`]: keys removed from what comes back;
//! - [`query`]: a key as a query parameter, and keys kept out of URLs bound elsewhere;
//! - [`host`]: the WIT `http` interface, implemented on top of [`send`].

pub mod address;
pub mod host;
pub mod query;
pub mod scrub;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;
use url::Url;

use crate::config::names::is_host_header;

use crate::config::Secret;
use address::{PrivateAddress, PublicOnly, is_private};

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

/// Decides a plugin's HTTP: the manifest's own origins (public addresses only) and the public
/// web if it asks, its services' origins (`trusted`, any address) with their `credentials`,
/// CHATD_ALLOW_PRIVATE_NETWORKS, and the caps.
pub fn grant(
    manifest: &super::manifest::Manifest,
    trusted: Vec<Origin>,
    credentials: Vec<Credential>,
    allow_private: bool,
) -> Result<HttpGrant, String> {
    let origins = manifest
        .grants
        .http
        .iter()
        .map(|origin| {
            Origin::parse(origin).ok_or_else(|| format!("grants.http: {origin:?} is not an origin"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let scrubbed = scrub::keys(
        credentials
            .iter()
            .filter_map(|c| c.secret.as_ref())
            .map(Secret::expose),
    );
    Ok(HttpGrant {
        trusted,
        origins,
        public_web: manifest.grants.public_web,
        allow_private,
        credentials,
        scrubbed,
        max_body_bytes: MAX_BODY_BYTES,
        max_timeout: Duration::from_millis(manifest.limits.timeout_ms),
    })
}

/// The most response body a plugin may read from one request.
pub const MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;

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

/// The headers a plugin set, checked: valid, and none of those the host sets itself.
fn plugin_headers(pairs: &[(String, String)]) -> Result<HeaderMap, Refusal> {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| Refusal::Invalid(format!("header name {name:?} is not valid")))?;
        if is_host_header(&name) {
            return Err(Refusal::Invalid(format!(
                "header {name} is set by the host"
            )));
        }
        let value = HeaderValue::from_str(value)
            .map_err(|_| Refusal::Invalid(format!("header {name} has an invalid value")))?;
        headers.append(name, value);
    }
    Ok(headers)
}

/// Moves a request to a redirect's target `next`, as browsers do: credentials the plugin set
/// itself do not follow it to another origin (the host's own are added per hop, by origin), and
/// 303, or 301/302 after a POST, becomes a GET without a body.
fn follow(
    url: &mut Url,
    next: Url,
    status: reqwest::StatusCode,
    method: &mut reqwest::Method,
    headers: &mut HeaderMap,
    body: &mut Option<Bytes>,
) {
    if Origin::of(&next) != Origin::of(url) {
        for name in CROSS_ORIGIN_DROPPED {
            headers.remove(*name);
        }
    }
    *url = next;
    if status == reqwest::StatusCode::SEE_OTHER
        || (*method == reqwest::Method::POST && matches!(status.as_u16(), 301 | 302))
    {
        *method = reqwest::Method::GET;
        *body = None;
    }
}

/// The largest request body a plugin may send.
pub const MAX_REQUEST_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The connection pools plugin requests go through, shared by every plugin of a host.
#[derive(Clone, Debug)]
pub struct Clients {
    /// Ordinary DNS: for trusted origins, and for everything when private networks are allowed.
    direct: reqwest::Client,
    /// DNS through [`PublicOnly`]: a name with a private address is refused when connecting.
    public: reqwest::Client,
}

impl Clients {
    pub fn new() -> Self {
        Self {
            direct: base_client()
                .build()
                .expect("the plugin HTTP client builds"),
            public: base_client()
                .dns_resolver(Arc::new(PublicOnly))
                .build()
                .expect("the plugin HTTP client builds"),
        }
    }
}

impl Default for Clients {
    fn default() -> Self {
        Self::new()
    }
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
    scrubber: scrub::Scrubber,
}

impl Incoming {
    /// The next piece of the body, `None` at its end; enforces the size cap and the deadline,
    /// and removes the grant's keys.
    pub async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, Refusal> {
        loop {
            let chunk = match tokio::time::timeout_at(self.deadline, self.body.chunk()).await {
                Err(_) => return Err(Refusal::Timeout),
                Ok(Err(e)) => {
                    let why = scrub::text(self.scrubber.keys(), error_chain(&e));
                    return Err(Refusal::Connection(why));
                }
                Ok(Ok(None)) => {
                    let held = self.scrubber.finish();
                    return Ok((!held.is_empty()).then_some(held));
                }
                Ok(Ok(Some(bytes))) => bytes,
            };
            self.read += chunk.len() as u64;
            if self.read > self.cap {
                return Err(Refusal::TooLarge(self.cap));
            }
            let out = self.scrubber.chunk(chunk.to_vec());
            // A piece held back whole (the start of a key, maybe) is not an end of body.
            if !out.is_empty() {
                return Ok(Some(out));
            }
        }
    }
}

/// Headers a plugin set that are not sent on to a redirect's different origin.
const CROSS_ORIGIN_DROPPED: &[&str] = &["authorization", "cookie", "x-api-key", "api-key"];

/// Sends `request` under `grant`, following redirects hop by hop. Nothing the plugin gets back
/// holds a key: not the final URL (an upstream may redirect to one that quotes the request), not
/// a refusal's text (it may quote a location or the client's error).
pub async fn send(
    clients: &Clients,
    grant: &HttpGrant,
    request: Outgoing,
) -> Result<Incoming, Refusal> {
    let text = |s: String| scrub::text(&grant.scrubbed, s);
    match send_hops(clients, grant, request).await {
        Ok(mut incoming) => {
            incoming.url = text(std::mem::take(&mut incoming.url));
            Ok(incoming)
        }
        Err(Refusal::Denied(why)) => Err(Refusal::Denied(text(why))),
        Err(Refusal::Invalid(why)) => Err(Refusal::Invalid(text(why))),
        Err(Refusal::Connection(why)) => Err(Refusal::Connection(text(why))),
        Err(other) => Err(other),
    }
}

async fn send_hops(
    clients: &Clients,
    grant: &HttpGrant,
    request: Outgoing,
) -> Result<Incoming, Refusal> {
    let timeout = request
        .timeout
        .unwrap_or(grant.max_timeout)
        .min(grant.max_timeout);
    let deadline = Instant::now() + timeout;
    let mut headers = plugin_headers(&request.headers)?;
    let mut url = Url::parse(&request.url)
        .map_err(|e| Refusal::Invalid(format!("url {:?}: {e}", request.url)))?;
    let mut method = request.method;
    if request
        .body
        .as_ref()
        .is_some_and(|b| b.len() > MAX_REQUEST_BODY_BYTES)
    {
        return Err(Refusal::Invalid(format!(
            "the request body is larger than the host's {MAX_REQUEST_BODY_BYTES}-byte cap"
        )));
    }
    // Bytes, so each redirect hop shares the body instead of copying it.
    let mut body = request.body.map(Bytes::from);
    for _hop in 0..=MAX_REDIRECTS {
        let client = match route(grant, &url)? {
            Route::Direct => &clients.direct,
            Route::PublicOnly => &clients.public,
        };
        let response = tokio::time::timeout_at(
            deadline,
            one_hop(client, grant, &url, &method, &headers, body.clone()),
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
                follow(&mut url, next, status, &mut method, &mut headers, &mut body);
            }
            _ => {
                let headers = response
                    .headers()
                    .iter()
                    .filter_map(|(k, v)| {
                        let value = scrub::scrub(&grant.scrubbed, v.as_bytes().to_vec());
                        Some((k.as_str().to_string(), String::from_utf8(value).ok()?))
                    })
                    .collect();
                return Ok(Incoming {
                    status: status.as_u16(),
                    headers,
                    url: url.to_string(),
                    body: response,
                    read: 0,
                    cap: grant.max_body_bytes,
                    deadline,
                    scrubber: scrub::Scrubber::new(grant.scrubbed.clone()),
                });
            }
        }
    }
    Err(Refusal::Connection(format!(
        "more than {MAX_REDIRECTS} redirects"
    )))
}

async fn one_hop(
    client: &reqwest::Client,
    grant: &HttpGrant,
    url: &Url,
    method: &reqwest::Method,
    headers: &HeaderMap,
    body: Option<Bytes>,
) -> Result<reqwest::Response, Refusal> {
    let mut headers = headers.clone();
    let mut url = url.clone();
    query::drop_keys(&mut url, &grant.scrubbed);
    if let Some(origin) = Origin::of(&url) {
        for credential in grant.credentials.iter().filter(|c| c.origin == origin) {
            match &credential.to {
                Place::Header(name) => {
                    let mut value =
                        HeaderValue::from_str(credential.value.expose()).map_err(|_| {
                            Refusal::Invalid(
                                "a configured credential is not a valid header value".into(),
                            )
                        })?;
                    value.set_sensitive(true);
                    headers.insert(name.clone(), value);
                }
                Place::Query(name) => query::set(&mut url, name, credential.value.expose()),
            }
        }
    }
    let mut builder = client.request(method.clone(), url).headers(headers);
    if let Some(body) = body {
        builder = builder.body(body);
    }
    builder.send().await.map_err(|e| {
        if let Some(private) = find_cause::<PrivateAddress>(&e) {
            Refusal::Denied(private.to_string())
        } else if e.is_timeout() {
            Refusal::Timeout
        } else {
            Refusal::Connection(error_chain(&e))
        }
    })
}

/// The settings every plugin HTTP client shares: no redirects (followed by hand), no proxy from
/// the environment (it would bypass the address checks), a user agent plugins may override.
fn base_client() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .tcp_nodelay(true)
        .user_agent(concat!("chatd/", env!("CARGO_PKG_VERSION")))
}

/// How a permitted URL is reached.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    /// Any address: a trusted origin, or private networks are allowed.
    Direct,
    /// Public addresses only, enforced by the resolver when connecting.
    PublicOnly,
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
    if grant.allow_private {
        return Ok(Route::Direct);
    }
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    if let Some(ip) = literal.filter(|ip| is_private(*ip)) {
        let private = PrivateAddress {
            host: origin.host.clone(),
            ip,
        };
        return Err(Refusal::Denied(private.to_string()));
    }
    Ok(Route::PublicOnly)
}

/// The first error of type `T` in `error`'s source chain.
fn find_cause<'a, T: std::error::Error + 'static>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut cause: Option<&'a (dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        cause = e.source();
    }
    None
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
                Err(Refusal::Denied(why)) => assert!(why.contains("private"), "{private}: {why}"),
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
            Ok(Route::Direct)
        );
        assert!(matches!(
            route(
                &declared("https://api.example.org", false),
                &url("https://1.1.1.1/")
            ),
            Err(Refusal::Denied(_))
        ));
        let open = HttpGrant {
            allow_private: true,
            ..grant(&[], true)
        };
        assert_eq!(route(&open, &url("http://127.0.0.1:9/")), Ok(Route::Direct));
        assert!(matches!(
            route(&grant(&[], true), &url("file:///etc/passwd")),
            Err(Refusal::Invalid(_))
        ));
    }
}
