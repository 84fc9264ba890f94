//! The real chatd binary as the black-box tests that need a process of its own start it: a
//! temporary data folder, PORT=0, the shared plugin compile cache, the environment the test
//! gives, and its stdout read on a thread (`process.rs`). Shared by `web` and `telemetry`.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use serde_json::Value;

use crate::process;

const BIN: &str = env!("CARGO_BIN_EXE_chatd");

/// A running chatd binary; killed when dropped.
pub struct Chatd {
    child: Child,
    pub base: String,
    /// Its stdout lines after the one saying where it listens.
    pub lines: mpsc::Receiver<String>,
    /// The lines before it (startup).
    #[allow(dead_code)] // read by the telemetry suite only
    pub startup: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Chatd {
    /// The binary with `env` (and PORT=0, a data folder of its own, the shared plugin cache).
    pub fn start<K: AsRef<OsStr>, V: AsRef<OsStr>>(env: impl IntoIterator<Item = (K, V)>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-plugin-cache");
        let mut child = Command::new(BIN)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PORT", "0")
            .env("PLUGIN_CACHE_DIR", cache)
            .envs(env)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chatd");
        let lines = process::stdout_lines(&mut child);
        let (base, mut startup) = process::listening_after(&lines);
        // A first start compiles the interpreter after listening (no test's cache held it
        // yet): the tests expect the tools a ready server offers, so wait for it.
        if startup
            .iter()
            .any(|l| l.contains("interpreter is compiling in the background"))
        {
            loop {
                let line = lines
                    .recv_timeout(std::time::Duration::from_secs(300))
                    .expect("the interpreter compiles within 5 minutes");
                let done = line.contains("compiled in the background");
                startup.push(line);
                if done {
                    break;
                }
            }
        }
        Self {
            child,
            base,
            lines,
            startup,
            _dir: dir,
        }
    }

    /// A JSON request to the API, with `token` in token mode.
    pub async fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        token: Option<&str>,
    ) -> Value {
        let mut request = reqwest::Client::new().request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("request sent");
        assert!(
            response.status().is_success(),
            "{path}: {}",
            response.status()
        );
        response.json().await.expect("a JSON body")
    }

    /// `chatd ARGS` beside the running server, in its data folder, with `env`: the operator's
    /// commands (`chatd users …`).
    #[allow(dead_code)] // used by the web suite only
    pub fn command(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        Command::new(BIN)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env.iter().copied())
            .current_dir(self._dir.path())
            .args(args)
            .output()
            .expect("run chatd")
    }

    pub async fn get(&self, path: &str) -> Value {
        self.api(reqwest::Method::GET, path, None, None).await
    }
}

impl Drop for Chatd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
