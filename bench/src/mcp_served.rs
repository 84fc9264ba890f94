//! `bench mcp`'s second part: chatd's `/mcp` answering `tools/call` of `fetch_url`, against the
//! same fetch made inside a chat (from the `tool_call` event that starts it to the one that
//! ends it, as the client sees them). One in-process server, open mode; a mock upstream on
//! loopback serves the page and plays provider_c (a round without a tool result asks for
//! `fetch_url`, one with it answers), so both paths fetch the same page through the same tool.

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use axum::Json;
use axum::response::IntoResponse;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::harness::{added_by, client, row};
use crate::wires::{self, call, text};

/// The page both paths fetch.
const PAGE: &str = "<html><head><title>Bench</title></head><body><p>A page for the benchmark, \
                    long enough to be a page.</p></body></html>";

async fn page() -> impl IntoResponse {
    ([("content-type", "text/html; charset=utf-8")], PAGE)
}

/// provider_c's turn: a fetch_url call unless the transcript already holds its result.
async fn turn(url: String, Json(body): Json<Value>) -> impl IntoResponse {
    let answered = body["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    let items = if answered {
        vec![text(&["Read it."])]
    } else {
        vec![call(
            "call_f",
            "fetch_url",
            &json!({ "url": url }).to_string(),
        )]
    };
    let sse: Vec<u8> = wires::chat_completions_stream(&items).concat();
    ([("content-type", "text/event-stream")], sse)
}

pub async fn measure(calls: usize) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let upstream = format!("http://{}", listener.local_addr()?);
    let page_url = format!("{upstream}/page");
    let app = axum::Router::new()
        .route("/page", axum::routing::get(page))
        .route(
            "/chat/completions",
            axum::routing::post({
                let url = page_url.clone();
                move |body| turn(url.clone(), body)
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir()?;
    let database = format!("sqlite://{}", dir.path().join("chatd.db").display());
    let config = chatd::config::Config::from_args([
        "chatd",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--provider-c-base-url",
        &upstream,
        "--provider-c-api-key",
        "c-key",
        "--chatd-allow-private-networks",
        "true",
        "--database-url",
        &database,
    ])
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let plugins = chatd::plugins::loading::plugin_host::PluginHost::start(&config).await?;
    let server = chatd::server::Server::bind(&config, plugins).await?;
    let base = format!("http://{}", server.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));

    let http = client()?;
    let (mut served, mut in_chat) = (Vec::new(), Vec::new());
    for i in 0..calls + calls / 10 {
        let took = served_call(&http, &base, &page_url, i).await?;
        let fetched = chat_call(&http, &base).await?;
        if i >= calls / 10 {
            served.push(took);
            in_chat.push(fetched);
        }
    }
    println!(
        "{:<50} {:>9} {:>9} {:>9}",
        format!("mcp: {calls} fetch_url calls of a loopback page, ms"),
        "p50",
        "p99",
        "max"
    );
    let chat = row(
        "inside a chat (tool_call initiated → completed)",
        &mut in_chat,
    );
    let mcp = row("POST /mcp tools/call (request → answer)", &mut served);
    added_by("/mcp", "over the in-chat call", mcp, chat);
    let _ = stop.send(());
    task.await?;
    Ok(())
}

async fn served_call(
    http: &reqwest::Client,
    base: &str,
    page: &str,
    i: usize,
) -> anyhow::Result<Duration> {
    let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
        "params": {"name": "fetch_url", "arguments": {"url": page}}});
    let clock = Instant::now();
    let answer: Value = http
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let took = clock.elapsed();
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    ensure!(text.contains("A page for the benchmark"), "{answer}");
    Ok(took)
}

async fn chat_call(http: &reqwest::Client, base: &str) -> anyhow::Result<Duration> {
    let body = json!({"provider": "provider_c", "model": "grok-4", "persist": false,
        "enabledTools": ["fetch_url"], "messages": [{"role": "user", "content": "read"}]});
    let response = http
        .post(format!("{base}/v1/chat-completions/stream"))
        .json(&body)
        .send()
        .await?
        .error_for_status()?;
    let mut stream = response.bytes_stream();
    let (mut seen, mut started, mut took) = (String::new(), None, None);
    while let Some(chunk) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk?));
        if started.is_none() && seen.contains("\"status\":\"initiated\"") {
            started = Some(Instant::now());
        }
        if took.is_none() && seen.contains("\"status\":\"completed\"") {
            took = started.map(|s| s.elapsed());
        }
    }
    ensure!(
        seen.contains("event: done"),
        "the chat did not end with done: {seen}"
    );
    ensure!(
        seen.contains("A page for the benchmark"),
        "the page was not fetched: {seen}"
    );
    took.context("no completed fetch_url call in the chat")
}
