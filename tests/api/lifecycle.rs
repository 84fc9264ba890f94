//! The server as a process and over time: the real binary started with no environment, startup
//! refusing bad configuration, log hygiene, restart on the same database, the OpenAPI document.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, data_url, png_bytes};

const BIN: &str = env!("CARGO_BIN_EXE_chatd");

/// The binary, run in `dir` with only the given environment (plus PATH).
pub fn chatd(dir: &Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// A running binary whose stdout lines are collected; `base` is read from its listening line.
/// Killed when dropped (a failed test leaves no server behind).
pub(crate) struct Process {
    pub(crate) child: Child,
    pub(crate) base: String,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Process {
    pub(crate) fn start(dir: &Path, env: &[(&str, &str)]) -> Self {
        let mut child = chatd(dir, env)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn chatd");
        let lines = crate::process::stdout_lines(&mut child);
        let mut process = Process {
            child,
            base: String::new(),
            lines,
            seen: Vec::new(),
        };
        let line = process.wait_for("listening on http://");
        let start = line.find("http://").unwrap();
        process.base = line[start..].split_whitespace().next().unwrap().to_string();
        process
    }

    /// A line already seen that contains `needle`.
    pub(crate) fn line_with(&self, needle: &str) -> String {
        self.seen
            .iter()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in {:?}", self.seen))
            .clone()
    }

    /// Blocks until a stdout line contains `needle` (the server announces what it did).
    pub(crate) fn wait_for(&mut self, needle: &str) -> String {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(e) => {
                    let mut stderr = String::new();
                    if let Some(mut err) = self.child.stderr.take() {
                        let _ = err.read_to_string(&mut stderr);
                    }
                    panic!(
                        "no line with {needle:?} ({e}); stdout so far: {:?}; stderr: {stderr}",
                        self.seen
                    );
                }
            }
        }
    }

    /// SIGTERM, then everything it printed; asserts a clean exit.
    pub(crate) fn stop(mut self) -> (String, String) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = self.child.wait().unwrap();
        assert!(exit.success(), "chatd exited with {exit}");
        self.seen.extend(self.lines.iter());
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        (self.seen.join("\n"), stderr)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn binary_starts_with_no_environment() {
    let dir = tempfile::tempdir().unwrap();
    // Only PORT=0 is set, so parallel tests cannot collide on 8787; everything else is default.
    let process = Process::start(dir.path(), &[("PORT", "0")]);
    let loaded = process.line_with("plugins loaded");
    // The devbox tools are bundled but, not enabled here, neither compiled nor served; the
    // interpreter, which no cache holds yet, compiles after the server listens.
    let bundled = chatd::plugins::loading::embedded::bundled().len() - 2;
    assert!(
        loaded.contains(&format!("{} plugins loaded in", bundled - 1)),
        "{loaded}"
    );
    assert!(
        loaded.contains("the python tool's interpreter is compiling in the background"),
        "{loaded}"
    );
    assert!(
        loaded.contains("(0 from the compile cache)"),
        "first boot compiles: {loaded}"
    );
    assert!(
        process.base.starts_with("http://127.0.0.1:"),
        "{}",
        process.base
    );
    let res = reqwest::get(format!("{}/health", process.base))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.unwrap(), json!({ "ok": true }));
    let res = reqwest::get(format!("{}/v1/auth/session", process.base))
        .await
        .unwrap();
    assert_eq!(res.json::<Value>().await.unwrap()["mode"], "open");
    assert!(
        dir.path().join("data/chatd.db").is_file(),
        "the default database is created under ./data"
    );
    let mut process = process;
    let compiled = process.wait_for("compiled in the background");
    assert!(compiled.contains("python_interpreter"), "{compiled}");
    let res = reqwest::get(format!("{}/ready", process.base))
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "ready once the interpreter is"
    );
    let (stdout, _) = process.stop();
    assert!(stdout.contains("chatd stopped"), "{stdout}");
    let cached = std::fs::read_dir(dir.path().join("data/plugin-cache"))
        .expect("compiled plugins are kept beside the database")
        .count();
    assert_eq!(cached, bundled);

    // A restart takes the compiled code from the cache.
    let process = Process::start(dir.path(), &[("PORT", "0")]);
    let loaded = process.line_with("plugins loaded");
    assert!(
        loaded.contains(&format!("({bundled} from the compile cache)")),
        "{loaded}"
    );
    process.stop();
}

#[test]
fn invalid_configuration_stops_startup_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[("PORT", "abc")],
            "PORT: invalid value \"abc\": must be an integer from 0 to 65535",
        ),
        (
            &[("CHAT_MAX_TOOL_ROUNDS", "0")],
            "CHAT_MAX_TOOL_ROUNDS: invalid value \"0\": must be an integer of at least 1",
        ),
        (
            &[("CHAT_MAX_TOOL_ROUNDS", "-1")],
            "CHAT_MAX_TOOL_ROUNDS: invalid value \"-1\": must be an integer of at least 1",
        ),
        (
            &[("CHAT_WEB_SEARCH_ENGINE", "bing")],
            "CHAT_WEB_SEARCH_ENGINE: invalid value \"bing\": must be one of engine_a, engine_b",
        ),
        (
            &[("CHAT_WEB_SEARCH_ENGINE", "engine_b")],
            "CHAT_WEB_SEARCH_ENGINE: engine_b requires ENGINE_B_BASE_URL",
        ),
        (
            &[("DATABASE_URL", "mysql://db/chatd")],
            "DATABASE_URL: invalid value \"mysql://db/chatd\": must start with sqlite:// or postgres://",
        ),
        (
            &[("MODELS_REFRESH_SECS", "soon")],
            "MODELS_REFRESH_SECS: invalid value \"soon\"",
        ),
        (
            &[("PROVIDER_A_BASE_URL", "not a url")],
            "PROVIDER_A_BASE_URL: invalid value \"not a url\": must be an absolute http(s) URL",
        ),
        (
            &[("CHAT_CODING_TOOL_ENABLED", "true")],
            "CHAT_CODING_TOOL_ENABLED: true requires CHAT_CODING_REMOTE_HOST",
        ),
        (
            &[("CHAT_SHELL_TOOL_ENABLED", "true")],
            "CHAT_SHELL_TOOL_ENABLED: true requires CHAT_CODING_REMOTE_HOST",
        ),
        (
            &[
                ("CHAT_SHELL_TOOL_ENABLED", "true"),
                ("CHAT_CODING_REMOTE_HOST", "devbox.example"),
                ("CHAT_CODING_SSH_KEY_PATH", "/nonexistent/key"),
            ],
            "CHAT_CODING_SSH_KEY_PATH: cannot read /nonexistent/key",
        ),
        (
            &[
                ("CHAT_CODING_TOOL_ENABLED", "true"),
                ("CHAT_CODING_REMOTE_HOST", "devbox.example"),
                ("CHAT_CODING_SSH_PRIVATE_KEY_B64", "not base64!"),
            ],
            "CHAT_CODING_SSH_PRIVATE_KEY_B64: must be a base64-encoded private key",
        ),
        (
            &[("CHAT_SHELL_TOOL_ENABLED", "yes")],
            "CHAT_SHELL_TOOL_ENABLED: invalid value \"yes\": must be true or false",
        ),
        // Open mode on a network address: anyone reaching the port would use chatd.
        (
            &[("HOST", "0.0.0.0")],
            "HOST: 0.0.0.0 is not a loopback address and ADMIN_TOKEN is not set",
        ),
        (
            &[("HOST", "::"), ("CHATD_OPEN_ON_NETWORK", "false")],
            "HOST: :: is not a loopback address and ADMIN_TOKEN is not set",
        ),
        (
            &[("CHATD_ALLOWED_ORIGINS", "*")],
            "CHATD_ALLOWED_ORIGINS: invalid value \"*\": * is not allowed",
        ),
        (
            &[("CHATD_SECRET_KEY", "short")],
            "CHATD_SECRET_KEY: must be at least 32 characters",
        ),
    ];
    for (env, expected) in cases {
        let out = chatd(dir.path(), env).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{env:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "one line for {env:?}: {stderr}"
        );
        let line = stderr
            .trim_end()
            .strip_prefix("chatd: configuration error: ")
            .unwrap_or_else(|| panic!("{stderr}"));
        assert!(line.starts_with(expected), "{env:?}: {line}");
    }
    assert!(
        !dir.path().join("data").exists(),
        "nothing is created when startup is refused"
    );
}

#[tokio::test]
async fn open_mode_on_a_network_address_needs_the_opt_in_and_says_so_at_every_start() {
    let dir = tempfile::tempdir().unwrap();
    let cache = crate::support::plugin_cache_dir();
    let cache = cache.to_str().unwrap();
    let refused = chatd(dir.path(), &[("HOST", "0.0.0.0"), ("PORT", "0")])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8(refused.stderr).unwrap();
    assert!(
        stderr.contains("Set ADMIN_TOKEN") && stderr.contains("CHATD_OPEN_ON_NETWORK=true"),
        "the line names the token and the opt-in: {stderr}"
    );
    let env = [
        ("HOST", "0.0.0.0"),
        ("PORT", "0"),
        ("PLUGIN_CACHE_DIR", cache),
        ("CHATD_OPEN_ON_NETWORK", "true"),
    ];
    for _ in 0..2 {
        let process = Process::start(dir.path(), &env);
        let warning = process.line_with("open mode on a network address");
        assert!(warning.contains("WARN"), "{warning}");
        process.stop();
    }
    // A token needs no opt-in, and says nothing of it.
    let process = Process::start(
        dir.path(),
        &[
            ("HOST", "0.0.0.0"),
            ("PORT", "0"),
            ("PLUGIN_CACHE_DIR", cache),
            ("ADMIN_TOKEN", "t"),
        ],
    );
    let (stdout, _) = process.stop();
    assert!(
        !stdout.contains("open mode on a network address"),
        "{stdout}"
    );
}

#[tokio::test]
async fn logs_one_line_per_request_and_no_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let token = "tok-3f1c9a-never-log-me";
    let cache = crate::support::plugin_cache_dir();
    let mut process = Process::start(
        dir.path(),
        &[
            ("PORT", "0"),
            ("ADMIN_TOKEN", token),
            ("RUST_LOG", "info"),
            ("PLUGIN_CACHE_DIR", cache.to_str().unwrap()),
        ],
    );
    let client = reqwest::Client::new();
    let marker = "ATTACHMENT-TEXT-MARKER";
    let image = data_url("image/png", &png_bytes(64));
    let res = client
        .post(format!("{}/v1/chats", process.base))
        .bearer_auth(token)
        .json(
            &json!({ "messages": [{ "role": "user", "content": "hi", "attachments": [
            { "kind": "text", "text": marker }, { "kind": "image", "dataUrl": image },
        ] }] }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let id = res.json::<Value>().await.unwrap()["chat"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = client
        .get(format!("{}/api/v1/chats/{id}", process.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let res = client
        .get(format!("{}/v1/chats?token={token}", process.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let post = process.wait_for("route=/v1/chats status=200");
    assert!(
        post.contains("method=POST") && post.contains("latency_ms="),
        "{post}"
    );
    let get = process.wait_for("route=/api/v1/chats/{chatId}");
    assert!(
        get.contains("method=GET") && get.contains("status=200"),
        "{get}"
    );
    process.wait_for("status=401");
    let (stdout, stderr) = process.stop();
    let request_lines = stdout
        .lines()
        .filter(|l| l.contains(" request ") || l.contains("request method="))
        .count();
    assert_eq!(request_lines, 3, "one line per request:\n{stdout}");
    for secret in [token, marker, &image[30..60]] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{secret} leaked into the logs:\n{stdout}\n{stderr}"
        );
    }
}

#[tokio::test]
async fn openapi_document_covers_every_route() {
    let server = TestServer::start().await;
    let (status, doc) = server.get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let expected: &[(&str, &[&str])] = &[
        ("/health", &["get"]),
        ("/ready", &["get"]),
        ("/v1/auth/session", &["get"]),
        ("/v1/auth/link", &["post"]),
        ("/v1/auth/logout", &["post"]),
        ("/v1/auth/sessions", &["get"]),
        ("/v1/auth/sessions/{sessionId}", &["delete"]),
        ("/v1/auth/methods", &["get"]),
        ("/v1/auth/oidc/start", &["get"]),
        ("/v1/auth/oidc/callback", &["get"]),
        ("/v1/active-runs", &["get"]),
        ("/v1/chat-tools", &["get"]),
        ("/v1/models", &["get"]),
        ("/v1/workspace-items", &["get"]),
        ("/v1/chat-completions", &["post"]),
        ("/v1/chat-completions/stream", &["post"]),
        ("/v1/chats/title/suggest", &["post"]),
        ("/v1/chats/{chatId}/stream/attach", &["post"]),
        ("/v1/chats/{chatId}/stream/cancel", &["post"]),
        ("/v1/chats", &["get", "post"]),
        ("/v1/chats/{chatId}", &["get", "patch", "delete"]),
        ("/v1/chats/{chatId}/star", &["patch"]),
        ("/v1/chats/{chatId}/messages", &["post"]),
        ("/v1/chats/{chatId}/files/{fileId}", &["get"]),
        ("/v1/files", &["get", "post"]),
        ("/v1/files/{fileId}", &["get", "delete"]),
        ("/v1/files/{fileId}/content", &["get"]),
        ("/v1/message-search", &["get"]),
        ("/v1/searches", &["get", "post"]),
        ("/v1/searches/{searchId}", &["get", "delete"]),
        ("/v1/searches/{searchId}/star", &["patch"]),
        ("/v1/searches/{searchId}/run", &["post"]),
        ("/v1/searches/{searchId}/run/stream", &["post"]),
        ("/v1/searches/{searchId}/run/stream/attach", &["post"]),
        ("/v1/searches/{searchId}/chat", &["post"]),
        ("/v1/mcp-servers", &["get"]),
        ("/v1/mcp-servers/{name}/connect", &["post"]),
        ("/v1/mcp-servers/{name}/disconnect", &["post"]),
        ("/v1/mcp-servers/{name}/login", &["delete", "post"]),
        ("/v1/mcp-servers/callback", &["get"]),
        ("/v1/mcp-servers/{name}/callback", &["get"]),
        ("/v1/keys", &["get", "post"]),
        ("/v1/keys/{keyId}", &["delete"]),
        ("/v1/users", &["get", "post"]),
        ("/v1/users/{userId}", &["patch"]),
        ("/v1/usage", &["get"]),
    ];
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(
        paths.len(),
        expected.len(),
        "{:?}",
        paths.keys().collect::<Vec<_>>()
    );
    for (path, methods) in expected {
        let item = paths
            .get(*path)
            .unwrap_or_else(|| panic!("{path} is documented"));
        let mut documented: Vec<&str> = item
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        documented.sort();
        let mut methods = methods.to_vec();
        methods.sort();
        assert_eq!(documented, methods, "{path}");
        for method in methods {
            let operation = &item[method];
            // A login's callback answers with a redirect back to the web client, and a
            // sign-in's start with one to the identity provider.
            let success = if path.ends_with("/callback") || path.ends_with("/oidc/start") {
                "303"
            } else {
                "200"
            };
            assert!(
                operation["responses"][success].is_object(),
                "{method} {path} documents its {success}"
            );
            // The errors of any body: it stopped arriving, is too large, is not JSON.
            if operation["requestBody"].is_object() {
                for status in ["400", "408", "413", "415"] {
                    assert!(
                        operation["responses"][status].is_object(),
                        "{method} {path} documents its {status}"
                    );
                }
            }
        }
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for schema in [
        "ChatSummary",
        "ChatDetail",
        "Message",
        "SearchSummary",
        "SearchDetail",
        "SearchResultItem",
        "RunSearchRequest",
        "WorkspaceItem",
        "ErrorBody",
        "AttachmentInput",
    ] {
        assert!(schemas.contains_key(schema), "{schema} is in components");
    }
    // Result items and citations are documented field by field (the contract leaves them open).
    let item = &schemas["SearchResultItem"]["properties"];
    for field in [
        "id",
        "url",
        "title",
        "publishedDate",
        "author",
        "score",
        "text",
        "highlights",
        "summary",
        "image",
        "favicon",
    ] {
        assert!(item.get(field).is_some(), "SearchResultItem.{field}");
    }
    assert_eq!(server.get("/api/openapi.json").await.1, doc);
}

#[tokio::test]
async fn a_call_left_open_by_kill_9_is_closed_at_the_next_start() {
    use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
    use sqlx::Connection;
    let gate = Gate::new();
    // An upstream that never answers: the call is open when the server dies.
    let upstream = ScriptedUpstream::start([(
        crate::completions::ROUTE,
        Reply::sse(crate::completions::TEXT_STREAM).after(&gate),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = crate::support::plugin_cache_dir();
    let url = upstream.url();
    let env = [
        ("PORT", "0"),
        ("PLUGIN_CACHE_DIR", cache.to_str().unwrap()),
        ("PROVIDER_C_BASE_URL", url.as_str()),
        ("PROVIDER_C_API_KEY", "c-key"),
    ];
    let mut process = Process::start(dir.path(), &env);
    let client = reqwest::Client::new();
    let res = client
        .post(format!("{}/v1/chat-completions/stream", process.base))
        .json(&crate::completions::body(
            None,
            json!([{"role": "user", "content": "kept across the crash"}]),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    upstream.received(1).await;
    let db_url = format!("sqlite://{}", dir.path().join("data/chatd.db").display());
    let mut db = sqlx::SqliteConnection::connect(&db_url).await.unwrap();
    // The call is recorded before the first turn, and the server's heartbeat passes its start.
    let (call_id, created_at, _) = loop {
        let call: Option<(String, String)> =
            sqlx::query_as("SELECT id, created_at FROM llm_calls WHERE completed_at IS NULL")
                .fetch_optional(&mut db)
                .await
                .unwrap();
        let alive: Option<String> = sqlx::query_scalar("SELECT MAX(alive_at) FROM instances")
            .fetch_one(&mut db)
            .await
            .unwrap();
        if let (Some((id, created)), Some(alive)) = (call, alive)
            && alive > created
        {
            break (id, created, alive);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    process.child.kill().unwrap();
    process.child.wait().unwrap();
    drop(res);
    // Its last sign of life (a beat may have come between the read above and the kill).
    let alive_at: String = sqlx::query_scalar("SELECT MAX(alive_at) FROM instances")
        .fetch_one(&mut db)
        .await
        .unwrap();

    let process = Process::start(dir.path(), &env);
    let (completed_at, error, latency): (Option<String>, Option<String>, Option<i64>) =
        sqlx::query_as("SELECT completed_at, error, latency_ms FROM llm_calls WHERE id = ?")
            .bind(&call_id)
            .fetch_one(&mut db)
            .await
            .unwrap();
    assert_eq!(
        completed_at.as_deref(),
        Some(alive_at.as_str()),
        "ended at the last sign of life, not at the restart"
    );
    assert_eq!(
        error.as_deref(),
        Some("the server stopped before the reply was finished")
    );
    let micros = |t: &str| {
        chrono::DateTime::parse_from_rfc3339(t)
            .unwrap()
            .timestamp_micros()
    };
    assert_eq!(
        latency,
        Some((micros(&alive_at) - micros(&created_at)) / 1000),
        "up to the last sign of life"
    );
    // The user's message, stored beside the call, is still there.
    let get = |path: String| {
        let request = client.get(format!("{}{path}", process.base));
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let chats = get("/v1/chats".into()).await;
    let chat_id = chats["chats"][0]["id"].as_str().unwrap();
    let chat = get(format!("/v1/chats/{chat_id}")).await;
    assert_eq!(
        chat["chat"]["messages"][0]["content"],
        "kept across the crash"
    );
    let (out, _) = process.stop();
    assert!(
        out.contains("closed calls left open by a server that is gone"),
        "{out}"
    );
}

#[tokio::test]
async fn a_second_server_on_the_same_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cache = crate::support::plugin_cache_dir();
    let env = [("PORT", "0"), ("PLUGIN_CACHE_DIR", cache.to_str().unwrap())];
    let first = Process::start(dir.path(), &env);
    // The second would otherwise close the first's open calls as lost at its start.
    let second = chatd(dir.path(), &env).output().unwrap();
    assert!(!second.status.success(), "the second server started");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&second.stdout),
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(
        said.contains("the database is in use by another chatd process"),
        "{said}"
    );
    let (_, _) = first.stop();
    // Stopped, the first gives the database up.
    let again = Process::start(dir.path(), &env);
    again.stop();
}

#[test]
fn an_invalid_configuration_file_stops_startup_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chatd.toml");
    let missing = dir.path().join("nowhere.toml");
    let cache = crate::support::plugin_cache_dir();
    /// The file's text, more environment, and what the one line must hold.
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        ("[providers.groq\nadapter = 1\n", &[], "line 1"),
        (
            "[providers.groq]\nadapter = \"chat_completions\"\nbase_url = \"https://api.groq.com/openai/v1\"\napi_key = \"${GROQ_API_KEY}\"\n",
            &[],
            "providers.groq.api_key: ${GROQ_API_KEY}: GROQ_API_KEY is not set",
        ),
        (
            "[providers.groq]\nadapter = \"carrier_pigeon\"\nbase_url = \"https://api.groq.com/openai/v1\"\n",
            &[],
            "carrier_pigeon",
        ),
        (
            // A key in the wrong place is named by its key path, never shown.
            "[providers.groq]\nadapter = \"chat_completions\"\nbase_url = \"${GROQ_API_KEY}\"\n",
            &[("GROQ_API_KEY", "gsk-never-printed-9f3e")],
            "providers.groq.base_url",
        ),
    ];
    for (text, env, expected) in cases {
        std::fs::write(&file, text).unwrap();
        // The tests' shared compile cache: the adapter check loads the plugins.
        let mut all = vec![
            ("CHATD_CONFIG", file.to_str().unwrap()),
            ("PLUGIN_CACHE_DIR", cache.to_str().unwrap()),
        ];
        all.extend_from_slice(env);
        let out = chatd(dir.path(), &all).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{text}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.starts_with("chatd: configuration error: ") && stderr.contains(expected),
            "{text}: {stderr}"
        );
        assert!(!stderr.contains("gsk-never-printed"), "{stderr}");
    }
    // `chatd plugins list` refuses it the same way.
    std::fs::write(&file, "[providers.groq\n").unwrap();
    let out = chatd(dir.path(), &[("CHATD_CONFIG", file.to_str().unwrap())])
        .args(["plugins", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("chatd: configuration error: ") && stderr.contains("line 1"),
        "{stderr}"
    );
    let out = chatd(dir.path(), &[("CHATD_CONFIG", missing.to_str().unwrap())])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("nowhere.toml") && stderr.trim_end().lines().count() == 1,
        "{stderr}"
    );
    assert!(
        !dir.path().join("data").exists(),
        "nothing is created when startup is refused"
    );
}
