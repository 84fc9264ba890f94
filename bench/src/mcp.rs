//! `bench mcp`: the time chatd adds to a call of an MCP server's tool. The same `add` call of
//! `tests/mcp/server.py` (the official Python SDK's server, on loopback; the Python of
//! `target/mcp-venv`, as `.ci/run` installs it, or CHATD_MCP_PYTHON) made directly (one
//! session, a plain JSON-RPC POST per call: the floor) and through chatd's MCP client (the one
//! the tool loop uses: rmcp over the plugin HTTP stack, with its checks and scrubbing), in
//! alternating blocks, p50/p99 in ms. Then `/mcp` against a chat: [`crate::mcp_served`]. `MCP_TEST_JSON=1` has the server answer with JSON bodies
//! instead of SSE streams.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chatd::config::mcp::{DEFAULT_TIMEOUT, DEFAULT_TOOL_TEXT_KIB, DeclaredMcp};
use chatd::tools::mcp::{McpServers, McpTool};
use futures::StreamExt;
use serde_json::json;

use crate::harness::{added_by, client, row};

/// Calls per path in a row.
const BLOCK: usize = 25;

pub fn usage() -> &'static str {
    "bench mcp [--calls N]            chatd's MCP client vs the server called directly; /mcp vs a chat's tool call"
}

pub fn run(args: &[String]) -> anyhow::Result<()> {
    let calls = match args {
        [] => 500,
        [flag, n] if flag == "--calls" => n.parse().context("--calls: a number")?,
        _ => bail!("{}", usage()),
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = std::env::var_os("CHATD_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/mcp-venv/bin/python"));
    let mut child = Command::new(&python)
        .arg(root.join("tests/mcp/server.py"))
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting the MCP server with {}", python.display()))?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line)?;
    let url = line.trim().trim_start_matches("listening ").to_string();
    let rt = tokio::runtime::Runtime::new()?;
    let result = rt
        .block_on(measure(&url, calls))
        .and_then(|()| rt.block_on(crate::mcp_served::measure(calls)));
    let _ = child.kill();
    let _ = child.wait();
    result
}

async fn measure(url: &str, calls: usize) -> anyhow::Result<()> {
    let http = client()?;
    let session = open_session(&http, url).await?;
    let servers = McpServers::default();
    let mut declared = BTreeMap::new();
    declared.insert(
        "bench".to_string(),
        DeclaredMcp {
            name: "bench".into(),
            url: url.parse()?,
            api_key: None,
            auth: None,
            headers: Vec::new(),
            tools: None,
            timeout: DEFAULT_TIMEOUT,
            max_tool_text: DEFAULT_TOOL_TEXT_KIB as usize * 1024,
            insecure_key: false,
            oauth: None,
            per_user: false,
        },
    );
    let mut changed = servers.changed();
    servers.apply(&declared);
    let tool = loop {
        if let Some(tool) = servers.reachable_now("admin").tool("mcp__bench__add") {
            break tool;
        }
        tokio::time::timeout(Duration::from_secs(30), changed.changed())
            .await
            .context("chatd never listed the server's tools")??;
    };
    let (mut direct, mut via) = (Vec::new(), Vec::new());
    // Blocks of calls, the two paths taking turns (a call made right after the other path's
    // pays or saves for what the server still does after answering it; within a block each
    // path follows itself, as a tool loop's calls do). The first block of each warms up.
    let blocks = calls.div_ceil(BLOCK) + 1;
    for block in 0..blocks {
        let mut d = Vec::new();
        let mut v = Vec::new();
        for i in 0..BLOCK {
            d.push(timed(direct_call(&http, url, &session, block * BLOCK + i)).await?);
        }
        for i in 0..BLOCK {
            v.push(timed(via_call(&tool, block * BLOCK + i)).await?);
        }
        if block > 0 {
            direct.extend(d);
            via.extend(v);
        }
    }
    println!(
        "{:<50} {:>9} {:>9} {:>9}",
        format!("mcp: {calls} calls of add, ms"),
        "p50",
        "p99",
        "max"
    );
    let floor = row("server called directly (one session)", &mut direct);
    let chatd = row("through chatd's MCP client", &mut via);
    added_by("chatd", "per call", chatd, floor);
    Ok(())
}

async fn timed(call: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<Duration> {
    let clock = Instant::now();
    call.await?;
    Ok(clock.elapsed())
}

async fn via_call(tool: &McpTool, i: usize) -> anyhow::Result<()> {
    let outcome = tool
        .call(&json!({"a": i, "b": 1}).to_string())
        .await
        .map_err(anyhow::Error::msg)?;
    anyhow::ensure!(outcome.text == (i + 1).to_string(), "{}", outcome.text);
    Ok(())
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: serde_json::Value,
) -> anyhow::Result<reqwest::Response> {
    let mut request = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    Ok(request.send().await?.error_for_status()?)
}

async fn open_session(http: &reqwest::Client, url: &str) -> anyhow::Result<String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}});
    let response = post(http, url, None, init).await?;
    let session = response
        .headers()
        .get("mcp-session-id")
        .context("no session id")?
        .to_str()?
        .to_string();
    response.bytes().await?;
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(http, url, Some(&session), done).await?.bytes().await?;
    Ok(session)
}

async fn direct_call(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    i: usize,
) -> anyhow::Result<()> {
    let call = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": i, "b": 1}}});
    // Read as a client does: up to the event with the answer (the SDK's server may hold the
    // stream open a little after it), not to the body's end.
    let mut stream = post(http, url, Some(session), call).await?.bytes_stream();
    let mut seen = Vec::new();
    while let Some(chunk) = stream.next().await {
        seen.extend_from_slice(&chunk?);
        let text = String::from_utf8_lossy(&seen);
        if let Some(at) = text.find("\"result\"")
            && (text[at..].contains("\n\n")
                || text[at..].contains("\r\n\r\n")
                || !text.starts_with("event"))
            && text.trim_end().ends_with('}')
        {
            return Ok(());
        }
    }
    anyhow::ensure!(
        String::from_utf8_lossy(&seen).contains("\"result\""),
        "no result"
    );
    Ok(())
}
