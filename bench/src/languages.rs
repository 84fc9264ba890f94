//! `bench languages`: a tool call's cost in each language chatd's plugins are written in. The
//! Python and JavaScript examples (`examples/build-plugins` builds them, one file each) and the
//! bundled Rust `web_search` are called in-process through `ToolPlugin::invoke_measured`, as the
//! server calls a tool: a fresh instance per call (instantiation included), the call, the
//! teardown. Two calls each: arguments the plugin refuses at once (a JSON parse and an error
//! value: the same work in every language, so the difference is the runtime), and for Python and
//! JavaScript a real one (a unit conversion, an arithmetic expression). Memory is the instance's
//! peak (all its linear memories) during a call.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use chatd::plugins::loading::load::Plugin;
use chatd::plugins::testing::TestHost;

pub fn usage() -> &'static str {
    "usage: bench languages [--dir DIR] [--calls N]\n\
     needs the Python and JavaScript examples built: examples/build-plugins (into\n\
     target/language-plugins, the default DIR); default 2000 calls per row"
}

pub struct Options {
    dir: PathBuf,
    calls: usize,
}

pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        dir: PathBuf::from("target/language-plugins"),
        calls: 2_000,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("{flag} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "--dir" => o.dir = PathBuf::from(value()?),
            "--calls" => o.calls = value()?.parse()?,
            other => bail!("unknown option {other}\n{}", usage()),
        }
    }
    if o.calls == 0 {
        bail!("--calls must be at least 1");
    }
    Ok(o)
}

pub fn run(o: Options) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let cache = tempfile::tempdir()?;
        let host = TestHost::new(&[]).with_cache(cache.path());
        let rust = host
            .load_bundled("web_search")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let example = |id: &str, folder: &str| {
            let wasm = o.dir.join(format!("{id}.wasm"));
            let manifest = PathBuf::from("examples").join(folder).join("manifest.json");
            (wasm, manifest)
        };
        let mut loaded = vec![("Rust", rust, "web_search", None)];
        for (language, id, folder, tool, real) in [
            (
                "Python",
                "py_units",
                "python-units",
                "convert_units",
                r#"{"value":10,"from":"km","to":"mi"}"#,
            ),
            (
                "JavaScript",
                "js_calculator",
                "js-calculator",
                "calculate",
                r#"{"expression":"(2 + 3) * sqrt(16) / 4"}"#,
            ),
        ] {
            let (wasm, manifest) = example(id, folder);
            let bytes = std::fs::read(&wasm)
                .with_context(|| format!("{}: run examples/build-plugins first", wasm.display()))?;
            let started = Instant::now();
            let plugin = host
                .load(&bytes, &std::fs::read_to_string(&manifest)?)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            println!(
                "{language}: {id}, {:.1} MB of wasm, compiled in {:.2} s",
                bytes.len() as f64 / 1e6,
                started.elapsed().as_secs_f64()
            );
            loaded.push((language, plugin, tool, Some(real)));
        }
        println!(
            "\ntool call, instantiation included (sequential, in-process, {} calls each)",
            o.calls
        );
        println!(
            "{:<44} {:>9} {:>9} {:>9} {:>12}",
            "call", "p50 µs", "p99 µs", "calls/s", "memory MiB"
        );
        for (language, plugin, tool, real) in &loaded {
            measure(
                &format!("{language}: {tool}, refused arguments"),
                plugin,
                tool,
                "{}",
                o.calls,
                false,
            )
            .await?;
            if let Some(args) = real {
                measure(
                    &format!("{language}: {tool}, answered"),
                    plugin,
                    tool,
                    args,
                    o.calls,
                    true,
                )
                .await?;
            }
        }
        anyhow::Ok(())
    })
}

async fn measure(
    name: &str,
    plugin: &Plugin,
    tool: &str,
    args: &str,
    calls: usize,
    answers: bool,
) -> anyhow::Result<()> {
    let instance = plugin.as_tool().context("a tool plugin")?;
    let mut times = Vec::with_capacity(calls);
    let mut peak = 0;
    for round in 0..calls + calls.min(200) {
        let started = Instant::now();
        let (outcome, memory) = instance.invoke_measured(tool, args).await;
        let took = started.elapsed();
        match (outcome, answers) {
            (Ok(Ok(_)), true) | (Ok(Err(_)), false) => {}
            (other, _) => bail!(
                "{name}: unexpected {:?}",
                other.map(|r| r.map(|o| o.content))
            ),
        }
        // The first calls warm the pool's slots; they are not counted.
        if round >= calls.min(200) {
            times.push(took);
            peak = peak.max(memory);
        }
    }
    let total: f64 = times.iter().map(|t| t.as_secs_f64()).sum();
    times.sort_unstable();
    let us = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    println!(
        "{:<44} {:>9.1} {:>9.1} {:>9.0} {:>12.1}",
        name,
        us(0.5),
        us(0.99),
        times.len() as f64 / total,
        peak as f64 / (1024.0 * 1024.0)
    );
    Ok(())
}
