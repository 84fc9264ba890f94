//! A native test harness: run a plugin's code with `cargo test` on your machine, its host
//! imports answered by a script instead of chatd. [`host::Request::send`](crate::host::Request)
//! gets the scripted replies, [`host::config`](crate::host::config) the harness's settings, and
//! [`host::log`](crate::host::log) lines are kept; what the code sent is recorded. Like chatd,
//! the harness answers a request it has no reply for with `HttpError::Denied`. (`ssh` is not
//! scripted: calling it natively panics.)
//!
//! ```ignore
//! use chatd_plugin_sdk::harness::{Harness, Reply};
//! use chatd_plugin_sdk::host::Method;
//!
//! #[test]
//! fn reports_the_weather() {
//!     let ran = Harness::new()
//!         .setting("weather_base_url", "https://api.example")
//!         .reply(Method::Get, "https://api.example/current?city=Lisbon",
//!                Reply::json(200, &serde_json::json!({"temperatureC": 21.5})))
//!         .invoke::<crate::Weather>("current_weather", r#"{"city":"Lisbon"}"#);
//!     assert_eq!(ran.value.unwrap().content, "21.5 °C");
//!     assert_eq!(ran.requests.len(), 1);
//! }
//! ```
//!
//! The compiled component is tested in the real host by `chatd plugins call` (and by
//! `chatd::plugins::testing` from chatd's own tests).

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};

use crate::host::bindings::chatd::plugin::http as wit_http;
use crate::host::bindings::chatd::plugin::log::Level;
use crate::host::{Header, HttpError, Method};

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

/// What one run produced: its value, what it sent, what it logged, and the replies it left.
#[derive(Debug)]
pub struct Ran<T> {
    pub value: T,
    pub requests: Vec<Sent>,
    /// Log lines as `LEVEL message` (`INFO asking…`).
    pub logs: Vec<String>,
    /// Scripted replies no request asked for.
    pub unused: usize,
}

/// Settings and scripted replies for one run of plugin code.
#[derive(Clone, Debug, Default)]
pub struct Harness {
    settings: BTreeMap<String, String>,
    replies: Vec<(Method, String, Reply)>,
}

impl Harness {
    pub fn new() -> Self {
        Self::default()
    }

    /// A setting the code reads with `config::get` (a service's base URL is `NAME_base_url`).
    pub fn setting(mut self, key: &str, value: &str) -> Self {
        self.settings.insert(key.into(), value.into());
        self
    }

    /// The reply to the next `method` request to exactly `url`; several for one URL answer in
    /// order.
    pub fn reply(mut self, method: Method, url: &str, reply: Reply) -> Self {
        self.replies.push((method, url.into(), reply));
        self
    }

    /// Runs `f` with this harness standing in for the host.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> Ran<T> {
        let state = State {
            settings: self.settings.clone(),
            replies: self.replies.iter().cloned().collect(),
            requests: Vec::new(),
            logs: Vec::new(),
        };
        let previous = CURRENT.with(|c| c.replace(Some(state)));
        let value = f();
        let state = CURRENT
            .with(|c| c.replace(previous))
            .expect("the harness state");
        Ran {
            value,
            requests: state.requests,
            logs: state.logs,
            unused: state.replies.len(),
        }
    }

    /// Runs tool `name` of the [`Tool`](crate::tool::Tool) `T` with `arguments_json`.
    #[cfg(feature = "tool")]
    pub fn invoke<T: crate::tool::Tool>(
        &self,
        name: &str,
        arguments_json: &str,
    ) -> Ran<Result<crate::tool::ToolOutput, crate::host::PluginError>> {
        self.run(|| T::invoke(name.into(), arguments_json.into()))
    }
}

/// The answer `Request::send` hands back natively.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<Header>,
    pub(crate) url: String,
    pub(crate) chunks: VecDeque<Vec<u8>>,
}

struct State {
    settings: BTreeMap<String, String>,
    replies: VecDeque<(Method, String, Reply)>,
    requests: Vec<Sent>,
    logs: Vec<String>,
}

thread_local! {
    static CURRENT: RefCell<Option<State>> = const { RefCell::new(None) };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Request, config, log};

    #[test]
    fn scripted_replies_answer_in_order_and_the_rest_is_denied() {
        let harness = Harness::new()
            .setting("base_url", "https://api.example")
            .reply(
                Method::Get,
                "https://api.example/a",
                Reply::text(200, "one"),
            )
            .reply(
                Method::Get,
                "https://api.example/a",
                Reply::text(503, "two").in_pieces(1),
            )
            .reply(
                Method::Post,
                "https://api.example/unused",
                Reply::text(200, ""),
            );
        let ran = harness.run(|| {
            let base = config::get("base_url").unwrap();
            log::info("asking");
            let first = Request::get(format!("{base}/a")).send().unwrap().text();
            let second = Request::get(format!("{base}/a"))
                .header("accept", "text/plain")
                .send()
                .unwrap();
            let status = second.status();
            let third = Request::get(format!("{base}/b")).send().err();
            (first.unwrap(), status, second.text().unwrap(), third)
        });
        let (first, status, second, third) = ran.value;
        assert_eq!(
            (first.as_str(), status, second.as_str()),
            ("one", 503, "two")
        );
        assert!(
            matches!(&third, Some(HttpError::Denied(why)) if why.contains("/b")),
            "{third:?}"
        );
        assert_eq!(ran.requests.len(), 3);
        assert_eq!(ran.requests[1].header("Accept"), Some("text/plain"));
        assert_eq!(ran.logs, ["INFO asking"]);
        assert_eq!(ran.unused, 1);
    }

    #[test]
    fn fetch_reads_the_whole_body_up_to_its_limit() {
        let url = "https://api.example/big";
        let harness = Harness::new()
            .reply(
                Method::Get,
                url,
                Reply::text(200, "0123456789").in_pieces(3),
            )
            .reply(Method::Get, url, Reply::text(200, "0123456789"));
        let ran = harness.run(|| {
            let whole = Request::get(url).fetch(10).unwrap();
            let over = Request::get(url).fetch(9).err();
            (whole, over)
        });
        let (whole, over) = ran.value;
        assert_eq!(
            (whole.status, whole.body.as_slice()),
            (200, &b"0123456789"[..])
        );
        assert!(matches!(over, Some(HttpError::TooLarge(9))), "{over:?}");
    }
}
