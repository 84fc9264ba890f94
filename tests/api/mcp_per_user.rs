//! An MCP server declared `per_user = true` (each person's own login), against a real one:
//! `tests/mcp/oauth_server.py`, the official Python SDK's authorization server, whose `whoami`
//! answers with the grant (one per login) of the token a call carried. Two people each connect
//! it and each call carries that person's own token; a person without a login is offered none
//! of its tools on any route; the operator's Connect and a person's login are each refused on
//! the other kind of server; Disconnect ends one person's login only; on PostgreSQL another
//! instance uses a login made on the first, with no Connect there, and stops using it within a
//! second of its Disconnect; a login left when the server stops being `per_user` can still be
//! ended by its person. No token reaches an answer, a transcript or the metrics (the log:
//! `tests/web/mcp_login.rs`).

use std::sync::Arc;

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::live_replies::{self, A, call as tool_call, text};
use crate::mcp::McpServer;
use crate::mcp_oauth::{follow_login, offered_to};
use crate::people::{TOKEN, add_person, call};
use crate::support::{Events, Options, TestServer, on_postgres, write_config};

const WHOAMI: &str = "mcp__t__whoami";

/// Two rounds per chat, `chats` times: the model calls `whoami`, then says "Done.".
fn whoami_calls(chats: usize) -> Vec<(&'static str, Reply)> {
    let mut replies = Vec::new();
    for _ in 0..chats {
        let round = live_replies::paced(A, &[tool_call("call_1", WHOAMI, "{}")]);
        replies.push((A.route, round));
        replies.push((A.route, live_replies::paced(A, &[text(&["Done."])])));
    }
    replies
}

/// A server in token mode with `[mcp.t]` at `mcp`, `per_user = true` (and `[mcp.s]`, the same
/// server shared, when `shared`), its data in `dir`.
async fn serve(
    upstream: &ScriptedUpstream,
    mcp: &McpServer,
    dir: &Arc<tempfile::TempDir>,
    shared: bool,
) -> TestServer {
    let mut config = format!(
        "[mcp.t]\nurl = \"{}\"\nauth = \"oauth\"\nper_user = true\n",
        mcp.url
    );
    if shared {
        config.push_str(&format!(
            "[mcp.s]\nurl = \"{}\"\nauth = \"oauth\"\n",
            mcp.url
        ));
    }
    let path = write_config(dir.path(), &config);
    let mut args = Vec::new();
    if on_postgres() {
        args = vec!["--chatd-secret-key".into(), "k".repeat(40)];
    }
    let options = Options {
        token: Some(TOKEN.into()),
        config: Some(path),
        dir: Some(dir.clone()),
        args,
        ..Options::default()
    };
    live_replies::server(A, upstream, options).await
}

/// The tool names `key`'s holder is offered (`GET /v1/chat-tools`).
async fn offered(server: &TestServer, key: &str) -> Vec<String> {
    let (status, body) = call(server, key, Method::GET, "/v1/chat-tools", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let tools = body["tools"].as_array().unwrap();
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// `key`'s holder logs in to `[mcp.t]` as the web client does: their own login begun, the
/// authorization server's redirect followed to chatd's callback with the cookie it set.
async fn log_in(server: &TestServer, key: &str) {
    let res = server
        .client
        .post(format!("{}/v1/mcp-servers/t/login", server.base))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    let done = follow_login(server, res).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
}

/// `key`'s holder's chat whose model calls `whoami`: the tool call's terminal event.
async fn whoami(server: &TestServer, key: &str) -> Value {
    let res = server
        .client
        .post(format!("{}/v1/chat-completions/stream", server.base))
        .bearer_auth(key)
        .json(&json!({"provider": A.provider, "model": A.model,
            "messages": [{"role": "user", "content": "who am I?"}]}))
        .send()
        .await
        .unwrap();
    let mut stream = Events::of(res).await;
    stream.expect("meta").await;
    stream.expect("tool_call").await;
    let terminal = stream.expect("tool_call").await.data;
    stream.rest().await;
    terminal
}

/// `key`'s holder's `GET /v1/mcp-servers` entry for `name`.
async fn state_of(server: &TestServer, key: &str, name: &str) -> Value {
    let (status, body) = call(server, key, Method::GET, "/v1/mcp-servers", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let servers = body["data"].as_array().unwrap();
    servers.iter().find(|s| s["name"] == name).unwrap().clone()
}

/// The tool names `/mcp` lists to the holder of `key` (a key with the `mcp` scope).
async fn mcp_listed(server: &TestServer, key: &str) -> Vec<String> {
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let res = server
        .client
        .post(format!("{}/mcp", server.base))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&list)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    let tools = body["result"]["tools"].as_array().unwrap();
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// A key of `key`'s holder with the `mcp` scope.
async fn mcp_key(server: &TestServer, key: &str) -> String {
    let body = json!({"name": "agent", "scopes": ["mcp"]});
    let (status, made) = call(server, key, Method::POST, "/v1/keys", Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{made}");
    made["key"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn each_person_calls_with_their_own_login_and_without_one_sees_no_tools() {
    let Some(mcp) = McpServer::start_oauth() else {
        return;
    };
    let upstream = ScriptedUpstream::start(whoami_calls(3)).await;
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let server = serve(&upstream, &mcp, &dir, true).await;
    let (ann_id, ann) = add_person(&server, "ann", "member").await;
    let (bob_id, bob) = add_person(&server, "bob", "member").await;
    let (_, carol) = add_person(&server, "carol", "member").await;

    // Nobody is logged in: the server is each person's to connect, and nobody sees its tools.
    let before = state_of(&server, &ann, "t").await;
    assert_eq!(before["perUser"], true, "{before}");
    assert_eq!(before["state"], "needs_login", "{before}");
    assert!(!offered(&server, &ann).await.iter().any(|n| n == WHOAMI));
    // The operator's Connect is not for it, and a person's own login is not for a shared one.
    let (status, body) = server.post("/v1/mcp-servers/t/connect", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("per_user = true"),
        "{body}"
    );
    let (status, body) = call(&server, &ann, Method::POST, "/v1/mcp-servers/s/login", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("is shared"),
        "{body}"
    );

    // Ann logs in: she is offered its tools, and her call carries her login's token.
    log_in(&server, &ann).await;
    offered_to(&server, &ann_id, WHOAMI, true).await;
    assert_eq!(state_of(&server, &ann, "t").await["state"], "connected");
    assert!(offered(&server, &ann).await.iter().any(|n| n == WHOAMI));
    for other in [&bob, &carol] {
        assert!(!offered(&server, other).await.iter().any(|n| n == WHOAMI));
        assert_eq!(state_of(&server, other, "t").await["state"], "needs_login");
    }
    let ann_first = whoami(&server, &ann).await;
    assert_eq!(ann_first["status"], "completed", "{ann_first}");
    let ann_grant = ann_first["resultPreview"].as_str().unwrap().to_string();
    assert!(ann_grant.starts_with("grant "), "{ann_grant}");

    // Bob logs in: his calls carry his own, and Ann's still hers.
    log_in(&server, &bob).await;
    offered_to(&server, &bob_id, WHOAMI, true).await;
    let bob_call = whoami(&server, &bob).await;
    assert_eq!(bob_call["status"], "completed", "{bob_call}");
    let bob_grant = bob_call["resultPreview"].as_str().unwrap();
    assert!(bob_grant.starts_with("grant "), "{bob_grant}");
    assert_ne!(bob_grant, ann_grant);
    let ann_again = whoami(&server, &ann).await;
    assert_eq!(ann_again["resultPreview"], ann_grant.as_str());
    assert_eq!(mcp.stats().await["authorization_code"], 2);

    // Carol, without a login, is offered none of its tools on any route: not the chat tools,
    // not `/mcp`, not a chat naming it.
    let carol_mcp = mcp_key(&server, &carol).await;
    assert!(
        !mcp_listed(&server, &carol_mcp)
            .await
            .iter()
            .any(|n| n == WHOAMI)
    );
    let ann_mcp = mcp_key(&server, &ann).await;
    assert!(
        mcp_listed(&server, &ann_mcp)
            .await
            .iter()
            .any(|n| n == WHOAMI)
    );
    let named = json!({"title": "x", "enabledTools": [WHOAMI]});
    let (status, chat) = call(&server, &carol, Method::POST, "/v1/chats", Some(named)).await;
    assert_eq!(status, StatusCode::OK, "{chat}");
    assert_eq!(chat["chat"]["enabledTools"], json!([]), "{chat}");

    // No token reaches an answer, a transcript or the metrics.
    let issued = mcp.tokens().await;
    assert!(
        issued.len() >= 4,
        "two logins, each an access and a refresh token"
    );
    let mut seen = String::new();
    for key in [&ann, &bob, &carol] {
        for path in ["/v1/mcp-servers", "/v1/chat-tools", "/v1/chats"] {
            seen.push_str(
                &call(&server, key, Method::GET, path, None)
                    .await
                    .1
                    .to_string(),
            );
        }
    }
    let (_, chats) = call(&server, &ann, Method::GET, "/v1/chats", None).await;
    for chat in chats["chats"].as_array().unwrap() {
        let path = format!("/v1/chats/{}", chat["id"].as_str().unwrap());
        seen.push_str(
            &call(&server, &ann, Method::GET, &path, None)
                .await
                .1
                .to_string(),
        );
    }
    assert!(seen.contains(&ann_grant), "the transcripts are read");
    let (status, metrics) = call(&server, TOKEN, Method::GET, "/metrics", None).await;
    assert_eq!(status, StatusCode::OK);
    seen.push_str(metrics.as_str().expect("the metrics' text"));
    for token in &issued {
        assert!(!seen.contains(token.as_str()), "a token was seen");
    }

    // On PostgreSQL another instance uses each person's login made on the first, with no
    // Connect there.
    let mut other = None;
    if on_postgres() {
        let again = ScriptedUpstream::start(whoami_calls(1)).await;
        let second = serve(&again, &mcp, &dir, true).await;
        assert!(offered(&second, &bob).await.iter().any(|n| n == WHOAMI));
        assert!(offered(&second, &ann).await.iter().any(|n| n == WHOAMI));
        assert!(!offered(&second, &carol).await.iter().any(|n| n == WHOAMI));
        let from_other = whoami(&second, &bob).await;
        assert_eq!(from_other["resultPreview"], bob_grant, "{from_other}");
        other = Some((second, again));
    }

    // Ann disconnects: her login ends (revoked), her tools go; Bob's stay.
    let logout = |key| {
        call(
            &server,
            key,
            Method::DELETE,
            "/v1/mcp-servers/t/login",
            None,
        )
    };
    let (status, body) = logout(&ann).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let ended = std::time::Instant::now();
    assert!(!offered(&server, &ann).await.iter().any(|n| n == WHOAMI));
    assert_eq!(state_of(&server, &ann, "t").await["state"], "needs_login");
    assert!(offered(&server, &bob).await.iter().any(|n| n == WHOAMI));
    assert_eq!(mcp.stats().await["revocations"], 1);
    // The other instance stops her session within a second: no call carries her token there.
    if let Some((second, _)) = &other {
        while offered(second, &ann).await.iter().any(|n| n == WHOAMI) {
            assert!(
                ended.elapsed() < std::time::Duration::from_secs(1),
                "still offered"
            );
        }
        assert!(offered(second, &bob).await.iter().any(|n| n == WHOAMI));
    }
    for (path, method, key) in [
        ("/v1/mcp-servers/s/login", Method::DELETE, &ann),
        (
            "/v1/mcp-servers/t/disconnect",
            Method::POST,
            &TOKEN.to_string(),
        ),
    ] {
        let (status, body) = call(&server, key, method, path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
    }

    // `t` becomes shared: Bob's own login is no longer used, and he can still end it.
    let mut changed = server.state.tools.changed();
    write_config(
        dir.path(),
        &format!("[mcp.t]\nurl = \"{}\"\nauth = \"oauth\"\n", mcp.url),
    );
    while state_of(&server, &bob, "t").await["perUser"] != false {
        let waited = tokio::time::timeout(std::time::Duration::from_secs(60), changed.changed());
        waited.await.expect("the file is read again").unwrap();
    }
    assert!(!offered(&server, &bob).await.iter().any(|n| n == WHOAMI));
    let (status, body) = logout(&bob).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = logout(&bob).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    if let Some((second, _)) = other {
        second.stop().await;
    }
    server.stop().await;
}
