//! A full disk under the SQLite database, black-box: the real binary on a small tmpfs that the
//! test fills. A new message that cannot be stored is refused before the upstream is called
//! (nothing is paid for and then lost), with a 503 naming the database and the cause, on the
//! JSON and the streaming endpoints; reads keep working; with room again, the same request is
//! served and stored.
//!
//! Mounting needs root: elsewhere the test says so and passes, unless `CHATD_REQUIRE_TMPFS` is
//! set (`.ci/run` sets it), so it can never be skipped in CI.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::{ROUTE, TEXT_STREAM, body};
use crate::lifecycle::Process;
use crate::support::plugin_cache_dir;

/// A tmpfs of `size` mounted on a new temporary folder; unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map(|out| out.status.success())
            .unwrap_or(false);
        if !mounted {
            assert!(
                std::env::var_os("CHATD_REQUIRE_TMPFS").is_none(),
                "CHATD_REQUIRE_TMPFS is set but a tmpfs cannot be mounted (it needs root)"
            );
            eprintln!("skipped: mounting a tmpfs needs root");
            return None;
        }
        Some(Self { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file until the file system has no room left; its path.
    fn fill(&self) -> PathBuf {
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 4096];
        while file.write_all(&chunk).and_then(|()| file.flush()).is_ok() {}
        let _ = file.write_all(&[0]);
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_full_disk_a_new_message_is_refused_before_the_upstream_is_called() {
    let Some(disk) = Tmpfs::mount("8m") else {
        return;
    };
    let upstream = ScriptedUpstream::start([(ROUTE, Reply::sse(TEXT_STREAM))]).await;
    let cache = plugin_cache_dir();
    let database = format!("sqlite://{}", disk.path().join("chatd.db").display());
    let url = upstream.url();
    let work = tempfile::tempdir().unwrap();
    let process = Process::start(
        work.path(),
        &[
            ("PORT", "0"),
            ("DATABASE_URL", &database),
            ("PLUGIN_CACHE_DIR", cache.to_str().unwrap()),
            ("PROVIDER_C_BASE_URL", &url),
            ("PROVIDER_C_API_KEY", "c-key"),
            ("DATABASE_TIMEOUT_SECS", "2"),
        ],
    );
    let base = process.base.clone();
    let created: Value =
        serde_json::from_str(&post(&base, "/v1/chats", &json!({})).await.1).unwrap();
    let chat_id = created["chat"]["id"].as_str().unwrap().to_string();
    // A message larger than any room the database's write-ahead log kept.
    let text = "x".repeat(2 * 1024 * 1024);
    let request = body(Some(&chat_id), json!([{"role": "user", "content": text}]));

    let filler = disk.fill();
    let (status, answer) = post(&base, "/v1/chat-completions", &request).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let message = serde_json::from_str::<Value>(&answer).unwrap()["message"].to_string();
    assert!(
        message.contains("the database (sqlite) is unavailable") && message.contains("full"),
        "{message}"
    );
    // The stream has begun when the write fails: its `error` names the cause.
    let (_, events) = post(&base, "/v1/chat-completions/stream", &request).await;
    assert!(
        events.contains("event: error") && events.contains("database (sqlite) is unavailable"),
        "{events}"
    );
    assert_eq!(completions(&upstream), 0, "the upstream was never called");
    // Reads still work.
    let chat_path = format!("/v1/chats/{chat_id}");
    assert_eq!(get(&base, &chat_path).await.0, StatusCode::OK);

    // With room again, the same request is served and stored.
    std::fs::remove_file(filler).unwrap();
    let (_, events) = post(&base, "/v1/chat-completions/stream", &request).await;
    assert!(events.contains("event: done"), "{events}");
    assert_eq!(completions(&upstream), 1);
    let chat: Value = serde_json::from_str(&get(&base, &chat_path).await.1).unwrap();
    let messages = chat["chat"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "the message and its reply, once");
    process.stop();
}

/// The completion requests the upstream got (the model list is asked for at start).
fn completions(upstream: &ScriptedUpstream) -> usize {
    let requests = upstream.requests();
    requests
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .count()
}

async fn post(base: &str, path: &str, body: &Value) -> (StatusCode, String) {
    let res = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    (res.status(), res.text().await.unwrap())
}

async fn get(base: &str, path: &str) -> (StatusCode, String) {
    let res = reqwest::get(format!("{base}{path}")).await.unwrap();
    (res.status(), res.text().await.unwrap())
}
