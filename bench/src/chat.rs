//! `bench chat`: chat completion figures against a zero-delay mock upstream, each measured in the
//! same run as calling the mock directly, so what is printed is what chatd adds.
//!
//! The mock speaks the chat completions wire (provider_c) in this process, on loopback with
//! TCP_NODELAY; the release server (`target/release/chatd`) runs as its own process, so its RSS
//! is its own. The mock answers by model name: `zero` replays the recorded stream
//! (`openai_chat/02`, 10 deltas) or body (`04`) at once; `paced` streams 64 deltas 20 ms apart;
//! `slow` streams 64 deltas 200 ms apart (a run long enough to attach to).
//!
//! 1. Added latency of a persisted non-streaming completion (concurrency 1): chatd with a
//!    `chatId` (history rows deduplicated and stored, the call recorded, the reply stored) vs
//!    the same request straight to the mock.
//! 2. Added time to first delta of a stream, persisted and `persist: false`, vs the mock's own
//!    first content chunk.
//! 3. Live streams: N persisted streams at once against the paced mock; every stream must get
//!    meta, 64 deltas in order, done; RSS of the server at the peak minus before. Then M
//!    `persist: false` streams at once (10,000 by default; fewer when the open-files limit,
//!    raised to its hard value, cannot hold two per stream in both processes) on the slow mock,
//!    so that all are live together, with the server's open files at the peak. The memory per
//!    stream divides by the streams live at the peak. `--streams-only` runs these two alone.
//! 4. Attach to a running stream: time to the first replayed event.
//! 5. A provider declared in the configuration file (`adapter = "chat_completions"`, the same
//!    mock) against provider_c, interleaved: non-streaming and `persist: false` first delta.
//!    Both run the same component; what differs is the lookup and the link under another id,
//!    so the two added latencies should be equal within noise.
//!
//! 6. Live replies per tool-loop provider: first delta with tools on over `enabledTools: []`.
//! 7. Stop: from `POST …/stream/cancel` to the upstream connection closed (both `live.rs`, on a
//!    mock of all three wires; `--live-only` runs them alone).
//!
//! `--telemetry` compares three servers, metrics off, metrics on, and traces exported too
//! (`telemetry.rs`): what observability costs per request.
//!
//! `--against-proxy` times three requests through chatd and through a do-nothing proxy in turn
//! (`straight.rs`): the ratios issue 59 sets its targets in.
//!
//! `--persist-false-only` measures the `persist: false` first delta alone, interleaved only with
//! direct calls to the mock and calls through a do-nothing proxy (`proxy.rs`: what any proxy
//! adds here), and the server's CPU time and voluntary context switches per stream: what a
//! change to that path costs or saves, without the other phases around it. With `--tools-on`
//! the streams are offered every tool (issue 59's target request; `enabledTools: []` otherwise).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::harness::{
    CONTENT, Cpu, DELTA, PER_CHAT, added_by, chats, check, client, completion, ephemeral_body,
    ephemeral_body_with_tools, open_stream, row, to_first, tools_offered,
};
use crate::plugins::rss_kib;
use crate::plugins::server_binary;
use crate::plugins::start_with;

const RECORDED_STREAM: &str = include_str!(
    "../../tests/fixtures/upstream/openai_chat/02_stream_text_include_usage.response.sse"
);
const RECORDED_BODY: &str =
    include_str!("../../tests/fixtures/upstream/openai_chat/04_nonstream_text.response.json");
/// Deltas of the paced and slow streams.
pub(crate) const PACED_DELTAS: usize = 64;

pub struct Options {
    requests: usize,
    streams: usize,
    ephemeral_streams: usize,
    streams_only: bool,
    attaches: usize,
    persist_false_only: bool,
    tools_on: bool,
    against_proxy: bool,
    telemetry: bool,
    live_only: bool,
}

pub fn usage() -> &'static str {
    "usage: bench chat [--requests N] [--streams N] [--ephemeral-streams N] [--attaches N] [--persist-false-only [--tools-on] | --against-proxy | --telemetry | --live-only | --streams-only]\n\
     needs the release server binary: run `cargo build --release` first\n\
     defaults: 2000 sequential requests per latency figure, 1000 live streams, 10000 live persist: false streams, 1000 attaches"
}

pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        requests: 2000,
        streams: 1000,
        ephemeral_streams: 10_000,
        streams_only: false,
        attaches: 1000,
        persist_false_only: false,
        tools_on: false,
        against_proxy: false,
        telemetry: false,
        live_only: false,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("{flag} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "--persist-false-only" => o.persist_false_only = true,
            "--tools-on" => o.tools_on = true,
            "--against-proxy" => o.against_proxy = true,
            "--telemetry" => o.telemetry = true,
            "--live-only" => o.live_only = true,
            "--streams-only" => o.streams_only = true,
            "--ephemeral-streams" => o.ephemeral_streams = value()?.parse()?,
            "--requests" => o.requests = value()?.parse()?,
            "--streams" => o.streams = value()?.parse()?,
            "--attaches" => o.attaches = value()?.parse()?,
            other => bail!("unknown option {other}\n{}", usage()),
        }
    }
    let modes = [
        o.persist_false_only,
        o.against_proxy,
        o.telemetry,
        o.live_only,
        o.streams_only,
    ];
    // Each mode runs alone: combined, the first one `run` reaches would silently be the only one.
    ensure!(
        modes.iter().filter(|on| **on).count() <= 1,
        "--persist-false-only, --against-proxy, --telemetry, --live-only and --streams-only \
         each run alone: choose one\n{}",
        usage()
    );
    ensure!(
        !o.tools_on || o.persist_false_only,
        "--tools-on is an option of --persist-false-only"
    );
    ensure!(
        o.requests > 0 && o.streams > 0 && o.ephemeral_streams > 0 && o.attaches > 0,
        "every count must be at least 1"
    );
    Ok(o)
}

pub fn run(o: Options) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run_async(o))
}

async fn run_async(o: Options) -> anyhow::Result<()> {
    // The server inherits it: both processes hold two descriptors per live stream.
    let open_files = chatd::server::raise_open_files_limit()?;
    let mock = start_mock().await?;
    let mock_url = format!("http://{mock}");
    if o.telemetry {
        return crate::telemetry::run(o.requests, &mock_url).await;
    }
    // Live replies: at most this many samples a figure (each waits a paced stream).
    let live = o.requests.min(300);
    if o.live_only {
        return crate::live::run(live).await;
    }
    let dir = tempfile::tempdir()?;
    let binary = server_binary()?;
    let file = dir.path().join("chatd.toml");
    std::fs::write(
        &file,
        format!(
            "[providers.{DECLARED}]\nadapter = \"chat_completions\"\nbase_url = \"{mock_url}\"\n\
             api_key = \"bench-declared\"\nmodels = [\"zero\"]\n"
        ),
    )?;
    let file = file.to_str().context("a UTF-8 temp path")?.to_string();
    // The machine's compile cache, beside the binary: without it (the server runs without
    // HOME) every run compiled each plugin again, some still after `/ready`, while measured.
    let cache = binary.with_file_name("bench-compile-cache");
    let cache = cache.to_str().context("a UTF-8 target path")?.to_string();
    let (server, _, addr) = start_with(
        &binary,
        dir.path(),
        &[
            ("CHATD_CONFIG", file.as_str()),
            ("CHATD_CACHE_DIR", cache.as_str()),
            ("PROVIDER_C_BASE_URL", mock_url.as_str()),
            ("PROVIDER_C_API_KEY", "bench"),
            // The request log off: one line per request is not what is measured.
            ("RUST_LOG", "warn,chatd=info,chatd::http::middleware=warn"),
        ],
    )?;
    let pid = server.child.id();
    let base = format!("http://{addr}");
    let client = client()?;
    // The model lists are loaded, and the interpreter compiled, before anything is measured.
    check(client.get(format!("{base}/v1/models")).send().await?).await?;
    crate::harness::ready(&client, &base).await?;

    if o.persist_false_only {
        return persist_false_alone(&client, &base, &mock_url, pid, o.requests, o.tools_on).await;
    }
    if o.against_proxy {
        return crate::straight::run(&client, &base, &mock_url, pid, o.requests).await;
    }
    if o.streams_only {
        live_streams(&client, &base, pid, o.streams, true).await?;
        return ephemeral_streams(&client, &base, pid, o.ephemeral_streams, open_files).await;
    }
    println!("chat completions: chatd (provider_c plugin) vs the mock upstream directly, loopback");
    println!("{:<50} {:>9} {:>9} {:>9}", "", "p50 ms", "p99 ms", "max ms");
    non_streaming(&client, &base, &mock_url, o.requests).await?;
    first_delta(&client, &base, &mock_url, o.requests).await?;
    attach(&client, &base, o.attaches).await?;
    live_streams(&client, &base, pid, o.streams, true).await?;
    ephemeral_streams(&client, &base, pid, o.ephemeral_streams, open_files).await?;
    declared(&client, &base, &mock_url, o.requests).await?;
    drop(server);
    crate::live::run(live).await
}

fn added(name: &str, chatd: (f64, f64), direct: (f64, f64)) {
    added_by("chatd", name, chatd, direct);
}

async fn non_streaming(
    client: &reqwest::Client,
    base: &str,
    mock: &str,
    n: usize,
) -> anyhow::Result<()> {
    let ids = chats(client, base, n.div_ceil(PER_CHAT) + 1).await?;
    let direct_body = json!({"model": "zero", "messages": [{"role": "user", "content": "q"}]});
    let (mut direct, mut via) = (Vec::with_capacity(n), Vec::with_capacity(n));
    // Warm both paths (connections, the compile of the first instance, SQLite pages).
    for i in 0..50 {
        check(
            client
                .post(format!("{mock}/chat/completions"))
                .json(&direct_body)
                .send()
                .await?,
        )
        .await?;
        check(
            client
                .post(format!("{base}/v1/chat-completions"))
                .json(&completion(Some(&ids[0]), "zero", i))
                .send()
                .await?,
        )
        .await?;
    }
    // Interleaved, so both see the same machine.
    for i in 0..n {
        let t = Instant::now();
        check(
            client
                .post(format!("{mock}/chat/completions"))
                .json(&direct_body)
                .send()
                .await?,
        )
        .await?;
        direct.push(t.elapsed());
        let chat = &ids[1 + i / PER_CHAT];
        let t = Instant::now();
        check(
            client
                .post(format!("{base}/v1/chat-completions"))
                .json(&completion(Some(chat), "zero", i))
                .send()
                .await?,
        )
        .await?;
        via.push(t.elapsed());
    }
    let d = row("non-streaming: mock directly", &mut direct);
    let c = row("non-streaming: chatd, persisted (chatId)", &mut via);
    added("non-streaming, persisted", c, d);
    Ok(())
}

/// A streamed completion asked of the mock directly.
fn direct_stream_body() -> Value {
    json!({"model": "zero", "stream": true, "messages": [{"role": "user", "content": "q"}]})
}

async fn first_delta(
    client: &reqwest::Client,
    base: &str,
    mock: &str,
    n: usize,
) -> anyhow::Result<()> {
    let ids = chats(client, base, n.div_ceil(PER_CHAT) + 1).await?;
    let direct_body = direct_stream_body();
    let (direct_url, stream_url) = (
        format!("{mock}/chat/completions"),
        format!("{base}/v1/chat-completions/stream"),
    );
    let mut direct = Vec::with_capacity(n);
    let mut persisted = Vec::with_capacity(n);
    let mut ephemeral = Vec::with_capacity(n);
    for i in 0..n + 50 {
        let d = to_first(client, &direct_url, &direct_body, CONTENT).await?;
        let chat = &ids[i.saturating_sub(50) / PER_CHAT];
        let p = to_first(
            client,
            &stream_url,
            &completion(Some(chat), "zero", i),
            DELTA,
        )
        .await?;
        let e = to_first(client, &stream_url, &ephemeral_body(i), DELTA).await?;
        if i >= 50 {
            direct.push(d);
            persisted.push(p);
            ephemeral.push(e);
        }
    }
    let d = row(
        "first delta: mock directly (first content chunk)",
        &mut direct,
    );
    let p = row("first delta: chatd stream, persisted", &mut persisted);
    let e = row("first delta: chatd stream, persist false", &mut ephemeral);
    added("first delta, persisted", p, d);
    added("first delta, persist false", e, d);
    Ok(())
}

/// The provider the configuration file declares.
const DECLARED: &str = "declared";

/// Phase 5: the declared provider against provider_c, each request of one interleaved with the
/// other's and a direct call, non-streaming and first delta (`persist: false`, so the store is
/// not what is compared).
async fn declared(
    client: &reqwest::Client,
    base: &str,
    mock: &str,
    n: usize,
) -> anyhow::Result<()> {
    let as_provider = |provider: &str, i: usize, stream: bool| {
        let mut body = completion(None, "zero", i);
        body["provider"] = json!(provider);
        if stream {
            body["persist"] = json!(false);
        }
        body
    };
    let direct_url = format!("{mock}/chat/completions");
    let (once, stream_url) = (
        format!("{base}/v1/chat-completions"),
        format!("{base}/v1/chat-completions/stream"),
    );
    let direct_whole = json!({"model": "zero", "messages": [{"role": "user", "content": "q"}]});
    let mut samples: [Vec<Duration>; 6] = Default::default();
    for i in 0..n + 50 {
        let t = Instant::now();
        check(client.post(&direct_url).json(&direct_whole).send().await?).await?;
        let d = t.elapsed();
        let t = Instant::now();
        let c = as_provider("provider_c", i, false);
        check(client.post(&once).json(&c).send().await?).await?;
        let c = t.elapsed();
        let t = Instant::now();
        let x = as_provider(DECLARED, i, false);
        check(client.post(&once).json(&x).send().await?).await?;
        let x = t.elapsed();
        let ds = to_first(client, &direct_url, &direct_stream_body(), CONTENT).await?;
        let body = as_provider("provider_c", i, true);
        let cs = to_first(client, &stream_url, &body, DELTA).await?;
        let body = as_provider(DECLARED, i, true);
        let xs = to_first(client, &stream_url, &body, DELTA).await?;
        if i >= 50 {
            for (k, v) in [d, c, x, ds, cs, xs].into_iter().enumerate() {
                samples[k].push(v);
            }
        }
    }
    let [d, c, x, ds, cs, xs] = &mut samples;
    let d = row("non-streaming: mock directly", d);
    let c = row("non-streaming: chatd, provider_c", c);
    let x = row("non-streaming: chatd, declared chat_completions", x);
    added_by("provider_c", "non-streaming", c, d);
    added_by("the declared provider", "non-streaming", x, d);
    let ds = row("first delta: mock directly", ds);
    let cs = row("first delta: chatd, provider_c, persist false", cs);
    let xs = row("first delta: chatd, declared, persist false", xs);
    added_by("provider_c", "first delta", cs, ds);
    added_by("the declared provider", "first delta", xs, ds);
    let ratio = |x: (f64, f64), c: (f64, f64), d: (f64, f64)| (x.0 - d.0) / (c.0 - d.0);
    println!(
        "  declared / provider_c added, p50: non-streaming {:.2}, first delta {:.2}",
        ratio(x, c, d),
        ratio(xs, cs, ds)
    );
    Ok(())
}

/// `--persist-false-only`: the `persist: false` first delta, each interleaved with a direct call
/// and one through the do-nothing proxy, and what the server spent on them; `tools_on`: the
/// streams are offered every tool.
async fn persist_false_alone(
    client: &reqwest::Client,
    base: &str,
    mock: &str,
    pid: u32,
    n: usize,
    tools_on: bool,
) -> anyhow::Result<()> {
    const WARMUP: usize = 200;
    let tools = match tools_on {
        true => format!("on, {} offered", tools_offered(client, base).await?),
        false => "off".to_string(),
    };
    let direct_body = direct_stream_body();
    let (_proxy, proxy) = crate::proxy::start(mock)?;
    let direct_url = format!("{mock}/chat/completions");
    let proxy_url = format!("{proxy}/chat/completions");
    let stream_url = format!("{base}/v1/chat-completions/stream");
    let mut direct = Vec::with_capacity(n);
    let mut proxied = Vec::with_capacity(n);
    let mut ephemeral = Vec::with_capacity(n);
    let mut before = Cpu::of(pid)?;
    for i in 0..n + WARMUP {
        if i == WARMUP {
            before = Cpu::of(pid)?;
        }
        let d = to_first(client, &direct_url, &direct_body, CONTENT).await?;
        let p = to_first(client, &proxy_url, &direct_body, CONTENT).await?;
        let body = match tools_on {
            true => ephemeral_body_with_tools(i),
            false => ephemeral_body(i),
        };
        let e = to_first(client, &stream_url, &body, DELTA).await?;
        if i >= WARMUP {
            direct.push(d);
            proxied.push(p);
            ephemeral.push(e);
        }
    }
    let after = Cpu::of(pid)?;
    println!(
        "persist: false streams alone, {n} after {WARMUP} warm-up, each after a direct call and \
         one through a do-nothing proxy (`bench proxy`); tools {tools}"
    );
    println!("{:<50} {:>9} {:>9} {:>9}", "", "p50 ms", "p99 ms", "max ms");
    let d = row("first delta: mock directly", &mut direct);
    let p = row("first delta: through the do-nothing proxy", &mut proxied);
    let e = row("first delta: chatd stream, persist false", &mut ephemeral);
    added_by("the do-nothing proxy", "first delta", p, d);
    added("first delta, persist false", e, d);
    println!(
        "server, per stream: {:.0} µs of CPU, {:.2} voluntary context switches",
        (after.seconds - before.seconds) * 1e6 / n as f64,
        after.switches.saturating_sub(before.switches) as f64 / n as f64
    );
    Ok(())
}

async fn attach(client: &reqwest::Client, base: &str, n: usize) -> anyhow::Result<()> {
    let mut samples = attach_times(client, base, &[base], n).await?.remove(0);
    row(
        "attach to a running stream: first replayed event",
        &mut samples,
    );
    Ok(())
}

/// Time to the first replayed event of `n` attaches on each of `readers`, taken in turn, to
/// slow streams `owner` runs (a new one when the last has ended); one list per reader.
pub(crate) async fn attach_times(
    client: &reqwest::Client,
    owner: &str,
    readers: &[&str],
    n: usize,
) -> anyhow::Result<Vec<Vec<Duration>>> {
    let mut samples = vec![Vec::with_capacity(n); readers.len()];
    let mut chat: Option<String> = None;
    let mut streams = Vec::new();
    let mut turn = 0;
    while samples.iter().any(|s| s.len() < n) {
        let id = match &chat {
            Some(id) => id.clone(),
            None => {
                let id = chats(client, owner, 1).await?.remove(0);
                let res = open_stream(client, owner, &completion(Some(&id), "slow", 0)).await?;
                // Read it to the end in the background, as a client would.
                streams.push(tokio::spawn(async move {
                    let mut body = res.bytes_stream();
                    while body.next().await.is_some() {}
                }));
                chat = Some(id.clone());
                id
            }
        };
        let reader = turn % readers.len();
        let t = Instant::now();
        let res = client
            .post(format!("{}/v1/chats/{id}/stream/attach", readers[reader]))
            .send()
            .await?;
        if res.status() == reqwest::StatusCode::NOT_FOUND {
            chat = None;
            continue;
        }
        ensure!(
            res.status().is_success(),
            "attach answered {}",
            res.status()
        );
        let mut body = res.bytes_stream();
        let first = body.next().await.context("attach sent nothing")??;
        // `id: <run>-1`: the run's first event, its meta.
        let head = String::from_utf8_lossy(&first);
        ensure!(
            head.lines().next().is_some_and(|l| l.ends_with("-1"))
                && head.contains("\nevent: meta\n"),
            "attach began with something else: {head}"
        );
        if samples[reader].len() < n {
            samples[reader].push(t.elapsed());
        }
        turn += 1;
    }
    for stream in streams {
        stream.abort();
    }
    Ok(samples)
}

/// Descriptors each process keeps beside its streams' (listeners, the database, plugins).
const OTHER_FILES: u64 = 512;

/// `n` `persist: false` streams at once, or as many as `open_files` holds (each stream is two
/// descriptors in the server and two here: the client's connection and the upstream's).
async fn ephemeral_streams(
    client: &reqwest::Client,
    base: &str,
    pid: u32,
    n: usize,
    open_files: u64,
) -> anyhow::Result<()> {
    let fits = usize::try_from(open_files.saturating_sub(OTHER_FILES) / 2)?;
    ensure!(
        fits > 0,
        "the open-files limit ({open_files}) holds no stream"
    );
    if fits < n {
        println!(
            "live persist: false streams: {n} asked, {fits} run: the open-files limit is {open_files} \
             here (its hard value), and each stream holds two descriptors in each process"
        );
    }
    live_streams(client, base, pid, n.min(fits), false).await
}

/// `n` streams at once, persisted or not: the paced ones (64 deltas 20 ms apart) for persisted
/// streams, the slow ones (200 ms apart) for `persist: false`, so that ten thousand are all live
/// at once on two cores (the peak counts the streams open, `live`, beside the memory).
async fn live_streams(
    client: &reqwest::Client,
    base: &str,
    pid: u32,
    n: usize,
    persist: bool,
) -> anyhow::Result<()> {
    let before = rss_kib(pid)?;
    let started = Arc::new(AtomicUsize::new(0));
    let ended = Arc::new(AtomicUsize::new(0));
    let t = Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let (client, base) = (client.clone(), base.to_string());
        let (started, ended) = (started.clone(), ended.clone());
        let mut body = completion(None, if persist { "paced" } else { "slow" }, i);
        if !persist {
            body["persist"] = json!(false);
        }
        tasks.push(tokio::spawn(async move {
            let res = open_stream(&client, &base, &body).await?;
            started.fetch_add(1, Ordering::Relaxed);
            let text = res.text().await;
            ended.fetch_add(1, Ordering::Relaxed);
            verify(&text?)
        }));
    }
    // The peak: every stream open, halfway through its deltas.
    let (mut peak, mut files, mut live) = (before, 0, 0);
    let mut look = || -> anyhow::Result<()> {
        let rss = rss_kib(pid)?;
        if rss > peak {
            peak = rss;
            live = started.load(Ordering::Relaxed) - ended.load(Ordering::Relaxed);
        }
        files = files.max(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count());
        Ok(())
    };
    while started.load(Ordering::Relaxed) < n {
        tokio::time::sleep(Duration::from_millis(20)).await;
        look()?;
    }
    for _ in 0..40 {
        look()?;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut failed = 0;
    for task in tasks {
        if let Err(e) = task.await? {
            failed += 1;
            if failed <= 3 {
                eprintln!("a stream failed: {e:#}");
            }
        }
    }
    let took = t.elapsed();
    let kind = if persist {
        "live streams"
    } else {
        "live persist: false streams"
    };
    let apart = if persist { 20 } else { 200 };
    println!(
        "{kind}: {n} at once, {PACED_DELTAS} deltas {apart} ms apart each: {} complete and in order, {failed} failed, all done in {:.1} s",
        n - failed,
        took.as_secs_f64()
    );
    println!(
        "  server RSS: {:.1} MiB before, {:.1} MiB at the peak, with {live} streams live: {:.1} KiB per live stream; {files} open files at most",
        before as f64 / 1024.0,
        peak as f64 / 1024.0,
        (peak.saturating_sub(before)) as f64 / live.max(1) as f64
    );
    Ok(())
}

/// A whole paced stream: meta, the 64 deltas in order, done with their text.
pub(crate) fn verify(text: &str) -> anyhow::Result<()> {
    let events: Vec<(&str, Value)> = text
        .split("\n\n")
        .filter(|e| !e.trim().is_empty() && !e.starts_with(':'))
        .map(|e| {
            let name = e
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .unwrap_or("");
            let data = e
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .and_then(|d| serde_json::from_str(d).ok())
                .unwrap_or(Value::Null);
            (name, data)
        })
        .collect();
    ensure!(events.len() == PACED_DELTAS + 2, "{} events", events.len());
    ensure!(events[0].0 == "meta", "first event {}", events[0].0);
    for (i, (name, data)) in events[1..=PACED_DELTAS].iter().enumerate() {
        ensure!(
            *name == "delta" && data["text"] == format!("d{i} "),
            "event {} out of order",
            i + 1
        );
    }
    let (name, data) = &events[PACED_DELTAS + 1];
    ensure!(*name == "done", "last event {name}");
    let expected: String = (0..PACED_DELTAS).map(|i| format!("d{i} ")).collect();
    ensure!(data["text"] == expected.as_str(), "done.text differs");
    Ok(())
}

#[derive(Clone, Default)]
struct Mock;

pub(crate) async fn start_mock() -> anyhow::Result<SocketAddr> {
    let app = axum::Router::new()
        .route("/chat/completions", axum::routing::post(mock_completion))
        .route(
            "/models",
            axum::routing::get(|| async {
                axum::Json(json!({"object": "list", "data": [{"id": "zero"}, {"id": "paced"}, {"id": "slow"}]}))
            }),
        )
        .with_state(Mock);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}

async fn mock_completion(State(_): State<Mock>, body: Bytes) -> Response {
    crate::harness::mock_reached();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if request.get("tools").is_some() {
        crate::harness::keep_with_tools(&body);
    }
    let streaming = request["stream"] == true;
    let pause = match request["model"].as_str() {
        Some("paced") => Some(Duration::from_millis(20)),
        Some("slow") => Some(Duration::from_millis(200)),
        _ => None,
    };
    let builder = Response::builder().status(200);
    match (streaming, pause) {
        (false, _) => builder
            .header("content-type", "application/json")
            .body(Body::from(RECORDED_BODY))
            .unwrap(),
        (true, None) => builder
            .header("content-type", "text/event-stream")
            .body(Body::from(RECORDED_STREAM))
            .unwrap(),
        (true, Some(pause)) => {
            let chunks = futures::stream::unfold(0usize, move |i| async move {
                let chunk = match i {
                    0 => String::new(),
                    i if i <= PACED_DELTAS => {
                        tokio::time::sleep(pause).await;
                        format!(
                            "data: {}\n\n",
                            json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": format!("d{} ", i - 1)}, "finish_reason": null}]})
                        )
                    }
                    i if i == PACED_DELTAS + 1 => format!(
                        "data: {}\n\ndata: [DONE]\n\n",
                        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                    ),
                    _ => return None,
                };
                Some((Ok::<_, Infallible>(Bytes::from(chunk)), i + 1))
            });
            builder
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(chunks))
                .unwrap()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn each_mode_runs_alone() {
        let err = parse(&args(&[
            "--persist-false-only",
            "--tools-on",
            "--telemetry",
        ]))
        .err()
        .expect("two modes");
        assert!(err.to_string().contains("each run alone"), "{err}");
        assert!(parse(&args(&["--against-proxy", "--streams-only"])).is_err());
        assert!(parse(&args(&["--tools-on", "--against-proxy"])).is_err());
        let one = parse(&args(&["--persist-false-only", "--tools-on"])).expect("one mode");
        assert!(one.persist_false_only && one.tools_on);
    }
}
