//! `bench chat` phases 6 and 7 (`--live-only` runs them alone): live replies.
//!
//! A mock speaks the three tool-loop providers' wires (`tests/common/wires.rs`: the Responses
//! API, the Messages API, chat completions), paced: one SSE event every [`PACE`], five text
//! deltas. The release server has provider_a, provider_b and provider_c pointed at it.
//!
//! 6. First delta with tools on (a `persist: false` stream that names no `enabledTools`: every
//!    tool) over the same request with `enabledTools: []`, interleaved, per provider. With the
//!    round held to its end the ratio would be the stream's length over one pause (about 9 on
//!    the Responses wire); live, it is about 1.
//! 7. Stop: a persisted stream on a mock that sends one event a second, stopped after its first
//!    delta; the time from `POST …/stream/cancel` to the mock seeing its connection closed (its
//!    body dropped), and to the stop's answer.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::harness::{DELTA, check, open_stream, row, to_first};
use crate::plugins::server_binary;
use crate::plugins::start_with;
use crate::wires::{self, Item};

/// The pause before each event of a paced stream.
const PACE: Duration = Duration::from_millis(10);
/// The pause before each event of a held stream (one the stop phase ends), after its first
/// [`HELD_AFTER`] events.
const HELD_PACE: Duration = Duration::from_secs(1);
const HELD_AFTER: usize = 4;

/// The providers measured, their mock routes and wires.
const WIRES: [(&str, &str, fn(&[Item]) -> Vec<Vec<u8>>); 3] = [
    ("provider_a", "/responses", wires::responses_stream),
    ("provider_b", "/messages", wires::messages_stream),
    (
        "provider_c",
        "/chat/completions",
        wires::chat_completions_stream,
    ),
];

#[derive(Clone)]
struct Mock {
    /// When a held stream's body was dropped before its end (the client closed it).
    closed: mpsc::UnboundedSender<Instant>,
}

/// Runs both phases with `n` samples each (per provider in phase 6).
pub async fn run(n: usize) -> anyhow::Result<()> {
    let (closed, mut closings) = mpsc::unbounded_channel();
    let mock = start_mock(Mock { closed }).await?;
    let url = format!("http://{mock}");
    let dir = tempfile::tempdir()?;
    let binary = server_binary()?;
    let mut env = vec![("RUST_LOG", "warn,chatd=info,chatd::http::middleware=warn")];
    for (var, value) in [
        ("PROVIDER_A_BASE_URL", url.as_str()),
        ("PROVIDER_B_BASE_URL", url.as_str()),
        ("PROVIDER_C_BASE_URL", url.as_str()),
        ("PROVIDER_A_API_KEY", "bench"),
        ("PROVIDER_B_API_KEY", "bench"),
        ("PROVIDER_C_API_KEY", "bench"),
    ] {
        env.push((var, value));
    }
    let (server, _, addr) = start_with(&binary, dir.path(), &env)?;
    let base = format!("http://{addr}");
    let client = crate::harness::client()?;
    check(client.get(format!("{base}/v1/models")).send().await?).await?;
    let tools = check(client.get(format!("{base}/v1/chat-tools")).send().await?).await?;
    let tools: Value = serde_json::from_slice(&tools)?;
    let offered = tools["tools"].as_array().map_or(0, Vec::len);
    ensure!(offered > 0, "the server offers no tool: nothing to compare");

    println!(
        "live replies: first delta with tools on ({offered} tools) vs enabledTools [], a paced \
         upstream ({} ms per event), interleaved",
        PACE.as_millis()
    );
    println!("{:<50} {:>9} {:>9} {:>9}", "", "p50 ms", "p99 ms", "max ms");
    for (provider, _, _) in WIRES {
        first_delta(&client, &base, provider, n).await?;
    }
    stops(&client, &base, &mut closings, n).await?;
    drop(server);
    Ok(())
}

fn body(provider: &str, model: &str, tools: bool, i: usize) -> Value {
    let mut body = json!({"provider": provider, "model": model, "persist": false,
        "messages": [{"role": "user", "content": format!("question {i}")}]});
    if !tools {
        body["enabledTools"] = json!([]);
    }
    body
}

async fn first_delta(
    client: &reqwest::Client,
    base: &str,
    provider: &str,
    n: usize,
) -> anyhow::Result<()> {
    let url = format!("{base}/v1/chat-completions/stream");
    let (mut on, mut off) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let warm = 10;
    for i in 0..n + warm {
        let with = to_first(client, &url, &body(provider, "paced", true, i), DELTA).await?;
        let without = to_first(client, &url, &body(provider, "paced", false, i), DELTA).await?;
        if i >= warm {
            on.push(with);
            off.push(without);
        }
    }
    let with = row(&format!("first delta: {provider}, tools on"), &mut on);
    let without = row(
        &format!("first delta: {provider}, enabledTools []"),
        &mut off,
    );
    println!(
        "{:<50} {:>9.2} {:>9.2}",
        format!("  tools on / off: {provider}"),
        with.0 / without.0,
        with.1 / without.1
    );
    Ok(())
}

async fn stops(
    client: &reqwest::Client,
    base: &str,
    closings: &mut mpsc::UnboundedReceiver<Instant>,
    n: usize,
) -> anyhow::Result<()> {
    let n = n.min(200);
    let (mut closed, mut answered) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let mut body = body("provider_c", "held", true, i);
        body["persist"] = json!(true);
        let res = open_stream(client, base, &body).await?;
        let mut stream = res.bytes_stream();
        let mut seen = Vec::new();
        while !seen.windows(DELTA.len()).any(|w| w == DELTA) {
            let chunk = stream
                .next()
                .await
                .context("the stream ended before a delta")??;
            seen.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&seen);
        let chat_id = text
            .split("\"chatId\":\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .context("meta names the chat")?
            .to_string();
        let asked = Instant::now();
        let res = client
            .post(format!("{base}/v1/chats/{chat_id}/stream/cancel"))
            .send()
            .await?;
        check(res).await?;
        answered.push(asked.elapsed());
        let at = tokio::time::timeout(Duration::from_secs(10), closings.recv())
            .await
            .context("the upstream connection was not closed within 10 s of the stop")?
            .context("the mock stopped")?;
        closed.push(at.saturating_duration_since(asked));
        // The rest of the stream is its `done`.
        while let Some(chunk) = stream.next().await {
            chunk?;
        }
    }
    println!("stop: a persisted provider_c stream stopped after its first delta");
    row(
        "stop request to the upstream connection closed",
        &mut closed,
    );
    row("stop request to its answer (the run ended)", &mut answered);
    Ok(())
}

async fn start_mock(mock: Mock) -> anyhow::Result<SocketAddr> {
    let mut app = axum::Router::new().route(
        "/models",
        axum::routing::get(|| async {
            axum::Json(json!({"object": "list", "data": [{"id": "paced"}, {"id": "held"}]}))
        }),
    );
    for (_, route, wire) in WIRES {
        app = app.route(
            route,
            axum::routing::post(move |state: State<Mock>, body: Bytes| turn(state, body, wire)),
        );
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let app = app.with_state(mock);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}

/// Reports a held body dropped before its end.
struct Closing {
    closed: Option<mpsc::UnboundedSender<Instant>>,
}

impl Drop for Closing {
    fn drop(&mut self) {
        if let Some(closed) = self.closed.take() {
            let _ = closed.send(Instant::now());
        }
    }
}

async fn turn(
    State(mock): State<Mock>,
    body: Bytes,
    wire: fn(&[Item]) -> Vec<Vec<u8>>,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let held = request["model"] == "held";
    let words: Vec<String> = (0..if held { 60 } else { 5 })
        .map(|i| format!("w{i} "))
        .collect();
    let pieces = wire(&[Item::Text(words)]);
    let closing = Closing {
        closed: held.then_some(mock.closed),
    };
    let chunks = futures::stream::unfold(
        (pieces.into_iter().enumerate(), closing),
        move |(mut pieces, mut closing)| async move {
            let Some((i, piece)) = pieces.next() else {
                // The body's end: nothing to report.
                closing.closed.take();
                return None;
            };
            // The head at once, then a pause before each event (a long one, held).
            match i {
                0 => {}
                i if held && i >= HELD_AFTER => tokio::time::sleep(HELD_PACE).await,
                _ => tokio::time::sleep(PACE).await,
            }
            Some((Ok::<_, Infallible>(Bytes::from(piece)), (pieces, closing)))
        },
    );
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(chunks))
        .expect("a valid response")
}
