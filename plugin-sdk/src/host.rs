//! The host's imports, generated once and shared by every world: HTTP (with a small client on
//! top), SSH, logging and configuration.

/// The host-imports bindings (`imports.rs`), under the name the worlds' `with:` clauses use.
#[doc(hidden)]
pub use crate::imports as bindings;

pub use bindings::chatd::plugin::log as raw_log;
pub use bindings::chatd::plugin::ssh;
pub use bindings::chatd::plugin::types::{
    ContentPart, Image, Message, PluginError, Role, TextFile, ToolCall, ToolResult, ToolSpec,
    UpstreamError, Usage,
};

use bindings::chatd::plugin::http as wit_http;
pub use wit_http::{Fetched, Header, HttpError, Method};

/// The plugin's settings, as the host gives them (never a key). In a native test the
/// harness's settings answer (`harness.rs`).
pub mod config {
    /// The setting `key`, if the plugin may read it and it is set.
    pub fn get(key: &str) -> Option<String> {
        #[cfg(target_family = "wasm")]
        return super::bindings::chatd::plugin::config::get(key);
        #[cfg(not(target_family = "wasm"))]
        return crate::native::setting(key);
    }

    /// Every setting the plugin may read.
    pub fn all() -> Vec<(String, String)> {
        #[cfg(target_family = "wasm")]
        return super::bindings::chatd::plugin::config::all();
        #[cfg(not(target_family = "wasm"))]
        return crate::native::settings();
    }
}

/// Logging into the host's log (tagged with the plugin id by the host). In a native test the
/// harness keeps the lines (`harness.rs`).
pub mod log {
    use super::raw_log::Level;

    fn write(level: Level, message: &str) {
        #[cfg(target_family = "wasm")]
        super::raw_log::write(level, message);
        #[cfg(not(target_family = "wasm"))]
        crate::native::log(level, message);
    }

    pub fn trace(message: &str) {
        write(Level::Trace, message)
    }
    pub fn debug(message: &str) {
        write(Level::Debug, message)
    }
    pub fn info(message: &str) {
        write(Level::Info, message)
    }
    pub fn warn(message: &str) {
        write(Level::Warn, message)
    }
    pub fn error(message: &str) {
        write(Level::Error, message)
    }
}

/// A request being built. Credentials are never set here: the host adds them to requests whose
/// URL its grant matches.
#[derive(Clone, Debug)]
pub struct Request {
    inner: wit_http::Request,
}

impl Request {
    pub fn new(method: Method, url: impl Into<String>) -> Self {
        Self {
            inner: wit_http::Request {
                method,
                url: url.into(),
                headers: Vec::new(),
                body: None,
                timeout_ms: None,
                follow_redirects: None,
            },
        }
    }
    pub fn get(url: impl Into<String>) -> Self {
        Self::new(Method::Get, url)
    }
    pub fn post(url: impl Into<String>) -> Self {
        Self::new(Method::Post, url)
    }
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.inner.headers.push(Header {
            name: name.into(),
            value: value.into(),
        });
        self
    }
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.inner.body = Some(body.into());
        self
    }
    /// Sets headers from a list of `(name, value)` pairs.
    pub fn headers<'a>(mut self, headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        for (name, value) in headers {
            self = self.header(name, value);
        }
        self
    }
    /// Sets a JSON body and `content-type: application/json`: a `Value`, or a body holding raw
    /// JSON ([`crate::json::WithEntry`]). Panics only for a value that is not JSON (a map with
    /// keys that are not strings), a bug in the plugin.
    pub fn json<T: serde::Serialize + ?Sized>(self, value: &T) -> Self {
        // Straight into bytes: `to_string` goes through `Display`, a formatter call for each
        // piece the serializer writes, and took about twice as long (issue 59, BENCHMARKS.md).
        let body = serde_json::to_vec(value).expect("a JSON body serializes");
        self.header("content-type", "application/json").body(body)
    }
    pub fn timeout_ms(mut self, ms: u32) -> Self {
        self.inner.timeout_ms = Some(ms);
        self
    }
    pub fn follow_redirects(mut self, follow: bool) -> Self {
        self.inner.follow_redirects = Some(follow);
        self
    }
    /// The request as the WIT record, for a host that sends it itself (the `turn-codec`
    /// interface's `start`).
    pub fn into_wit(self) -> wit_http::Request {
        self.inner
    }
    /// Sends it; returns when the status and headers are in. In a native test the
    /// harness's scripted replies answer (`harness.rs`).
    pub fn send(self) -> Result<Response, HttpError> {
        #[cfg(target_family = "wasm")]
        return wit_http::send(&self.inner).map(|inner| Response {
            inner: Inner::Host(inner),
        });
        #[cfg(not(target_family = "wasm"))]
        return crate::native::send(self.inner).map(|reply| Response {
            inner: Inner::Scripted(reply),
        });
    }

    /// Sends it and reads the whole body in the host, at most `max_bytes` of it (a longer body
    /// is [`HttpError::TooLarge`]): one crossing into the host where [`Self::send`] and
    /// [`Response::next_chunk`] take one per piece. Needs chatd's WIT 0.1.1 or later.
    pub fn fetch(self, max_bytes: u64) -> Result<Fetched, HttpError> {
        #[cfg(target_family = "wasm")]
        return wit_http::fetch(&self.inner, max_bytes);
        #[cfg(not(target_family = "wasm"))]
        {
            let mut response = self.send()?;
            let mut body = Vec::new();
            while let Some(chunk) = response.next_chunk()? {
                if (body.len() + chunk.len()) as u64 > max_bytes {
                    return Err(HttpError::TooLarge(max_bytes));
                }
                body.extend(chunk);
            }
            Ok(Fetched {
                status: response.status(),
                headers: response.headers(),
                url: response.url(),
                body,
            })
        }
    }
}

/// A response whose body is read as it arrives.
pub struct Response {
    inner: Inner,
}

enum Inner {
    #[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
    Host(wit_http::Response),
    #[cfg(not(target_family = "wasm"))]
    Scripted(crate::native::Answer),
}

impl Response {
    pub fn status(&self) -> u16 {
        match &self.inner {
            Inner::Host(inner) => inner.status(),
            #[cfg(not(target_family = "wasm"))]
            Inner::Scripted(answer) => answer.status,
        }
    }
    pub fn headers(&self) -> Vec<Header> {
        match &self.inner {
            Inner::Host(inner) => inner.headers(),
            #[cfg(not(target_family = "wasm"))]
            Inner::Scripted(answer) => answer.headers.clone(),
        }
    }
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers()
            .into_iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }
    /// The final URL, after redirects.
    pub fn url(&self) -> String {
        match &self.inner {
            Inner::Host(inner) => inner.url(),
            #[cfg(not(target_family = "wasm"))]
            Inner::Scripted(answer) => answer.url.clone(),
        }
    }
    /// The next piece of the body; `None` at its end.
    pub fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, HttpError> {
        match &mut self.inner {
            Inner::Host(inner) => inner.next_chunk(),
            #[cfg(not(target_family = "wasm"))]
            Inner::Scripted(answer) => Ok(answer.chunks.pop_front()),
        }
    }
    /// The whole body.
    pub fn bytes(mut self) -> Result<Vec<u8>, HttpError> {
        let mut body = Vec::new();
        while let Some(chunk) = self.next_chunk()? {
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
    /// The whole body as UTF-8 text (a body that is not UTF-8 is a malformed response).
    pub fn text(self) -> Result<String, PluginError> {
        let bytes = self.bytes().map_err(crate::transport_error)?;
        String::from_utf8(bytes)
            .map_err(|_| PluginError::MalformedResponse("the response body is not UTF-8".into()))
    }
    /// `Ok(self)` for a 2xx status; otherwise the body is read (up to 64 KiB) and becomes a
    /// [`PluginError::Upstream`] carrying the status and the upstream's own message: the first
    /// string at `/error/message`, `/error`, `/message` or `/detail` of a JSON body, else the
    /// body's text, else `HTTP <status>`.
    pub fn error_for_status(mut self) -> Result<Self, PluginError> {
        let status = self.status();
        if (200..300).contains(&status) {
            return Ok(self);
        }
        let mut body = Vec::new();
        while body.len() < MAX_ERROR_BODY {
            match self.next_chunk() {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                _ => break,
            }
        }
        Err(upstream_error(status, &body))
    }
    /// The whole body as JSON.
    pub fn json(self) -> Result<serde_json::Value, PluginError> {
        let bytes = self.bytes().map_err(crate::transport_error)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| PluginError::MalformedResponse(format!("response is not JSON: {e}")))
    }
    /// The body as server-sent events, parsed as chunks arrive.
    pub fn events(self) -> Events {
        Events {
            response: self,
            parser: crate::sse::Parser::new(),
            ready: Default::default(),
            done: false,
        }
    }
}

/// How much of an error body is read to find its message.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// The longest message quoted from an error body that is not JSON.
const MAX_ERROR_TEXT: usize = 300;

/// The upstream's failure with `status` and `body`, as [`Response::error_for_status`] reads it:
/// the status and the upstream's own message. An answer naming a model the upstream does not
/// have is a 404, whatever status it came with (OpenAI's Responses API answers that 400, with
/// `code: model_not_found`), so the host tells it from other refusals.
pub fn upstream_error(status: u16, body: &[u8]) -> PluginError {
    let unknown_model = serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|json| {
        json.pointer("/error/code").and_then(|c| c.as_str()) == Some("model_not_found")
    });
    PluginError::Upstream(UpstreamError {
        status: if unknown_model { 404 } else { status },
        message: error_message(body).unwrap_or_else(|| format!("HTTP {status}")),
    })
}

/// The message an upstream put in its error body, if one can be found.
pub fn error_message(body: &[u8]) -> Option<String> {
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) {
        for pointer in ["/error/message", "/error", "/message", "/detail"] {
            if let Some(text) = json.pointer(pointer).and_then(serde_json::Value::as_str)
                && !text.trim().is_empty()
            {
                return Some(text.trim().to_string());
            }
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return None;
    }
    let mut cut: String = text.chars().take(MAX_ERROR_TEXT).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    Some(cut)
}

/// An iterator over a response's server-sent events.
pub struct Events {
    response: Response,
    parser: crate::sse::Parser,
    ready: std::collections::VecDeque<crate::sse::Event>,
    done: bool,
}

impl Iterator for Events {
    type Item = Result<crate::sse::Event, HttpError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            if self.done {
                return None;
            }
            match self.response.next_chunk() {
                Ok(Some(chunk)) => self.ready.extend(self.parser.push(&chunk)),
                Ok(None) => {
                    self.parser.finish();
                    self.done = true;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
