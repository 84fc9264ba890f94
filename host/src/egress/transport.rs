//! The HTTP transport under a plugin's grant: the shared connection pools, a request sent hop by
//! hop (each redirect checked again by [`super::route`]), credentials added per origin, the
//! caps on size and time, and the answer read chunk by chunk.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;
use url::Url;

use super::address::{NotMetadata, PrivateAddress, PublicOnly, PublicOrLocal};
use super::{HttpGrant, MAX_REDIRECTS, Origin, Place, Refusal, Route, query, route, scrub};
use crate::config::names::is_host_header;

/// The most response body a plugin may read from one request.
pub const MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;

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
    /// Ordinary DNS: for trusted origins.
    direct: reqwest::Client,
    /// DNS through [`NotMetadata`]: for everything else when private networks are allowed.
    not_metadata: reqwest::Client,
    /// DNS through [`PublicOnly`]: a name with a private address is refused when connecting.
    public: reqwest::Client,
    /// DNS through [`PublicOrLocal`]: a name with a link-local address is refused.
    local: reqwest::Client,
}

impl Clients {
    pub fn new() -> Self {
        Self {
            direct: base_client()
                .build()
                .expect("the plugin HTTP client builds"),
            not_metadata: base_client()
                .dns_resolver(Arc::new(NotMetadata))
                .build()
                .expect("the plugin HTTP client builds"),
            public: base_client()
                .dns_resolver(Arc::new(PublicOnly))
                .build()
                .expect("the plugin HTTP client builds"),
            local: base_client()
                .dns_resolver(Arc::new(PublicOrLocal))
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
            Route::NotMetadata => &clients.not_metadata,
            Route::PublicOnly => &clients.public,
            Route::PublicOrLocal => &clients.local,
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
