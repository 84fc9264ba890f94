//! CHATD_PLUGIN_MEMORY_TOTAL_MIB: every plugin instance of a server together stays within it.
//! One call holds memory while its upstream waits; another call that would pass the total
//! fails with a trap naming the setting (its own manifest's limit would have let it grow), the
//! held call finishes, and the server goes on serving. Through `/mcp`, as any client calls a tool.

use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::mcp_server::mcp_post;
use crate::support::{Options, TestServer, deploy, test_component, write_config};

/// `tools/call` of `name` on the server's `/mcp`: the tool's text and whether it failed.
async fn call(server: &TestServer, name: &str, arguments: Value) -> (String, bool) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}});
    let response = mcp_post(&server.client, &server.base, &body).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.unwrap();
    let result = &answer["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    (text.to_string(), result["isError"] == true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_together_stay_within_the_total_and_the_server_stays_up() {
    let gate = Gate::new();
    let upstream = ScriptedUpstream::start([(
        "GET /hold",
        Reply::text(200, "text/plain", "ok").after(&gate),
    )])
    .await;
    let plugins_dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    // Each instance may grow to 96 MiB; together they may hold 128.
    let manifest = json!({
        "id": "holder", "kind": "tool", "wit": "chatd:plugin@0.1.0",
        "grants": {"services": ["holder"]},
        "limits": {"memoryMib": 96, "timeoutMs": 60000}
    });
    deploy(
        plugins_dir.path(),
        "holder",
        &test_component("test-plugin-hostile"),
        &manifest.to_string(),
    );
    let config = format!(
        "[services.holder]\nbase_url = \"{}\"\nplugins = [\"holder\"]\n",
        upstream.url()
    );
    let server = TestServer::start_with(Options {
        plugins_dir: Some(plugins_dir.path().to_path_buf()),
        config: Some(write_config(files.path(), &config)),
        args: vec!["--chatd-plugin-memory-total-mib".into(), "128".into()],
        ..Options::default()
    })
    .await;
    let loader = server.state.plugins.loader().clone();
    assert_eq!(loader.total_memory().cap(), 128 << 20);

    // 80 MiB held until the upstream answers.
    let holding = {
        let (base, client) = (server.base.clone(), server.client.clone());
        let url = format!("{}/hold", upstream.url());
        tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "hold_memory", "arguments": {"mib": 80, "url": url}}});
            let response = mcp_post(&client, &base, &body).await;
            response.json::<Value>().await.unwrap()
        })
    };
    // The request reaching the upstream says the memory is taken.
    upstream.received(1).await;
    assert!(loader.total_memory().in_use() >= 80 << 20);

    // Another call grows until the total stops it, well before its own 96 MiB.
    let (text, failed) = call(&server, "eat_memory", json!({})).await;
    assert!(failed, "{text}");
    assert!(
        text.contains("CHATD_PLUGIN_MEMORY_TOTAL_MIB is 128 MiB"),
        "the trap names the setting: {text}"
    );

    // The held call finishes, and its memory is given back.
    gate.open();
    let held = holding.await.unwrap();
    assert_eq!(
        held["result"]["content"][0]["text"], "held 80 MiB; status 200",
        "{held}"
    );
    assert_eq!(loader.total_memory().in_use(), 0);
    let (status, _) = server.get("/health").await;
    assert_eq!(status, StatusCode::OK);
    // Alone, the same call meets its own limit, not the total.
    let (text, failed) = call(&server, "eat_memory", json!({})).await;
    assert!(
        failed && text.contains("the plugin's memory limit"),
        "{text}"
    );
    let (text, failed) = call(&server, "echo", json!({"text": "still here"})).await;
    assert_eq!((text.as_str(), failed), ("still here", false));
}
