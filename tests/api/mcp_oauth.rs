//! MCP servers that need a login (`auth = "oauth"`), against a real one:
//! `tests/mcp/oauth_server.py`, the official Python SDK's authorization server and bearer check
//! over an in-memory provider that approves at once (`crate::mcp`). Connect begins the login,
//! the authorization server's redirect reaches the callback with the cookie Connect set, and
//! the server's tools appear; an expired access token is refreshed silently; a restart keeps
//! the login; Disconnect revokes it and takes the tools away; the login is sealed at rest; the
//! callback refuses what it did not begin.

use std::path::PathBuf;

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use chatd::store::logins::LoginKey;
use chatd::store::people::BUILTIN_ADMIN;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::live_replies::{self, A, Wire, ask, call, text};
use crate::mcp::McpServer;
use crate::support::{Options, TestServer, on_postgres, write_config};

pub const TOOL: &str = "mcp__t__add";

/// The test server's counts: token requests by grant type, registrations, revocations.
pub async fn stats(mcp: &McpServer) -> Value {
    mcp.stats().await
}

/// Two rounds per chat, `chats` times: the model calls `add`, then says "Done.".
pub fn calls(wire: Wire, chats: usize) -> Vec<(&'static str, Reply)> {
    let mut replies = Vec::new();
    for _ in 0..chats {
        let args = r#"{"a":2,"b":3}"#;
        replies.push((
            wire.route,
            live_replies::paced(wire, &[call("call_1", TOOL, args)]),
        ));
        replies.push((wire.route, live_replies::paced(wire, &[text(&["Done."])])));
    }
    replies
}

/// A server with `[mcp.t]` needing a login at `mcp`, its data in `dir` (kept across restarts).
pub async fn serve(
    upstream: &ScriptedUpstream,
    mcp: &McpServer,
    dir: &std::sync::Arc<tempfile::TempDir>,
) -> TestServer {
    serve_at(upstream, &mcp.url, dir, "").await
}

/// [`serve`] with the server at `url`, and `more` in the configuration file.
async fn serve_at(
    upstream: &ScriptedUpstream,
    url: &str,
    dir: &std::sync::Arc<tempfile::TempDir>,
    more: &str,
) -> TestServer {
    let config = format!("[mcp.t]\nurl = \"{url}\"\nauth = \"oauth\"\n{more}");
    let path: PathBuf = write_config(dir.path(), &config);
    // On SQLite the key is the data folder's key file; PostgreSQL needs CHATD_SECRET_KEY.
    let mut args = Vec::new();
    if on_postgres() {
        args = vec!["--chatd-secret-key".into(), "k".repeat(40)];
    }
    let options = Options {
        config: Some(path),
        dir: Some(dir.clone()),
        args,
        ..Options::default()
    };
    live_replies::server(A, upstream, options).await
}

/// Waits (up to 60 s, change by change) until `TOOL` is offered (`present`) or not.
pub async fn listed(server: &TestServer, present: bool) {
    offered_to(server, BUILTIN_ADMIN, TOOL, present).await;
}

/// Waits (up to 60 s, change by change) until `person` is offered the tool `name`
/// (`present`) or not.
pub async fn offered_to(server: &TestServer, person: &str, name: &str, present: bool) {
    let tools = &server.state.tools;
    let mut changed = tools.changed();
    let waited = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while tools
            .offered(person)
            .await
            .names()
            .iter()
            .any(|n| n == name)
            != present
        {
            changed.changed().await.expect("the tools are alive");
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "timed out waiting until {name} listed = {present} for {person}"
    );
}

async fn state_of(server: &TestServer) -> Value {
    let (status, body) = server.get("/v1/mcp-servers").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["data"][0].clone()
}

/// Connect as the web client does, then the browser's part: the authorization server's
/// redirect, followed to chatd's callback with the cookie Connect set.
pub async fn connect(server: &TestServer) -> reqwest::Response {
    let res = server.open("/v1/mcp-servers/t/connect", None, &[]).await;
    follow_login(server, res).await
}

/// The browser's part of a login `begun` (Connect's answer, or a person's own login's): the
/// authorization server's redirect, followed to `[mcp.t]`'s callback with the cookie it set.
pub async fn follow_login(server: &TestServer, begun: reqwest::Response) -> reqwest::Response {
    let res = begun;
    assert_eq!(res.status(), StatusCode::OK);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.starts_with("chatd_mcp_login_")
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Lax")
            && cookie.contains("Path=/v1/mcp-servers/t/callback"),
        "{cookie}"
    );
    let body: Value = res.json().await.unwrap();
    let callback = approved(&body).await;
    assert!(
        callback.starts_with(&format!("{}/v1/mcp-servers/t/callback?", server.base)),
        "{callback}"
    );
    let value = cookie.split(';').next().unwrap().to_string();
    browser()
        .get(callback)
        .header("cookie", value)
        .send()
        .await
        .unwrap()
}

/// A client that, as a test of redirects needs, follows none.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Where the authorization server sends the browser for Connect's answer `connected`: the
/// callback, with its code and state.
async fn approved(connected: &Value) -> String {
    redirected(connected["authorizationUrl"].as_str().unwrap()).await
}

/// A chat whose model calls the server's `add`: its tool result.
async fn add(server: &TestServer) -> Value {
    let mut stream = ask(server, A, "2 + 3?").await;
    stream.expect("meta").await;
    stream.expect("tool_call").await;
    let terminal = stream.expect("tool_call").await.data;
    stream.rest().await;
    terminal
}

#[tokio::test]
async fn connect_logs_in_and_the_login_is_refreshed_kept_and_disconnected() {
    let Some(mcp) = McpServer::start_oauth() else {
        return;
    };
    let upstream = ScriptedUpstream::start(calls(A, 2)).await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let server = serve(&upstream, &mcp, &dir).await;
    let before = state_of(&server).await;
    assert_eq!(before["login"], true);
    assert_eq!(before["state"], "needs_login", "{before}");

    let done = connect(&server).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        done.headers()["location"],
        format!("{}/#/mcp-servers", server.base)
    );
    // What the page the browser lands on is told: never the failure from before the login.
    let landed = state_of(&server).await;
    assert!(
        landed["state"] == "connecting" || landed["state"] == "connected",
        "{landed}"
    );
    listed(&server, true).await;
    assert_eq!(state_of(&server).await["state"], "connected");
    let first = add(&server).await;
    assert_eq!(first["status"], "completed", "{first}");
    assert_eq!(first["resultPreview"], "5");
    assert_eq!(stats(&mcp).await["authorization_code"], 1);

    // The access token stops working: the next call is refused once, refreshed, and passes.
    mcp.expire().await;
    let after = add(&server).await;
    assert_eq!(after["status"], "completed", "{after}");
    let counts = stats(&mcp).await;
    assert_eq!(counts["refresh_token"], 1, "{counts}");
    assert_eq!(counts["authorization_code"], 1, "{counts}");

    // Sealed at rest: the database holds no token the server gave; the export leaves logins
    // out, and no token is in it (the chats' transcripts included) or in any answer.
    let issued = mcp.tokens().await;
    assert!(
        sealed_canary(&server, &issued).await,
        "the login row is there, and sealed"
    );
    let mut seen = Vec::new();
    chatd::store::transfer::export(&server.database_url, &mut seen)
        .await
        .unwrap();
    let mut seen = String::from_utf8(seen).unwrap();
    assert!(seen.contains("\"5\""), "the transcripts are exported");
    assert!(!seen.contains("mcp_login"));
    for path in ["/v1/mcp-servers", "/v1/chat-tools", "/v1/chats"] {
        seen.push_str(&server.get(path).await.1.to_string());
    }
    for token in &issued {
        assert!(!seen.contains(token.as_str()), "a token was seen");
    }

    // A restart keeps the login.
    server.stop().await;
    let upstream = ScriptedUpstream::start(calls(A, 0)).await;
    let server = serve(&upstream, &mcp, &dir).await;
    listed(&server, true).await;
    assert_eq!(stats(&mcp).await["authorization_code"], 1);

    // Disconnect revokes the login, takes the tools away, and a restart does not bring them.
    let res = server.open("/v1/mcp-servers/t/disconnect", None, &[]).await;
    assert_eq!(res.status(), StatusCode::OK);
    listed(&server, false).await;
    assert_eq!(state_of(&server).await["state"], "needs_login");
    assert_eq!(stats(&mcp).await["revocations"], 1);
    server.stop().await;
    let server = serve(&upstream, &mcp, &dir).await;
    let state = state_of(&server).await;
    assert!(
        state["state"] == "needs_login" || state["state"] == "connecting",
        "{state}"
    );
    server.stop().await;
}

/// Whether the login row is stored under a key id, and none of the tokens the test server
/// `issued` is among its bytes.
async fn sealed_canary(server: &TestServer, issued: &[String]) -> bool {
    let row = server.store.login(&LoginKey::operator("t")).await.unwrap();
    let Some(row) = row else { return false };
    let holds = |token: &str| {
        row.sealed
            .windows(token.len())
            .any(|w| w == token.as_bytes())
    };
    !row.key_id.is_empty() && !issued.iter().any(|token| holds(token))
}

#[tokio::test]
async fn a_refused_refresh_asks_for_a_login_and_withdraws_the_tools_while_chatd_serves() {
    let Some(mcp) = McpServer::start_oauth() else {
        return;
    };
    let upstream = ScriptedUpstream::start(calls(A, 1)).await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let server = serve(&upstream, &mcp, &dir).await;
    assert_eq!(connect(&server).await.status(), StatusCode::SEE_OTHER);
    listed(&server, true).await;
    // The grant ends on the authorization server: the token stops working and the refresh is
    // refused.
    mcp.revoke().await;
    let failed = add(&server).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let state = state_of(&server).await;
    assert_eq!(state["state"], "needs_login", "{state}");
    let reason = state["reason"].as_str().unwrap();
    assert!(reason.contains("refresh was refused"), "{reason}");
    listed(&server, false).await;
    let (status, _) = server.get("/v1/chats").await;
    assert_eq!(status, StatusCode::OK);
    // Connect again, and the tools come back.
    assert_eq!(connect(&server).await.status(), StatusCode::SEE_OTHER);
    listed(&server, true).await;
    server.stop().await;
}

#[tokio::test]
async fn chatd_mcp_login_keeps_a_login_the_server_then_uses() {
    let Some(mcp) = McpServer::start_oauth() else {
        return;
    };
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let config = format!("[mcp.t]\nurl = \"{}\"\nauth = \"oauth\"\n", mcp.url);
    let path = write_config(dir.path(), &config);
    let database = match crate::support::test_database(&dir).await {
        chatd::config::DatabaseUrl::Sqlite(url) | chatd::config::DatabaseUrl::Postgres(url) => url,
    };
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_chatd"));
    command
        .args(["mcp", "login", "t"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("CHATD_CONFIG", &path)
        .env("DATABASE_URL", &database);
    if on_postgres() {
        command.env("CHATD_SECRET_KEY", "k".repeat(40));
    }
    let out = command.output().await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("logged in to mcp.t; it offers 2 tools"),
        "{said}"
    );
    // The server finds the login and lists the tools, with no Connect.
    let upstream = ScriptedUpstream::start(calls(A, 0)).await;
    let server = serve(&upstream, &mcp, &dir).await;
    listed(&server, true).await;
    assert_eq!(stats(&mcp).await["authorization_code"], 1);
    server.stop().await;
}

#[tokio::test]
async fn the_callback_refuses_what_it_did_not_begin() {
    let Some(mcp) = McpServer::start_oauth() else {
        return;
    };
    let upstream = ScriptedUpstream::start(calls(A, 0)).await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    // Beside `t`, `k`: a server that needs no login.
    let keyless = format!("[mcp.k]\nurl = \"{}\"\n", mcp.url);
    let server = serve_at(&upstream, &mcp.url, &dir, &keyless).await;
    let plain = reqwest::Client::new();
    let callback = format!("{}/v1/mcp-servers/callback", server.base);
    for (query, cookie, status, expected) in [
        ("code=x", "", StatusCode::BAD_REQUEST, "state: missing"),
        (
            "code=x&state=made-up",
            "chatd_mcp_login_x=y",
            StatusCode::NOT_FOUND,
            "state: no such login",
        ),
        ("state=", "", StatusCode::NOT_FOUND, "state: no such login"),
        ("state=a&state=b", "", StatusCode::BAD_REQUEST, "query"),
    ] {
        let res = plain
            .get(format!("{callback}?{query}"))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), status, "{query}");
        let body: Value = res.json().await.unwrap();
        assert!(
            body["message"].as_str().unwrap().starts_with(expected),
            "{body}"
        );
    }
    // A login begun here, finished by another browser (no cookie, or another one): refused,
    // and the state is spent.
    let res = server.open("/v1/mcp-servers/t/connect", None, &[]).await;
    let set = res.headers()["set-cookie"].to_str().unwrap().to_string();
    let name = set.split('=').next().unwrap().to_string();
    let location = approved(&res.json().await.unwrap()).await;
    let other = plain
        .get(&location)
        .header("cookie", format!("{name}=someone-else"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::BAD_REQUEST);
    let body: Value = other.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().starts_with("cookie:"),
        "{body}"
    );
    let again = plain.get(&location).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_FOUND, "the state is spent");
    // Names: unknown, and one that needs no login.
    let (status, body) = server.post("/v1/mcp-servers/nope/connect", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = server.post("/v1/mcp-servers/k/connect", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("needs no login"),
        "{body}"
    );
    assert_eq!(stats(&mcp).await["authorization_code"], 0);
    server.stop().await;
}

#[tokio::test]
async fn an_authorization_server_gone_is_a_503_naming_the_server_and_chatd_serves_on() {
    let Some(mcp) = McpServer::start_oauth() else {
        return;
    };
    let upstream = ScriptedUpstream::start(calls(A, 0)).await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let server = serve(&upstream, &mcp, &dir).await;
    let res = server.open("/v1/mcp-servers/t/connect", None, &[]).await;
    assert_eq!(res.status(), StatusCode::OK);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_string();
    let location = approved(&res.json().await.unwrap()).await;
    // The browser comes back with a code after the authorization server went away: the code
    // cannot be exchanged.
    let gone_url = mcp.url.clone();
    drop(mcp);
    let done = browser()
        .get(&location)
        .header("cookie", cookie.split(';').next().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = done.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().starts_with("mcp.t: "),
        "{body}"
    );
    let after = state_of(&server).await;
    assert_eq!(after["state"], "needs_login", "{after}");
    server.stop().await;

    // A chatd that never reached it: Connect cannot discover where to log in; said the same way.
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let fresh = serve_at(&upstream, &gone_url, &dir, "").await;
    let (status, body) = fresh.post("/v1/mcp-servers/t/connect", json!({})).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(
        body["message"].as_str().unwrap().starts_with("mcp.t: "),
        "{body}"
    );
    fresh.stop().await;
}

#[tokio::test]
async fn a_key_that_cannot_be_read_refuses_the_server_until_a_reload_finds_it_fixed() {
    // On PostgreSQL the key is CHATD_SECRET_KEY, not a file.
    if on_postgres() {
        return;
    }
    let Some(mcp) = McpServer::start_oauth() else {
        return;
    };
    let upstream = ScriptedUpstream::start(calls(A, 0)).await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let key = dir.path().join("data").join("mcp-logins.key");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    std::fs::write(&key, b"not a key").unwrap();
    let server = serve(&upstream, &mcp, &dir).await;
    let refused = state_of(&server).await;
    assert_eq!(refused["state"], "refused", "{refused}");
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .contains("is not a 32-byte key"),
        "{refused}"
    );
    // The operator removes the bad file and touches the configuration: served again, with a
    // new key, needing a login.
    std::fs::remove_file(&key).unwrap();
    let mut changed = server.state.tools.changed();
    let config = std::fs::read_to_string(dir.path().join("chatd.toml")).unwrap();
    write_config(dir.path(), &config);
    let served = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            changed.changed().await.expect("the tools are alive");
            let now = state_of(&server).await;
            if now["state"] != "refused" {
                return now;
            }
        }
    })
    .await
    .expect("a reload within a minute");
    assert_eq!(served["state"], "needs_login", "{served}");
    assert_eq!(std::fs::read(&key).unwrap().len(), 32);
    server.stop().await;
}

/// A browser's cookies as a browser keeps them: by name and path, a later one replacing an
/// earlier one of the same name; all of them sent to a path they cover.
#[derive(Default)]
struct Jar(Vec<(String, String, String)>);

impl Jar {
    fn keep(&mut self, res: &reqwest::Response) {
        for set in res.headers().get_all("set-cookie") {
            let set = set.to_str().unwrap();
            let (pair, attributes) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').unwrap();
            let path = attributes
                .split(';')
                .find_map(|a| a.trim().strip_prefix("Path="))
                .unwrap_or("/")
                .to_string();
            self.0.retain(|(n, _, p)| !(n == name && *p == path));
            self.0.push((name.into(), value.into(), path));
        }
    }

    /// The browser's GET of `url` with the cookies it holds for `cookies_of` (the URL it was
    /// sent to, when a test delivers it elsewhere).
    async fn send(&self, url: &str, cookies_of: &str) -> reqwest::Response {
        browser()
            .get(url)
            .header("cookie", self.header(cookies_of))
            .send()
            .await
            .unwrap()
    }

    fn header(&self, url: &str) -> String {
        let path = reqwest::Url::parse(url).unwrap().path().to_string();
        self.0
            .iter()
            .filter(|(_, _, p)| path.starts_with(p.as_str()))
            .map(|(n, v, _)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Connect for `name`, the browser's cookies kept in `jar`: the authorization URL.
async fn connect_in(server: &TestServer, name: &str, jar: &mut Jar) -> String {
    let res = server
        .open(&format!("/v1/mcp-servers/{name}/connect"), None, &[])
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    jar.keep(&res);
    let body: Value = res.json().await.unwrap();
    body["authorizationUrl"].as_str().unwrap().to_string()
}

/// Where the authorization server at `url` sends the browser.
async fn redirected(url: &str) -> String {
    let approved = browser().get(url).send().await.unwrap();
    assert_eq!(approved.status(), StatusCode::FOUND);
    approved.headers()["location"].to_str().unwrap().to_string()
}

/// The query parameter `name` of `url`.
fn param(url: &str, name: &str) -> String {
    let url = reqwest::Url::parse(url).unwrap();
    let (_, value) = url.query_pairs().find(|(n, _)| n == name).unwrap();
    value.into_owned()
}

/// Two servers, each with its own authorization server: each server's login comes back to its
/// own callback, an answer from one server's authorization server carrying another login's
/// state is refused where it arrives (a mix-up, RFC 9700 §4.4) and sent to no token endpoint,
/// and two logins begun in one browser both finish (each its own cookie).
#[tokio::test]
async fn an_answer_is_taken_only_at_its_own_servers_callback() {
    let (Some(t), Some(u)) = (McpServer::start_oauth(), McpServer::start_oauth()) else {
        return;
    };
    let upstream = ScriptedUpstream::start(calls(A, 0)).await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let more = format!("[mcp.u]\nurl = \"{}\"\nauth = \"oauth\"\n", u.url);
    let server = serve_at(&upstream, &t.url, &dir, &more).await;
    let mut jar = Jar::default();
    let at_u = connect_in(&server, "u", &mut jar).await;
    let at_t = connect_in(&server, "t", &mut jar).await;
    assert_eq!(
        param(&at_t, "redirect_uri"),
        format!("{}/v1/mcp-servers/t/callback", server.base)
    );
    assert_eq!(
        param(&at_u, "redirect_uri"),
        format!("{}/v1/mcp-servers/u/callback", server.base)
    );
    // The attack: u's login state, sent through t's authorization server (chatd's client
    // there), comes back with t's code to t's callback.
    let mut forged = reqwest::Url::parse(&at_t).unwrap();
    let pairs: Vec<(String, String)> = forged
        .query_pairs()
        .map(|(n, v)| {
            let v = if n == "state" {
                param(&at_u, "state")
            } else {
                v.into_owned()
            };
            (n.into_owned(), v)
        })
        .collect();
    forged.query_pairs_mut().clear().extend_pairs(pairs);
    let arrived = redirected(forged.as_str()).await;
    assert!(
        arrived.starts_with(&format!("{}/v1/mcp-servers/t/callback?", server.base)),
        "{arrived}"
    );
    let refused = jar.send(&arrived, &arrived).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("state: this login is mcp.u's, and came back to mcp.t's callback"),
        "{body}"
    );
    // u's login is spent; no code went to either token endpoint.
    let honest_u = redirected(&at_u).await;
    let spent = jar.send(&honest_u, &honest_u).await;
    assert_eq!(spent.status(), StatusCode::NOT_FOUND);
    for (name, mcp) in [("t", &t), ("u", &u)] {
        assert_eq!(stats(mcp).await["codes_presented"], 0, "{name}");
    }

    // Two logins of t begun in one browser, finished in the other order: both log in.
    let first = connect_in(&server, "t", &mut jar).await;
    let second = connect_in(&server, "t", &mut jar).await;
    for url in [second, first, at_t] {
        let back = redirected(&url).await;
        let done = jar.send(&back, &back).await;
        assert_eq!(done.status(), StatusCode::SEE_OTHER, "{back}");
    }
    assert_eq!(stats(&t).await["authorization_code"], 3);
    listed(&server, true).await;
    server.stop().await;
}

/// A `client_id` registered beforehand shares one callback with every such server: its
/// authorization server must name itself in its answers (RFC 9207). One that does not say so
/// is refused at Connect, before anyone logs in; one that does logs in there, and an answer
/// without `iss` is refused.
#[tokio::test]
async fn a_client_registered_beforehand_needs_an_issuer_that_names_itself() {
    let (Some(silent), Some(naming)) = (
        McpServer::start_oauth(),
        McpServer::start_oauth_sending_iss(),
    ) else {
        return;
    };
    let upstream = ScriptedUpstream::start(calls(A, 0)).await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let more = format!(
        "client_id = \"chatd-pre\"\n[mcp.n]\nurl = \"{}\"\nauth = \"oauth\"\nclient_id = \"chatd-pre\"\n",
        naming.url
    );
    let server = serve_at(&upstream, &silent.url, &dir, &more).await;
    let shared = format!("{}/v1/mcp-servers/callback", server.base);
    for mcp in [&silent, &naming] {
        mcp.register_client("chatd-pre", &shared).await;
    }
    let res = server.open("/v1/mcp-servers/t/connect", None, &[]).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let body: Value = res.json().await.unwrap();
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with("mcp.t: its client_id was registered beforehand")
            && message.contains("authorization_response_iss_parameter_supported"),
        "{message}"
    );

    let mut jar = Jar::default();
    let at_n = connect_in(&server, "n", &mut jar).await;
    assert_eq!(param(&at_n, "redirect_uri"), shared);
    assert_eq!(param(&at_n, "client_id"), "chatd-pre");
    let back = redirected(&at_n).await;
    assert!(back.starts_with(&format!("{shared}?")), "{back}");
    // Without its iss: refused (the issuer promised it), and spent.
    let mut stripped = reqwest::Url::parse(&back).unwrap();
    let kept: Vec<(String, String)> = stripped
        .query_pairs()
        .filter(|(n, _)| n != "iss")
        .map(|(n, v)| (n.into_owned(), v.into_owned()))
        .collect();
    stripped.query_pairs_mut().clear().extend_pairs(kept);
    let refused = jar.send(stripped.as_str(), &back).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    // Delivered to the server's own callback instead: refused too (its login was begun for
    // the shared one).
    let at_n = connect_in(&server, "n", &mut jar).await;
    let back = redirected(&at_n).await;
    let own = back.replace("/v1/mcp-servers/callback?", "/v1/mcp-servers/n/callback?");
    let refused = jar.send(&own, &back).await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("came back to another callback"),
        "{body}"
    );
    // Then as it should be: logged in.
    let at_n = connect_in(&server, "n", &mut jar).await;
    let back = redirected(&at_n).await;
    let done = jar.send(&back, &back).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert_eq!(stats(&naming).await["authorization_code"], 1);
    server.stop().await;
}
