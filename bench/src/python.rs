//! `bench python`: the interpreter behind the `python` tool, in-process, as the server runs it
//! (`ToolPlugin::open_session` and `invoke_in`, a session's folder in memory), beside a plain
//! Python tool plugin (the `py_units` example, a fresh instance per call) in the same run. For
//! `1+1` and for `import sympy; sympy.factorint(2**64-1)`:
//!
//! - a new session's first run (instantiation from the pre-initialised snapshot included);
//! - a run in a warm session;
//! - the memory one idle session holds: the process's private dirty memory growth with
//!   `--sessions` sessions alive after one run each, divided by their number;
//! - `--sessions` sessions with one run each arriving at once, at most `--concurrent` running
//!   (the rest queued, as `tools::python::Sessions` queues them): none may fail.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chatd::plugins::capabilities::files::tree::Folder;
use chatd::plugins::loading::load::Plugin;
use chatd::plugins::memory::TotalMemory;
use chatd::plugins::testing::TestHost;
use chatd::plugins::worlds::tool::ToolSession;

pub fn usage() -> &'static str {
    "usage: bench python [--runs N] [--sessions N] [--concurrent N] [--dir DIR]\n\
     the plain Python plugin compared with is examples/python-units, built by\n\
     examples/build-plugins into DIR (default target/language-plugins); defaults: 200 runs per\n\
     figure, 50 sessions, 4 at once (CHAT_PYTHON_MAX_CONCURRENT_RUNS's default)"
}

pub struct Options {
    runs: usize,
    sessions: usize,
    concurrent: usize,
    dir: std::path::PathBuf,
}

pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        runs: 200,
        sessions: 50,
        concurrent: 4,
        dir: "target/language-plugins".into(),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("{flag} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "--runs" => o.runs = value()?.parse()?,
            "--sessions" => o.sessions = value()?.parse()?,
            "--concurrent" => o.concurrent = value()?.parse()?,
            "--dir" => o.dir = value()?.into(),
            other => bail!("unknown option {other}\n{}", usage()),
        }
    }
    if o.runs == 0 || o.sessions == 0 || o.concurrent == 0 {
        bail!("--runs, --sessions and --concurrent must be at least 1");
    }
    Ok(o)
}

const CODES: [(&str, &str); 2] = [
    ("1+1", "1+1"),
    (
        "sympy.factorint(2**64-1)",
        "import sympy; sympy.factorint(2**64-1)",
    ),
];

fn args(code: &str) -> String {
    serde_json::json!({ "code": code }).to_string()
}

pub fn run(o: Options) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let cache = tempfile::tempdir()?;
        let host = TestHost::new(&[]).with_cache(cache.path());
        let started = Instant::now();
        let interpreter = Arc::new(
            host.load_bundled(chatd::plugins::builtin::INTERPRETER)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?,
        );
        println!(
            "interpreter: compiled and loaded in {:.2} s",
            started.elapsed().as_secs_f64()
        );
        printing(&interpreter).await?;
        let units = plain(&host, &o.dir).await?;
        println!(
            "\n{:<52} {:>9} {:>9}   plain Python plugin (py_units), same run",
            "figure", "p50 ms", "p99 ms"
        );
        for (label, code) in CODES {
            let firsts = new_sessions(&interpreter, code, o.runs).await?;
            let plain_calls = plain_calls(&units, o.runs).await?;
            row(
                &format!("{label}: a new session's first run"),
                firsts,
                &plain_calls,
            );
            let warm = warm_runs(&interpreter, code, o.runs).await?;
            row(
                &format!("{label}: a run in a warm session"),
                warm,
                &plain_calls,
            );
        }
        let (per_session, plain_peak) = idle_memory(&interpreter, &units, o.sessions).await?;
        println!(
            "{:<52} {:>9.1} MiB   one call's instance peak: {:.1} MiB (freed after the call)",
            format!("memory per idle session ({} alive)", o.sessions),
            per_session,
            plain_peak
        );
        for (label, code) in CODES {
            let (wall, mut waits) = at_once(&interpreter, code, o.sessions, o.concurrent).await?;
            let plain_wall = plain_at_once(&units, o.sessions, o.concurrent).await?;
            waits.sort_unstable();
            println!(
                "{:<52} {:>9.1} {:>9.1}   all {} done in {:.0} ms; plain: {:.0} ms",
                format!(
                    "{label}: {} sessions at once, {} running",
                    o.sessions, o.concurrent
                ),
                ms(quantile(&waits, 0.5)),
                ms(quantile(&waits, 0.99)),
                o.sessions,
                ms(wall),
                ms(plain_wall)
            );
        }
        anyhow::Ok(())
    })
}

/// 100 MB printed, past the session's output cap: every byte goes to the host, which keeps the
/// first characters and counts the rest (`plugins/runtime/capture.rs`).
const PRINTED: &str = "s = 'x' * 10**7\nfor _ in range(10):\n    print(s)";
/// The same text through the same Python streams into a sink inside the guest: what printing
/// costs without the host.
const SUNK: &str = "import io\n\
    class Sink(io.RawIOBase):\n    def writable(self): return True\n    def write(self, b): return len(b)\n\
    out = io.TextIOWrapper(io.BufferedWriter(Sink()), encoding='utf-8', line_buffering=True)\n\
    s = 'x' * 10**7\nfor _ in range(10):\n    print(s, file=out)";

async fn printing(plugin: &Plugin) -> anyhow::Result<()> {
    let tool = plugin.as_tool().context("a tool")?;
    let mut session = tool.open_session(folder(plugin)?, OUTPUT_CHARS);
    let (mut printed, mut sunk) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        printed.push(run_in(plugin, &mut session, PRINTED).await?);
        sunk.push(run_in(plugin, &mut session, SUNK).await?);
    }
    printed.sort_unstable();
    sunk.sort_unstable();
    let (to_host, in_guest) = (printed[2], sunk[2]);
    println!(
        "100 MB printed past the cap: {:.0} ms ({:.0} MB/s); into a sink in the guest: {:.0} ms ({:.1}x)",
        ms(to_host),
        100.0 / to_host.as_secs_f64(),
        ms(in_guest),
        to_host.as_secs_f64() / in_guest.as_secs_f64()
    );
    Ok(())
}

/// The plain Python tool plugin built by `examples/build-plugins`.
async fn plain(host: &TestHost, dir: &std::path::Path) -> anyhow::Result<Plugin> {
    let wasm = dir.join("py_units.wasm");
    let bytes = std::fs::read(&wasm)
        .with_context(|| format!("{}: run examples/build-plugins first", wasm.display()))?;
    let manifest = std::fs::read_to_string("examples/python-units/manifest.json")?;
    host.load(&bytes, &manifest)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
}

const UNITS_ARGS: &str = r#"{"value":10,"from":"km","to":"mi"}"#;

/// What a session keeps of each of stdout and stderr per call (the default setting).
const OUTPUT_CHARS: usize = 20_000;

fn folder(plugin: &Plugin) -> anyhow::Result<Folder> {
    let grant = plugin
        .as_tool()
        .and_then(|t| t.files_grant())
        .context("the interpreter holds a folder")?;
    Ok(Folder::new(grant.limits, TotalMemory::unlimited()))
}

async fn run_in(
    plugin: &Plugin,
    session: &mut ToolSession,
    code: &str,
) -> anyhow::Result<Duration> {
    let tool = plugin.as_tool().context("a tool")?;
    let started = Instant::now();
    let (outcome, _) = tool.invoke_in(session, "python", &args(code)).await;
    let took = started.elapsed();
    match outcome {
        Ok(Ok(output)) if !output.content.contains("\"error\":\"") => Ok(took),
        other => bail!("{code}: {:?}", other.map(|r| r.map(|o| o.content))),
    }
}

async fn new_sessions(plugin: &Plugin, code: &str, runs: usize) -> anyhow::Result<Vec<Duration>> {
    let tool = plugin.as_tool().context("a tool")?;
    let mut times = Vec::with_capacity(runs);
    for round in 0..runs + 20 {
        let started = Instant::now();
        let mut session = tool.open_session(folder(plugin)?, OUTPUT_CHARS);
        run_in(plugin, &mut session, code).await?;
        let took = started.elapsed();
        drop(session);
        if round >= 20 {
            times.push(took);
        }
    }
    Ok(times)
}

async fn warm_runs(plugin: &Plugin, code: &str, runs: usize) -> anyhow::Result<Vec<Duration>> {
    let tool = plugin.as_tool().context("a tool")?;
    let mut session = tool.open_session(folder(plugin)?, OUTPUT_CHARS);
    run_in(plugin, &mut session, code).await?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        times.push(run_in(plugin, &mut session, code).await?);
    }
    Ok(times)
}

async fn plain_calls(plugin: &Plugin, runs: usize) -> anyhow::Result<Vec<Duration>> {
    let tool = plugin.as_tool().context("a tool")?;
    let mut times = Vec::with_capacity(runs);
    for round in 0..runs + 20 {
        let started = Instant::now();
        let (outcome, _) = tool.invoke_measured("convert_units", UNITS_ARGS).await;
        let took = started.elapsed();
        if !matches!(outcome, Ok(Ok(_))) {
            bail!(
                "py_units failed: {:?}",
                outcome.map(|r| r.map(|o| o.content))
            );
        }
        if round >= 20 {
            times.push(took);
        }
    }
    Ok(times)
}

/// Private dirty memory growth per idle session, and a plain call's instance peak.
async fn idle_memory(
    plugin: &Plugin,
    units: &Plugin,
    sessions: usize,
) -> anyhow::Result<(f64, f64)> {
    let tool = plugin.as_tool().context("a tool")?;
    // One session made and dropped first, so the pool's slots and the code are warm.
    let mut warm = tool.open_session(folder(plugin)?, OUTPUT_CHARS);
    run_in(plugin, &mut warm, "1+1").await?;
    drop(warm);
    let before = private_dirty_kib()?;
    let mut alive = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let mut session = tool.open_session(folder(plugin)?, OUTPUT_CHARS);
        run_in(plugin, &mut session, "x = 1+1").await?;
        alive.push(session);
    }
    let after = private_dirty_kib()?;
    drop(alive);
    let (_, peak) = units
        .as_tool()
        .context("a tool")?
        .invoke_measured("convert_units", UNITS_ARGS)
        .await;
    Ok((
        (after.saturating_sub(before)) as f64 / 1024.0 / sessions as f64,
        peak as f64 / 1048576.0,
    ))
}

/// `sessions` new sessions' first runs arriving at once, `concurrent` at a time: the wall time
/// and each run's time from its arrival to its end (its wait included).
async fn at_once(
    plugin: &Arc<Plugin>,
    code: &str,
    sessions: usize,
    concurrent: usize,
) -> anyhow::Result<(Duration, Vec<Duration>)> {
    let turns = Arc::new(tokio::sync::Semaphore::new(concurrent));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let (plugin, turns, code) = (plugin.clone(), turns.clone(), code.to_string());
        tasks.push(tokio::spawn(async move {
            let arrived = Instant::now();
            let _turn = turns.acquire().await?;
            let tool = plugin.as_tool().context("a tool")?;
            let mut session = tool.open_session(folder(&plugin)?, OUTPUT_CHARS);
            run_in(&plugin, &mut session, &code).await?;
            anyhow::Ok(arrived.elapsed())
        }));
    }
    let mut waits = Vec::with_capacity(sessions);
    for task in tasks {
        waits.push(task.await??);
    }
    Ok((started.elapsed(), waits))
}

/// `calls` plain calls arriving at once, `concurrent` at a time: the wall time.
async fn plain_at_once(
    plugin: &Plugin,
    calls: usize,
    concurrent: usize,
) -> anyhow::Result<Duration> {
    let tool = plugin.as_tool().context("a tool")?;
    let turns = tokio::sync::Semaphore::new(concurrent);
    let started = Instant::now();
    let runs = (0..calls).map(|_| async {
        let _turn = turns.acquire().await?;
        match tool.invoke_measured("convert_units", UNITS_ARGS).await.0 {
            Ok(Ok(_)) => anyhow::Ok(()),
            other => bail!("py_units failed: {:?}", other.map(|r| r.map(|o| o.content))),
        }
    });
    for outcome in futures::future::join_all(runs).await {
        outcome?;
    }
    Ok(started.elapsed())
}

fn row(name: &str, mut times: Vec<Duration>, plain: &[Duration]) {
    times.sort_unstable();
    let mut plain = plain.to_vec();
    plain.sort_unstable();
    println!(
        "{:<52} {:>9.2} {:>9.2}   p50 {:.2} ms, p99 {:.2} ms (a fresh instance per call)",
        name,
        ms(quantile(&times, 0.5)),
        ms(quantile(&times, 0.99)),
        ms(quantile(&plain, 0.5)),
        ms(quantile(&plain, 0.99))
    );
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q) as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The process's private dirty memory (`/proc/self/smaps_rollup`), in KiB.
fn private_dirty_kib() -> anyhow::Result<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup")?;
    let kib = |field: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    Ok(kib("Private_Dirty:") + kib("Private_Hugetlb:"))
}
