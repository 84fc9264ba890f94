//! MCP's streamable HTTP over chatd's plugin HTTP: rmcp's client transport asks, and every
//! request goes through [`crate::egress::send`] under the server's [`HttpGrant`]. So an
//! MCP server is reached exactly as a plugin's service is: only its own origin, the key added
//! by the host for that origin, no redirect followed (a 3xx is an error: the key never goes
//! anywhere else), the answer capped in size and time, and the key scrubbed from every byte
//! that comes back, before rmcp parses it. A server that needs a login gets its access token
//! the same way, as a credential of its origin only; its refusals (401, or 403 for want of
//! scope) go to its [`Authorizer`], and the request is sent once more with the new token.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};

use super::oauth::Authorizer;
use super::oauth::challenge::Challenge;
use crate::config::Secret;
use crate::egress::{
    Clients, Credential, HttpGrant, Incoming, Outgoing, Place, Refusal, scrub, send,
};

const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";
/// The most of an error answer's body kept for its message, in characters.
const ERROR_SNIPPET: usize = 300;
/// The most of an error answer's body read.
const ERROR_BODY: usize = 16 * 1024;

/// Why a request to an MCP server failed, in words an operator reads (never a key: the
/// request's credential is the host's, and what came back was scrubbed).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WireError(pub String);

impl From<Refusal> for WireError {
    fn from(refusal: Refusal) -> Self {
        WireError(match refusal {
            Refusal::Denied(why) | Refusal::Invalid(why) => why,
            Refusal::Timeout => "timed out".into(),
            Refusal::Connection(why) => why,
            Refusal::TooLarge(cap) => format!("the answer is over the {cap}-byte cap"),
        })
    }
}

type Failed = StreamableHttpError<WireError>;

fn failed(why: impl Into<String>) -> Failed {
    StreamableHttpError::Client(WireError(why.into()))
}

/// One MCP server's HTTP: the shared pools and the server's grant.
#[derive(Clone)]
pub struct Wire {
    pub clients: Clients,
    pub grant: Arc<HttpGrant>,
    /// The longest a POST (a call and its streamed answer) may take.
    pub call_timeout: Duration,
    /// The last failure, in operators' words: rmcp's own error wraps it in its type names.
    pub last_failure: Arc<std::sync::Mutex<Option<String>>>,
    /// The server's login, when it needs one (`auth = "oauth"`, `chatd mcp call`).
    pub auth: Option<Arc<Authorizer>>,
}

impl Wire {
    /// The last failure, taken.
    pub fn take_failure(&self) -> Option<String> {
        self.last_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    fn note<T>(&self, result: Result<T, Failed>) -> Result<T, Failed> {
        if let Err(StreamableHttpError::Client(why)) = &result {
            *self.last_failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.0.clone());
        }
        result
    }

    /// The keys scrubbed from what comes back: the configured ones and the access token now.
    pub fn keys(&self) -> Arc<[Box<[u8]>]> {
        match self.auth.as_ref().and_then(|a| a.current()) {
            Some(token) => with_token(&self.grant, &token).scrubbed,
            None => self.grant.scrubbed.clone(),
        }
    }

    /// Sends one request; a server that needs a login and refused it gets the request once
    /// more after its [`Authorizer`] got a new token. Also the keys to scrub from its answer.
    async fn request(
        &self,
        method: reqwest::Method,
        uri: &str,
        headers: Vec<(String, String)>,
        body: Option<Vec<u8>>,
        timeout: Duration,
    ) -> Result<(Incoming, Arc<[Box<[u8]>]>), Failed> {
        // A login after a 401 once, then step-ups for scope while the authorizer allows them.
        let mut logged_in = false;
        loop {
            let token = match &self.auth {
                Some(auth) => auth.bearer().await,
                None => None,
            };
            let grant = match &token {
                Some(token) => Arc::new(with_token(&self.grant, token)),
                None => self.grant.clone(),
            };
            let outgoing = Outgoing {
                method: method.clone(),
                url: uri.to_string(),
                headers: headers.clone(),
                body: body.clone(),
                timeout: Some(timeout),
                follow_redirects: false,
            };
            let incoming = send(&self.clients, &grant, outgoing)
                .await
                .map_err(|r| StreamableHttpError::Client(r.into()))?;
            if let Some(auth) = &self.auth {
                let challenge = Challenge::from_headers(
                    incoming
                        .headers
                        .iter()
                        .filter(|(n, _)| n.eq_ignore_ascii_case("www-authenticate"))
                        .map(|(_, v)| v.as_str()),
                );
                let step_up = incoming.status == 403 && challenge.insufficient_scope();
                if step_up || (incoming.status == 401 && !logged_in) {
                    logged_in |= incoming.status == 401;
                    auth.refused(incoming.status, &challenge, token.as_ref())
                        .await
                        .map_err(|why| failed(scrub::text(&grant.scrubbed, why)))?;
                    continue;
                }
                if (200..300).contains(&incoming.status) {
                    auth.passed().await;
                }
            }
            if (300..400).contains(&incoming.status) {
                return Err(failed(format!(
                    "the server redirected (HTTP {}); redirects are not followed",
                    incoming.status
                )));
            }
            return Ok((incoming, grant.scrubbed.clone()));
        }
    }
}

/// `grant` with the access token `token` sent to the server's own origin (the grant's trusted
/// one) and scrubbed from what comes back.
fn with_token(grant: &HttpGrant, token: &Secret) -> HttpGrant {
    let mut grant = grant.clone();
    let value = Secret::new(format!("Bearer {}", token.expose()));
    for origin in grant.trusted.clone() {
        grant.credentials.push(Credential {
            origin: origin.clone(),
            to: Place::Header(reqwest::header::AUTHORIZATION),
            value: value.clone(),
            secret: Some(token.clone()),
        });
    }
    let forms = scrub::keys([token.expose()]);
    grant.scrubbed = grant.scrubbed.iter().chain(forms.iter()).cloned().collect();
    grant
}

/// The headers every request carries: the session, rmcp's own (the protocol version), never
/// an `Authorization` of rmcp's (the host adds the configured key itself).
fn headers(
    accept: &str,
    session: Option<&str>,
    custom: HashMap<HeaderName, HeaderValue>,
) -> Vec<(String, String)> {
    let mut headers = vec![("accept".to_string(), accept.to_string())];
    if let Some(session) = session {
        headers.push((SESSION_ID.into(), session.into()));
    }
    for (name, value) in custom {
        if name == reqwest::header::AUTHORIZATION {
            continue;
        }
        if let Ok(value) = value.to_str() {
            headers.push((name.as_str().to_string(), value.to_string()));
        }
    }
    headers
}

fn header<'a>(incoming: &'a Incoming, name: &str) -> Option<&'a str> {
    incoming
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn media_type(incoming: &Incoming) -> String {
    header(incoming, "content-type")
        .and_then(|v| v.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The body, whole, up to `cap` bytes.
async fn read_all(incoming: &mut Incoming, cap: usize) -> Result<Vec<u8>, Failed> {
    let mut body = Vec::new();
    while let Some(chunk) = incoming
        .next_chunk()
        .await
        .map_err(|r| StreamableHttpError::Client(r.into()))?
    {
        if chunk.len() > cap.saturating_sub(body.len()) {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: cap });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The body as a stream of chunks; it ends at the first failure (after yielding it).
fn chunks(incoming: Incoming) -> impl futures::Stream<Item = Result<Bytes, WireError>> + Send {
    futures::stream::unfold(Some(incoming), |state| async move {
        let mut incoming = state?;
        match incoming.next_chunk().await {
            Ok(Some(chunk)) => Some((Ok(Bytes::from(chunk)), Some(incoming))),
            Ok(None) => None,
            Err(refusal) => Some((Err(refusal.into()), None)),
        }
    })
}

fn sse(incoming: Incoming) -> BoxStream<'static, Result<Sse, SseError>> {
    SseStream::from_bytes_stream(chunks(incoming)).boxed()
}

/// A failed status as an error: the status and the start of the body (already scrubbed).
async fn status_error(mut incoming: Incoming, keys: &[Box<[u8]>]) -> Failed {
    let status = incoming.status;
    let mut snippet = Vec::new();
    // Enough of it to decode a JSON error whole; the words keep its start.
    while snippet.len() < ERROR_BODY {
        match incoming.next_chunk().await {
            Ok(Some(chunk)) => snippet.extend_from_slice(&chunk),
            _ => break,
        }
    }
    failed(words(status, &snippet, keys))
}

/// A failed status in words, with the start of the body: scrubbed of the key again once a JSON
/// body is decoded (an escaped key, `\u0073k-…`, passes the byte-level scrubber).
fn words(status: u16, body: &[u8], keys: &[Box<[u8]>]) -> String {
    let text = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(json) => json.to_string(),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    let text = scrub::text(keys, text);
    let text: String = text.chars().take(ERROR_SNIPPET).collect();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let why = match status {
        401 | 403 => "the server refused the key",
        404 => "no MCP endpoint at this URL",
        _ => "the server failed",
    };
    if text.is_empty() {
        format!("{why} (HTTP {status})")
    } else {
        format!("{why} (HTTP {status}): {text}")
    }
}

impl StreamableHttpClient for Wire {
    type Error = WireError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        // rmcp's defaults; the grant's cap on the whole body holds under them.
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let posted = self.post(uri, message, session_id, custom_headers, limits);
        self.note(posted.await)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failed> {
        let headers = headers("*/*", Some(&session_id), custom_headers);
        let (incoming, keys) = self
            .request(
                reqwest::Method::DELETE,
                &uri,
                headers,
                None,
                Duration::from_secs(5),
            )
            .await?;
        match incoming.status {
            200..300 | 404 | 405 => Ok(()),
            _ => Err(status_error(incoming, &keys).await),
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failed> {
        let opened = self.open_stream(uri, session_id, last_event_id, custom_headers);
        self.note(opened.await)
    }
}

impl Wire {
    /// A POST and its answer: accepted, JSON, or an SSE stream.
    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let is_request = matches!(message, JsonRpcMessage::Request(_));
        let body = serde_json::to_vec(&message)?;
        let mut headers = headers(
            &format!("{JSON}, {EVENT_STREAM}"),
            session_id.as_deref(),
            custom_headers,
        );
        headers.push(("content-type".into(), JSON.into()));
        let (mut incoming, keys) = self
            .request(
                reqwest::Method::POST,
                &uri,
                headers,
                Some(body),
                self.call_timeout,
            )
            .await?;
        let status = incoming.status;
        // A notification (or a response to the server) has no answer: any success accepts it,
        // whatever body a server sends with it.
        if matches!(status, 202 | 204) || ((200..300).contains(&status) && !is_request) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == 404 && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let session = header(&incoming, SESSION_ID).map(str::to_string);
        let media = media_type(&incoming);
        if media == EVENT_STREAM && (200..300).contains(&status) {
            return Ok(StreamableHttpPostResponse::Sse(sse(incoming), session));
        }
        if media == JSON {
            let body = read_all(&mut incoming, limits.max_json_response_size).await?;
            let message: ServerJsonRpcMessage = match serde_json::from_slice(&body) {
                Ok(message) => message,
                Err(_) if !(200..300).contains(&status) => {
                    return Err(failed(words(status, &body, &keys)));
                }
                Err(e) => return Err(e.into()),
            };
            // A JSON-RPC error with a failed status is still the server's answer to the call.
            if (200..300).contains(&status) || matches!(message, JsonRpcMessage::Error(_)) {
                return Ok(StreamableHttpPostResponse::Json(message, session));
            }
            return Err(failed(words(status, &body, &keys)));
        }
        if !(200..300).contains(&status) {
            return Err(status_error(incoming, &keys).await);
        }
        Err(StreamableHttpError::UnexpectedContentType(Some(media)))
    }

    /// The server's own stream (its notices), a GET.
    async fn open_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failed> {
        let mut headers = headers(EVENT_STREAM, session_id.as_deref(), custom_headers);
        if let Some(id) = last_event_id {
            headers.push((LAST_EVENT_ID.into(), id));
        }
        // The server's own stream (list changes) lives until the grant's longest request.
        let (incoming, keys) = self
            .request(
                reqwest::Method::GET,
                &uri,
                headers,
                None,
                self.grant.max_timeout,
            )
            .await?;
        match incoming.status {
            405 => Err(StreamableHttpError::ServerDoesNotSupportSse),
            200..300 if media_type(&incoming) == EVENT_STREAM => Ok(sse(incoming)),
            200..300 => Err(StreamableHttpError::UnexpectedContentType(Some(
                media_type(&incoming),
            ))),
            _ => Err(status_error(incoming, &keys).await),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmcps_authorization_never_replaces_the_hosts() {
        let mut custom = HashMap::new();
        custom.insert(
            reqwest::header::AUTHORIZATION,
            HeaderValue::from_static("Bearer from-rmcp"),
        );
        custom.insert(
            HeaderName::from_static("mcp-protocol-version"),
            HeaderValue::from_static("2025-11-25"),
        );
        let sent = headers(JSON, Some("s-1"), custom);
        assert!(sent.iter().all(|(n, _)| n != "authorization"), "{sent:?}");
        assert!(sent.contains(&("mcp-session-id".into(), "s-1".into())));
        assert!(sent.contains(&("mcp-protocol-version".into(), "2025-11-25".into())));
    }

    #[test]
    fn an_escaped_key_in_an_error_body_is_scrubbed_once_decoded() {
        let keys = scrub::keys(["sk-secret-123"]);
        let said = words(401, br#"{"error": "bad key \u0073k-secret-123"}"#, &keys);
        assert_eq!(
            said,
            r#"the server refused the key (HTTP 401): {"error":"bad key [redacted]"}"#
        );
        assert_eq!(words(500, b"", &keys), "the server failed (HTTP 500)");
    }

    #[test]
    fn refusals_read_as_operators_words() {
        assert_eq!(WireError::from(Refusal::Timeout).0, "timed out");
        assert!(
            WireError::from(Refusal::TooLarge(9))
                .0
                .contains("9-byte cap")
        );
    }
}
