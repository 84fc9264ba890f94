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

use std::collections::BTreeMap;

use crate::imports::chatd::plugin::http::Method;
use crate::native::{CURRENT, State};
pub use crate::native::{Reply, Sent};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{HttpError, Request, config, log};

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
