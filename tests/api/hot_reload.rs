//! PLUGINS_DIR at runtime: plugins dropped in, replaced, broken and removed while the server
//! runs, seen through `GET /v1/chat-tools` and the plugin registry. Each step awaits the
//! registry's scan counter instead of sleeping.

use chatd::plugins::loading::plugin_host::PluginHost;
use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use serde_json::{Value, json};

use crate::support::{Options, TestServer, deploy, test_component, until};

fn manifest(id: &str, version: &str, extra: &str) -> String {
    format!(
        r#"{{"id":"{id}","kind":"tool","wit":"chatd:plugin@0.1.0","version":"{version}"{extra}}}"#
    )
}

pub(crate) fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn serves(plugins: &PluginHost, id: &str, version: &str) -> bool {
    plugins
        .snapshot()
        .plugin(id)
        .is_some_and(|p| p.manifest().version.as_deref() == Some(version))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_come_and_go_without_a_restart_and_calls_in_flight_finish() {
    let folder = tempfile::tempdir().unwrap();
    let server = TestServer::start_with(Options {
        plugins_dir: Some(folder.path().to_path_buf()),
        // The plugin's own origin is a loopback upstream: a manifest origin reaches private
        // addresses only when the operator allows it.
        allow_private_networks: true,
        ..Options::default()
    })
    .await;
    let plugins = server.state.plugins.clone();
    let (_, body) = server.get("/v1/chat-tools").await;
    assert_eq!(
        tool_names(&body),
        ["web_search", "fetch_url", "python", "file_search"]
    );

    // 1. Dropped in: its tools appear.
    let hostile = test_component("test-plugin-hostile");
    let gate = Gate::new();
    let upstream = ScriptedUpstream::start([(
        "GET /slow",
        Reply::text(200, "text/plain", "late").after(&gate),
    )])
    .await;
    let v1 = manifest(
        "extra",
        "1",
        &format!(r#","grants":{{"http":["{}"]}}"#, upstream.url()),
    );
    deploy(folder.path(), "extra", &hostile, &v1);
    until(&plugins, "extra v1 serves", |p| serves(p, "extra", "1")).await;
    let (_, body) = server.get("/v1/chat-tools").await;
    let names = tool_names(&body);
    assert_eq!(
        &names[..4],
        ["web_search", "fetch_url", "python", "echo"],
        "{names:?}"
    );
    assert!(names.contains(&"http_get".to_string()));
    let description = body["tools"][3]["description"].as_str().unwrap();
    assert_eq!(description, "test tool echo");

    // 2. A call starts on v1 and waits on its upstream.
    let old = plugins.snapshot().tool("http_get").unwrap().clone();
    let in_flight = tokio::spawn(async move {
        let args = json!({ "url": format!("{}/slow", upstream.url()) }).to_string();
        let out = old.as_tool().unwrap().invoke("http_get", &args).await;
        (out, upstream)
    });

    // 3. Version 2 (same component, a new manifest granting a setting) replaces it.
    let v2 = manifest("extra", "2", r#","grants":{"config":["title_model"]}"#);
    deploy(folder.path(), "extra", &hostile, &v2);
    until(&plugins, "extra v2 serves", |p| serves(p, "extra", "2")).await;
    let current = plugins.snapshot().tool("config").unwrap().clone();
    let out = current
        .as_tool()
        .unwrap()
        .invoke("config", "{}")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out.content, r#"[("title_model", "gpt-4.1-mini")]"#,
        "v2 answers"
    );

    // The call that started on v1 completes there.
    gate.open();
    let (out, _upstream) = in_flight.await.unwrap();
    assert_eq!(out.unwrap().unwrap().content, "status 200\nlate");

    // 4. A broken file is refused; v2 keeps serving.
    let scans_before = *plugins.scans().borrow();
    deploy(
        folder.path(),
        "extra",
        b"\0asm\x0d\0\x01\0 not a component",
        &v2,
    );
    until(&plugins, "the broken file was scanned", |p| {
        *p.scans().borrow() > scans_before
    })
    .await;
    until(&plugins, "the broken file is refused", |p| {
        p.refused().iter().any(|r| r.path.ends_with("extra.wasm"))
    })
    .await;
    assert!(
        serves(&plugins, "extra", "2"),
        "the previous version keeps serving"
    );
    let refused = plugins.refused();
    assert!(
        refused[0].reason.contains("not a valid component"),
        "{refused:?}"
    );
    let (_, body) = server.get("/v1/chat-tools").await;
    assert!(tool_names(&body).contains(&"echo".to_string()));

    // A real component that asks for the filesystem is refused the same way.
    deploy(
        folder.path(),
        "extra",
        &test_component("test-plugin-reads-files"),
        &v2,
    );
    until(&plugins, "the filesystem component is refused", |p| {
        p.refused()
            .iter()
            .any(|r| r.reason.contains("wasi:filesystem"))
    })
    .await;
    assert!(serves(&plugins, "extra", "2"));

    // 5. Removed: its tools go.
    std::fs::remove_file(folder.path().join("extra.wasm")).unwrap();
    until(&plugins, "extra is gone", |p| {
        p.snapshot().plugin("extra").is_none()
    })
    .await;
    let (_, body) = server.get("/v1/chat-tools").await;
    assert_eq!(
        tool_names(&body),
        ["web_search", "fetch_url", "python", "file_search"]
    );
    server.stop().await;
}

#[tokio::test]
async fn a_folder_plugin_overrides_a_bundled_one_by_id_and_clashes_are_refused() {
    let folder = tempfile::tempdir().unwrap();
    let hostile = test_component("test-plugin-hostile");
    // Loaded at startup: one plugin replaces fetch_url; two more provide the same tools.
    deploy(
        folder.path(),
        "a_fetch",
        &hostile,
        &manifest("fetch_url", "9", ""),
    );
    deploy(folder.path(), "b_dup", &hostile, &manifest("dup", "1", ""));
    deploy(
        folder.path(),
        "c_same_id",
        &hostile,
        &manifest("fetch_url", "10", ""),
    );
    let server = TestServer::start_with(Options {
        plugins_dir: Some(folder.path().to_path_buf()),
        ..Options::default()
    })
    .await;
    let plugins = &server.state.plugins;
    assert!(
        serves(plugins, "fetch_url", "9"),
        "the folder's fetch_url replaced the bundled one"
    );
    let (_, body) = server.get("/v1/chat-tools").await;
    let names = tool_names(&body);
    assert_eq!(names[0], "web_search");
    assert!(names.contains(&"echo".to_string()));
    assert!(!names.contains(&"fetch_url".to_string()), "{names:?}");
    let refused = plugins.refused();
    let reasons: Vec<(String, String)> = refused
        .iter()
        .map(|r| {
            (
                r.path.file_name().unwrap().to_string_lossy().into_owned(),
                r.reason.clone(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            (
                "b_dup.wasm".to_string(),
                "tool echo is already provided by plugin fetch_url".to_string()
            ),
            (
                "c_same_id.wasm".to_string(),
                "another file in PLUGINS_DIR already provides plugin fetch_url".to_string()
            ),
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn a_refused_override_leaves_the_bundled_plugin_serving() {
    let folder = tempfile::tempdir().unwrap();
    let hostile = test_component("test-plugin-hostile");
    // Both replace a bundled plugin and both provide `echo`: web_search's replacement comes
    // first (the bundled order), so fetch_url's is refused and the bundled fetch_url stays.
    deploy(
        folder.path(),
        "x_search",
        &hostile,
        &manifest("web_search", "7", ""),
    );
    deploy(
        folder.path(),
        "y_fetch",
        &hostile,
        &manifest("fetch_url", "8", ""),
    );
    let server = TestServer::start_with(Options {
        plugins_dir: Some(folder.path().to_path_buf()),
        ..Options::default()
    })
    .await;
    let plugins = &server.state.plugins;
    assert!(serves(plugins, "web_search", "7"));
    assert!(
        serves(plugins, "fetch_url", "0.1.0"),
        "the bundled fetch_url serves"
    );
    let (_, body) = server.get("/v1/chat-tools").await;
    let names = tool_names(&body);
    assert!(names.contains(&"echo".to_string()) && names.contains(&"fetch_url".to_string()));
    assert!(!names.contains(&"web_search".to_string()), "{names:?}");
    let refused = plugins.refused();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].path.ends_with("y_fetch.wasm"));
    assert_eq!(
        refused[0].reason,
        "tool echo is already provided by plugin web_search"
    );
    server.stop().await;
}
