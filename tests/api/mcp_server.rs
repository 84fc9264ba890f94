//! chatd's `/mcp` checked with the MCP project's own tools: the official Python SDK's client
//! (`tests/mcp/client.py`) lists the tools and calls `web_search` and `chatd_search` against the
//! scripted engine, and the conformance suite (`@modelcontextprotocol/conformance`, on Node 22,
//! both from npm into `target/mcp-node` by `.ci/run`) passes its server scenarios. Without
//! them the tests say so and pass, unless CHATD_REQUIRE_MCP is set (CI).

use std::path::{Path, PathBuf};

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::mcp;
use crate::search_runs::{exa_answer, exa_results};
use crate::support::{Options, TestServer};

const TOKEN: &str = "mcp-admin-token-0123456789";

/// The scenarios the issue names, all in the suite's active set.
const SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "logging-set-level",
    "dns-rebinding-protection",
];

async fn engine_server(token: Option<&str>) -> (ScriptedUpstream, TestServer) {
    let upstream = ScriptedUpstream::start([
        ("POST /search", Reply::json(200, exa_results(2))),
        ("POST /search", Reply::json(200, exa_results(1))),
        ("POST /answer", Reply::json(200, exa_answer())),
    ])
    .await;
    let url = upstream.url();
    let args = ["--engine-a-base-url", &url, "--engine-a-api-key", "e-key"]
        .map(String::from)
        .to_vec();
    let server = TestServer::start_with(Options {
        token: token.map(String::from),
        args,
        ..Options::default()
    })
    .await;
    (upstream, server)
}

/// Runs the SDK client: what it printed, as JSON.
async fn sdk_call(python: &Path, url: &str, tool: &str, arguments: Value) -> Value {
    let out = tokio::process::Command::new(python)
        .arg(mcp::script("client.py"))
        .args([url, tool, &arguments.to_string()])
        .env("MCP_TEST_TOKEN", TOKEN)
        .output()
        .await
        .expect("the SDK client runs");
    assert!(
        out.status.success(),
        "the SDK client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the client prints JSON")
}

#[tokio::test]
async fn the_python_sdk_client_lists_and_calls_chatds_tools() {
    let Some(python) = mcp::python() else { return };
    let (upstream, server) = engine_server(Some(TOKEN)).await;
    let url = format!("{}/mcp", server.base);

    let answer = sdk_call(&python, &url, "web_search", json!({"query": "rust"})).await;
    assert_eq!(answer["protocolVersion"], "2025-11-25");
    let tools = answer["tools"].as_array().unwrap();
    for name in ["web_search", "fetch_url", "chatd_search"] {
        assert!(tools.contains(&json!(name)), "{tools:?}");
    }
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("https://"),
        "{result}"
    );
    // The engine got its key from the host, as in a chat.
    let searched = upstream
        .requests()
        .into_iter()
        .find(|r| r.path == "/search")
        .unwrap();
    assert_eq!(searched.header("x-api-key"), Some("e-key"));

    // Under /api too, and the search-mode tool: the answer with its sources.
    let api = format!("{}/api/mcp", server.base);
    let answer = sdk_call(&python, &api, "chatd_search", json!({"query": "tokio"})).await;
    let result = &answer["result"];
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Tokio is an asynchronous runtime for Rust."),
        "{text}"
    );
    assert!(
        text.contains("Sources:\n1. Tokio <https://tokio.rs/>"),
        "{text}"
    );
    assert_eq!(
        result["structuredContent"]["citations"][0]["url"],
        "https://tokio.rs/"
    );
    assert!(
        !result["structuredContent"]["results"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // A bad argument is the tool's error, named.
    let bad = sdk_call(
        &python,
        &url,
        "chatd_search",
        json!({"query": "x", "numResults": 0}),
    )
    .await;
    assert_eq!(bad["result"]["isError"], true);
    assert!(
        bad["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("numResults:")
    );
    server.stop().await;
}

#[tokio::test]
async fn mcp_needs_the_token_like_every_v1_route() {
    let server = TestServer::start_with(Options {
        token: Some(TOKEN.into()),
        ..Options::default()
    })
    .await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    for path in ["/mcp", "/api/mcp"] {
        let send = |token: Option<&str>| {
            let mut request = server
                .client
                .post(format!("{}{path}", server.base))
                .header("accept", "application/json, text/event-stream")
                .json(&initialize);
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            request.send()
        };
        let refused = send(None).await.unwrap();
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        let body: Value = refused.json().await.unwrap();
        assert!(body["message"].is_string(), "{body}");
        let wrong = send(Some("not-the-token")).await.unwrap();
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
        let served = send(Some(TOKEN)).await.unwrap();
        assert_eq!(served.status(), StatusCode::OK);
        let body: Value = served.json().await.unwrap();
        // An older client gets its own version back.
        assert_eq!(body["result"]["protocolVersion"], "2025-06-18", "{body}");
        assert_eq!(body["result"]["serverInfo"]["name"], "chatd");
    }
    server.stop().await;
}

/// `target/mcp-node`: Node 22 and the conformance CLI, as `.ci/run` installs them.
fn conformance() -> Option<(PathBuf, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-node/node_modules");
    let (node_bin, cli) = (dir.join("node/bin"), dir.join(".bin/conformance"));
    if cli.exists() && node_bin.join("node").exists() {
        return Some((node_bin, cli));
    }
    assert!(
        std::env::var_os("CHATD_REQUIRE_MCP").is_none(),
        "CHATD_REQUIRE_MCP is set but {} is missing (.ci/run installs it)",
        cli.display()
    );
    eprintln!(
        "skipped: no MCP conformance suite at {} (.ci/run installs it)",
        cli.display()
    );
    None
}

#[tokio::test]
async fn the_mcp_conformance_suite_passes_its_server_scenarios() {
    let Some((node_bin, cli)) = conformance() else {
        return;
    };
    // Open mode on loopback: the rebinding scenario needs a localhost URL and no token.
    let server = TestServer::start().await;
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output_dir = tempfile::tempdir().unwrap();
    for scenario in SCENARIOS {
        let out = tokio::process::Command::new(&cli)
            .args(["server", "--url", &format!("{}/mcp", server.base)])
            .args(["--scenario", scenario])
            .arg("--output-dir")
            .arg(output_dir.path())
            .env("PATH", &path)
            .output()
            .await
            .expect("the conformance CLI runs");
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{scenario} failed:\n{printed}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(printed.contains(", 0 failed"), "{scenario}:\n{printed}");
    }
    server.stop().await;
}

/// POSTs one JSON-RPC message to the `/mcp` of the server at `base`, as a 2025-11-25 client.
pub async fn mcp_post(client: &reqwest::Client, base: &str, body: &Value) -> reqwest::Response {
    client
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn every_request_stands_alone_so_any_instance_can_answer_it() {
    let server = TestServer::start().await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let initialized = mcp_post(&server.client, &server.base, &initialize).await;
    assert_eq!(initialized.status(), StatusCode::OK);
    // No session to stick to: chatd gives none, and a call without one is answered.
    assert!(initialized.headers().get("mcp-session-id").is_none());
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let listed = mcp_post(&server.client, &server.base, &list).await;
    assert_eq!(listed.status(), StatusCode::OK);
    let body: Value = listed.json().await.unwrap();
    let names: Vec<&str> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"fetch_url"), "{body}");
    server.stop().await;
}

/// What `/mcp` answers quotes at most a bounded prefix of what it was sent: a 3 MiB tool name, a
/// 3 MiB method (rmcp's own words), a 3 MiB argument of the wrong type.
#[tokio::test]
async fn errors_quote_a_bounded_prefix_of_the_input() {
    let server = TestServer::start().await;
    let huge = "x".repeat(3 << 20);
    for (body, quotes) in [
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": huge, "arguments": {}}}),
            true,
        ),
        (json!({"jsonrpc": "2.0", "id": 2, "method": huge}), true),
        (
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "chatd_search", "arguments": {"query": "q", "numResults": huge}}}),
            true,
        ),
        // rmcp's own refusal, which names no input.
        (
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": huge}),
            false,
        ),
    ] {
        let response = mcp_post(&server.client, &server.base, &body).await;
        let status = response.status();
        let text = response.text().await.unwrap();
        assert!(
            text.len() < 4096,
            "{status}: {} bytes: {}…",
            text.len(),
            &text[..200]
        );
        assert!(
            !quotes || text.contains("xxx"),
            "the start is quoted: {text}"
        );
    }
    server.stop().await;
}

/// The `python` tool on `/mcp`, called by the official SDK's client: it runs, and each call is
/// a session of its own (no conversation to keep one for), so a global set by one call is not
/// there in the next.
#[tokio::test]
async fn the_python_tool_runs_on_mcp_each_call_in_a_session_of_its_own() {
    let Some(python) = mcp::python() else { return };
    let server = TestServer::start_with(Options {
        token: Some(TOKEN.into()),
        ..Options::default()
    })
    .await;
    let url = format!("{}/mcp", server.base);
    let first = sdk_call(
        &python,
        &url,
        "python",
        json!({"code": "import sympy\nkept = sympy.factorint(2**64 - 1)\nkept"}),
    )
    .await;
    let result = &first["result"];
    assert_eq!(result["isError"], false, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    let body: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        body["value"], "{3: 1, 5: 1, 17: 1, 257: 1, 641: 1, 65537: 1, 6700417: 1}",
        "{body}"
    );
    // A PNG the code writes comes back as MCP image content (nothing is kept: there is no
    // chat); a file of another type is only named.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let code = format!(
        "import base64\nopen('dot.png', 'wb').write(base64.b64decode('{png}'))\n\
         open('notes.txt', 'w').write('n')"
    );
    let drawn = sdk_call(&python, &url, "python", json!({ "code": code })).await;
    let content = drawn["result"]["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{drawn}");
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["mimeType"], "image/png");
    assert_eq!(content[1]["data"], png);
    assert!(
        content[0]["text"].as_str().unwrap().contains("notes.txt"),
        "{drawn}"
    );
    let second = sdk_call(&python, &url, "python", json!({"code": "kept"})).await;
    assert_eq!(second["result"]["isError"], true, "{second}");
    assert!(
        second["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("NameError: name 'kept' is not defined"),
        "{second}"
    );
    server.stop().await;
}
