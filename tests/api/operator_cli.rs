//! The operator commands of issue 33, run as the real binary: `chatd config check` on the
//! shipped example files (`chatd.example.toml`, `.env.example`) and on a bad setting, and
//! `chatd backup` of a serving SQLite database that a server then opens as it is.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::lifecycle::{Process, chatd};
use crate::support::plugin_cache_dir;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    chatd(dir, env).args(args).output().expect("run chatd")
}

/// The assignments `.env.example` makes (its other lines are comments).
fn example_env() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join(".env.example")).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once('=').expect("KEY=VALUE");
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn config_check_accepts_the_shipped_examples_and_shows_no_key() {
    let dir = tempfile::tempdir().unwrap();
    let cache = plugin_cache_dir();
    let config = root().join("chatd.example.toml");
    let mut env: Vec<(String, String)> = example_env();
    assert!(env.iter().any(|(k, _)| k == "WEATHER_API_KEY"), "{env:?}");
    // Keys given values, to prove none is printed.
    for (k, v) in &mut env {
        *v = format!("secret-{}-value", k.to_lowercase());
    }
    env.push(("PLUGIN_CACHE_DIR".into(), cache.display().to_string()));
    env.push(("ADMIN_TOKEN".into(), "admin-secret-token".into()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = run(
        dir.path(),
        &env,
        &["config", "check", "--config", config.to_str().unwrap()],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.ends_with("configuration ok\n"), "{stdout}");
    for needle in [
        "auth: token",
        "groq: declared, adapter chat_completions",
        "weather: https://api.weather.example/; key set; for weather",
        "docs: https://mcp.example.com/mcp; key set; tools search_docs",
        "provider_c: its plugin",
    ] {
        assert!(stdout.contains(needle), "{needle}: {stdout}");
    }
    assert!(
        !stdout.contains("secret-") && !stderr.contains("secret-"),
        "{stdout}\n{stderr}"
    );
    assert!(
        !dir.path().join("data").exists(),
        "a check creates no data folder"
    );
}

#[test]
fn config_check_refuses_what_startup_refuses_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &[("DATABASE_TIMEOUT_SECS", "0")],
        &["config", "check"],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        "chatd: configuration error: DATABASE_TIMEOUT_SECS: invalid value \"0\": must be an \
         integer from 1 to 300 (seconds)"
    );
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[providers.groq]\nadapter = \"chat_completions\"\n").unwrap();
    let out = run(
        dir.path(),
        &[("PLUGIN_CACHE_DIR", plugin_cache_dir().to_str().unwrap())],
        &["config", "check", "--config", file.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("providers.groq"), "{stderr}");
}

#[test]
fn a_data_folder_chatd_cannot_write_stops_startup_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    // /proc takes no files, whoever asks (root included).
    let out = run(dir.path(), &[("CHATD_DATA_DIR", "/proc/chatd-data")], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("chatd: cannot start: CHATD_DATA_DIR: /proc/chatd-data is not writable"),
        "{stderr}"
    );
    assert!(!dir.path().join("data").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_copies_a_serving_database_that_a_server_opens_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let cache = plugin_cache_dir();
    let live = format!("sqlite://{}", dir.path().join("live/chatd.db").display());
    let env = [
        ("PORT", "0"),
        ("DATABASE_URL", live.as_str()),
        ("PLUGIN_CACHE_DIR", cache.to_str().unwrap()),
    ];
    let server = Process::start(dir.path(), &env);
    let client = reqwest::Client::new();
    let created: Value = client
        .post(format!("{}/v1/chats", server.base))
        .json(&json!({"title": "kept", "messages": [{"role": "user", "content": "hello"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["chat"]["id"].as_str().unwrap().to_string();

    let copy = dir.path().join("copy.db");
    let out = run(dir.path(), &env, &["backup", copy.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    // Not over an existing file, and not on PostgreSQL (its own tools are the way there).
    let again = run(dir.path(), &env, &["backup", copy.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));
    let pg = run(
        dir.path(),
        &[("DATABASE_URL", "postgres://u@127.0.0.1:1/x")],
        &["backup", "x.db"],
    );
    assert!(
        String::from_utf8_lossy(&pg.stderr).contains("pg_dump"),
        "{pg:?}"
    );
    server.stop();

    let restored = format!("sqlite://{}", copy.display());
    let env = [
        ("PORT", "0"),
        ("DATABASE_URL", restored.as_str()),
        ("PLUGIN_CACHE_DIR", cache.to_str().unwrap()),
    ];
    let server = Process::start(dir.path(), &env);
    let chat: Value = client
        .get(format!("{}/v1/chats/{id}", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(chat["chat"]["title"], "kept");
    assert_eq!(chat["chat"]["messages"][0]["content"], "hello");
    server.stop();
}

#[test]
fn an_mcp_key_over_plain_http_to_another_host_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chatd.toml");
    let cache = plugin_cache_dir();
    let env = [("PLUGIN_CACHE_DIR", cache.to_str().unwrap())];
    let table = "[mcp.lan]\nurl = \"http://mcp.lan:8000/mcp\"\napi_key = \"k-123\"\n";
    std::fs::write(&file, table).unwrap();
    let out = run(
        dir.path(),
        &env,
        &["config", "check", "--config", file.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mcp.lan.api_key: a credential would go over plain http to mcp.lan")
            && stderr.contains("allow_insecure = true")
            && !stderr.contains("k-123"),
        "{stderr}"
    );
    // Accepted when the operator says so, and said at every load.
    std::fs::write(&file, format!("{table}allow_insecure = true\n")).unwrap();
    let out = run(
        dir.path(),
        &env,
        &["config", "check", "--config", file.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("mcp.lan: its key goes over plain http to mcp.lan (allow_insecure = true)"),
        "{stderr}"
    );
}
