//! The plugin host against real components: the test plugins in `tests/plugins/`, built for
//! wasm32-wasip2 on first use, loaded and called through `chatd::plugins`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use chatd::egress::{HttpGrant, Origin};
use chatd::plugins::LoadError;
use chatd::plugins::capabilities::Capabilities;
use chatd::plugins::manifest::Manifest;
use chatd::plugins::runtime::CallError;
use chatd::plugins::runtime::cache::compile;
use chatd::plugins::runtime::engine;
use chatd::plugins::testing::TestHost;
use chatd::plugins::worlds::tool::{PluginError, ToolPlugin};

use crate::support::test_component;

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
    let config = BTreeMap::from([("greeting".to_string(), "hello".to_string())]);
    hostile_with(
        memory_mib,
        timeout_ms,
        Capabilities {
            config: Arc::new(config),
            ..Capabilities::none()
        },
    )
}

/// The hostile component, compiled once per test process (cranelift is the slow part).
fn hostile_with(memory_mib: u32, timeout_ms: u64, caps: Capabilities) -> ToolPlugin {
    hostile_as("hostile", memory_mib, timeout_ms, caps)
}

/// [`hostile_with`] under another plugin id.
fn hostile_as(id: &str, memory_mib: u32, timeout_ms: u64, caps: Capabilities) -> ToolPlugin {
    static COMPILED: OnceLock<wasmtime::component::Component> = OnceLock::new();
    let compiled = COMPILED.get_or_init(|| {
        compile(engine(), "hostile", &test_component("test-plugin-hostile")).unwrap()
    });
    ToolPlugin::new(
        engine(),
        manifest(id, memory_mib, timeout_ms),
        compiled,
        caps,
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
            "config",
            "hold_memory",
            "forge_log",
            "remember"
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

/// Every call starts from the component's own memory, however its slot of the pool was reset
/// (`plugins/runtime/engine.rs` keeps the pages a call touched resident and resets them in
/// place): statics an earlier call wrote, zeroed ones and one the component's data sets, are as
/// the component has them, one call after another and many at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_call_sees_what_an_earlier_call_left_in_memory() {
    let plugin = Arc::new(hostile(64, 5_000));
    let pristine = "calls 0, page 0, seeded 24301";
    for _ in 0..5 {
        let out = plugin.invoke("remember", "{}").await.unwrap().unwrap();
        assert_eq!(out.content, pristine);
    }
    let calls: Vec<_> = (0..16)
        .map(|_| {
            let plugin = plugin.clone();
            tokio::spawn(async move { plugin.invoke("remember", "{}").await })
        })
        .collect();
    for call in calls {
        let out = call.await.unwrap().unwrap().unwrap();
        assert_eq!(out.content, pristine);
    }
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
async fn traps_timeouts_and_memory_cap_hits_are_counted_for_their_plugin() {
    // An id of its own: the metrics are the process's, shared with the other tests.
    let plugin = hostile_as("hostile_counted", 32, 300, Capabilities::none());
    assert!(plugin.invoke("panic", "{}").await.is_err());
    assert!(plugin.invoke("eat_memory", "{}").await.is_err());
    assert!(matches!(
        plugin.invoke("spin", "{}").await,
        Err(CallError::Timeout { .. })
    ));
    plugin
        .invoke("echo", r#"{"text":"ok"}"#)
        .await
        .unwrap()
        .unwrap();
    let text = chatd::telemetry::metrics::render();
    for line in [
        r#"chatd_plugin_calls_total{plugin="hostile_counted",outcome="trap"} 2"#,
        r#"chatd_plugin_calls_total{plugin="hostile_counted",outcome="timeout"} 1"#,
        r#"chatd_plugin_calls_total{plugin="hostile_counted",outcome="ok"} 1"#,
        r#"chatd_plugin_memory_cap_hits_total{plugin="hostile_counted"} 1"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
}

#[tokio::test]
async fn a_panic_becomes_a_clean_error() {
    let plugin = hostile(64, 5_000);
    let result = plugin.invoke("panic", "{}").await;
    match result {
        Err(CallError::Trap { id, reason }) => {
            assert_eq!(id, "hostile");
            assert!(
                reason.starts_with("wasm trap: wasm `unreachable` instruction executed (stderr: "),
                "{reason}"
            );
            assert!(
                reason.contains("deliberate panic"),
                "the panic message reaches the error: {reason}"
            );
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

/// A loopback upstream that records the headers it receives.
struct Upstream {
    base: String,
    seen: Arc<Mutex<Vec<axum::http::HeaderMap>>>,
}

async fn upstream() -> Upstream {
    use axum::routing::get;
    let seen: Arc<Mutex<Vec<axum::http::HeaderMap>>> = Arc::default();
    let record = seen.clone();
    let app = axum::Router::new()
        .route(
            "/hello",
            get(move |headers: axum::http::HeaderMap| {
                record.lock().unwrap().push(headers);
                async { "hello" }
            }),
        )
        .route(
            "/to-metadata",
            get(|| async {
                axum::response::Redirect::to("http://169.254.169.254/latest/meta-data/")
            }),
        )
        .route(
            "/to",
            get(|axum::extract::Query(q): axum::extract::Query<BTreeMap<String, String>>| async move {
                axum::response::Redirect::to(&q["url"])
            }),
        )
        .route(
            "/to-hello",
            get(|| async { axum::response::Redirect::to("/hello") }),
        )
        .route("/big", get(|| async { vec![b'x'; 2 * 1024 * 1024] }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Upstream { base, seen }
}

/// `trusted` are operator-configured origins (reachable at any address, loopback included).
fn grant(trusted: &[&str], public_web: bool, allow_private: bool) -> HttpGrant {
    HttpGrant {
        trusted: trusted.iter().map(|o| Origin::parse(o).unwrap()).collect(),
        origins: Vec::new(),
        public_web,
        allow_private,
        local_network: false,
        credentials: Vec::new(),
        scrubbed: Arc::new([]),
        max_body_bytes: 1024 * 1024,
        max_timeout: Duration::from_secs(5),
    }
}

fn with_http(grant: HttpGrant) -> ToolPlugin {
    hostile_with(
        64,
        10_000,
        Capabilities {
            http: Arc::new(grant),
            ..Capabilities::none()
        },
    )
}

async fn http_get(plugin: &ToolPlugin, url: &str) -> Result<String, PluginError> {
    let args = serde_json::json!({ "url": url }).to_string();
    plugin
        .invoke("http_get", &args)
        .await
        .unwrap()
        .map(|out| out.content)
}

#[tokio::test]
async fn http_that_was_not_granted_is_denied() {
    let up = upstream().await;
    match http_get(&hostile(64, 5_000), &format!("{}/hello", up.base)).await {
        Err(PluginError::Denied(why)) => assert!(why.contains("is not granted"), "{why}"),
        other => panic!("{other:?}"),
    }
    // A grant for one origin is not a grant for another port on the same host.
    let other = upstream().await;
    match http_get(
        &with_http(grant(&[&up.base], false, false)),
        &format!("{}/hello", other.base),
    )
    .await
    {
        Err(PluginError::Denied(_)) => {}
        other => panic!("{other:?}"),
    }
    assert!(
        up.seen.lock().unwrap().is_empty() && other.seen.lock().unwrap().is_empty(),
        "no request left the host"
    );
}

#[tokio::test]
async fn a_granted_service_gets_the_credential_the_plugin_never_sees() {
    let (up, other) = (upstream().await, upstream().await);
    let secret = "sk-test-4f2a9c-never-in-the-sandbox";
    // Grants decided the production way: a manifest and chatd's own settings. The hostile
    // component takes web_search's id, so it owns engine_a, and asks for another origin.
    let host = TestHost::new(&[
        "--engine-a-base-url",
        &up.base,
        "--engine-a-api-key",
        secret,
        "--chatd-allow-private-networks",
        "true",
    ]);
    let manifest = format!(
        r#"{{"id":"web_search","kind":"tool","wit":"chatd:plugin@0.1.0",
            "grants":{{"services":["engine_a"],"http":["{}"]}}}}"#,
        other.base
    );
    let loaded = host
        .load(&test_component("test-plugin-hostile"), &manifest)
        .await
        .unwrap();
    let plugin = loaded.as_tool().unwrap();
    assert_eq!(
        http_get(plugin, &format!("{}/hello", up.base))
            .await
            .unwrap(),
        "status 200\nhello"
    );
    let seen = up.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0]["x-api-key"], secret,
        "the upstream receives the key"
    );

    // Inside the sandbox the key is nowhere: the settings hold the base URL only, the
    // environment is empty.
    let config = plugin
        .invoke("config", "{}")
        .await
        .unwrap()
        .unwrap()
        .content;
    assert_eq!(config, format!(r#"[("engine_a_base_url", "{}")]"#, up.base));
    let env = plugin
        .invoke("read_env", "{}")
        .await
        .unwrap()
        .unwrap()
        .content;
    assert_eq!(env, "");

    // A same-origin redirect is followed (and checked) by the host, the key added again; a
    // redirect to another origin does not carry it.
    assert_eq!(
        http_get(plugin, &format!("{}/to-hello", up.base))
            .await
            .unwrap(),
        "status 200\nhello"
    );
    assert_eq!(up.seen.lock().unwrap()[1]["x-api-key"], secret);
    assert_eq!(
        http_get(plugin, &format!("{}/to?url={}/hello", up.base, other.base))
            .await
            .unwrap(),
        "status 200\nhello"
    );
    let at_other = other.seen.lock().unwrap().clone();
    assert_eq!(at_other.len(), 1);
    assert!(at_other[0].get("x-api-key").is_none(), "{:?}", at_other[0]);
}

#[tokio::test]
async fn the_public_web_excludes_private_addresses_and_redirects_to_them() {
    let up = upstream().await;
    let port = up.base.rsplit(':').next().unwrap().to_string();
    let web = with_http(grant(&[], true, false));
    // None of these is contacted: the address is refused before any connection.
    for url in [
        format!("http://127.0.0.1:{port}/hello"),
        format!("http://localhost:{port}/hello"),
        "http://10.0.0.1/".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        format!("http://[::1]:{port}/hello"),
    ] {
        match http_get(&web, &url).await {
            Err(PluginError::Denied(why)) => assert!(
                why.contains("private") || why.contains("cloud metadata"),
                "{url}: {why}"
            ),
            other => panic!("{url}: {other:?}"),
        }
    }
    assert!(up.seen.lock().unwrap().is_empty());
    // A trusted origin that redirects to a private address: the hop is refused, for each kind
    // of private target, before any connection to it.
    let other = upstream().await;
    let other_port = other.base.rsplit(':').next().unwrap().to_string();
    let trusted_but_web = with_http(grant(&[&up.base], true, false));
    for target in [
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.0.0.1/".to_string(),
        format!("http://127.0.0.1:{other_port}/hello"),
        format!("http://localhost:{other_port}/hello"),
    ] {
        let url = format!("{}/to?url={target}", up.base);
        match http_get(&trusted_but_web, &url).await {
            Err(PluginError::Denied(why)) => assert!(
                why.contains("private") || why.contains("cloud metadata"),
                "{target}: {why}"
            ),
            other => panic!("{target}: {other:?}"),
        }
    }
    assert!(
        other.seen.lock().unwrap().is_empty(),
        "the redirect target was never contacted"
    );
    // With CHATD_ALLOW_PRIVATE_NETWORKS the same redirect is followed, but never one to a
    // cloud metadata address, in any spelling.
    let open_web = with_http(grant(&[&up.base], true, true));
    for target in [
        "http://169.254.169.254/latest/meta-data/",
        "http://100.100.100.200/latest/meta-data/",
        "http://[::ffff:100.100.100.200]/latest/meta-data/",
        "http://169.254.170.2/v2/credentials",
        "http://[fd00:ec2::254]/latest/meta-data/",
    ] {
        let url = format!("{}/to?url={target}", up.base);
        match http_get(&open_web, &url).await {
            Err(PluginError::Denied(why)) => {
                assert!(why.contains("cloud metadata"), "{target}: {why}")
            }
            other => panic!("{target}: {other:?}"),
        }
        match http_get(&open_web, target).await {
            Err(PluginError::Denied(why)) => {
                assert!(why.contains("cloud metadata"), "{target}: {why}")
            }
            other => panic!("{target}: {other:?}"),
        }
    }
    assert_eq!(
        http_get(
            &open_web,
            &format!("{}/to?url=http://localhost:{other_port}/hello", up.base)
        )
        .await
        .unwrap(),
        "status 200\nhello"
    );
    // CHATD_ALLOW_PRIVATE_NETWORKS lets the public web reach loopback.
    let open = with_http(grant(&[], true, true));
    assert_eq!(
        http_get(&open, &format!("http://127.0.0.1:{port}/hello"))
            .await
            .unwrap(),
        "status 200\nhello"
    );
}

#[tokio::test]
async fn a_plugins_own_authorization_does_not_follow_a_redirect_to_another_origin() {
    let (a, b) = (upstream().await, upstream().await);
    let plugin = with_http(grant(&[&a.base, &b.base], false, false));
    let args = serde_json::json!({
        "url": format!("{}/to?url={}/hello", a.base, b.base),
        "authorization": "Bearer plugin-token",
    });
    let out = plugin
        .invoke("http_get", &args.to_string())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.content, "status 200\nhello");
    let seen = b.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].get("authorization").is_none(), "{:?}", seen[0]);
    // Same origin: it is kept.
    let args = serde_json::json!({ "url": format!("{}/to-hello", a.base), "authorization": "Bearer plugin-token" });
    plugin
        .invoke("http_get", &args.to_string())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        a.seen.lock().unwrap()[0]["authorization"],
        "Bearer plugin-token"
    );
}

#[tokio::test]
async fn response_bodies_are_capped() {
    let up = upstream().await;
    match http_get(
        &with_http(grant(&[&up.base], false, false)),
        &format!("{}/big", up.base),
    )
    .await
    {
        Err(PluginError::Transport(why)) => assert!(why.contains("1048576-byte cap"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_component_that_needs_the_filesystem_does_not_load() {
    let wasm = test_component("test-plugin-reads-files");
    let compiled = compile(engine(), "reads-files", &wasm).unwrap();
    match ToolPlugin::new(
        engine(),
        manifest("reads-files", 64, 5_000),
        &compiled,
        Capabilities::none(),
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
