//! The key of an MCP server never reaches chatd's log, even when the server echoes it: the real
//! binary, with `[mcp.t]` (the right key) and `[mcp.wrong]` (a key the server refuses, quoting
//! it in its 401) against the SDK's server (`tests/mcp/server.py`), and a chat whose model calls
//! `echo_auth`, a tool that answers with the Authorization header it received.

use std::time::Duration;

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use serde_json::json;

use crate::binary::Chatd;
use crate::mcp::McpServer;
use crate::wires::{call, chat_completions_stream, text};

const KEY: &str = "sk-mcp-log-test-5b1e77d0";
const WRONG: &str = "sk-mcp-wrong-key-9c0d2a44";

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_servers_echo_of_its_key_never_reaches_the_log() {
    let Some(mcp) = McpServer::start(Some(KEY), false) else {
        return;
    };
    let rounds = [
        chat_completions_stream(&[call("e1", "mcp__t__echo_auth", "{}")]).concat(),
        chat_completions_stream(&[text(&["Done."])]).concat(),
    ];
    let upstream = ScriptedUpstream::start([
        (
            "POST /chat/completions",
            Reply::bytes(200, "text/event-stream", rounds[0].clone()),
        ),
        (
            "POST /chat/completions",
            Reply::bytes(200, "text/event-stream", rounds[1].clone()),
        ),
    ])
    .await;
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("chatd.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp.t]\nurl = \"{0}\"\napi_key = \"${{T_KEY}}\"\n[mcp.wrong]\nurl = \"{0}\"\napi_key = \"${{WRONG_KEY}}\"\n",
            mcp.url
        ),
    )
    .unwrap();
    let url = upstream.url();
    let chatd = Chatd::start([
        ("CHATD_CONFIG", config.to_str().unwrap()),
        ("T_KEY", KEY),
        ("WRONG_KEY", WRONG),
        ("PROVIDER_C_BASE_URL", url.as_str()),
        ("PROVIDER_C_API_KEY", "c-key"),
    ]);
    // Both servers were tried: one listed, one refused (at startup or after).
    let mut log: Vec<String> = chatd.startup.clone();
    while !(log
        .iter()
        .any(|l| l.contains("MCP server t: ") && l.contains("tools offered"))
        && log.iter().any(|l| l.contains("MCP server wrong:")))
    {
        let line = chatd
            .lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no MCP lines in the log: {log:#?}"));
        log.push(line);
    }
    let refused = log
        .iter()
        .find(|l| l.contains("MCP server wrong:"))
        .unwrap();
    assert!(refused.contains("refused the key (HTTP 401)"), "{refused}");
    assert!(
        refused.contains("[redacted]"),
        "the echo is kept, scrubbed: {refused}"
    );

    let events = crate::stream(
        &chatd,
        json!({"provider": "provider_c", "model": "grok-4",
            "messages": [{"role": "user", "content": "who?"}]}),
        &[],
    )
    .await;
    let completed = events
        .iter()
        .find(|(name, data)| name == "tool_call" && data["status"] == "completed")
        .unwrap_or_else(|| panic!("the call completed: {events:#?}\nlog: {log:#?}"));
    assert_eq!(
        completed.1["resultPreview"],
        "the server received: Bearer [redacted]"
    );
    log.extend(chatd.lines.try_iter());
    for line in &log {
        assert!(
            !line.contains(KEY) && !line.contains(WRONG),
            "a key in the log: {line}"
        );
    }
}
