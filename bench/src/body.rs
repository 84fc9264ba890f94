//! `bench body`: the server's memory for the largest request the contract allows, a 32 MB body
//! of images (four PNGs of 6,000,000 bytes, 32.0 MB of JSON, under the 32 MiB cap).
//!
//! The release binary runs against a mock provider_c upstream in this process that reads the
//! whole request, checks the images arrived (their count and sizes) and answers the recorded
//! stream. For each way of sending (a persisted stream, a `persist: false` stream, a
//! non-streaming completion) the program starts a fresh server, sends the body `--requests`
//! times, one at a time, and prints the server's peak RSS (VmHWM) above its RSS before the
//! first, in MiB and as a multiple of the body: the figure that says a turn's memory stays
//! proportional to its body, and that requests one after another do not add up.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, bail, ensure};
use axum::body::{Body, Bytes};
use axum::response::Response;
use base64::Engine as _;
use serde_json::{Value, json};

use crate::plugins::rss_kib;

use crate::plugins::server_binary;

use crate::plugins::start_with;

use crate::plugins::status_kib;

const RECORDED_STREAM: &str = include_str!(
    "../../tests/fixtures/upstream/openai_chat/02_stream_text_include_usage.response.sse"
);
const RECORDED_BODY: &str =
    include_str!("../../tests/fixtures/upstream/openai_chat/04_nonstream_text.response.json");
const IMAGES: usize = 4;
const IMAGE_BYTES: usize = 6_000_000;

pub struct Options {
    requests: usize,
}

pub fn usage() -> &'static str {
    "usage: bench body [--requests N]\n\
     needs the release server binary: run `cargo build --release` first\n\
     defaults: 3 requests of each kind"
}

pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options { requests: 3 };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--requests" => {
                o.requests = it
                    .next()
                    .with_context(|| format!("{flag} needs a value\n{}", usage()))?
                    .parse()?
            }
            other => bail!("unknown option {other}\n{}", usage()),
        }
    }
    ensure!(o.requests > 0, "--requests must be at least 1");
    Ok(o)
}

pub fn run(o: Options) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run_async(o))
}

/// Resets a process's peak RSS to its RSS now (Linux: `5` into `/proc/PID/clear_refs`).
fn reset_peak(pid: u32) -> anyhow::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").context("reset the peak RSS")
}

/// `VmHWM` (peak RSS) of a process, in KiB.
fn peak_kib(pid: u32) -> anyhow::Result<u64> {
    status_kib(pid, "VmHWM")
}

async fn run_async(o: Options) -> anyhow::Result<()> {
    let received = Arc::new(AtomicUsize::new(0));
    let mock = start_mock(received.clone()).await?;
    let mock_url = format!("http://{mock}");
    let binary = server_binary()?;
    let client = reqwest::Client::new();
    let body = request_body();
    let mib = |kib: u64| kib as f64 / 1024.0;
    let body_mib = body.len() as f64 / (1024.0 * 1024.0);
    println!(
        "a {:.1} MB request ({IMAGES} PNG images of {IMAGE_BYTES} bytes) through provider_c, {} \
         times in a row, each kind on a fresh server",
        body.len() as f64 / 1e6,
        o.requests,
    );
    println!(
        "{:<28} {:>12} {:>16} {:>12} {:>16}",
        "request", "RSS before", "peak RSS added", "× the body", "RSS after"
    );
    for (name, path, persist) in [
        (
            "persisted stream",
            "/v1/chat-completions/stream",
            Some(true),
        ),
        (
            "persist: false stream",
            "/v1/chat-completions/stream",
            Some(false),
        ),
        ("non-streaming, no chat", "/v1/chat-completions", None),
    ] {
        // A fresh server each time: memory a process has once used stays counted in its RSS.
        let dir = tempfile::tempdir()?;
        let (server, _, addr) = start_with(
            &binary,
            dir.path(),
            &[
                ("PROVIDER_C_BASE_URL", mock_url.as_str()),
                ("PROVIDER_C_API_KEY", "bench"),
                // chatd says where it listens at info; the request log stays off.
                ("RUST_LOG", "warn,chatd=info,chatd::http::middleware=warn"),
            ],
        )?;
        let pid = server.child.id();
        let base = format!("http://{addr}");
        client.get(format!("{base}/v1/models")).send().await?;
        let body = match persist {
            Some(persist) => with_persist(&body, persist),
            None => body.clone(),
        };
        let before = rss_kib(pid)?;
        reset_peak(pid)?;
        for _ in 0..o.requests {
            let res = client
                .post(format!("{base}{path}"))
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await?;
            ensure!(res.status().is_success(), "{name}: {}", res.status());
            let text = res.text().await?;
            ensure!(
                !text.contains("event: error"),
                "{name}: the stream ended with an error: {}",
                &text[text.len().saturating_sub(300)..]
            );
        }
        let added = peak_kib(pid)?.saturating_sub(before);
        println!(
            "{name:<28} {:>8.1} MiB {:>12.1} MiB {:>11.2}× {:>12.1} MiB",
            mib(before),
            mib(added),
            mib(added) / body_mib,
            mib(rss_kib(pid)?)
        );
    }
    ensure!(
        received.load(Ordering::Relaxed) == 3 * o.requests,
        "the mock did not get every request with its images intact"
    );
    println!("every request reached the mock with its {IMAGES} images whole");
    Ok(())
}

fn request_body() -> Vec<u8> {
    let attachments: Vec<Value> = (0..IMAGES)
        .map(|i| {
            let mut image = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
            image.resize(IMAGE_BYTES, i as u8 + 1);
            let data = base64::engine::general_purpose::STANDARD.encode(&image);
            json!({"kind": "image", "dataUrl": format!("data:image/png;base64,{data}")})
        })
        .collect();
    serde_json::to_vec(&json!({
        "provider": "provider_c",
        "model": "zero",
        "messages": [{"role": "user", "content": "What is in these?", "attachments": attachments}],
    }))
    .expect("the body serializes")
}

fn with_persist(body: &[u8], persist: bool) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(body).expect("the body is JSON");
    value["persist"] = json!(persist);
    serde_json::to_vec(&value).expect("the body serializes")
}

async fn start_mock(received: Arc<AtomicUsize>) -> anyhow::Result<std::net::SocketAddr> {
    let app = axum::Router::new()
        .route(
            "/chat/completions",
            axum::routing::post(move |body: Bytes| {
                let received = received.clone();
                async move { completion(&body, &received) }
            }),
        )
        .route(
            "/models",
            axum::routing::get(|| async {
                axum::Json(json!({"object": "list", "data": [{"id": "zero"}]}))
            }),
        )
        .layer(axum::extract::DefaultBodyLimit::max(64 * 1024 * 1024));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}

/// Counts a request whose images all arrived at their size, and answers it.
fn completion(body: &[u8], received: &AtomicUsize) -> Response {
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let images = request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter_map(|part| part["image_url"]["url"].as_str())
        .filter_map(|url| url.split_once(";base64,"))
        .filter(|(_, data)| {
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .is_ok_and(|bytes| bytes.len() == IMAGE_BYTES)
        })
        .count();
    if images == IMAGES {
        received.fetch_add(1, Ordering::Relaxed);
    }
    let (content_type, answer) = if request["stream"] == true {
        ("text/event-stream", RECORDED_STREAM)
    } else {
        ("application/json", RECORDED_BODY)
    };
    Response::builder()
        .status(200)
        .header("content-type", content_type)
        .body(Body::from(answer))
        .expect("a valid response")
}
