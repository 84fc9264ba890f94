//! Tools from MCP servers (`[mcp.NAME]`), against a real one: `tests/mcp/server.py` on the
//! official Python SDK (`crate::mcp`), over streamable HTTP on loopback. Listed by
//! `GET /v1/chat-tools`, called in the tool loop of each tool-loop provider and stored; the key
//! reaches the server and never comes back; a server that is down or refuses the key leaves
//! chatd serving; hot reload adds and removes one; a slow one holds no other chat.

use std::path::PathBuf;

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use chatd::store::people::BUILTIN_ADMIN;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::transcript;
use crate::live_replies::{self, A, B, C, Wire, ask, call, text};
use crate::mcp::McpServer;
use crate::support::{Events, Options, TestServer, write_config};

const KEY: &str = "sk-mcp-test-7f3a9c21";

fn table(name: &str, url: &str, key: &str) -> String {
    format!("[mcp.{name}]\nurl = \"{url}\"\napi_key = \"{key}\"\n")
}

/// A server whose `wire` provider is `upstream`, with `config` as its file.
async fn server_with(
    wire: Wire,
    upstream: &ScriptedUpstream,
    config: &str,
) -> (TestServer, PathBuf, tempfile::TempDir) {
    let files = tempfile::tempdir().unwrap();
    let path = write_config(files.path(), config);
    let options = Options {
        config: Some(path.clone()),
        ..Options::default()
    };
    (
        live_replies::server(wire, upstream, options).await,
        path,
        files,
    )
}

async fn tools(server: &TestServer) -> Vec<String> {
    let (status, body) = server.get("/v1/chat-tools").await;
    assert_eq!(status, StatusCode::OK);
    crate::hot_reload::tool_names(&body)
}

/// Waits (up to 60 s, change by change) until the tools offered have (`present`) or lack
/// `name`.
async fn listed(server: &TestServer, name: &str, present: bool) {
    crate::mcp_oauth::offered_to(server, BUILTIN_ADMIN, name, present).await;
}

/// Two rounds: the model calls `name` with `args`, then says "Done.".
fn calling(wire: Wire, name: &str, args: &str) -> [(&'static str, Reply); 2] {
    [
        (
            wire.route,
            live_replies::paced(wire, &[call("call_1", name, args)]),
        ),
        (wire.route, live_replies::paced(wire, &[text(&["Done."])])),
    ]
}

/// The chat's id (from `meta`) and the stream's two `tool_call` events: initiated, terminal.
async fn tool_round(stream: &mut Events) -> (String, Value, Value) {
    let meta = stream.expect("meta").await.data;
    let initiated = stream.expect("tool_call").await.data;
    let terminal = stream.expect("tool_call").await.data;
    (
        meta["chatId"].as_str().unwrap().to_string(),
        initiated,
        terminal,
    )
}

async fn each_provider_calls_an_mcp_tool_and_stores_the_result(wire: Wire) {
    let Some(mcp) = McpServer::start(Some(KEY), false) else {
        return;
    };
    let upstream = ScriptedUpstream::start(calling(wire, "mcp__t__add", r#"{"a":2,"b":3}"#)).await;
    let (server, _, _files) = server_with(wire, &upstream, &table("t", &mcp.url, KEY)).await;
    listed(&server, "mcp__t__add", true).await;
    let listed = tools(&server).await;
    for name in [
        "mcp__t__add",
        "mcp__t__echo_auth",
        "mcp__t__slow",
        "mcp__t__fail",
    ] {
        assert!(listed.contains(&name.to_string()), "{listed:?}");
    }

    let mut stream = ask(&server, wire, "2 + 3?").await;
    let (chat_id, initiated, terminal) = tool_round(&mut stream).await;
    assert_eq!(initiated["name"], "mcp__t__add");
    assert_eq!(initiated["args"], json!({"a": 2, "b": 3}));
    assert_eq!(terminal["status"], "completed", "{terminal}");
    assert_eq!(terminal["resultPreview"], "5");
    let rest = stream.rest().await;
    assert_eq!(rest.last().unwrap().name, "done");
    let rows = transcript(&server, &chat_id).await;
    assert_eq!(rows[1], ("tool".to_string(), "5".to_string()), "{rows:?}");
    // The second round gave the model the call and its result.
    let second = upstream.requests().last().unwrap().json().to_string();
    assert!(second.contains("call_1"), "{second}");
    server.stop().await;
}

#[tokio::test]
async fn provider_a_calls_an_mcp_tool_in_its_loop() {
    each_provider_calls_an_mcp_tool_and_stores_the_result(A).await;
}

#[tokio::test]
async fn provider_b_calls_an_mcp_tool_in_its_loop() {
    each_provider_calls_an_mcp_tool_and_stores_the_result(B).await;
}

#[tokio::test]
async fn provider_c_calls_an_mcp_tool_in_its_loop() {
    each_provider_calls_an_mcp_tool_and_stores_the_result(C).await;
}

#[tokio::test]
async fn the_key_reaches_the_server_and_never_comes_back_even_when_echoed() {
    let Some(mcp) = McpServer::start(Some(KEY), false) else {
        return;
    };
    let upstream = ScriptedUpstream::start(calling(C, "mcp__t__echo_auth", "{}")).await;
    let (server, _, _files) = server_with(C, &upstream, &table("t", &mcp.url, KEY)).await;
    listed(&server, "mcp__t__echo_auth", true).await;
    let mut stream = ask(&server, C, "who are you?").await;
    let (chat_id, _, terminal) = tool_round(&mut stream).await;
    // The server got the key (else it answers 401), and echoed it: chatd scrubbed the echo.
    assert_eq!(terminal["status"], "completed", "{terminal}");
    assert_eq!(
        terminal["resultPreview"],
        "the server received: Bearer [redacted]"
    );
    let rest = stream.rest().await;
    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    let seen = [
        chat.to_string(),
        format!("{terminal}{rest:?}"),
        // What the model was sent in its second round.
        upstream.requests().last().unwrap().json().to_string(),
    ];
    for text in seen {
        assert!(!text.contains(KEY), "the key leaked: {text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
    server.stop().await;
}

#[tokio::test]
async fn an_error_result_is_a_failed_call_and_a_binary_part_a_line() {
    let Some(mcp) = McpServer::start(None, true) else {
        return;
    };
    let upstream = ScriptedUpstream::start([
        (
            C.route,
            live_replies::paced(
                C,
                &[
                    call("c1", "mcp__t__fail", r#"{"reason":"no such repo"}"#),
                    call("c2", "mcp__t__picture", "{}"),
                ],
            ),
        ),
        (C.route, live_replies::paced(C, &[text(&["Done."])])),
    ])
    .await;
    let (server, _, _files) = server_with(C, &upstream, &table("t", &mcp.url, "")).await;
    listed(&server, "mcp__t__fail", true).await;
    let mut stream = ask(&server, C, "try").await;
    stream.expect("meta").await;
    let mut terminal = Vec::new();
    while terminal.len() < 2 {
        let event = stream.expect("tool_call").await.data;
        if event["status"] != "initiated" {
            terminal.push(event);
        }
    }
    terminal.sort_by_key(|e| e["name"].as_str().unwrap().to_string());
    assert_eq!(terminal[0]["status"], "failed");
    assert!(
        terminal[0]["error"]
            .as_str()
            .unwrap()
            .contains("no such repo"),
        "{}",
        terminal[0]
    );
    assert_eq!(terminal[1]["status"], "completed");
    assert_eq!(
        terminal[1]["resultPreview"],
        "[image: image/png, 8 bytes, not shown]"
    );
    assert_eq!(stream.rest().await.last().unwrap().name, "done");
    server.stop().await;
}

#[tokio::test]
async fn a_server_down_or_refusing_the_key_leaves_chatd_serving() {
    let Some(mcp) = McpServer::start(Some(KEY), false) else {
        return;
    };
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    let config = format!(
        "{}{}{}",
        table("down", &closed_url, KEY),
        table("wrong", &mcp.url, "sk-wrong-key-00000000"),
        table("t", &mcp.url, KEY)
    );
    let upstream = ScriptedUpstream::start(calling(C, "mcp__t__add", r#"{"a":1,"b":1}"#)).await;
    let (server, _, _files) = server_with(C, &upstream, &config).await;
    listed(&server, "mcp__t__add", true).await;
    let names = tools(&server).await;
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with("mcp__down__") && !n.starts_with("mcp__wrong__")),
        "{names:?}"
    );
    let (status, _) = server.get("/health").await;
    assert_eq!(status, StatusCode::OK);

    // The server goes away after listing: the call fails, the run ends.
    drop(mcp);
    let mut stream = ask(&server, C, "1 + 1?").await;
    let (_, _, terminal) = tool_round(&mut stream).await;
    assert_eq!(terminal["status"], "failed", "{terminal}");
    assert!(
        terminal["error"].as_str().unwrap().contains("MCP server t"),
        "{terminal}"
    );
    assert!(!terminal.to_string().contains(KEY));
    assert_eq!(stream.rest().await.last().unwrap().name, "done");
    server.stop().await;
}

#[tokio::test]
async fn hot_reload_adds_and_removes_a_server() {
    let Some(mcp) = McpServer::start(None, false) else {
        return;
    };
    let upstream = ScriptedUpstream::start([]).await;
    let (server, path, files) = server_with(C, &upstream, "").await;
    assert!(tools(&server).await.iter().all(|n| !n.starts_with("mcp__")));
    write_config(files.path(), &table("added", &mcp.url, ""));
    listed(&server, "mcp__added__add", true).await;
    write_config(files.path(), "");
    listed(&server, "mcp__added__add", false).await;
    assert!(path.exists());
    server.stop().await;
}

#[tokio::test]
async fn a_slow_mcp_tool_holds_no_other_chat() {
    let Some(mcp) = McpServer::start(None, false) else {
        return;
    };
    let upstream = ScriptedUpstream::start([
        (
            C.route,
            live_replies::paced(C, &[call("s", "mcp__t__slow", r#"{"seconds":500}"#)]),
        ),
        (
            C.route,
            live_replies::paced(C, &[call("a", "mcp__t__add", r#"{"a":4,"b":5}"#)]),
        ),
        (C.route, live_replies::paced(C, &[text(&["Nine."])])),
    ])
    .await;
    // Its call would outlast the test: only the stop below can end it.
    let config = format!("{}timeout_secs = 600\n", table("t", &mcp.url, ""));
    let (server, _, _files) = server_with(C, &upstream, &config).await;
    listed(&server, "mcp__t__slow", true).await;
    let mut slow = ask(&server, C, "wait").await;
    let slow_chat = slow.expect("meta").await.data["chatId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(slow.expect("tool_call").await.data["name"], "mcp__t__slow");
    // The slow call is running on the same server's session; another chat goes through.
    let mut quick = ask(&server, C, "4 + 5?").await;
    let (_, _, terminal) = tool_round(&mut quick).await;
    assert_eq!(terminal["resultPreview"], "9");
    let rest = quick.rest().await;
    assert_eq!(rest.last().unwrap().name, "done");
    assert_eq!(rest.last().unwrap().data["text"], "Nine.");
    // Stopping ends the slow call at once (its request to the server is dropped).
    let (status, _) = server
        .post(&format!("/v1/chats/{slow_chat}/stream/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let terminal = slow.expect("tool_call").await.data;
    assert_eq!(terminal["status"], "failed");
    server.stop().await;
}

#[tokio::test]
async fn a_server_saying_its_list_changed_is_listed_again_at_once() {
    let Some(mcp) = McpServer::start(None, false) else {
        return;
    };
    let upstream = ScriptedUpstream::start(calling(C, "mcp__t__grow", "{}")).await;
    let (server, _, _files) = server_with(C, &upstream, &table("t", &mcp.url, "")).await;
    listed(&server, "mcp__t__grow", true).await;
    assert!(!tools(&server).await.contains(&"mcp__t__grown".to_string()));
    let mut stream = ask(&server, C, "grow").await;
    let (_, _, terminal) = tool_round(&mut stream).await;
    assert_eq!(terminal["resultPreview"], "added grown");
    // Without the notice the list would wait for the next scheduled listing (10 minutes).
    listed(&server, "mcp__t__grown", true).await;
    assert_eq!(stream.rest().await.last().unwrap().name, "done");
    server.stop().await;
}

#[tokio::test]
async fn a_redirect_is_not_followed_so_the_key_goes_nowhere_else() {
    let elsewhere = ScriptedUpstream::start([]).await;
    let target = format!("{}/mcp", elsewhere.url());
    let redirecting = ScriptedUpstream::start([("POST /mcp", Reply::redirect(307, &target))]).await;
    let url = format!("{}/mcp", redirecting.url());
    let upstream = ScriptedUpstream::start([]).await;
    let (server, _, _files) = server_with(C, &upstream, &table("r", &url, KEY)).await;
    // chatd asked, with the key, and was sent elsewhere.
    redirecting.received(1).await;
    assert_eq!(
        redirecting.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    // A second try (after a pause) shows the first one ended without following.
    redirecting.received(2).await;
    assert!(elsewhere.requests().is_empty(), "the redirect was followed");
    assert!(
        tools(&server)
            .await
            .iter()
            .all(|n| !n.starts_with("mcp__r__"))
    );
    server.stop().await;
}

#[tokio::test]
async fn chatd_serves_a_declared_servers_tools_on_its_own_mcp() {
    let Some(mcp) = McpServer::start(Some(KEY), false) else {
        return;
    };
    let python = crate::mcp::python().unwrap();
    let upstream = ScriptedUpstream::start([]).await;
    let (server, _, _files) = server_with(C, &upstream, &table("t", &mcp.url, KEY)).await;
    listed(&server, "mcp__t__echo_auth", true).await;
    let out = tokio::process::Command::new(python)
        .arg(crate::mcp::script("client.py"))
        .args([&format!("{}/mcp", server.base), "mcp__t__echo_auth", "{}"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Relayed through chatd's client: the key injected there, and scrubbed from the echo.
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "the server received: Bearer [redacted]"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_servers_tools_add_at_most_its_tool_text_to_every_prompt() {
    let Some(mcp) = McpServer::start(None, false) else {
        return;
    };
    let upstream = ScriptedUpstream::start([]).await;
    let config = format!(
        "{}{}max_tool_text_kib = 1\n",
        table("whole", &mcp.url, ""),
        table("capped", &mcp.url, "")
    );
    let (server, _path, _files) = server_with(C, &upstream, &config).await;
    listed(&server, "mcp__whole__add", true).await;
    listed(&server, "mcp__capped__add", true).await;
    let specs = server
        .state
        .tools
        .mcp()
        .reachable_now(BUILTIN_ADMIN)
        .tools();
    let of = |name: &str| {
        specs
            .iter()
            .filter(|t| t.server() == name)
            .map(|t| {
                t.spec.name.len() + t.spec.description.len() + t.spec.parameters_schema_json.len()
            })
            .collect::<Vec<usize>>()
    };
    let (whole, capped) = (of("whole"), of("capped"));
    assert!(whole.iter().sum::<usize>() > 1024, "{whole:?}");
    assert!(
        !capped.is_empty() && capped.len() < whole.len(),
        "{capped:?} of {whole:?}"
    );
    assert!(capped.iter().sum::<usize>() <= 1024, "{capped:?}");
    server.stop().await;
}
