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

/// A server declared `per_user = true`, in one browser: Ann signs in with a login link and
/// connects it with her own account; Bob, signed in after her, finds it not connected for him
/// and connects his. Each login is kept (two codes exchanged, each person's log line), and no
/// token the server issued appears in chatd's log, its metrics, what the API answers either
/// person, or the browser's console.
#[tokio::test]
async fn each_person_connects_a_per_user_server_with_their_own_account() {
    const TOKEN: &str = "per-user-admin-token";
    let Some(mcp) = McpServer::start_oauth() else {
        return;
    };
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("chatd.toml");
    let table = format!(
        "[mcp.t]\nurl = \"{}\"\nauth = \"oauth\"\nper_user = true\n",
        mcp.url
    );
    std::fs::write(&config, table).unwrap();
    let config = config.display().to_string();
    let env = [("CHATD_CONFIG", config.as_str()), ("ADMIN_TOKEN", TOKEN)];
    let Some((_upstreams, chatd, browser)) = open_app([], &env).await else {
        return;
    };
    for name in ["ann", "bob"] {
        let person = serde_json::json!({"name": name, "role": "member"});
        let method = reqwest::Method::POST;
        chatd
            .api(method, "/v1/users", Some(person), Some(TOKEN))
            .await;
    }
    let server = ".mcp-server[data-name=\"t\"]";
    let mut seen = String::new();
    for name in ["ann", "bob"] {
        browser.open(&crate::login_link(&chatd, name, TOKEN)).await;
        browser.ready().await;
        browser.click("#open-mcp").await;
        // Not connected for this person, whoever connected before them.
        browser
            .until(
                "the server needing this person's login",
                &format!(
                    "return !!document.querySelector('{}[data-state=\"needs_login\"] .mcp-own')",
                    server.replace('\'', "\\'")
                ),
            )
            .await;
        browser
            .click(&format!("{server} button[data-action=\"connect\"]"))
            .await;
        browser
            .until(
                "the server connected for this person",
                &format!(
                    "return location.hash === '#/mcp-servers' && \
                     !!document.querySelector('{}[data-state=\"connected\"]')",
                    server.replace('\'', "\\'")
                ),
            )
            .await;
        // What the API answers this person, through their session.
        let answers = browser
            .eval(
                "return Promise.all(['v1/mcp-servers', 'v1/chat-tools', 'v1/auth/session'] \
                 .map((p) => fetch(p).then((r) => r.text()))).then((a) => a.join('\\n'))",
                Vec::new(),
            )
            .await;
        let answers = answers.as_str().unwrap().to_string();
        assert!(answers.contains("mcp__t__add"), "{answers}");
        seen.push_str(&answers);
        browser.click("#sign-out").await;
        browser.find("#token").await;
    }
    assert_eq!(mcp.stats().await["authorization_code"], 2);

    // The canary: the tokens the server issued are nowhere chatd writes or answers.
    let issued = mcp.tokens().await;
    assert!(issued.len() >= 4, "two logins");
    for path in ["/v1/mcp-servers", "/v1/chat-tools", "/metrics", "/v1/users"] {
        let answer = reqwest::Client::new()
            .get(format!("{}{path}", chatd.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success(), "{path}");
        seen.push_str(&answer.text().await.unwrap());
    }
    let mut logged_in = 0;
    while let Ok(line) = chatd.lines.try_recv() {
        logged_in +=
            usize::from(line.contains("MCP server t: person") && line.contains("logged in"));
        seen.push_str(&line);
    }
    assert_eq!(logged_in, 2, "each person's login said in the log");
    seen.push_str(&browser.console().await.join("\n"));
    for token in &issued {
        assert!(!seen.contains(token.as_str()), "a token was seen");
    }
}
