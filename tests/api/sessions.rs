//! Signing in with a login link (docs/teams.md, "Signing in"): a link works once and for 15
//! minutes; its session cookie is HttpOnly and SameSite=Lax, reaches what the person's `chat`
//! scope does (and an admin's people), never `/openai/v1` or `/mcp`, is refused from another
//! origin's page, and ends at once here and within a second on every other instance.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::people::{TOKEN, add_person, second_instance, token_server, users_cli};
use crate::support::TestServer;

/// `chatd users login-link NAME`'s line, and the link's secret.
fn login_link(server: &TestServer, name: &str) -> (Value, String) {
    let out = users_cli(server, &["login-link", name]);
    assert!(out.status.success(), "{out:?}");
    let line: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    let link = line["link"].as_str().unwrap();
    let (_, secret) = link
        .split_once("/#login=")
        .expect("the secret after #login=");
    (line.clone(), secret.to_string())
}

/// Uses a login link as the web client does: its status, body and `Set-Cookie`.
async fn use_link(server: &TestServer, secret: &str) -> (StatusCode, Value, Option<String>) {
    let res = server
        .client
        .post(format!("{}/v1/auth/link", server.base))
        .header("user-agent", "sessions-test")
        .json(&json!({ "token": secret }))
        .send()
        .await
        .unwrap();
    let status = res.status();
    let cookie = res
        .headers()
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().to_string());
    (status, res.json().await.unwrap(), cookie)
}

/// Signs `name` in with a fresh link: the cookie's secret and the session's id.
async fn sign_in(server: &TestServer, name: &str) -> (String, String) {
    let (_, secret) = login_link(server, name);
    let (status, body, cookie) = use_link(server, &secret).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let cookie = cookie.expect("a session cookie");
    let value = cookie
        .strip_prefix("chatd_session=")
        .and_then(|rest| rest.split(';').next())
        .expect("the session cookie first");
    (
        value.to_string(),
        body["session"]["id"].as_str().unwrap().to_string(),
    )
}

/// A request carrying only the session cookie `session` (and `origin`, when given).
async fn with_cookie(
    server: &TestServer,
    session: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
    origin: Option<&str>,
) -> (StatusCode, Value, Option<String>) {
    let mut req = server
        .client
        .request(method, format!("{}{path}", server.base))
        .header("cookie", format!("other=1; chatd_session={session}"));
    if let Some(origin) = origin {
        req = req.header("origin", origin);
    }
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    let cleared = res
        .headers()
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().to_string());
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
        cleared,
    )
}

async fn get(server: &TestServer, session: &str, path: &str) -> StatusCode {
    with_cookie(server, session, Method::GET, path, None, None)
        .await
        .0
}

/// Waits until the cookie `session` is refused at `server`, at most a second after `since`.
async fn refused_within_a_second(server: &TestServer, session: &str, since: std::time::Instant) {
    loop {
        match get(server, session, "/v1/chats").await {
            StatusCode::UNAUTHORIZED => return,
            status => assert_eq!(status, StatusCode::OK),
        }
        assert!(
            since.elapsed() < std::time::Duration::from_secs(1),
            "a session still served a second after it ended"
        );
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_login_link_works_once_and_its_cookie_reaches_what_chat_does() {
    let server = token_server().await;
    let (_, ann_key) = add_person(&server, "ann", "member").await;
    let (line, secret) = login_link(&server, "ann");
    assert_eq!(line["name"], "ann");
    assert!(secret.starts_with("chatd_link_"), "{line}");
    let expires: chrono::DateTime<chrono::Utc> =
        line["expiresAt"].as_str().unwrap().parse().unwrap();
    let left = expires - chrono::Utc::now();
    assert!(
        left > chrono::Duration::minutes(14) && left <= chrono::Duration::minutes(15),
        "{line}"
    );

    let (status, body, cookie) = use_link(&server, &secret).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["name"], "ann");
    assert_eq!(body["user"]["role"], "member");
    assert_eq!(body["session"]["via"], "link");
    let cookie = cookie.unwrap();
    assert!(cookie.starts_with("chatd_session="), "{cookie}");
    for part in [
        "; Path=/",
        "; HttpOnly",
        "; SameSite=Lax",
        "; Max-Age=1209600",
    ] {
        assert!(cookie.contains(part), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain http: {cookie}");
    let session = cookie["chatd_session=".len()..]
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert!(!session.contains(&secret));

    // Once only, and nothing but a link opens it.
    let (status, body, _) = use_link(&server, &secret).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body["message"].as_str().unwrap().starts_with("token: "),
        "{body}"
    );
    for wrong in [&ann_key, TOKEN, "chatd_link_nope"] {
        assert_eq!(use_link(&server, wrong).await.0, StatusCode::UNAUTHORIZED);
    }
    let (status, body) = server.post("/v1/auth/link", json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // The cookie is ann: her session, her chats, her keys.
    let (status, me, _) = with_cookie(
        &server,
        &session,
        Method::GET,
        "/v1/auth/session",
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["user"]["name"], "ann");
    let (status, chat, _) = with_cookie(
        &server,
        &session,
        Method::POST,
        "/v1/chats",
        Some(json!({ "title": "mine" })),
        None,
    )
    .await;
    assert!(status.is_success(), "{chat}");
    let (_, chats) = crate::people::call(&server, &ann_key, Method::GET, "/v1/chats", None).await;
    assert_eq!(chats["chats"][0]["id"], chat["chat"]["id"], "{chats}");
    // Never where keys go, never a member to people; and not from another origin's page.
    assert_eq!(
        get(&server, &session, "/openai/v1/models").await,
        StatusCode::UNAUTHORIZED
    );
    let (status, _, _) = with_cookie(
        &server,
        &session,
        Method::POST,
        "/mcp",
        Some(json!({})),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        get(&server, &session, "/v1/users").await,
        StatusCode::FORBIDDEN
    );
    let (status, _, _) = with_cookie(
        &server,
        &session,
        Method::POST,
        "/v1/chats",
        Some(json!({ "title": "forged" })),
        Some("https://evil.example"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Signed in, she makes a key for her IDE with any scope her role allows, and it does not
    // end with the session.
    let (status, key, _) = with_cookie(
        &server,
        &session,
        Method::POST,
        "/v1/keys",
        Some(json!({ "name": "ide", "scopes": ["openai"] })),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{key}");
    assert_eq!(key["expiresAt"], Value::Null);
    let ide = key["key"].as_str().unwrap();
    let (status, _) =
        crate::people::call(&server, ide, Method::GET, "/openai/v1/models", None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = with_cookie(
        &server,
        &session,
        Method::POST,
        "/v1/keys",
        Some(json!({ "name": "x", "scopes": ["admin"] })),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Listed as current; signing out ends it and clears the cookie.
    let (_, listed, _) = with_cookie(
        &server,
        &session,
        Method::GET,
        "/v1/auth/sessions",
        None,
        None,
    )
    .await;
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["sessions"][0]["current"], true);
    assert_eq!(listed["sessions"][0]["userAgent"], "sessions-test");
    let (status, _, cleared) = with_cookie(
        &server,
        &session,
        Method::POST,
        "/v1/auth/logout",
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(cleared.unwrap().contains("Max-Age=0"));
    let (status, body, cleared) =
        with_cookie(&server, &session, Method::GET, "/v1/chats", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(cleared.unwrap().contains("Max-Age=0"));
    // A key's request carries no session to end.
    let (status, _) =
        crate::people::call(&server, &ann_key, Method::POST, "/v1/auth/logout", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // An expired link opens nothing; a disabled person gets no link, and their session stops.
    let (_, stale) = login_link(&server, "ann");
    let mut db = server.raw_db().await;
    db.execute(
        "UPDATE login_links SET expires_at = '2001-01-01T00:00:00.000000Z' WHERE used_at IS NULL",
        &[],
    )
    .await;
    assert_eq!(use_link(&server, &stale).await.0, StatusCode::UNAUTHORIZED);
    let (session, _) = sign_in(&server, "ann").await;
    assert_eq!(get(&server, &session, "/v1/chats").await, StatusCode::OK);
    assert!(users_cli(&server, &["disable", "ann"]).status.success());
    let since = std::time::Instant::now();
    refused_within_a_second(&server, &session, since).await;
    let out = users_cli(&server, &["login-link", "ann"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("disabled"));
    let out = users_cli(&server, &["login-link", "nobody"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // Enabled again, ann's keys work again; her sessions stay ended (sign in again).
    assert!(users_cli(&server, &["enable", "ann"]).status.success());
    assert_eq!(
        get(&server, &session, "/v1/chats").await,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = crate::people::call(&server, &ann_key, Method::GET, "/v1/chats", None).await;
    assert_eq!(status, StatusCode::OK);
    // The built-in admin signs in with ADMIN_TOKEN, never with a link.
    let out = users_cli(&server, &["login-link", "admin"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("ADMIN_TOKEN"));

    // A session makes keys only within 15 minutes of signing in.
    let (session, id) = sign_in(&server, "ann").await;
    db.execute(
        "UPDATE sessions SET created_at = '2001-01-01T00:00:00.000000Z' WHERE id = ?",
        &[&id],
    )
    .await;
    let since = std::time::Instant::now();
    loop {
        let (status, body, _) = with_cookie(
            &server,
            &session,
            Method::POST,
            "/v1/keys",
            Some(json!({ "name": "late" })),
            None,
        )
        .await;
        if status == StatusCode::FORBIDDEN {
            let message = body["message"].as_str().unwrap();
            assert!(message.contains("15 minutes"), "{body}");
            break;
        }
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(since.elapsed() < std::time::Duration::from_secs(1));
        tokio::task::yield_now().await;
    }
    server.stop().await;
}

#[tokio::test]
async fn an_admins_session_manages_people_and_ended_sessions_stop_everywhere() {
    let first = token_server().await;
    let second = second_instance(&first).await;
    add_person(&first, "bob", "admin").await;
    add_person(&first, "cat", "member").await;
    let (one, one_id) = sign_in(&first, "bob").await;
    let (two, two_id) = sign_in(&first, "bob").await;
    let (cats, cats_id) = sign_in(&first, "cat").await;
    // An admin's session reaches people (the web client manages them), never /openai/v1.
    assert_eq!(get(&first, &one, "/v1/users").await, StatusCode::OK);
    assert_eq!(
        get(&first, &one, "/openai/v1/models").await,
        StatusCode::UNAUTHORIZED
    );
    let servers: Vec<&TestServer> = std::iter::once(&first).chain(second.as_ref()).collect();
    for server in &servers {
        assert_eq!(get(server, &two, "/v1/chats").await, StatusCode::OK);
    }

    // Another person's session is no one's; one's own ends at once here, soon everywhere.
    let (status, body, _) = with_cookie(
        &first,
        &one,
        Method::DELETE,
        &format!("/v1/auth/sessions/{cats_id}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["message"], "session not found");
    assert_eq!(get(&first, &cats, "/v1/chats").await, StatusCode::OK);
    let (_, listed, _) =
        with_cookie(&first, &one, Method::GET, "/v1/auth/sessions", None, None).await;
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [one_id.as_str(), two_id.as_str()]);
    let (status, _, _) = with_cookie(
        &first,
        &one,
        Method::DELETE,
        &format!("/v1/auth/sessions/{two_id}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let since = std::time::Instant::now();
    assert_eq!(
        get(&first, &two, "/v1/chats").await,
        StatusCode::UNAUTHORIZED
    );
    for server in &servers {
        refused_within_a_second(server, &two, since).await;
    }

    // Signing out on one instance is honoured by the other.
    let (status, _, _) =
        with_cookie(&first, &one, Method::POST, "/v1/auth/logout", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let since = std::time::Instant::now();
    for server in &servers {
        refused_within_a_second(server, &one, since).await;
    }
    assert_eq!(get(&first, &cats, "/v1/chats").await, StatusCode::OK);
    if let Some(second) = second {
        second.stop().await;
    }
    first.stop().await;
}
