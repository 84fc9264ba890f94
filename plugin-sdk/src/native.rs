//! What the host imports do in a native build (`cargo test`): answered from the state a
//! running harness (`harness.rs`) put in this thread, recorded there. Without one, an import
//! panics saying so.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};

use crate::imports::chatd::plugin::http::{self as wit_http, Header, HttpError, Method};
use crate::imports::chatd::plugin::log::Level;

/// A scripted answer to one request.
#[derive(Clone, Debug)]
pub struct Reply {
    status: u16,
    headers: Vec<Header>,
    body: Vec<u8>,
    /// The size of the pieces the body is handed over in (0: whole).
    piece: usize,
}

impl Reply {
    /// A reply with `status`, `content-type` and `body`.
    pub fn bytes(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![Header {
                name: "content-type".into(),
                value: content_type.into(),
            }],
            body: body.into(),
            piece: 0,
        }
    }

    /// A JSON reply.
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self::bytes(status, "application/json", value.to_string())
    }

    /// A text reply.
    pub fn text(status: u16, text: &str) -> Self {
        Self::bytes(status, "text/plain; charset=utf-8", text)
    }

    /// One more header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push(Header {
            name: name.into(),
            value: value.into(),
        });
        self
    }

    /// Hands the body over in `size`-byte pieces, as a network might, so a parser split across
    /// pieces is tested.
    pub fn in_pieces(mut self, size: usize) -> Self {
        self.piece = size;
        self
    }
}

/// A request the code sent, as the host would have received it (before it adds any key).
#[derive(Clone, Debug)]
pub struct Sent {
    pub method: Method,
    pub url: String,
    pub headers: Vec<Header>,
    pub body: Option<Vec<u8>>,
}

impl Sent {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.as_str())
    }
}

/// The answer `Request::send` hands back natively.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<Header>,
    pub(crate) url: String,
    pub(crate) chunks: VecDeque<Vec<u8>>,
}

pub(crate) struct State {
    pub(crate) settings: BTreeMap<String, String>,
    pub(crate) replies: VecDeque<(Method, String, Reply)>,
    pub(crate) requests: Vec<Sent>,
    pub(crate) logs: Vec<String>,
}

thread_local! {
    pub(crate) static CURRENT: RefCell<Option<State>> = const { RefCell::new(None) };
}

fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        let state = current.as_mut().expect(
            "a host import was called natively outside a harness: run the code in \
             chatd_plugin_sdk::harness::Harness::run",
        );
        f(state)
    })
}

pub(crate) fn setting(key: &str) -> Option<String> {
    with_state(|s| s.settings.get(key).cloned())
}

pub(crate) fn settings() -> Vec<(String, String)> {
    with_state(|s| {
        s.settings
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    })
}

pub(crate) fn log(level: Level, message: &str) {
    let level = match level {
        Level::Trace => "TRACE",
        Level::Debug => "DEBUG",
        Level::Info => "INFO",
        Level::Warn => "WARN",
        Level::Error => "ERROR",
    };
    with_state(|s| s.logs.push(format!("{level} {message}")));
}

pub(crate) fn send(request: wit_http::Request) -> Result<Answer, HttpError> {
    with_state(|s| {
        s.requests.push(Sent {
            method: request.method,
            url: request.url.clone(),
            headers: request.headers.clone(),
            body: request.body.clone(),
        });
        let at = s
            .replies
            .iter()
            .position(|(method, url, _)| *method == request.method && *url == request.url);
        let Some((_, _, reply)) = at.and_then(|at| s.replies.remove(at)) else {
            return Err(HttpError::Denied(format!(
                "the harness has no reply for {:?} {}",
                request.method, request.url
            )));
        };
        let piece = if reply.piece == 0 {
            reply.body.len().max(1)
        } else {
            reply.piece
        };
        Ok(Answer {
            status: reply.status,
            headers: reply.headers,
            url: request.url,
            chunks: reply.body.chunks(piece).map(<[u8]>::to_vec).collect(),
        })
    })
}
