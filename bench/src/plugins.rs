//! `bench plugins`: the plugin host's figures.
//!
//! 1. Start to ready: the release binary (`target/release/chatd`, beside this program) is
//!    spawned with a fresh data folder and timed until `GET /health` answers: first boot (the
//!    bundled plugins are compiled) and restarts on the same folder (compiled code read from the
//!    cache). Idle RSS is read from /proc once a warm server answers. Then fresh data folders
//!    sharing the machine's compile cache (CHATD_CACHE_DIR), timed until `GET /ready`.
//! 2. Host overhead per tool call: a bundled tool called in-process through the same
//!    `ToolPlugin::invoke` the server uses, with arguments the plugin refuses at once, so the
//!    plugin's own work is a JSON parse of `{}`: what is measured is a fresh store, a fresh
//!    instance, the call, the result's trip back, and the store's teardown. `describe` (no
//!    arguments, a small list back) is shown too.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chatd::plugins::testing::TestHost;

pub struct Options {
    /// Skip the start-to-ready part (for profiling the calls).
    calls_only: bool,
    cold_runs: usize,
    warm_runs: usize,
    calls: usize,
}

pub fn usage() -> &'static str {
    "usage: bench plugins [--cold-runs N] [--warm-runs N] [--calls N] [--calls-only]\n\
     needs the release server binary: run `cargo build --release` first\n\
     defaults: 3 cold starts, 10 warm starts, 20000 calls per measured call"
}

pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        calls_only: false,
        cold_runs: 3,
        warm_runs: 10,
        calls: 20_000,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("{flag} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "--cold-runs" => o.cold_runs = value()?.parse()?,
            "--warm-runs" => o.warm_runs = value()?.parse()?,
            "--calls" => o.calls = value()?.parse()?,
            "--calls-only" => o.calls_only = true,
            other => bail!("unknown option {other}\n{}", usage()),
        }
    }
    if o.cold_runs == 0 || o.warm_runs == 0 || o.calls == 0 {
        bail!("every count must be at least 1");
    }
    Ok(o)
}

pub fn run(o: Options) -> anyhow::Result<()> {
    if !o.calls_only {
        startup(&o)?;
    }
    calls(&o)
}

pub(crate) fn server_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let binary = exe
        .parent()
        .context("the benchmark's folder")?
        .join("chatd");
    if !binary.is_file() {
        bail!(
            "{} is missing: run `cargo build --release` first",
            binary.display()
        );
    }
    Ok(binary)
}

/// A spawned server, stopped with SIGTERM on drop.
pub(crate) struct Running {
    pub(crate) child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// Spawns the server in `dir` and returns it with the time until `/health` answered.
fn start(binary: &Path, dir: &Path) -> anyhow::Result<(Running, Duration, String)> {
    let (running, took, loaded, _) = spawn(binary, dir, &[])?;
    Ok((running, took, loaded))
}

/// [`start`] with more environment (the addresses of mock upstreams, …); the last item of the
/// answer is the server's `host:port`.
pub(crate) fn start_with(
    binary: &Path,
    dir: &Path,
    env: &[(&str, &str)],
) -> anyhow::Result<(Running, Duration, String)> {
    let (running, took, _, addr) = spawn(binary, dir, env)?;
    Ok((running, took, addr))
}

fn spawn(
    binary: &Path,
    dir: &Path,
    env: &[(&str, &str)],
) -> anyhow::Result<(Running, Duration, String, String)> {
    let started = Instant::now();
    let mut child = Command::new(binary)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PORT", "0")
        .env("RUST_LOG", "info")
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let running = Running { child };
    let mut loaded = String::new();
    let mut addr = None;
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        let line = line?;
        if line.contains("plugins loaded") {
            loaded = line.split("INFO").last().unwrap_or("").trim().to_string();
        }
        if let Some(at) = line.find("listening on http://") {
            let rest = &line[at + "listening on http://".len()..];
            addr = rest.split_whitespace().next().map(str::to_string);
            break;
        }
    }
    let addr = addr.context("the server did not announce its address")?;
    // Keep reading (and dropping) the log, so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    loop {
        if answers(&addr, "/health")? {
            break;
        }
        if started.elapsed() > Duration::from_secs(120) {
            bail!("/health did not answer within 120 s");
        }
    }
    Ok((running, started.elapsed(), loaded, addr))
}

/// Whether `GET path` answers 200 now (false while nothing listens).
fn answers(addr: &str, path: &str) -> anyhow::Result<bool> {
    use std::io::{Read, Write};
    let Ok(mut tcp) = std::net::TcpStream::connect(addr) else {
        return Ok(false);
    };
    // The server's own address as the Host: open mode answers loopback names only.
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes())?;
    let mut answer = String::new();
    tcp.read_to_string(&mut answer)?;
    Ok(answer.starts_with("HTTP/1.1 200"))
}

/// [`spawn`], then until `GET /ready` answers 200 (the python tool's interpreter compiled).
fn until_ready(
    binary: &Path,
    dir: &Path,
    env: &[(&str, &str)],
) -> anyhow::Result<(Running, Duration, String)> {
    let (running, took, loaded, addr) = spawn(binary, dir, env)?;
    let waiting = Instant::now();
    while !answers(&addr, "/ready")? {
        if waiting.elapsed() > Duration::from_secs(300) {
            bail!("/ready did not answer 200 within 300 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok((running, took + waiting.elapsed(), loaded))
}

/// Issue 59: data folders sharing the machine's compile cache (CHATD_CACHE_DIR), each timed
/// until `/ready`: the first compiles every plugin, the others read them.
fn another_folder(o: &Options, binary: &Path) -> anyhow::Result<()> {
    println!(
        "\nanother data folder: fresh data folders sharing CHATD_CACHE_DIR, until GET /ready \
         answers 200 (the interpreter included)"
    );
    println!("{:<44} {:>9} {:>9} {:>9}", "", "min ms", "p50 ms", "max ms");
    let machine = tempfile::tempdir()?;
    let cache = machine
        .path()
        .to_str()
        .context("a UTF-8 temporary folder")?;
    let env = [("CHATD_CACHE_DIR", cache)];
    let first = tempfile::tempdir()?;
    let (running, took, first_line) = until_ready(binary, first.path(), &env)?;
    drop(running);
    let mut firsts = vec![took];
    let (mut others, mut other_line) = (Vec::new(), String::new());
    for _ in 0..o.warm_runs {
        let dir = tempfile::tempdir()?;
        let (running, took, line) = until_ready(binary, dir.path(), &env)?;
        drop(running);
        others.push(took);
        other_line = line;
    }
    row("the first (compiles every plugin)", &mut firsts);
    row("another (the machine's compile cache)", &mut others);
    println!(
        "  first ÷ another at p50: {:.0}",
        firsts[0].as_secs_f64() / others[others.len() / 2].as_secs_f64()
    );
    println!("  server said, the first: {first_line}");
    println!("  server said, another:   {other_line}");
    Ok(())
}

pub(crate) fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    status_kib(pid, "VmRSS")
}

/// A `… kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`), in KiB.
pub(crate) fn status_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("{field} in /proc/PID/status"))
}

fn startup(o: &Options) -> anyhow::Result<()> {
    let binary = server_binary()?;
    println!(
        "start to ready: spawn {} until GET /health answers 200",
        binary.display()
    );
    println!("{:<44} {:>9} {:>9} {:>9}", "", "min ms", "p50 ms", "max ms");
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    let mut rss = Vec::new();
    let mut last_cold_line = String::new();
    let mut last_warm_line = String::new();
    for _ in 0..o.cold_runs {
        let dir = tempfile::tempdir()?;
        let (running, took, line) = start(&binary, dir.path())?;
        cold.push(took);
        last_cold_line = line;
        drop(running);
        for _ in 0..o.warm_runs.div_ceil(o.cold_runs) {
            let (running, took, line) = start(&binary, dir.path())?;
            warm.push(took);
            last_warm_line = line;
            // Idle: a moment after the first answer, nothing else running.
            std::thread::sleep(Duration::from_millis(200));
            rss.push(rss_kib(running.child.id())?);
        }
    }
    row("first boot (compiles the bundled plugins)", &mut cold);
    row("restart (compiled code from the cache)", &mut warm);
    println!("  server said, first boot: {last_cold_line}");
    println!("  server said, restart:    {last_warm_line}");
    rss.sort_unstable();
    println!(
        "idle RSS after a warm start: min {:.1} MiB, median {:.1} MiB, max {:.1} MiB",
        rss[0] as f64 / 1024.0,
        rss[rss.len() / 2] as f64 / 1024.0,
        rss[rss.len() - 1] as f64 / 1024.0
    );
    another_folder(o, &binary)
}

fn row(name: &str, times: &mut [Duration]) {
    times.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{:<44} {:>9.1} {:>9.1} {:>9.1}",
        name,
        ms(times[0]),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1])
    );
}

fn calls(o: &Options) -> anyhow::Result<()> {
    // Two workers, like the server on this machine.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let cache = tempfile::tempdir()?;
        let host = TestHost::new(&[]).with_cache(cache.path());
        println!(
            "\nhost overhead per tool call (sequential, in-process, {} calls each)",
            o.calls
        );
        println!(
            "{:<44} {:>9} {:>9} {:>9} {:>9}",
            "call", "p50 µs", "p90 µs", "p99 µs", "calls/s"
        );
        for id in ["web_search", "fetch_url"] {
            let plugin = host
                .load_bundled(id)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let tool = plugin.as_tool().context("a tool plugin")?;
            let name = plugin.tools[0].name.clone();
            let invoke = || async {
                match tool.invoke(&name, "{}").await {
                    Ok(Err(_refused)) => Ok(()),
                    other => bail!("unexpected: {:?}", other.map(|r| r.map(|o| o.content))),
                }
            };
            measure(&format!("{id}: invoke, refused arguments"), o.calls, invoke).await?;
            let describe = || async {
                tool.describe()
                    .await
                    .map(drop)
                    .map_err(|e| anyhow::anyhow!("{e}"))
            };
            measure(&format!("{id}: describe"), o.calls, describe).await?;
            // The price of the pages kept resident (`plugins/runtime/engine.rs`): what a call
            // touched, per slot; the server keeps one per call it ever had in flight at once.
            // Read while the plugin is loaded: dropping it releases its slots.
            println!(
                "{id}: kept resident by its freed instance slots: {} KiB (prefix kept: {} KiB)",
                host.kept_memory_bytes() >> 10,
                chatd::plugins::runtime::engine::keep_resident() >> 10
            );
        }
        anyhow::Ok(())
    })
}

async fn measure<F, Fut>(name: &str, calls: usize, mut call: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    for _ in 0..calls.min(1_000) {
        call().await?;
    }
    let mut times = Vec::with_capacity(calls);
    let all = Instant::now();
    for _ in 0..calls {
        let t = Instant::now();
        call().await?;
        times.push(t.elapsed());
    }
    let total = all.elapsed();
    times.sort_unstable();
    let us = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    println!(
        "{:<44} {:>9.1} {:>9.1} {:>9.1} {:>9.0}",
        name,
        us(0.5),
        us(0.9),
        us(0.99),
        calls as f64 / total.as_secs_f64()
    );
    Ok(())
}
