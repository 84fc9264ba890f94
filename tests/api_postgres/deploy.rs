//! Deployment on PostgreSQL, black-box with the real binary: a cluster that accepts TLS only
//! (a throwaway CA made here with openssl; `hostssl` alone in pg_hba) serves chats with
//! `sslmode=verify-full`, and a certificate from another CA stops startup with one line; the
//! compile cache lives in CHATD_DATA_DIR, so a second start compiles nothing; `/ready` follows
//! the database going away and coming back while `/health` stays 200.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chatd::config::DatabaseUrl;
use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::{ROUTE, TEXT_STREAM, TEXT_STREAM_TEXT};
use crate::instances::Instance;
use crate::postgres::OwnedCluster;
use crate::process;
use crate::support::{plugin_cache_dir, test_database};
use crate::wasm::unique;

const BIN: &str = env!("CARGO_BIN_EXE_chatd");

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl (apt-get install openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A certificate authority `name` in `dir`: `name.pem`, `name.key`.
fn make_ca(dir: &Path, name: &str) {
    let (key, pem, subject) = (
        format!("{name}.key"),
        format!("{name}.pem"),
        format!("/CN=chatd test {name}"),
    );
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &pem,
            "-days",
            "2",
            "-subj",
            &subject,
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

/// `server.crt` and `server.key` for 127.0.0.1 and localhost, signed by `ca`.
fn make_server_certificate(dir: &Path, ca: &str) {
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let (pem, key) = (format!("{ca}.pem"), format!("{ca}.key"));
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            &pem,
            "-CAkey",
            &key,
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(
        dir.join("server.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
}

/// A cluster that takes TCP connections over TLS only, its certificate from the CA `ca`
/// (`other_ca` is made beside it and signs nothing).
fn tls_only_cluster() -> Option<OwnedCluster> {
    OwnedCluster::new("tls", |dir| {
        make_ca(dir, "ca");
        make_ca(dir, "other_ca");
        make_server_certificate(dir, "ca");
        std::fs::write(
            dir.join("hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\n",
        )
        .unwrap();
        vec![
            "ssl=on".into(),
            format!("ssl_cert_file={}", dir.join("server.crt").display()),
            format!("ssl_key_file={}", dir.join("server.key").display()),
            format!("hba_file={}", dir.join("hba.conf").display()),
        ]
    })
}

#[tokio::test]
async fn a_tls_only_cluster_serves_chats_with_verify_full_and_refuses_another_ca() {
    let Some(cluster) = tls_only_cluster() else {
        crate::postgres::skip_all("Debian's PostgreSQL server");
    };
    let port = cluster.port;
    let admin = format!("postgres://chatd@127.0.0.1:{port}/postgres?sslmode=require");
    cluster.start(&admin).await;
    cluster.create_database(&admin, "chats").await;
    // TLS only: a clear-text connection is refused by pg_hba.
    use sqlx::Connection as _;
    let plain = format!("postgres://chatd@127.0.0.1:{port}/chats?sslmode=disable");
    let refused = sqlx::PgConnection::connect(&plain).await.err().unwrap();
    assert!(refused.to_string().contains("no encryption"), "{refused}");

    let ca = cluster.dir.join("ca.pem");
    let url = format!(
        "postgres://chatd@127.0.0.1:{port}/chats?sslmode=verify-full&sslrootcert={}",
        ca.display()
    );
    let upstream = ScriptedUpstream::start([(ROUTE, Reply::sse(TEXT_STREAM))]).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = plugin_cache_dir();
    let chatd = Instance::with_env(
        dir.path(),
        &[
            ("DATABASE_URL", url.as_str()),
            ("PLUGIN_CACHE_DIR", cache.to_str().unwrap()),
            ("PROVIDER_C_BASE_URL", upstream.url().as_str()),
            ("PROVIDER_C_API_KEY", "c-key"),
        ],
    );
    let chat_id = chatd.new_chat().await;
    let events = chatd.stream(&chat_id).await.rest().await;
    assert_eq!(events.last().unwrap().name, "done", "{events:?}");
    let chat = chatd.get(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(chat["chat"]["messages"][1]["content"], TEXT_STREAM_TEXT);
    // Every connection chatd holds is encrypted.
    let mut admin_conn = sqlx::PgConnection::connect(&admin).await.unwrap();
    let (encrypted, clear): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl) \
         FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = 'chatd'",
    )
    .fetch_one(&mut admin_conn)
    .await
    .unwrap();
    assert!(
        encrypted >= 1 && clear == 0,
        "{encrypted} over TLS, {clear} not"
    );
    drop(chatd);

    // The server's certificate does not chain to the CA given: startup stops with one line.
    let wrong = url.replace("/ca.pem", "/other_ca.pem");
    let out = Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs([("PORT", "0"), ("DATABASE_URL", wrong.as_str())])
        .env("PLUGIN_CACHE_DIR", &cache)
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .output()
        .expect("run chatd");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("another CA: {stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("chatd: cannot start: cannot open the database")
            && stderr.contains("certificate"),
        "{stderr}"
    );
}

/// The startup line's plugin count and how many came from the compile cache.
fn loaded(startup: &[String]) -> (usize, usize) {
    let line = startup
        .iter()
        .find(|l| l.contains("plugins loaded in"))
        .expect("the plugins line");
    let number = |before: &str| -> usize {
        let at = line.find(before).unwrap();
        line[..at]
            .split_whitespace()
            .last()
            .unwrap()
            .trim_start_matches('(')
            .parse()
            .unwrap()
    };
    (number(" plugins loaded"), number(" from the compile cache"))
}

#[tokio::test]
async fn on_postgresql_a_second_start_loads_every_plugin_from_the_data_folder() {
    let dir = tempfile::tempdir().unwrap();
    let DatabaseUrl::Postgres(url) = test_database(&dir).await else {
        unreachable!("the PostgreSQL suite")
    };
    // The data folder starts with the suite's compiled plugins (the bundled ones take long to
    // compile in a debug build); an operator plugin no cache has seen is compiled at the first
    // start, into it.
    let data = dir.path().join("state");
    let cache = data.join("plugin-cache");
    std::fs::create_dir_all(&cache).unwrap();
    for entry in std::fs::read_dir(plugin_cache_dir()).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "cwasm") {
            std::fs::copy(entry.path(), cache.join(entry.file_name())).unwrap();
        }
    }
    let plugins_dir = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins_dir).unwrap();
    let tag = format!("{}-{:?}", std::process::id(), Instant::now());
    let wasm = unique(crate::support::test_component("test-plugin-hostile"), &tag);
    std::fs::write(
        plugins_dir.join("extra.json"),
        r#"{"id":"extra","kind":"tool","wit":"chatd:plugin@0.1.0","version":"1"}"#,
    )
    .unwrap();
    std::fs::write(plugins_dir.join("extra.wasm"), wasm).unwrap();
    let env = [
        ("DATABASE_URL", url.as_str()),
        ("CHATD_DATA_DIR", data.to_str().unwrap()),
        ("PLUGINS_DIR", plugins_dir.to_str().unwrap()),
    ];
    // PLUGINS_DIR loads after the server listens; its line counts every plugin.
    let startup = |env: &[(&str, &str)]| {
        let chatd = Instance::with_env(dir.path(), env);
        vec![process::line_containing(
            &chatd.startup,
            &chatd.lines,
            "PLUGINS_DIR's",
        )]
    };
    let (plugins, cached) = loaded(&startup(&env));
    assert!(plugins >= 8, "{plugins}");
    assert!(
        cached < plugins,
        "the new one was compiled: {cached} of {plugins}"
    );
    let (again, cached) = loaded(&startup(&env));
    assert_eq!(
        (again, cached),
        (plugins, plugins),
        "all from CHATD_DATA_DIR"
    );
    assert!(!dir.path().join("data").exists(), "nothing in ./data");
}

/// `GET /v1/chats` on `chatd`, with the token of the readiness test.
async fn list_chats(chatd: &Instance) -> reqwest::Response {
    reqwest::Client::new()
        .get(chatd.url("/v1/chats"))
        .bearer_auth("t0ken")
        .send()
        .await
        .unwrap()
}

/// `GET /ready` on `chatd`: the status and the message.
async fn ready(chatd: &Instance) -> (StatusCode, Value) {
    let res = reqwest::get(chatd.url("/ready")).await.unwrap();
    (res.status(), res.json().await.unwrap_or(Value::Null))
}

/// Waits (up to `limit`) until `/ready` answers `status`; its body then.
async fn ready_becomes(chatd: &Instance, status: StatusCode, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let (now, body) = ready(chatd).await;
        if now == status {
            return body;
        }
        assert!(Instant::now() < deadline, "/ready stayed {now}: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn ready_follows_the_database_and_health_stays_200() {
    let Some(cluster) = OwnedCluster::new("ready", |_| Vec::new()) else {
        crate::postgres::skip_all("Debian's PostgreSQL server");
    };
    let admin = format!("postgres://chatd@127.0.0.1:{}/postgres", cluster.port);
    cluster.start(&admin).await;
    cluster.create_database(&admin, "ready").await;
    let dir = tempfile::tempdir().unwrap();
    let cache = plugin_cache_dir();
    let url = format!("postgres://chatd@127.0.0.1:{}/ready", cluster.port);
    let chatd = Instance::with_env(
        dir.path(),
        &[
            ("DATABASE_URL", url.as_str()),
            ("PLUGIN_CACHE_DIR", cache.to_str().unwrap()),
            ("DATABASE_TIMEOUT_SECS", "2"),
            ("ADMIN_TOKEN", "t0ken"),
        ],
    );
    // No token needed, at the root and under /api.
    assert_eq!(ready(&chatd).await, (StatusCode::OK, json!({"ok": true})));
    let api = reqwest::get(chatd.url("/api/ready")).await.unwrap();
    assert_eq!(api.status(), StatusCode::OK);

    cluster.stop();
    let stopped = Instant::now();
    // DATABASE_TIMEOUT_SECS (2 s) and the ping's second, with room for a slow machine.
    let body = ready_becomes(
        &chatd,
        StatusCode::SERVICE_UNAVAILABLE,
        Duration::from_secs(8),
    )
    .await;
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("database (postgresql)"), "{message}");
    eprintln!(
        "/ready said 503 {:?} after the database stopped",
        stopped.elapsed()
    );
    let health = reqwest::get(chatd.url("/health")).await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    // A request needing the database: 503 naming it, within the timeout, never a bare 500.
    let asked = Instant::now();
    let res = list_chats(&chatd).await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        asked.elapsed() < Duration::from_secs(4),
        "{:?}",
        asked.elapsed()
    );
    let body: Value = res.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("the database (postgresql) is unavailable"),
        "{body}"
    );

    cluster.start(&admin).await;
    ready_becomes(&chatd, StatusCode::OK, Duration::from_secs(30)).await;
    let res = list_chats(&chatd).await;
    assert_eq!(res.status(), StatusCode::OK);
}
