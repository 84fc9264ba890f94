//! `bench chat --telemetry`: what metrics and trace export cost per request. Three release
//! servers run side by side against the same zero-delay mock: metrics off (CHATD_METRICS=off),
//! metrics on (the default), and metrics on with traces exported over OTLP/HTTP to a sink in
//! this process that reads and drops them. Requests go to the three in turn, so all see the same
//! machine: a persisted non-streaming completion (store, provider turn, plugin calls: the most
//! spans per request) and a `persist: false` stream's first delta. Printed: latency per server,
//! what each adds over "off", the server's CPU time per request, and the spans the sink got.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::body::Bytes;

use crate::harness::{
    Cpu, DELTA, added_by, chats, check, completion, ephemeral_body, row, to_first,
};
use crate::plugins::Running;
use crate::plugins::server_binary;
use crate::plugins::start_with;

const WARMUP: usize = 200;
/// Persisted requests per chat, so transcripts stay short.
const PER_CHAT: usize = 10;

struct Server {
    name: &'static str,
    _running: Running,
    _dir: tempfile::TempDir,
    base: String,
    pid: u32,
    persisted: Vec<Duration>,
    first_delta: Vec<Duration>,
    chats: Vec<String>,
}

/// The OTLP sink: requests and bytes received.
#[derive(Clone, Default)]
struct Sink {
    requests: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

async fn start_sink() -> anyhow::Result<(Sink, String)> {
    let sink = Sink::default();
    let counted = sink.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let counted = counted.clone();
            async move {
                counted.requests.fetch_add(1, Ordering::Relaxed);
                counted
                    .bytes
                    .fetch_add(body.len() as u64, Ordering::Relaxed);
                // An empty ExportTraceServiceResponse is zero bytes of protobuf.
                ([("content-type", "application/x-protobuf")], Bytes::new())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((sink, url))
}

pub async fn run(requests: usize, mock_url: &str) -> anyhow::Result<()> {
    let binary = server_binary()?;
    let (sink, sink_url) = start_sink().await?;
    let client = crate::harness::client()?;
    let common = [
        ("PROVIDER_C_BASE_URL", mock_url),
        ("PROVIDER_C_API_KEY", "bench"),
        ("RUST_LOG", "warn,chatd=info,chatd::http::middleware=warn"),
    ];
    let setups: [(&str, Vec<(&str, &str)>); 3] = [
        ("metrics off", vec![("CHATD_METRICS", "off")]),
        ("metrics on", vec![]),
        (
            "traces exported too",
            vec![
                ("OTEL_EXPORTER_OTLP_ENDPOINT", sink_url.as_str()),
                // Batches every second, and a queue that holds a second of spans at this
                // rate, so the export is measured rather than dropped.
                ("OTEL_BSP_SCHEDULE_DELAY", "1000"),
                ("OTEL_BSP_MAX_QUEUE_SIZE", "65536"),
                ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096"),
            ],
        ),
    ];
    let mut servers = Vec::new();
    for (name, extra) in setups {
        let dir = tempfile::tempdir()?;
        let env: Vec<(&str, &str)> = common.iter().copied().chain(extra).collect();
        let (running, _, addr) = start_with(&binary, dir.path(), &env)?;
        let base = format!("http://{addr}");
        check(client.get(format!("{base}/v1/models")).send().await?).await?;
        let chats = chats(&client, &base, (requests + WARMUP).div_ceil(PER_CHAT) + 1).await?;
        servers.push(Server {
            name,
            pid: running.child.id(),
            _running: running,
            _dir: dir,
            base,
            persisted: Vec::with_capacity(requests),
            first_delta: Vec::with_capacity(requests),
            chats,
        });
    }
    let mut cpu_before = Vec::new();
    for i in 0..requests + WARMUP {
        if i == WARMUP {
            cpu_before = servers
                .iter()
                .map(|s| Cpu::of(s.pid))
                .collect::<anyhow::Result<_>>()?;
        }
        // A different server first each round: none is always the one after a pause.
        for k in 0..servers.len() {
            let server = &mut servers[(i + k) % 3];
            let url = format!("{}/v1/chat-completions", server.base);
            let body = completion(Some(&server.chats[i / PER_CHAT]), "zero", i);
            let t = Instant::now();
            check(client.post(&url).json(&body).send().await?).await?;
            let persisted = t.elapsed();
            let stream_url = format!("{}/v1/chat-completions/stream", server.base);
            let first = to_first(&client, &stream_url, &ephemeral_body(i), DELTA).await?;
            if i >= WARMUP {
                server.persisted.push(persisted);
                server.first_delta.push(first);
            }
        }
    }
    let cpu: Vec<f64> = servers
        .iter()
        .zip(&cpu_before)
        .map(|(s, before)| {
            Cpu::of(s.pid).map(|after| (after.seconds - before.seconds) * 1e6 / requests as f64)
        })
        .collect::<anyhow::Result<_>>()?;
    // The last batch goes within a second of the last span.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    println!(
        "telemetry: {requests} rounds after {WARMUP} warm-up; each round, on each of three \
         servers in turn, a persisted non-streaming completion and a persist: false stream"
    );
    println!("{:<50} {:>9} {:>9} {:>9}", "", "p50 ms", "p99 ms", "max ms");
    let mut persisted = Vec::new();
    let mut first = Vec::new();
    for server in &mut servers {
        persisted.push(row(
            &format!("non-streaming persisted: {}", server.name),
            &mut server.persisted,
        ));
    }
    for server in &mut servers {
        first.push(row(
            &format!("first delta, persist false: {}", server.name),
            &mut server.first_delta,
        ));
    }
    for (i, server) in servers.iter().enumerate().skip(1) {
        added_by(
            server.name,
            "non-streaming persisted",
            persisted[i],
            persisted[0],
        );
        added_by(server.name, "first delta", first[i], first[0]);
    }
    for (server, cpu) in servers.iter().zip(&cpu) {
        println!(
            "server CPU per round (one of each request): {cpu:>7.0} µs  {}",
            server.name
        );
    }
    println!(
        "  added per round: {:.0} µs with metrics, {:.0} µs with traces exported too",
        cpu[1] - cpu[0],
        cpu[2] - cpu[0]
    );
    let rounds = (requests + WARMUP) as f64;
    println!(
        "the OTLP sink got {} exports, {:.0} KiB in all, {:.0} bytes of protobuf per round",
        sink.requests.load(Ordering::Relaxed),
        sink.bytes.load(Ordering::Relaxed) as f64 / 1024.0,
        sink.bytes.load(Ordering::Relaxed) as f64 / rounds
    );
    let metrics = client
        .get(format!("{}/metrics", servers[1].base))
        .send()
        .await
        .context("GET /metrics")?;
    let text = check(metrics).await?;
    println!(
        "GET /metrics of the metrics-on server: {} bytes",
        text.len()
    );
    Ok(())
}
