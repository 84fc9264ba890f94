//! `bench openai`: what chatd's OpenAI-compatible front door (`POST /openai/v1/chat/completions`)
//! adds to a completion, beside what LiteLLM's proxy adds to the same upstream in the same run,
//! and what the do-nothing proxy (`bench proxy`) adds: the floor of any process between a client
//! and the upstream on this machine.
//!
//! The upstream is `bench chat`'s zero-delay mock of the chat completions wire (the recorded
//! body, or the recorded stream of 10 deltas at once). Each round sends one request each way, in
//! turn: straight to the mock, through the proxy, through chatd (provider_c, `persist`-free: no
//! chat is made, the call is recorded), through LiteLLM; so the noise of a shared machine falls on
//! all of them alike. Two figures per way: a non-streaming completion's latency, and a stream's
//! time to its first text. What each adds is its figure minus the mock's; the ratio LiteLLM ÷
//! chatd is printed at p50 and p99.
//!
//! Beside them, in the same rounds, chatd's own stream (`POST /v1/chat-completions/stream`) to
//! its first delta: persisted into a new chat, which writes once before the upstream is asked as
//! the front door does (one transaction: the chat, the message and the call there; the call
//! here), and `persist: false`, which writes nothing. The front door's added first text ÷ the
//! persisted stream's is the figure (target ≤ 1.1 at p50 and p99).
//!
//! LiteLLM is `litellm` from PyPI (`litellm[proxy]`) in `target/litellm-venv`, or the `litellm`
//! named by CHATD_BENCH_LITELLM; without it the LiteLLM rows are left out and said so.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

use crate::chat::start_mock;
use crate::harness::{
    DELTA, added_by, check, client, completion, ephemeral_body, row, time_to, to_first,
};
use crate::plugins::{Running, server_binary, start_with};

/// The first text of the recorded stream: what a stream's time to first text waits for.
const FIRST_TEXT: &[u8] = b"\"The\"";

pub struct Options {
    requests: usize,
    warmup: usize,
    litellm: bool,
}

pub fn usage() -> &'static str {
    "usage: bench openai [--requests N] [--warmup N] [--no-litellm]\n\
     needs the release server binary: run `cargo build --release` first; LiteLLM from\n\
     target/litellm-venv (python3 -m venv target/litellm-venv && target/litellm-venv/bin/pip install 'litellm[proxy]')\n\
     or CHATD_BENCH_LITELLM; defaults: 1000 rounds after 100 of warm-up"
}

pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        requests: 1000,
        warmup: 100,
        litellm: true,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("{flag} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "--requests" => o.requests = value()?.parse()?,
            "--warmup" => o.warmup = value()?.parse()?,
            "--no-litellm" => o.litellm = false,
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

/// One way to the mock: its name, its chat completions URL, its key, its model id.
struct Way {
    name: &'static str,
    url: String,
    key: &'static str,
    model: &'static str,
    plain: Vec<Duration>,
    first: Vec<Duration>,
}

impl Way {
    fn new(name: &'static str, base: &str, key: &'static str, model: &'static str) -> Self {
        Self {
            name,
            url: format!("{base}/chat/completions"),
            key,
            model,
            plain: Vec::new(),
            first: Vec::new(),
        }
    }

    fn body(&self, i: usize, stream: bool) -> Value {
        json!({"model": self.model, "stream": stream,
            "messages": [{"role": "user", "content": format!("question {i}")}]})
    }

    /// One non-streaming completion and one stream to its first text; kept when `keep`.
    async fn round(&mut self, http: &reqwest::Client, i: usize, keep: bool) -> anyhow::Result<()> {
        let t = Instant::now();
        let res = http
            .post(&self.url)
            .bearer_auth(self.key)
            .json(&self.body(i, false))
            .send()
            .await?;
        let body = check(res).await.with_context(|| self.name)?;
        let took = t.elapsed();
        ensure!(
            body.windows(5).any(|w| w == b"Hello"),
            "{}: not the recorded reply: {}",
            self.name,
            String::from_utf8_lossy(&body)
        );
        let t = Instant::now();
        let res = http
            .post(&self.url)
            .bearer_auth(self.key)
            .json(&self.body(i, true))
            .send()
            .await?;
        let first = time_to(res, FIRST_TEXT, t)
            .await
            .with_context(|| self.name)?;
        if keep {
            self.plain.push(took);
            self.first.push(first);
        }
        Ok(())
    }
}

async fn run_async(o: Options) -> anyhow::Result<()> {
    let mock = start_mock().await?;
    let mock_url = format!("http://{mock}");
    let dir = tempfile::tempdir()?;
    let binary = server_binary()?;
    let (_chatd, _, chatd_addr) = start_with(
        &binary,
        dir.path(),
        &[
            ("PROVIDER_C_BASE_URL", mock_url.as_str()),
            ("PROVIDER_C_API_KEY", "k"),
            // The request log off: one line per request is not what is measured.
            ("RUST_LOG", "warn,chatd=info,chatd::http::middleware=warn"),
        ],
    )?;
    let (_proxy, proxy_url) = start_proxy(&mock_url)?;
    let litellm = match (o.litellm, litellm_binary()) {
        (true, Some(binary)) => Some(start_litellm(&binary, &mock_url, dir.path()).await?),
        (true, None) => {
            println!(
                "LiteLLM: not found (target/litellm-venv/bin/litellm or CHATD_BENCH_LITELLM); its rows are left out"
            );
            None
        }
        (false, _) => None,
    };
    let mut ways = vec![
        Way::new("the mock, directly", &mock_url, "k", "zero"),
        Way::new("bench proxy", &proxy_url, "k", "zero"),
        Way::new(
            "chatd /openai/v1",
            &format!("http://{chatd_addr}/openai/v1"),
            "k",
            "provider_c/zero",
        ),
    ];
    if let Some((_, url)) = &litellm {
        ways.push(Way::new("LiteLLM proxy", url, "sk-bench", "zero"));
    }
    let http = client()?;
    let own_url = format!("http://{chatd_addr}/v1/chat-completions/stream");
    let (mut persisted, mut ephemeral) = (Vec::new(), Vec::new());
    for i in 0..o.warmup + o.requests {
        for way in ways.iter_mut() {
            way.round(&http, i, i >= o.warmup).await?;
        }
        let p = to_first(&http, &own_url, &completion(None, "zero", i), DELTA).await?;
        let e = to_first(&http, &own_url, &ephemeral_body(i), DELTA).await?;
        if i >= o.warmup {
            persisted.push(p);
            ephemeral.push(e);
        }
    }
    println!(
        "\n{} rounds (after {} of warm-up), ms:",
        o.requests, o.warmup
    );
    println!("{:<50} {:>9} {:>9} {:>9}", "", "p50", "p99", "max");
    let mut plain = Vec::new();
    let mut first = Vec::new();
    for way in ways.iter_mut() {
        plain.push(row(&format!("{}: completion", way.name), &mut way.plain));
        first.push(row(&format!("{}: first text", way.name), &mut way.first));
    }
    let own = row("chatd /v1 stream, persisted: first delta", &mut persisted);
    let own_ephemeral = row(
        "chatd /v1 stream, persist false: first delta",
        &mut ephemeral,
    );
    println!();
    for (i, way) in ways.iter().enumerate().skip(1) {
        added_by(way.name, "completion", plain[i], plain[0]);
        added_by(way.name, "first text", first[i], first[0]);
    }
    added_by("chatd /v1 stream", "first delta, persisted", own, first[0]);
    added_by(
        "chatd /v1 stream",
        "first delta, persist false",
        own_ephemeral,
        first[0],
    );
    let front = |at: fn(&(f64, f64)) -> f64, over: (f64, f64)| {
        (at(&first[2]) - at(&first[0])) / (at(&over) - at(&first[0]))
    };
    println!(
        "\nchatd /openai/v1 first text added ÷ /v1 stream's first delta added: persisted (one write, as the front door) {:.2} at p50, {:.2} at p99 (target ≤ 1.1); persist false (no write) {:.2} at p50, {:.2} at p99",
        front(|f| f.0, own),
        front(|f| f.1, own),
        front(|f| f.0, own_ephemeral),
        front(|f| f.1, own_ephemeral),
    );
    if litellm.is_some() {
        let ratio = |figures: &[(f64, f64)], at: fn(&(f64, f64)) -> f64| {
            (at(&figures[3]) - at(&figures[0])) / (at(&figures[2]) - at(&figures[0]))
        };
        println!(
            "\nLiteLLM adds ÷ chatd adds: completion {:.1}× at p50, {:.1}× at p99; first text {:.1}× at p50, {:.1}× at p99",
            ratio(&plain, |f| f.0),
            ratio(&plain, |f| f.1),
            ratio(&first, |f| f.0),
            ratio(&first, |f| f.1),
        );
    }
    Ok(())
}

/// `bench proxy` to the mock, as a process of its own; its base URL.
fn start_proxy(mock_url: &str) -> anyhow::Result<(Running, String)> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .args(["proxy", mock_url])
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let running = Running { child };
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)?;
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .context("the proxy did not announce its address")?
        .to_string();
    Ok((running, url))
}

fn litellm_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHATD_BENCH_LITELLM") {
        return Some(PathBuf::from(path));
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/litellm-venv/bin/litellm");
    here.is_file().then_some(here)
}

/// LiteLLM's proxy with the mock as the model `zero` (the OpenAI-compatible provider, its
/// logging and database features off); its base URL once its liveness answers.
async fn start_litellm(
    binary: &Path,
    mock_url: &str,
    dir: &Path,
) -> anyhow::Result<(Running, String)> {
    let config = dir.join("litellm.yaml");
    std::fs::write(
        &config,
        format!(
            "model_list:\n  - model_name: zero\n    litellm_params:\n      model: openai/zero\n      \
             api_base: {mock_url}\n      api_key: k\nlitellm_settings:\n  drop_params: false\n"
        ),
    )?;
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.local_addr()?.port()
    };
    let child = Command::new(binary)
        .args(["--config", &config.to_string_lossy(), "--host", "127.0.0.1"])
        .args(["--port", &port.to_string(), "--num_workers", "1"])
        .env("LITELLM_MASTER_KEY", "sk-bench")
        .env("LITELLM_LOG", "ERROR")
        .env("DISABLE_SCHEMA_UPDATE", "true")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let running = Running { child };
    let base = format!("http://127.0.0.1:{port}");
    let http = client()?;
    let started = Instant::now();
    loop {
        let live = http
            .get(format!("{base}/health/liveliness"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if live {
            break;
        }
        ensure!(
            started.elapsed() < Duration::from_secs(120),
            "LiteLLM did not answer within 120 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok((running, base))
}
