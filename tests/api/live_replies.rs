//! Replies stream live with tools on, for each tool-loop provider: a stream held by its upstream
//! after its first text has that text delivered already (the round is not held to its end); a
//! round that begins with a tool call keeps `meta → tool_call* → delta*`; text written before a
//! tool call (a "preamble") is sent as it comes and stays in the reply, stored and in
//! `done.text`, with the next round's text after a blank line.
//!
//! The upstreams speak each provider's wire as the recordings of `tests/fixtures/upstream` do,
//! one SSE event per network write, so the test decides where a stream pauses.

use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::{deltas, names, transcript};
use crate::support::{Events, Options, TestServer};
pub use crate::wires::{
    Item, call, chat_completions_stream, messages_stream, responses_stream, text,
};

/// What a test needs of one provider's wire.
#[derive(Clone, Copy)]
pub struct Wire {
    pub provider: &'static str,
    pub model: &'static str,
    /// The turn route on the upstream, whose URL is the provider's base URL.
    pub route: &'static str,
    pub base_flag: &'static str,
    pub key_flag: &'static str,
    /// One SSE event group per piece: the head, then what `items` says, then the tail.
    pub stream: fn(&[Item]) -> Vec<Vec<u8>>,
}

pub const A: Wire = Wire {
    provider: "provider_a",
    model: "gpt-4o-mini",
    route: "POST /responses",
    base_flag: "--provider-a-base-url",
    key_flag: "--provider-a-api-key",
    stream: responses_stream,
};

pub const B: Wire = Wire {
    provider: "provider_b",
    model: "claude-haiku-4-5-20251001",
    route: "POST /messages",
    base_flag: "--provider-b-base-url",
    key_flag: "--provider-b-api-key",
    stream: messages_stream,
};

pub const C: Wire = Wire {
    provider: "provider_c",
    model: "grok-4",
    route: "POST /chat/completions",
    base_flag: "--provider-c-base-url",
    key_flag: "--provider-c-api-key",
    stream: chat_completions_stream,
};

/// A paced reply of `items` (one write per event).
pub fn paced(wire: Wire, items: &[Item]) -> Reply {
    Reply::sse("").paced((wire.stream)(items), std::time::Duration::from_millis(2))
}

/// The index of the piece right after the first text delta of `items`' stream.
pub fn after_first_text(wire: Wire, items: &[Item]) -> usize {
    let pieces = (wire.stream)(items);
    let first = match &items[0] {
        Item::Text(p) => &p[0],
        Item::Call(..) => panic!("the first item is text"),
    };
    let needle = serde_json::to_string(first).unwrap();
    pieces
        .iter()
        .position(|p| String::from_utf8_lossy(p).contains(&needle))
        .expect("the first text is in the stream")
        + 1
}

/// Exa's `/search`, which web_search calls.
pub fn exa() -> Reply {
    Reply::json(
        200,
        json!({"requestId": "r", "results": [{"url": "https://a.example/", "title": "A",
            "summary": "About A."}]}),
    )
}

/// A server whose `wire` provider (its key `a-key`, `b-key`, `c-key`) and engine_a are the
/// upstream, with `options`.
pub async fn server(wire: Wire, upstream: &ScriptedUpstream, options: Options) -> TestServer {
    let url = upstream.url();
    let key = format!("{}-key", wire.provider.trim_start_matches("provider_"));
    let mut args: Vec<String> = [
        wire.base_flag,
        &url,
        wire.key_flag,
        &key,
        "--engine-a-base-url",
        &url,
        "--engine-a-api-key",
        "e-key",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(options.args.iter().cloned());
    TestServer::start_with(Options { args, ..options }).await
}

/// A persisted stream of a new chat with the default settings (every tool enabled).
pub async fn ask(server: &TestServer, wire: Wire, text: &str) -> Events {
    server
        .stream(json!({"provider": wire.provider, "model": wire.model,
            "messages": [{"role": "user", "content": text}]}))
        .await
}

async fn live_text_with_tools_on(wire: Wire) {
    let items = [text(&["The answer ", "is ", "42."])];
    let gate = Gate::new();
    let reply = paced(wire, &items).hold_before(after_first_text(wire, &items), &gate);
    let upstream = ScriptedUpstream::start([(wire.route, reply), ("POST /search", exa())]).await;
    let server = server(wire, &upstream, Options::default()).await;
    let (_, tools) = server.get("/v1/chat-tools").await;
    assert!(!tools["tools"].as_array().unwrap().is_empty());

    let mut stream = ask(&server, wire, "What is the answer?").await;
    let meta = stream.expect("meta").await;
    // The upstream holds the rest of its round: the first delta must come without it.
    let first = stream.expect("delta").await;
    assert_eq!(first.data["text"], "The answer ", "{}", wire.provider);
    gate.open();
    let rest = stream.rest().await;
    assert_eq!(
        names(&rest),
        ["delta", "delta", "done"],
        "{}",
        wire.provider
    );
    let done = rest.last().unwrap();
    assert_eq!(done.data["text"], "The answer is 42.");
    let chat_id = meta.data["chatId"].as_str().unwrap();
    let stored = transcript(&server, chat_id).await;
    assert_eq!(stored.last().unwrap().1, "The answer is 42.");
}

/// A round that begins with a tool call: its `tool_call` events, the terminal one included,
/// come before any text of it, and its text and the next round's follow.
async fn a_tool_round_keeps_the_contracts_order(wire: Wire) {
    let call = [
        call("call_1", "web_search", r#"{"query":"answer"}"#),
        text(&["Noted."]),
    ];
    let answer = [text(&["Found ", "it."])];
    let upstream = ScriptedUpstream::start([
        (wire.route, paced(wire, &call)),
        (wire.route, paced(wire, &answer)),
        ("POST /search", exa()),
    ])
    .await;
    let server = server(wire, &upstream, Options::default()).await;
    let events = ask(&server, wire, "Look it up").await.rest().await;
    assert_eq!(
        names(&events),
        [
            "meta",
            "tool_call",
            "tool_call",
            "delta",
            "delta",
            "delta",
            "done"
        ],
        "{}",
        wire.provider
    );
    assert_eq!(events[1].data["status"], "initiated");
    assert_eq!(events[2].data["status"], "completed");
    assert_eq!(events[3].data["text"], "Noted.");
    assert_eq!(deltas(&events), "Noted.\n\nFound it.");
    assert_eq!(events.last().unwrap().data["text"], "Noted.\n\nFound it.");
}

/// Text before a tool call in the same round goes out as it comes and stays in the reply: the
/// client never sees text the stored transcript does not hold.
async fn a_preamble_streams_and_stays_in_the_reply(wire: Wire) {
    let first = [
        text(&["Let me ", "search."]),
        call("call_1", "web_search", r#"{"query":"answer"}"#),
    ];
    let answer = [text(&["It is ", "42."])];
    let gate = Gate::new();
    let upstream = ScriptedUpstream::start([
        (
            wire.route,
            paced(wire, &first).hold_before(after_first_text(wire, &first), &gate),
        ),
        (wire.route, paced(wire, &answer)),
        ("POST /search", exa()),
    ])
    .await;
    let server = server(wire, &upstream, Options::default()).await;
    let mut stream = ask(&server, wire, "What is it?").await;
    let meta = stream.expect("meta").await;
    assert_eq!(stream.expect("delta").await.data["text"], "Let me ");
    gate.open();
    let rest = stream.rest().await;
    assert_eq!(
        names(&rest),
        ["delta", "tool_call", "tool_call", "delta", "delta", "done"],
        "{}",
        wire.provider
    );
    let expected = "Let me search.\n\nIt is 42.";
    assert_eq!(format!("Let me {}", deltas(&rest)), expected);
    assert_eq!(rest.last().unwrap().data["text"], expected);
    let chat_id = meta.data["chatId"].as_str().unwrap();
    let stored = transcript(&server, chat_id).await;
    let roles: Vec<&str> = stored.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["user", "tool", "assistant"], "{}", wire.provider);
    assert_eq!(stored[2].1, expected);
    // The model saw its own preamble with its call in the second round.
    let second: Value = upstream
        .requests()
        .into_iter()
        .filter(|r| format!("{} {}", r.method, r.path) == wire.route)
        .nth(1)
        .unwrap()
        .json();
    if wire.provider == A.provider {
        // The Responses API keeps the round upstream (`store: true`) and is pointed at it.
        assert_eq!(second["previous_response_id"], "resp_1", "{second}");
    } else {
        assert!(
            second.to_string().contains("Let me search."),
            "{}: {second}",
            wire.provider
        );
    }
}

macro_rules! for_each_provider {
    ($($wire:ident => $module:ident),*) => {$(
        mod $module {
            use super::*;

            #[tokio::test]
            async fn text_streams_live_with_tools_on() {
                live_text_with_tools_on($wire).await;
            }

            #[tokio::test]
            async fn a_round_that_calls_a_tool_keeps_meta_tool_calls_then_deltas() {
                a_tool_round_keeps_the_contracts_order($wire).await;
            }

            #[tokio::test]
            async fn text_before_a_tool_call_streams_and_stays_in_the_reply() {
                a_preamble_streams_and_stays_in_the_reply($wire).await;
            }
        }
    )*};
}

for_each_provider!(A => provider_a, B => provider_b, C => provider_c);

#[tokio::test]
async fn a_declared_provider_streams_live_with_tools_on() {
    // A provider declared in the configuration file runs the same loop as the bundled ones.
    let items = [text(&["Declared ", "and live."])];
    let gate = Gate::new();
    let reply = paced(C, &items).hold_before(after_first_text(C, &items), &gate);
    let upstream = ScriptedUpstream::start([(C.route, reply), ("POST /search", exa())]).await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let config = crate::support::write_config(
        dir.path(),
        &format!(
            "[providers.groq]\nadapter = \"chat_completions\"\nbase_url = \"{}\"\n\
             api_key = \"k\"\nmodels = [\"llama\"]\n",
            upstream.url()
        ),
    );
    let server = server(
        C,
        &upstream,
        Options {
            config: Some(config),
            dir: Some(dir),
            allow_private_networks: true,
            ..Options::default()
        },
    )
    .await;
    let mut stream = server
        .stream(json!({"provider": "groq", "model": "llama",
            "messages": [{"role": "user", "content": "hi"}]}))
        .await;
    stream.expect("meta").await;
    assert_eq!(stream.expect("delta").await.data["text"], "Declared ");
    gate.open();
    let rest = stream.rest().await;
    assert_eq!(rest.last().unwrap().data["text"], "Declared and live.");
    let (status, _) = server.get("/v1/chat-tools").await;
    assert_eq!(status, StatusCode::OK);
}
