//! Connect in the browser: the MCP servers page shows a server that needs a login, Connect
//! sends the browser to its authorization server (`tests/mcp/oauth_server.py`, the official
//! Python SDK's, approving at once), the redirect comes back to chatd's callback and then to
//! the page, which shows the server connected; its tools are chat tools. No token the server
//! issued appears in chatd's log or in what the API answers.

use crate::mcp::McpServer;
use crate::open_app;

#[tokio::test]
async fn connect_in_the_browser_logs_in_and_brings_the_servers_tools() {
    let Some(mcp) = McpServer::start_oauth() else {
        return;
    };
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("chatd.toml");
    std::fs::write(
        &config,
        format!("[mcp.t]\nurl = \"{}\"\nauth = \"oauth\"\n", mcp.url),
    )
    .unwrap();
    let config = config.display().to_string();
    let Some((_upstreams, chatd, browser)) =
        open_app([], &[("CHATD_CONFIG", &config), ("CHATD_METRICS", "open")]).await
    else {
        return;
    };
    browser.ready().await;
    browser.click("#open-mcp").await;
    browser
        .until(
            "the server needing a login",
            "return !!document.querySelector('.mcp-server[data-name=\"t\"][data-state=\"needs_login\"]')",
        )
        .await;
    browser
        .click(".mcp-server[data-name=\"t\"] button[data-action=\"connect\"]")
        .await;
    browser
        .until(
            "the server connected, back on the servers page",
            "return location.hash === '#/mcp-servers' && \
             !!document.querySelector('.mcp-server[data-name=\"t\"][data-state=\"connected\"]')",
        )
        .await;
    let tools = chatd.get("/v1/chat-tools").await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"mcp__t__add"), "{names:?}");

    // The canary: the tokens the server issued are nowhere chatd writes or answers.
    let issued = mcp.tokens().await;
    assert!(!issued.is_empty());
    let mut seen = String::new();
    for path in [
        "/v1/mcp-servers",
        "/v1/chat-tools",
        "/metrics",
        "/openapi.json",
    ] {
        let answer = reqwest::get(format!("{}{path}", chatd.base)).await.unwrap();
        seen.push_str(&answer.text().await.unwrap());
    }
    while let Ok(line) = chatd.lines.try_recv() {
        seen.push_str(&line);
    }
    seen.push_str(&browser.console().await.join("\n"));
    for token in &issued {
        assert!(!seen.contains(token.as_str()), "a token was seen");
    }
}
