//! Tool plugins written in Python and JavaScript, built from `examples/` (and the hostile
//! `tests/plugins/hostile-python`) by `examples/build-plugins` with the pinned componentize-py
//! and componentize-js (`.ci/plugin-toolchains`), one file each: listed and called by a model in
//! the tool loop, an HTTP call with the operator's key, the hostile one contained, a component
//! that imports files refused, and PLUGINS_DIR compiling after the server listens.
//!
//! Without the toolchains the tests say so and pass, unless CHATD_REQUIRE_PLUGIN_LANGS is set
//! (`.ci/run` sets it), so CI never skips them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use chatd::plugins::runtime::CallError;
use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::transcript;
use crate::live_replies::{self, C, ask, call, text};
use crate::process;
use crate::support::{Options, TestServer, plugin_cache_dir, until, write_config};
use crate::wasm::unique;

const BIN: &str = env!("CARGO_BIN_EXE_chatd");
const KEY: &str = "wx-py-js-5d2e8a-operator-secret";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub(crate) fn componentize_py() -> PathBuf {
    root().join("target/plugin-venv/bin/componentize-py")
}

pub(crate) fn componentize_js() -> PathBuf {
    root().join("target/plugin-node/node_modules/.bin/componentize-js")
}

/// Whether componentize-py and componentize-js are installed (`.ci/plugin-toolchains`); when
/// not, the caller skips, unless CHATD_REQUIRE_PLUGIN_LANGS is set.
pub(crate) fn toolchains() -> bool {
    if componentize_py().exists() && componentize_js().exists() {
        return true;
    }
    assert!(
        std::env::var_os("CHATD_REQUIRE_PLUGIN_LANGS").is_none(),
        "CHATD_REQUIRE_PLUGIN_LANGS is set but the toolchains are missing \
         (.ci/plugin-toolchains installs them)"
    );
    eprintln!(
        "skipped: no componentize-py or componentize-js in target/ (run .ci/plugin-toolchains)"
    );
    false
}

/// The folder of the built Python and JavaScript plugins, built once per test process; `None`
/// (the test skips) without the toolchains.
fn built() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if !toolchains() {
                return None;
            }
            let out = root().join("target/language-plugins");
            let status = Command::new(root().join("examples/build-plugins"))
                .arg(&out)
                .env("CHATD", BIN)
                .status()
                .expect("run examples/build-plugins");
            assert!(status.success(), "examples/build-plugins failed");
            Some(out)
        })
        .as_deref()
}

/// The built plugin `id` (one file, its manifest inside).
fn plugin(dir: &Path, id: &str) -> Vec<u8> {
    std::fs::read(dir.join(format!("{id}.wasm"))).expect("the plugin was built")
}

fn weather_service(url: &str) -> String {
    format!(
        "[services.weather]\nbase_url = \"{url}\"\napi_key = \"{KEY}\"\n\
         plugins = [\"py_weather\", \"js_weather\"]\n"
    )
}

fn lisbon() -> Reply {
    Reply::json(
        200,
        json!({"city": "Lisbon", "temperatureC": 21.5, "conditions": "clear"}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_and_javascript_tools_serve_in_a_tool_loop_with_the_operators_key() {
    let Some(built) = built() else { return };
    let weather =
        ScriptedUpstream::start([("GET /current", lisbon()), ("GET /current", lisbon())]).await;
    let calls = [
        call(
            "call_1",
            "convert_units",
            r#"{"value":10,"from":"km","to":"mi"}"#,
        ),
        call(
            "call_2",
            "calculate",
            r#"{"expression":"(2 + 3) * sqrt(16) / 4"}"#,
        ),
        call("call_3", "current_weather", r#"{"city":"Lisbon"}"#),
        call("call_4", "js_current_weather", r#"{"city":"Lisbon"}"#),
    ];
    let model = ScriptedUpstream::start([
        (C.route, live_replies::paced(C, &calls)),
        (C.route, live_replies::paced(C, &[text(&["Done."])])),
    ])
    .await;
    let plugins = tempfile::tempdir().unwrap();
    for id in ["py_units", "py_weather", "js_calculator", "js_weather"] {
        std::fs::write(plugins.path().join(format!("{id}.wasm")), plugin(built, id)).unwrap();
    }
    let files = tempfile::tempdir().unwrap();
    let options = Options {
        plugins_dir: Some(plugins.path().to_path_buf()),
        config: Some(write_config(files.path(), &weather_service(&weather.url()))),
        ..Options::default()
    };
    let server = live_replies::server(C, &model, options).await;

    let (status, tools) = server.get("/v1/chat-tools").await;
    assert_eq!(status, StatusCode::OK);
    let names = crate::hot_reload::tool_names(&tools);
    for name in [
        "convert_units",
        "calculate",
        "current_weather",
        "js_current_weather",
    ] {
        assert!(names.contains(&name.to_string()), "{names:?}");
    }

    let events = ask(&server, C, "Some questions").await.rest().await;
    let done: Vec<&Value> = events
        .iter()
        .filter(|e| e.name == "tool_call" && e.data["status"] != "initiated")
        .map(|e| &e.data)
        .collect();
    let result = |name: &str| {
        let call = done.iter().find(|d| d["name"] == name);
        let call = call.unwrap_or_else(|| panic!("{name} in {done:?}"));
        assert_eq!(call["status"], "completed", "{call}");
        call["resultPreview"].as_str().unwrap().to_string()
    };
    assert_eq!(result("convert_units"), "10 km = 6.21371 mi");
    assert_eq!(result("calculate"), "(2 + 3) * sqrt(16) / 4 = 5");
    assert_eq!(result("current_weather"), "Lisbon: 21.5 °C, clear");
    assert_eq!(result("js_current_weather"), "Lisbon: 21.5 °C, clear");
    assert_eq!(events.last().unwrap().name, "done");

    // The key went to the service on the wire, from both languages, and nowhere else.
    let asked = weather.requests();
    assert_eq!(asked.len(), 2);
    for request in &asked {
        assert_eq!(request.query.as_deref(), Some("city=Lisbon"));
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    let chat_id = events[0].data["chatId"].as_str().unwrap();
    let rows = transcript(&server, chat_id).await;
    assert!(
        rows.iter()
            .any(|(role, text)| role == "tool" && text == "10 km = 6.21371 mi"),
        "{rows:?}"
    );
    assert!(!format!("{rows:?}").contains(KEY));
    // The second round gave the model every result.
    let second = model.requests().last().unwrap().json().to_string();
    assert!(
        second.contains("6.21371") && second.contains("21.5 °C"),
        "{second}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_python_plugin_fails_its_own_calls_only() {
    let Some(built) = built() else { return };
    let plugins = tempfile::tempdir().unwrap();
    std::fs::write(
        plugins.path().join("hostile_python.wasm"),
        plugin(built, "hostile_python"),
    )
    .unwrap();
    let server = TestServer::start_with(Options {
        plugins_dir: Some(plugins.path().to_path_buf()),
        ..Options::default()
    })
    .await;
    let host = server.state.plugins.clone();
    until(&host, "hostile_python loads", |p| {
        p.snapshot().plugin("hostile_python").is_some()
    })
    .await;
    let loaded = host.snapshot().plugin("hostile_python").unwrap().clone();
    let run = |name: &'static str| {
        let plugin = loaded.clone();
        async move {
            let started = Instant::now();
            let tool = plugin.as_tool().unwrap();
            (tool.invoke(name, "{}").await, started.elapsed())
        }
    };

    // No file and no socket: the stubs trap, and only this call fails.
    for name in ["py_read_file", "py_open_socket"] {
        let (outcome, _) = run(name).await;
        assert!(
            matches!(&outcome, Err(CallError::Trap { .. })),
            "{name}: {outcome:?}"
        );
    }
    // No environment: not the server's, not the builder's.
    let (outcome, _) = run("py_environment").await;
    assert_eq!(outcome.unwrap().unwrap().content, "(empty)");
    // A loop ends at the manifest's deadline (2 s), while the server keeps answering.
    let spinning = tokio::spawn(run("py_spin"));
    let (status, _) = server.get("/health").await;
    assert_eq!(status, StatusCode::OK);
    let (outcome, took) = spinning.await.unwrap();
    assert!(
        matches!(&outcome, Err(CallError::Timeout { .. })),
        "{outcome:?}"
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
    // Allocating without end hits the manifest's 48 MiB.
    let (outcome, _) = run("py_hog").await;
    let why = format!("{outcome:?}");
    assert!(why.contains("memory limit is 50331648 bytes"), "{why}");
    // And the plugin still serves.
    let (outcome, _) = run("py_echo").await;
    assert_eq!(outcome.unwrap().unwrap().content, "{}");
    server.stop().await;
}

#[tokio::test]
async fn a_python_component_that_imports_files_is_refused_with_the_flag_to_build_it_with() {
    let Some(_) = built() else { return };
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("unstubbed.wasm");
    // The hostile plugin as a third party might first build it: without --stub-wasi.
    let status = Command::new(componentize_py())
        .args(["-q", "-d"])
        .arg(root().join("wit"))
        .args(["-w", "tool", "componentize", "-p"])
        .arg(root().join("tests/plugins/hostile-python"))
        .arg("app")
        .arg("-o")
        .arg(&wasm)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(
        dir.path().join("unstubbed.json"),
        r#"{"id":"unstubbed","kind":"tool","wit":"chatd:plugin@0.1.0"}"#,
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["plugins", "check"])
        .arg(&wasm)
        .env("PLUGIN_CACHE_DIR", plugin_cache_dir())
        .env("CHATD_CACHE_DIR", plugin_cache_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let line = String::from_utf8_lossy(&out.stderr);
    assert!(
        line.contains("imports wasi:filesystem/")
            && line.contains("componentize-py --stub-wasi")
            && line.lines().count() == 1,
        "{line}"
    );
}

/// A chatd binary on `plugins` and `env`, the compile cache in `cache`; killed when dropped.
struct Started {
    child: std::process::Child,
    base: String,
    lines: std::sync::mpsc::Receiver<String>,
    /// Its lines before the one saying where it listens.
    startup: Vec<String>,
    /// From spawning to the first 200 from `/health`.
    to_health: Duration,
}

impl Started {
    /// The names `GET /v1/chat-tools` lists.
    async fn tool_names(&self) -> Vec<String> {
        let tools: Value = reqwest::get(format!("{}/v1/chat-tools", self.base))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        crate::hot_reload::tool_names(&tools)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_binary(dir: &Path, plugins: &Path, cache: &Path, config: &Path) -> Started {
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PORT", "0")
        .env("PLUGINS_DIR", plugins)
        .env("PLUGIN_CACHE_DIR", cache)
        .env("CHATD_CONFIG", config)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = process::stdout_lines(&mut child);
    let (base, startup) = tokio::task::block_in_place(|| process::listening_after(&lines));
    let client = reqwest::Client::new();
    loop {
        let health = client.get(format!("{base}/health")).send().await;
        if health.is_ok_and(|r| r.status() == StatusCode::OK) {
            break;
        }
        // Not a busy loop: it would take a core from the compile being measured beside it.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Started {
        child,
        base,
        lines,
        startup,
        to_health: started.elapsed(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_python_plugins_compile_after_the_server_listens() {
    let Some(built) = built() else { return };
    let dir = tempfile::tempdir().unwrap();
    // The bundled plugins come from the suite's cache, as at any later start; the Python ones
    // are bytes no cache has seen.
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    for entry in std::fs::read_dir(plugin_cache_dir()).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "cwasm") {
            std::fs::copy(entry.path(), cache.join(entry.file_name())).unwrap();
        }
    }
    let weather = ScriptedUpstream::start([]).await;
    let config = write_config(dir.path(), &weather_service(&weather.url()));
    let empty = dir.path().join("empty");
    let python = dir.path().join("python");
    std::fs::create_dir(&empty).unwrap();
    std::fs::create_dir(&python).unwrap();
    let tag = format!("{}-{:?}", std::process::id(), Instant::now());
    for id in ["py_units", "py_weather", "hostile_python"] {
        let wasm = unique(plugin(built, id), &tag);
        std::fs::write(python.join(format!("{id}.wasm")), wasm).unwrap();
    }

    let none = start_binary(dir.path(), &empty, &cache, &config).await;
    let none_took = none.to_health;
    drop(none);
    let three = start_binary(dir.path(), &python, &cache, &config).await;
    let ratio = three.to_health.as_secs_f64() / none_took.as_secs_f64();
    eprintln!(
        "/health answered {:?} after spawn with none, {:?} with three Python plugins \
         compiling: {ratio:.2}x",
        none_took, three.to_health
    );
    // The figure is printed, not judged: a test asserts no time (BENCHMARKS.md keeps the
    // startup's figures). What must hold is below: the server answered while they compiled.
    // Not ready, and not listing them, until they are compiled (seconds, uncached), then both.
    let client = reqwest::Client::new();
    let ready = client.get(format!("{}/ready", three.base)).send().await;
    let ready = ready.unwrap();
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = ready.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("PLUGINS_DIR"),
        "{body}"
    );
    let early = three.tool_names().await;
    assert!(!early.contains(&"convert_units".to_string()), "{early:?}");
    let line = tokio::task::block_in_place(|| {
        process::line_containing(&three.startup, &three.lines, "PLUGINS_DIR's")
    });
    assert!(line.contains("PLUGINS_DIR's 3 in the background"), "{line}");
    let ready = client.get(format!("{}/ready", three.base)).send().await;
    assert_eq!(ready.unwrap().status(), StatusCode::OK);
    let names = three.tool_names().await;
    for name in ["convert_units", "current_weather", "py_echo"] {
        assert!(names.contains(&name.to_string()), "{names:?}");
    }
    drop(three);

    // The next start finds them in the compile cache.
    let again = start_binary(dir.path(), &python, &cache, &config).await;
    let line = tokio::task::block_in_place(|| {
        process::line_containing(&again.startup, &again.lines, "PLUGINS_DIR's")
    });
    let cached = line.split('(').nth(1).unwrap_or_default();
    let total = line
        .split_whitespace()
        .find_map(|w| w.parse::<usize>().ok());
    assert!(
        cached.starts_with(&format!("{} from the compile cache", total.unwrap())),
        "{line}"
    );
}
