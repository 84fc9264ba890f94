//! What the benchmark scenarios share: the client, the request bodies, timing a stream to its
//! first delta, percentiles and the rows they print, a process's CPU time.

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use axum::body::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};

/// The benchmark's client: TCP_NODELAY, and as many idle connections as it leaves.
pub(crate) fn client() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(usize::MAX)
        .build()?)
}

/// Percentiles of `samples` in ms: p50, p99, max.
pub(crate) fn summary(samples: &mut [Duration]) -> (f64, f64, f64) {
    samples.sort_unstable();
    let at = |p: f64| {
        let i = ((samples.len() as f64 * p).ceil() as usize)
            .saturating_sub(1)
            .min(samples.len() - 1);
        samples[i].as_secs_f64() * 1000.0
    };
    (at(0.50), at(0.99), at(1.0))
}

pub(crate) fn row(name: &str, samples: &mut [Duration]) -> (f64, f64) {
    let (p50, p99, max) = summary(samples);
    println!("{name:<50} {p50:>9.3} {p99:>9.3} {max:>9.3}");
    (p50, p99)
}

pub(crate) fn added_by(who: &str, name: &str, via: (f64, f64), direct: (f64, f64)) {
    println!(
        "{:<50} {:>9.3} {:>9.3}",
        format!("  added by {who}: {name}"),
        via.0 - direct.0,
        via.1 - direct.1
    );
}

pub(crate) async fn check(res: reqwest::Response) -> anyhow::Result<Bytes> {
    let status = res.status();
    let body = res.bytes().await?;
    if !status.is_success() {
        bail!("{status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(body)
}

/// Chats for persisted requests, each used for `per_chat` requests so transcripts stay short
/// (a chat that grew to thousands of rows would measure its own size).
pub(crate) async fn chats(
    client: &reqwest::Client,
    base: &str,
    n: usize,
) -> anyhow::Result<Vec<String>> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let body = check(
            client
                .post(format!("{base}/v1/chats"))
                .json(&json!({"enabledTools": []}))
                .send()
                .await?,
        )
        .await?;
        let chat: Value = serde_json::from_slice(&body)?;
        ids.push(chat["chat"]["id"].as_str().context("chat id")?.to_string());
    }
    Ok(ids)
}

/// A chat stream of `body` started on `base`; an error unless it is accepted.
pub(crate) async fn open_stream(
    client: &reqwest::Client,
    base: &str,
    body: &Value,
) -> anyhow::Result<reqwest::Response> {
    let res = client
        .post(format!("{base}/v1/chat-completions/stream"))
        .json(body)
        .send()
        .await?;
    ensure!(
        res.status().is_success(),
        "stream answered {}",
        res.status()
    );
    Ok(res)
}

pub(crate) fn completion(chat_id: Option<&str>, model: &str, i: usize) -> Value {
    let mut body = json!({
        "provider": "provider_c", "model": model, "enabledTools": [],
        "messages": [{"role": "user", "content": format!("question {i}")}]
    });
    if let Some(id) = chat_id {
        body["chatId"] = json!(id);
    }
    body
}

pub(crate) const DELTA: &[u8] = b"event: delta";

/// What marks the first delta in the mock's stream: a chat completions chunk's content
/// ([`DELTA`] marks it in chatd's).
pub(crate) const CONTENT: &[u8] = b"\"content\":\"";

/// Each persisted chat takes this many requests, so transcripts stay short.
pub(crate) const PER_CHAT: usize = 10;

/// Time from sending `body` to `url` until the first chunk containing `needle` (the rest of the
/// answer is read too).
pub(crate) async fn to_first(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    needle: &[u8],
) -> anyhow::Result<Duration> {
    let t = Instant::now();
    let res = client.post(url).json(body).send().await?;
    time_to(res, needle, t).await
}

/// The `i`th `persist: false` stream's request.
pub(crate) fn ephemeral_body(i: usize) -> Value {
    let mut body = completion(None, "zero", i);
    body["persist"] = json!(false);
    body
}

/// The `i`th `persist: false` stream's request with every tool offered: it names none, so the
/// chat's default, all of them (issue 59's target request).
pub(crate) fn ephemeral_body_with_tools(i: usize) -> Value {
    let mut body = ephemeral_body(i);
    if let Some(fields) = body.as_object_mut() {
        fields.remove("enabledTools");
    }
    body
}

/// When the mock (`chat.rs`) last had a whole request, for `--against-proxy`'s split of a
/// request's time into before and after the upstream has it.
static MOCK_REACHED: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);

/// Called by the mock as it starts answering a request.
pub(crate) fn mock_reached() {
    if let Ok(mut last) = MOCK_REACHED.lock() {
        *last = Some(Instant::now());
    }
}

/// When the mock last had a whole request since the last call.
pub(crate) fn take_mock_reached() -> Option<Instant> {
    MOCK_REACHED.lock().ok()?.take()
}

/// The last request with tools the mock (`chat.rs`) was sent: chatd's upstream request with
/// tools on, which `--against-proxy` then sends directly and through the proxy too
/// (`straight.rs`).
static WITH_TOOLS: std::sync::Mutex<Option<Bytes>> = std::sync::Mutex::new(None);

/// Kept by the mock for [`take_with_tools`]: a request it was sent with tools, as sent.
pub(crate) fn keep_with_tools(body: &Bytes) {
    if let Ok(mut last) = WITH_TOOLS.lock() {
        *last = Some(body.clone());
    }
}

/// The last request with tools the mock was sent since the last call, its bytes as sent.
pub(crate) fn take_with_tools() -> Option<Bytes> {
    WITH_TOOLS.lock().ok()?.take()
}

/// How many tools the server at `base` offers; an error when none, where tools on would be
/// tools off.
pub(crate) async fn tools_offered(client: &reqwest::Client, base: &str) -> anyhow::Result<usize> {
    let tools = check(client.get(format!("{base}/v1/chat-tools")).send().await?).await?;
    let offered = serde_json::from_slice::<Value>(&tools)?["tools"]
        .as_array()
        .map_or(0, Vec::len);
    ensure!(
        offered > 0,
        "the server offers no tool: tools on would be tools off"
    );
    Ok(offered)
}

/// Time until the first chunk containing `needle` arrives.
pub(crate) async fn time_to(
    res: reqwest::Response,
    needle: &[u8],
    started: Instant,
) -> anyhow::Result<Duration> {
    ensure!(
        res.status().is_success(),
        "stream answered {}",
        res.status()
    );
    let mut body = res.bytes_stream();
    let mut seen = Vec::new();
    let mut first = None;
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        seen.extend_from_slice(&chunk);
        if first.is_none() && seen.windows(needle.len()).any(|w| w == needle) {
            first = Some(started.elapsed());
        }
    }
    first.with_context(|| {
        format!(
            "the stream had no delta: {}",
            String::from_utf8_lossy(&seen)
        )
    })
}

/// A process's CPU time (user and system, all its threads, `/proc/PID/stat`) and its live
/// threads' voluntary context switches (`/proc/PID/task/*/status`; a thread that ended takes
/// its count with it).
pub(crate) struct Cpu {
    pub(crate) seconds: f64,
    pub(crate) switches: u64,
}

impl Cpu {
    pub(crate) fn of(pid: u32) -> anyhow::Result<Self> {
        /// Linux reports these times in USER_HZ, 100 on every architecture it runs on.
        const USER_HZ: f64 = 100.0;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // After the command name, which may hold spaces: state is field 3, utime 14, stime 15.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .context("/proc/PID/stat")?
            .1
            .split_whitespace()
            .collect();
        let ticks = |i: usize| -> anyhow::Result<f64> {
            Ok(fields
                .get(i)
                .context("/proc/PID/stat fields")?
                .parse::<f64>()?)
        };
        let seconds = (ticks(11)? + ticks(12)?) / USER_HZ;
        let mut switches = 0;
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
            // A thread may end between the listing and the read.
            let status = std::fs::read_to_string(task?.path().join("status")).unwrap_or_default();
            switches += status
                .lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
        Ok(Self { seconds, switches })
    }
}

/// Waits until `GET /ready` answers 200: a fresh data folder compiles the interpreter in the
/// background (without HOME, no machine cache to read it from), seconds of CPU that would be
/// measured with the requests.
pub(crate) async fn ready(client: &reqwest::Client, base: &str) -> anyhow::Result<()> {
    let waiting = Instant::now();
    loop {
        let res = client.get(format!("{base}/ready")).send().await?;
        if res.status().is_success() {
            return Ok(());
        }
        anyhow::ensure!(
            waiting.elapsed() < Duration::from_secs(300),
            "/ready did not answer 200 within 300 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
