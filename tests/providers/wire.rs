//! What the suite needs to know about one provider's wire: where the plugin posts and how it is
//! configured, which recorded (or slightly varied) bodies answer each scenario and what they
//! hold, and how to read the vendor's shapes back out of the request the plugin sent. Each
//! `wire_*.rs` implements [`Wire`] for one provider; the scenarios (`suite.rs`) only ever go
//! through it, so every provider runs every scenario.
//!
//! Where an API lacks a feature, the description says so with [`Support::Absent`] and the
//! scenario asserts the documented behaviour instead of skipping.

use chatd::plugins::testing::{Recorded, Reply};
use chatd::plugins::worlds::provider::{
    FinishReason, Image, TextFile, ToolCall, ToolResult, ToolSpec,
};
use serde_json::Value;

/// The key every scenario configures; the host injects it, the plugin never sees it.
pub const KEY: &str = "k";

/// A recorded answer and what it holds.
pub struct Canned {
    /// The body as the upstream sent it (JSON, or an SSE stream).
    pub body: String,
    /// Its assistant text.
    pub text: &'static str,
    /// Its usage as the plugin reports it: (input, output, total).
    pub usage: (u64, u64, u64),
}

impl Canned {
    /// The reply that sends the body: an event stream, or one JSON document.
    pub fn reply(&self, streaming: bool) -> Reply {
        if streaming {
            Reply::sse(&self.body)
        } else {
            Reply::text(200, "application/json", &self.body)
        }
    }
}

/// A tool call as recorded: the arguments are JSON text, compared as JSON.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub id: &'static str,
    pub name: &'static str,
    pub arguments: &'static str,
}

/// A feature the API has, or the documented behaviour where it has not.
pub enum Support<T> {
    Present(T),
    Absent(Absent),
}

/// What a provider does instead of a feature its API lacks.
pub struct Absent {
    /// Why, in a sentence (the plugin's own documentation).
    pub why: &'static str,
    /// A recorded answer that holds the feature anyway (tool calls, here).
    pub reply: Reply,
    pub streaming: bool,
    /// The finish the plugin reports for it.
    pub finish: FinishReason,
    /// Checks the request: the feature was not asked for.
    pub assert_sent: fn(&Value),
}

/// A tool loop: the first turn answers with a call, the second, given its result, with text.
pub struct ToolLoop {
    pub tool: ToolSpec,
    pub question: &'static str,
    /// The first turn's answer (streamed).
    pub first: String,
    pub call: Call,
    /// The continuation the first turn emits (with `may_continue`), for APIs that keep the
    /// conversation upstream.
    pub continuation: Option<&'static str>,
    /// The tool's output the second turn sends.
    pub output: &'static str,
    /// The second turn's answer (streamed).
    pub second: Canned,
    /// Checks the second request carries the call and its result in the vendor's shape (and,
    /// where there is one, the continuation).
    pub assert_follow_up:
        fn(sent: &Value, call: &ToolCall, result: &ToolResult, continuation: Option<&str>),
}

/// Several calls in one answer.
pub struct Parallel {
    pub reply: Reply,
    pub streaming: bool,
    pub calls: Vec<Call>,
}

/// An error status before any output: the body the upstream sends and the message the plugin
/// must report.
pub struct HttpError {
    pub body: String,
    pub message: String,
}

/// A stream that fails after some output.
pub struct MidStream {
    /// What the case is, for failure messages.
    pub case: &'static str,
    pub sse: String,
    /// The text delivered before the error.
    pub text_before: &'static str,
    /// The upstream message the plugin reports (status 0: the error came inside the stream).
    pub message: String,
}

/// A stream whose connection drops partway.
pub struct Cut {
    /// The stream up to the cut, which falls inside an event.
    pub sse: String,
    /// The text of the whole events before the cut.
    pub text_before: &'static str,
}

/// The model list.
pub struct Models {
    pub body: String,
    /// The query the plugin asks the list with, if any.
    pub query: Option<&'static str>,
    /// The ids the plugin must give, in its order.
    pub ids: Vec<String>,
}

/// One provider's wire description.
pub trait Wire {
    /// The bundled plugin's id.
    const PLUGIN: &'static str;
    /// The model every scenario asks for (read back from the request's `model` field, which all
    /// four APIs have at the top level).
    const MODEL: &'static str;
    /// Where a turn is posted, under the base URL [`Wire::flags`] give (`{upstream}/v1`).
    const TURN_PATH: &'static str;
    /// Where the model list is read.
    const MODELS_PATH: &'static str;

    /// chatd's flags pointing the provider at `base_url` with key [`KEY`].
    fn flags(base_url: &str) -> Vec<String>;
    /// Checks the credential (and version) headers the host and plugin put on a request.
    fn assert_credentials(request: &Recorded);

    /// Scenario 1: a whole (non-streaming) text answer.
    fn text_whole() -> Canned;
    /// Scenario 2: a streamed text answer of several deltas.
    fn text_stream() -> Canned;
    /// Scenario 3.
    fn tool_loop() -> Support<ToolLoop>;
    /// Scenario 4.
    fn parallel_calls() -> Support<Parallel>;
    /// Scenario 5: checks the sent user message holds the image and the text file, which were
    /// sent after a text part, in the vendor's shape.
    fn assert_attachments(sent: &Value, image: &Image, file: &TextFile);
    /// Scenario 7: the upstream's error body for `status` (401 recorded, 429 and 500 varied).
    fn http_error(status: u16) -> HttpError;
    /// Scenario 8.
    fn mid_stream_errors() -> Vec<MidStream>;
    /// Scenario 9.
    fn cut() -> Cut;
    /// Scenario 10.
    fn models() -> Models;
}

/// The OpenAI error body (`{"error":{message,type,param,code}}`, the recorded 401 of both
/// OpenAI APIs) for another status: same shape, that status's documented type and code.
pub fn openai_error(recorded_401: &str, status: u16) -> HttpError {
    let mut body: Value = serde_json::from_str(recorded_401).expect("a recorded JSON error");
    let (kind, code, message) = match status {
        401 => return with_message(body),
        429 => (
            "requests",
            "rate_limit_exceeded",
            "Rate limit reached for requests. Please try again in 20s.",
        ),
        500 => (
            "server_error",
            "server_error",
            "The server had an error while processing your request. Sorry about that!",
        ),
        other => panic!("no error body for {other}"),
    };
    body["error"]["type"] = kind.into();
    body["error"]["code"] = code.into();
    body["error"]["message"] = message.into();
    with_message(body)
}

/// An error body whose message is at `error.message`.
pub fn with_message(body: Value) -> HttpError {
    let message = body["error"]["message"]
        .as_str()
        .expect("error.message")
        .to_string();
    HttpError {
        body: body.to_string(),
        message,
    }
}

/// The flags of a provider whose base URL and key have these flag names.
pub fn service_flags(base_flag: &str, key_flag: &str, base_url: &str) -> Vec<String> {
    vec![
        base_flag.into(),
        base_url.into(),
        key_flag.into(),
        KEY.into(),
    ]
}

/// Checks `Authorization: Bearer` [`KEY`], the credential of the OpenAI-style services.
pub fn assert_bearer(request: &Recorded) {
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str()),
        "the host injects the key"
    );
}

/// The items of a JSON array field that have `"type": kind`.
pub fn of_type<'a>(parts: &'a Value, kind: &str) -> Vec<&'a Value> {
    parts
        .as_array()
        .unwrap_or_else(|| panic!("an array, got {parts}"))
        .iter()
        .filter(|part| part["type"] == kind)
        .collect()
}

/// Checks one of the text parts holds the text file (the plugins render it with its name and
/// type before the text, the same way in every provider).
pub fn assert_file_in(texts: &[&Value], file: &TextFile) {
    assert!(
        texts.iter().any(|text| {
            let text = text.as_str().unwrap_or_default();
            text.contains(&file.text) && text.contains(&file.filename)
        }),
        "the text file is sent as text: {texts:?}"
    );
}
