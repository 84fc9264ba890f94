//! `bench chat --against-proxy`: issue 59's measure of the straight path. Each round sends the
//! same question three ways in turn, to the mock directly, through the do-nothing proxy
//! (`proxy.rs`) and through chatd, for three requests: a `persist: false` stream with every
//! tool offered (the model is sent their definitions), the same with `enabledTools: []`, and a
//! persisted non-streaming completion. The figures are whole latencies, so chatd ÷ the proxy is
//! what a request costs through chatd against through any process in between; the targets are
//! ≤ 1.5 at p50 and ≤ 2 at p99 for the first delta with tools on, ≤ 3 non-streaming.
//!
//! With tools on, chatd sends the mock a larger request than the client's (the tools'
//! definitions and their instruction), which the mock then reads. So the tools-on stream is
//! compared twice: against the plain question sent directly and through the proxy, and against
//! chatd's own upstream request (captured by the mock) sent both ways, the same exchange with the
//! upstream whichever way it goes.
//!
//! Each time is also split where the mock has the request (it notes the moment; the requests go
//! one at a time, so its last is this one's): until then, the way in, which through chatd
//! includes building the upstream request; from then on, the way out, which includes decoding the
//! answer and framing the first delta.

use std::time::{Duration, Instant};

use anyhow::Context;
use axum::body::Bytes;
use serde_json::{Value, json};

use crate::harness::{
    CONTENT, Cpu, DELTA, PER_CHAT, added_by, chats, check, completion, ephemeral_body,
    ephemeral_body_with_tools, row, take_with_tools, time_to, to_first, tools_offered,
};

/// Rounds before the measured ones: connections, the first instances, SQLite's pages.
const WARMUP: usize = 200;

/// A request's whole time, and the part of it until the mock had the request.
type Timed = (Duration, Duration);

/// One request's three timings, through each path, each split where the mock has the request.
#[derive(Default)]
struct Three {
    direct: Vec<Duration>,
    proxied: Vec<Duration>,
    chatd: Vec<Duration>,
    /// Until the mock had the request, through each path.
    reached: [Vec<Duration>; 3],
    /// From then until the answer (or its first delta) was read, through each path.
    answered: [Vec<Duration>; 3],
}

impl Three {
    fn push(&mut self, (d, p, c): (Timed, Timed, Timed)) {
        self.direct.push(d.0);
        self.proxied.push(p.0);
        self.chatd.push(c.0);
        for (i, (whole, reached)) in [d, p, c].into_iter().enumerate() {
            self.reached[i].push(reached);
            self.answered[i].push(whole.saturating_sub(reached));
        }
    }

    /// The two halves' p50s through each path (direct · proxy · chatd, ms).
    fn halves(&mut self, name: &str) {
        for (half, samples) in [
            ("until the mock has it", &mut self.reached),
            ("from then on", &mut self.answered),
        ] {
            let p50: Vec<String> = samples
                .iter_mut()
                .map(|s| format!("{:.3}", crate::harness::summary(s).0))
                .collect();
            println!(
                "  {name}, {half}: p50 direct · proxy · chatd {} ms",
                p50.join(" · ")
            );
        }
    }

    /// Prints the three rows, what each process in between adds, and chatd ÷ the proxy.
    fn report(mut self, name: &str) -> ((f64, f64), (f64, f64)) {
        self.halves(name);
        let d = row(&format!("{name}: mock directly"), &mut self.direct);
        let p = row(&format!("{name}: through the proxy"), &mut self.proxied);
        let c = row(&format!("{name}: through chatd"), &mut self.chatd);
        added_by("the proxy", name, p, d);
        added_by("chatd", name, c, d);
        println!(
            "{:<50} {:>9.2} {:>9.2}",
            format!("  chatd ÷ the proxy: {name}"),
            c.0 / p.0,
            c.1 / p.1
        );
        (c, p)
    }
}

pub(crate) async fn run(
    client: &reqwest::Client,
    base: &str,
    mock: &str,
    pid: u32,
    n: usize,
) -> anyhow::Result<()> {
    let offered = tools_offered(client, base).await?;
    let (_proxy, proxy) = crate::proxy::start(mock)?;
    let ids = chats(client, base, (n + WARMUP).div_ceil(PER_CHAT) + 1).await?;
    let stream_body = json!({"model": "zero", "stream": true,
        "messages": [{"role": "user", "content": "q"}]});
    let plain_body = json!({"model": "zero", "messages": [{"role": "user", "content": "q"}]});
    let upstream = |base: &str| format!("{base}/chat/completions");
    let (direct, proxied) = (upstream(mock), upstream(&proxy));
    let stream_url = format!("{base}/v1/chat-completions/stream");
    let plain_url = format!("{base}/v1/chat-completions");
    // One tools-on stream first, for the request chatd sends upstream with them (the mock
    // forgets any it was sent before).
    take_with_tools();
    to_first(client, &stream_url, &ephemeral_body_with_tools(0), DELTA).await?;
    let upstream_with_tools =
        take_with_tools().context("chatd sent the mock no request with tools")?;
    let (mut tools_on, mut same_upstream, mut tools_off, mut persisted) = (
        Three::default(),
        Three::default(),
        Three::default(),
        Three::default(),
    );
    let mut before = Cpu::of(pid)?;
    for i in 0..n + WARMUP {
        if i == WARMUP {
            before = Cpu::of(pid)?;
        }
        let with_tools = ephemeral_body_with_tools(i);
        let on = (
            timed(to_first(client, &direct, &stream_body, CONTENT)).await?,
            timed(to_first(client, &proxied, &stream_body, CONTENT)).await?,
            timed(to_first(client, &stream_url, &with_tools, DELTA)).await?,
        );
        let same = (
            timed(to_first_raw(client, &direct, &upstream_with_tools, CONTENT)).await?,
            timed(to_first_raw(
                client,
                &proxied,
                &upstream_with_tools,
                CONTENT,
            ))
            .await?,
            on.2,
        );
        let off = (
            timed(to_first(client, &direct, &stream_body, CONTENT)).await?,
            timed(to_first(client, &proxied, &stream_body, CONTENT)).await?,
            timed(to_first(client, &stream_url, &ephemeral_body(i), DELTA)).await?,
        );
        let chat = completion(Some(&ids[1 + i / PER_CHAT]), "zero", i);
        let stored = (
            timed(whole(client, &direct, &plain_body)).await?,
            timed(whole(client, &proxied, &plain_body)).await?,
            timed(whole(client, &plain_url, &chat)).await?,
        );
        if i >= WARMUP {
            tools_on.push(on);
            same_upstream.push(same);
            tools_off.push(off);
            persisted.push(stored);
        }
    }
    let after = Cpu::of(pid)?;
    println!(
        "the straight path: {n} rounds after {WARMUP} warm-up, each request to the mock directly, \
         through a do-nothing proxy (`bench proxy`) and through chatd, in turn; tools on: {offered}"
    );
    println!("{:<50} {:>9} {:>9} {:>9}", "", "p50 ms", "p99 ms", "max ms");
    tools_on.report("first delta, tools on, persist false");
    println!(
        "  the same stream of chatd's against its upstream request ({} bytes; the plain question \
         {}) sent both ways:",
        upstream_with_tools.len(),
        serde_json::to_vec(&stream_body)?.len()
    );
    same_upstream.report("first delta, tools on, same upstream request");
    tools_off.report("first delta, tools off, persist false");
    persisted.report("non-streaming, persisted");
    println!(
        "server, per round (three requests): {:.0} µs of CPU",
        (after.seconds - before.seconds) * 1e6 / n as f64
    );
    Ok(())
}

/// `request`'s whole time, and the part of it until the mock had the request (the requests
/// are sent one at a time, so the mock's last request is this one's).
async fn timed(
    request: impl std::future::Future<Output = anyhow::Result<Duration>>,
) -> anyhow::Result<Timed> {
    crate::harness::take_mock_reached();
    let t = Instant::now();
    let whole = request.await?;
    let reached = crate::harness::take_mock_reached().context("the mock had no request")?;
    Ok((whole, reached.saturating_duration_since(t)))
}

/// [`to_first`] for a body already written: its bytes sent as they are, so the time does not
/// include writing a request chatd's client does not write (chatd's upstream request).
async fn to_first_raw(
    client: &reqwest::Client,
    url: &str,
    body: &Bytes,
    needle: &[u8],
) -> anyhow::Result<Duration> {
    let t = Instant::now();
    let res = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.clone())
        .send()
        .await?;
    time_to(res, needle, t).await
}

/// Time from sending `body` to `url` until its whole answer is read.
async fn whole(client: &reqwest::Client, url: &str, body: &Value) -> anyhow::Result<Duration> {
    let t = Instant::now();
    check(client.post(url).json(body).send().await?).await?;
    Ok(t.elapsed())
}
