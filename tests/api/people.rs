//! People and keys over HTTP and from the command line (docs/teams.md): made by an admin, each
//! key within its scopes, a revoked key or a disabled person refused at once, a member kept off
//! the admin routes, and keys kept only as their hash.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Options, TestServer};

pub const TOKEN: &str = "people-admin-token";

/// A request with `key` as the bearer (not the server's admin token).
pub async fn call(
    server: &TestServer,
    key: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = server
        .client
        .request(method, format!("{}{path}", server.base))
        .bearer_auth(key);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.expect("request sent");
    let status = res.status();
    let text = res.text().await.expect("body read");
    let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, json)
}

/// Adds a person through the admin route; their id and first key.
pub async fn add_person(server: &TestServer, name: &str, role: &str) -> (String, String) {
    let (status, body) = server
        .post("/v1/users", json!({ "name": name, "role": role }))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["name"], name);
    assert_eq!(body["role"], role);
    let key = body["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("chatd_"), "{key}");
    (body["id"].as_str().unwrap().to_string(), key)
}

pub async fn token_server() -> TestServer {
    TestServer::start_with(Options {
        token: Some(TOKEN.into()),
        ..Options::default()
    })
    .await
}

/// Another instance on `first`'s database (PostgreSQL); on SQLite, which serves one instance,
/// `None`.
pub async fn second_instance(first: &TestServer) -> Option<TestServer> {
    crate::support::on_postgres().then_some(())?;
    Some(
        TestServer::start_with(Options {
            token: Some(TOKEN.into()),
            dir: Some(first.dir.clone()),
            ..Options::default()
        })
        .await,
    )
}

/// Waits until `key` is refused at `server`, at most a second after `since`.
async fn refused_within_a_second(server: &TestServer, key: &str, since: std::time::Instant) {
    loop {
        let (status, _) = call(server, key, Method::GET, "/v1/chats", None).await;
        if status == StatusCode::UNAUTHORIZED {
            return;
        }
        assert_eq!(status, StatusCode::OK);
        assert!(
            since.elapsed() < std::time::Duration::from_secs(1),
            "still served a second after it was refused"
        );
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn keys_open_only_their_scopes_and_stop_at_once_when_revoked_or_disabled() {
    let server = token_server().await;
    let (ann_id, ann) = add_person(&server, "ann", "member").await;

    // Her session names her; the admin token's stays as the contract shows it.
    let (status, session) = call(&server, &ann, Method::GET, "/v1/auth/session", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        session,
        json!({"authenticated": true, "mode": "token",
               "user": {"id": ann_id, "name": "ann", "role": "member"}})
    );
    assert_eq!(
        server.get("/v1/auth/session").await.1,
        json!({"authenticated": true, "mode": "token"})
    );

    // A member on the admin routes: 403 naming the role.
    for (method, path) in [
        (Method::GET, "/v1/users"),
        (Method::PATCH, "/v1/users/admin"),
        (Method::POST, "/v1/mcp-servers/t/connect"),
    ] {
        let (status, body) = call(&server, &ann, method, path, Some(json!({}))).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
        assert_eq!(
            body["message"], "this route is for admins, and ann is a member",
            "{path}"
        );
    }

    // A key for one job: `openai` only.
    let (status, made) = call(
        &server,
        &ann,
        Method::POST,
        "/v1/keys",
        Some(json!({"name": "ide", "scopes": ["openai"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{made}");
    assert_eq!(made["scopes"], json!(["openai"]));
    assert_eq!(made["expiresAt"], Value::Null);
    let ide = made["key"].as_str().unwrap().to_string();
    let (status, body) = call(&server, &ide, Method::GET, "/v1/chats", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        body["message"],
        "this key's scopes do not include `chat`, which this route needs"
    );
    let (status, _) = call(&server, &ide, Method::GET, "/openai/v1/models", None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = call(&server, &ide, Method::POST, "/mcp", Some(json!({}))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // Keys are a `chat` route: this key cannot make one.
    let (status, body) = call(
        &server,
        &ide,
        Method::POST,
        "/v1/keys",
        Some(json!({"name": "x"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // A key makes keys only within its own scopes; `admin` no member's key has.
    let (status, body) = call(
        &server,
        &ann,
        Method::POST,
        "/v1/keys",
        Some(json!({"name": "root", "scopes": ["chat", "admin"]})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        body["message"].as_str().unwrap().contains("`admin`"),
        "{body}"
    );

    // A key with an end makes keys that end no later (by default, when it does).
    let soon = (chrono::Utc::now() + chrono::TimeDelta::hours(1)).to_rfc3339();
    let later = (chrono::Utc::now() + chrono::TimeDelta::hours(2)).to_rfc3339();
    let (status, temp) = call(
        &server,
        &ann,
        Method::POST,
        "/v1/keys",
        Some(json!({"name": "temp", "expiresAt": soon})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{temp}");
    let temp_key = temp["key"].as_str().unwrap();
    let (status, child) = call(
        &server,
        temp_key,
        Method::POST,
        "/v1/keys",
        Some(json!({"name": "child"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{child}");
    assert_eq!(child["expiresAt"], temp["expiresAt"]);
    let (status, body) = call(
        &server,
        temp_key,
        Method::POST,
        "/v1/keys",
        Some(json!({"name": "longer", "expiresAt": later})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("outlive"),
        "{body}"
    );
    for id in [temp["id"].as_str().unwrap(), child["id"].as_str().unwrap()] {
        let (status, _) = call(
            &server,
            &ann,
            Method::DELETE,
            &format!("/v1/keys/{id}"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }

    // Bad input names the field.
    for (body, field) in [
        (json!({}), "name:"),
        (json!({"name": " "}), "name:"),
        (json!({"name": "x", "scopes": []}), "scopes:"),
        (json!({"name": "x", "scopes": ["root"]}), "scopes"),
        (json!({"name": "x", "expiresAt": "tomorrow"}), "expiresAt:"),
        (
            json!({"name": "x", "expiresAt": "2020-01-01T00:00:00Z"}),
            "expiresAt:",
        ),
        (json!({"name": "x", "colour": "red"}), "colour"),
        (json!({"name": "a\u{0}b"}), "name:"),
        (
            json!({"name": "x", "expiresAt": "9999-12-31T23:59:59-01:00"}),
            "expiresAt:",
        ),
    ] {
        let (status, answer) =
            call(&server, &ann, Method::POST, "/v1/keys", Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert!(
            answer["message"].as_str().unwrap().contains(field),
            "{body}: {answer}"
        );
    }

    // Her keys, never a secret; revoking one stops it at once.
    let (status, listed) = call(&server, &ann, Method::GET, "/v1/keys", None).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first key", "ide"]);
    assert!(!listed.to_string().contains("chatd_"), "{listed}");
    let ide_id = made["id"].as_str().unwrap();
    let (status, body) = call(
        &server,
        &ann,
        Method::DELETE,
        &format!("/v1/keys/{ide_id}"),
        None,
    )
    .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"deleted": true})));
    let (status, body) = call(&server, &ide, Method::GET, "/openai/v1/models", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    // Another person's key, or one revoked already: the same 404.
    for id in [
        ide_id.to_string(),
        "01a2a2a2-0000-7000-8000-000000000000".into(),
    ] {
        let (status, body) = call(
            &server,
            &ann,
            Method::DELETE,
            &format!("/v1/keys/{id}"),
            None,
        )
        .await;
        assert_eq!(
            (status, body),
            (StatusCode::NOT_FOUND, json!({"message": "key not found"}))
        );
    }

    // Disabled: refused at once; enabled: back.
    let (status, body) = server
        .patch(&format!("/v1/users/{ann_id}"), json!({"disabled": true}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["disabled"], true);
    let (status, body) = call(&server, &ann, Method::GET, "/v1/chats", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        body["message"],
        "invalid key: it is unknown, revoked or expired, or its person is disabled"
    );
    server
        .patch(&format!("/v1/users/{ann_id}"), json!({"disabled": false}))
        .await;
    let (status, _) = call(&server, &ann, Method::GET, "/v1/chats", None).await;
    assert_eq!(status, StatusCode::OK);

    // A key no one made.
    let (status, _) = call(
        &server,
        "chatd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        Method::GET,
        "/v1/chats",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // The store holds the keys' hashes, never a secret.
    let mut db = server.raw_db().await;
    let hashes: Vec<(String,)> = db.rows("SELECT secret_sha256 FROM api_keys", &[]).await;
    // Ann's first key, `ide`, `temp` and `child` (revoked, kept).
    assert_eq!(hashes.len(), 4);
    for (hash,) in hashes {
        assert_eq!(hash.len(), 64);
        assert!(!hash.contains("chatd_"));
    }
    server.stop().await;
}

#[tokio::test]
async fn people_are_added_listed_and_refused_by_the_rules() {
    let server = token_server().await;
    add_person(&server, "bob", "admin").await;
    for (body, status, field) in [
        (json!({"name": "bob"}), StatusCode::CONFLICT, "name:"),
        (json!({"name": "admin"}), StatusCode::CONFLICT, "name:"),
        (json!({"name": "a b"}), StatusCode::BAD_REQUEST, "name:"),
        (json!({}), StatusCode::BAD_REQUEST, "name:"),
        (
            json!({"name": "c", "role": "owner"}),
            StatusCode::BAD_REQUEST,
            "role",
        ),
    ] {
        let (got, answer) = server.post("/v1/users", body.clone()).await;
        assert_eq!(got, status, "{body}: {answer}");
        assert!(
            answer["message"].as_str().unwrap().contains(field),
            "{body}: {answer}"
        );
    }
    let (status, listed) = server.get("/v1/users").await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = listed["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "bob"]);
    // The built-in admin is ADMIN_TOKEN's holder: not disabled here.
    let (status, body) = server
        .patch("/v1/users/admin", json!({"disabled": true}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    for id in ["nobody", "a%00b"] {
        let (status, body) = server
            .patch(&format!("/v1/users/{id}"), json!({"disabled": true}))
            .await;
        assert_eq!(
            (status, body),
            (StatusCode::NOT_FOUND, json!({"message": "user not found"})),
            "{id}"
        );
    }
    let (status, body) = server.delete("/v1/keys/a%00b").await;
    assert_eq!(
        (status, body),
        (StatusCode::NOT_FOUND, json!({"message": "key not found"}))
    );
    let (status, _) = server.get("/v1/chats/a%00b").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test]
async fn open_mode_has_no_people_or_keys() {
    let server = TestServer::start().await;
    for (path, body) in [
        ("/v1/keys", json!({"name": "x"})),
        ("/v1/users", json!({"name": "x"})),
    ] {
        let (status, answer) = server.post(path, body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{path}: {answer}");
        assert!(answer["message"].as_str().unwrap().contains("ADMIN_TOKEN"));
    }
    server.stop().await;
}

/// `chatd users …` as the real binary, beside the running server, on its database.
pub fn users_cli(server: &TestServer, args: &[&str]) -> std::process::Output {
    let url = match &server.database_url {
        chatd::config::DatabaseUrl::Sqlite(url) | chatd::config::DatabaseUrl::Postgres(url) => {
            url.clone()
        }
    };
    std::process::Command::new(env!("CARGO_BIN_EXE_chatd"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", url)
        .env("ADMIN_TOKEN", TOKEN)
        .current_dir(server.dir.path())
        .arg("users")
        .args(args)
        .output()
        .expect("run chatd users")
}

/// Beside a server whose schema is not its own (here one migration newer), `chatd users` changes
/// nothing and says why: a command does not migrate under a serving SQLite chatd
/// (`store::sqlite::migrate_beside`). PostgreSQL's instances migrate as they start, as before.
#[tokio::test]
async fn the_cli_beside_a_server_of_another_schema_changes_nothing() {
    let server = token_server().await;
    let chatd::config::DatabaseUrl::Sqlite(url) = &server.database_url else {
        return server.stop().await;
    };
    use sqlx::Connection as _;
    let mut db = sqlx::SqliteConnection::connect(url).await.unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99991231000001, 'later', TRUE, X'00', 0)",
    )
    .execute(&mut db)
    .await
    .unwrap();
    let out = users_cli(&server, &["add", "dave"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("another chatd holds it") && said.contains("99991231000001"),
        "{said}"
    );
    let (status, listed) = server.get("/v1/users").await;
    assert_eq!(status, StatusCode::OK);
    assert!(!listed.to_string().contains("dave"), "{listed}");
    server.stop().await;
}

#[tokio::test]
async fn a_person_made_by_the_cli_works_on_the_running_server_at_once() {
    let server = token_server().await;
    let out = users_cli(&server, &["add", "carol", "--role", "admin"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["name"], "carol");
    assert_eq!(line["role"], "admin");
    let key = line["key"].as_str().unwrap().to_string();
    let (status, session) = call(&server, &key, Method::GET, "/v1/auth/session", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(session["user"]["name"], "carol");
    // An admin's first key has `admin`.
    let (status, _) = call(&server, &key, Method::GET, "/v1/users", None).await;
    assert_eq!(status, StatusCode::OK);

    // Disabled from the command line: refused within a second (this instance kept the key's
    // answer for at most `people::directory::FRESH`).
    let out = users_cli(&server, &["disable", "carol"]);
    assert!(out.status.success());
    refused_within_a_second(&server, &key, std::time::Instant::now()).await;
    let out = users_cli(&server, &["list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[1]["disabled"], true);
    assert!(!text.contains("chatd_"), "the list shows no key: {text}");

    // Refusals: a taken name, no such person (exit 2, one line naming why).
    for (args, why) in [
        (&["add", "carol"][..], "is taken"),
        (&["enable", "dave"][..], "no user is named"),
        (&["add", "x", "--role", "owner"][..], "admin or member"),
    ] {
        let out = users_cli(&server, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(why), "{args:?}: {stderr}");
    }
    server.stop().await;
}

#[tokio::test]
async fn an_export_keeps_people_their_keys_and_whose_each_chat_is() {
    let server = token_server().await;
    let (_, ann) = add_person(&server, "ann", "member").await;
    let (status, chat) = call(
        &server,
        &ann,
        Method::POST,
        "/v1/chats",
        Some(json!({"title": "ann's"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let chat_id = chat["chat"]["id"].as_str().unwrap().to_string();
    let admins = server.new_chat(json!({"title": "the admin's"})).await;
    let mut exported = Vec::new();
    chatd::store::transfer::export(&server.database_url, &mut exported)
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&exported).to_string();
    assert!(!text.contains(&ann), "the export holds no key's secret");
    server.stop().await;

    let into = token_server().await;
    into.store
        .import(std::io::Cursor::new(exported), false)
        .await
        .unwrap();
    // Ann's key works on the new database and opens only her chat.
    let (status, listed) = call(&into, &ann, Method::GET, "/v1/chats", None).await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&str> = listed["chats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [chat_id.as_str()]);
    let (_, listed) = into.get("/v1/chats").await;
    assert_eq!(listed["chats"][0]["id"], admins.as_str());
    assert_eq!(listed["chats"].as_array().unwrap().len(), 1);

    // An export made before people existed (version 1, no owners): everything the admin's.
    let old = format!(
        "{}\n{}\n",
        json!({"format": "chatd-export", "version": 1, "exportedAt": "x", "from": "sqlite"}),
        json!({"chat": {"id": "0190aaaa-0000-7000-8000-000000000001", "title": "old",
            "created_at": "2026-01-01T00:00:00.000000Z", "updated_at": "2026-01-01T00:00:00.000000Z",
            "enabled_tools": "[]"}})
    );
    into.store
        .import(std::io::Cursor::new(old.into_bytes()), false)
        .await
        .unwrap();
    let (_, listed) = into.get("/v1/chats").await;
    assert_eq!(listed["chats"].as_array().unwrap().len(), 2, "{listed}");
    into.stop().await;
}

#[tokio::test]
async fn a_revoked_key_or_disabled_person_is_refused_on_every_instance_within_a_second() {
    let first = token_server().await;
    let second = second_instance(&first).await;
    let other = second.as_ref().unwrap_or(&first);
    let (ann_id, ann) = add_person(&first, "ann", "member").await;
    let (_, made) = call(
        &first,
        &ann,
        Method::POST,
        "/v1/keys",
        Some(json!({"name": "k"})),
    )
    .await;
    let spare = made["key"].as_str().unwrap().to_string();
    // Both keys work on the other instance (seen there, so its answers are kept there).
    for key in [&ann, &spare] {
        let (status, _) = call(other, key, Method::GET, "/v1/chats", None).await;
        assert_eq!(status, StatusCode::OK);
    }
    // Revoked on the first instance: at once there, within a second on the other.
    let (status, _) = call(
        &first,
        &ann,
        Method::DELETE,
        &format!("/v1/keys/{}", made["id"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let revoked = std::time::Instant::now();
    let (status, _) = call(&first, &spare, Method::GET, "/v1/chats", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    refused_within_a_second(other, &spare, revoked).await;
    // Disabled likewise.
    first
        .patch(&format!("/v1/users/{ann_id}"), json!({"disabled": true}))
        .await;
    let disabled = std::time::Instant::now();
    let (status, _) = call(&first, &ann, Method::GET, "/v1/chats", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    refused_within_a_second(other, &ann, disabled).await;
    if let Some(second) = second {
        second.stop().await;
    }
    first.stop().await;
}
