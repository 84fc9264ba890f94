//! The plugin host against real components: the test plugins in `tests/plugins/`, built for
//! wasm32-wasip2 on first use, loaded and called through `chatd::plugins`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use chatd::plugins::manifest::Manifest;
use chatd::plugins::tool::{PluginError, ToolPlugin};
use chatd::plugins::{CallError, LoadError, compile, engine};

/// Builds the test plugins once per test process (cargo serialises concurrent builds on its
/// target-dir lock) and returns the component's bytes.
fn component(crate_name: &str) -> Vec<u8> {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let target = root.join("target").join("test-plugins");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .current_dir(&root)
            .args(["build", "--release", "--target", "wasm32-wasip2", "-p", "test-plugin-hostile", "-p", "test-plugin-reads-files", "--target-dir"])
            .arg(&target)
            .status()
            .expect("run cargo to build the test plugins");
        assert!(status.success(), "building the test plugins failed; if the target is missing, run `rustup target add wasm32-wasip2`");
        target.join("wasm32-wasip2").join("release")
    });
    std::fs::read(dir.join(format!("{}.wasm", crate_name.replace('-', "_"))))
        .expect("test plugin built")
}

fn manifest(id: &str, memory_mib: u32, timeout_ms: u64) -> Manifest {
    Manifest::parse(&format!(
        r#"{{"id":"{id}","kind":"tool","wit":"chatd:plugin@0.1.0","limits":{{"memoryMib":{memory_mib},"timeoutMs":{timeout_ms}}}}}"#
    ))
    .unwrap()
}

fn engine() -> &'static wasmtime::Engine {
    static ENGINE: OnceLock<wasmtime::Engine> = OnceLock::new();
    ENGINE.get_or_init(|| engine::new_engine().unwrap())
}

fn hostile(memory_mib: u32, timeout_ms: u64) -> ToolPlugin {
    let wasm = component("test-plugin-hostile");
    let compiled = compile(engine(), "hostile", &wasm).unwrap();
    let config = BTreeMap::from([("greeting".to_string(), "hello".to_string())]);
    ToolPlugin::new(
        engine(),
        manifest("hostile", memory_mib, timeout_ms),
        &compiled,
        config,
    )
    .unwrap()
}

#[tokio::test]
async fn a_tool_component_describes_and_invokes() {
    let plugin = hostile(64, 5_000);
    let tools = plugin.describe().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "echo",
            "spin",
            "eat_memory",
            "panic",
            "read_env",
            "http_get",
            "config"
        ]
    );
    let out = plugin
        .invoke("echo", r#"{"text":"hi there"}"#)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.content, "hi there");
    // The plugin's own typed error comes back as such.
    match plugin.invoke("echo", r#"{"text":5}"#).await.unwrap() {
        Err(PluginError::InvalidInput(why)) => assert_eq!(why, "text: must be a string"),
        other => panic!("{other:?}"),
    }
    // Granted settings are readable; nothing else is.
    let out = plugin.invoke("config", "{}").await.unwrap().unwrap();
    assert_eq!(out.content, r#"[("greeting", "hello")]"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infinite_loop_fails_its_own_call_within_the_deadline() {
    let plugin = std::sync::Arc::new(hostile(64, 300));
    let started = Instant::now();
    let spinning = {
        let plugin = plugin.clone();
        tokio::spawn(async move { plugin.invoke("spin", "{}").await })
    };
    // While it spins, other calls on the same plugin go through.
    for _ in 0..3 {
        let out = plugin
            .invoke("echo", r#"{"text":"still here"}"#)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(out.content, "still here");
    }
    assert!(
        !spinning.is_finished(),
        "the echo calls finished while the loop was still running"
    );
    let result = spinning.await.unwrap();
    let elapsed = started.elapsed();
    assert!(
        matches!(result, Err(CallError::Timeout { .. })),
        "{result:?}"
    );
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn a_memory_bomb_hits_the_cap_and_fails_cleanly() {
    let plugin = hostile(32, 10_000);
    match plugin.invoke("eat_memory", "{}").await {
        Err(CallError::Trap { reason, .. }) => {
            assert!(reason.contains("growing memory"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    // The next call gets a fresh instance and works.
    assert_eq!(
        plugin
            .invoke("echo", r#"{"text":"ok"}"#)
            .await
            .unwrap()
            .unwrap()
            .content,
        "ok"
    );
}

#[tokio::test]
async fn a_panic_becomes_a_clean_error() {
    let plugin = hostile(64, 5_000);
    let result = plugin.invoke("panic", "{}").await;
    match result {
        Err(CallError::Trap { id, reason }) => {
            assert_eq!(id, "hostile");
            assert_eq!(reason, "wasm trap: wasm `unreachable` instruction executed");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        plugin
            .invoke("echo", r#"{"text":"ok"}"#)
            .await
            .unwrap()
            .unwrap()
            .content,
        "ok"
    );
}

#[tokio::test]
async fn the_environment_is_empty_inside_a_plugin() {
    // SAFETY: set before any plugin call of this test; the variable is unique to it.
    unsafe { std::env::set_var("CHATD_TEST_SECRET", "do-not-leak") };
    let plugin = hostile(64, 5_000);
    let out = plugin.invoke("read_env", "{}").await.unwrap().unwrap();
    assert_eq!(out.content, "", "a plugin sees no environment variables");
}

#[tokio::test]
async fn http_that_was_not_granted_is_denied() {
    let plugin = hostile(64, 5_000);
    match plugin
        .invoke("http_get", r#"{"url":"http://127.0.0.1:9/"}"#)
        .await
        .unwrap()
    {
        Err(PluginError::Denied(why)) => assert!(why.contains("not granted"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_component_that_needs_the_filesystem_does_not_load() {
    let wasm = component("test-plugin-reads-files");
    let compiled = compile(engine(), "reads-files", &wasm).unwrap();
    match ToolPlugin::new(
        engine(),
        manifest("reads-files", 64, 5_000),
        &compiled,
        BTreeMap::new(),
    ) {
        Err(LoadError::Link { reason, .. }) => {
            assert!(reason.contains("wasi:filesystem"), "{reason}")
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a component importing wasi:filesystem was linked"),
    }
}

#[tokio::test]
async fn garbage_is_not_a_component() {
    match compile(engine(), "junk", b"\0asm but not really") {
        Err(LoadError::Compile { id, .. }) => assert_eq!(id, "junk"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}
