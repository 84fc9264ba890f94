//! A real MCP server for the tests: `tests/mcp/server.py`, on the official Python SDK, started
//! on loopback. The Python is CHATD_MCP_PYTHON, else `target/mcp-venv/bin/python` (what
//! `.ci/run` installs, `mcp` pinned). Without it the tests say so and pass, unless
//! CHATD_REQUIRE_MCP is set (`.ci/run` sets it), so CI never skips them.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The Python with the `mcp` package, if there is one.
pub fn python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = std::env::var_os("CHATD_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/mcp-venv/bin/python"));
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var_os("CHATD_REQUIRE_MCP").is_none(),
        "CHATD_REQUIRE_MCP is set but {} is missing (.ci/run installs it)",
        python.display()
    );
    eprintln!(
        "skipped: no Python with the mcp package at {} (python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install mcp==2.3.0)",
        python.display()
    );
    None
}

/// The script of the SDK server (also the folder of the SDK client scripts).
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp")
        .join(name)
}

/// A running `tests/mcp/server.py`; stopped when dropped. (The PostgreSQL suite shares this file
/// but starts no server of its own.)
#[allow(dead_code)]
pub struct McpServer {
    pub url: String,
    child: Child,
}

#[allow(dead_code)]
impl McpServer {
    /// Starts one; `key`: the Bearer key it requires. `None` when there is no SDK here.
    pub fn start(key: Option<&str>, stateless: bool) -> Option<Self> {
        Self::start_script("server.py", key, stateless)
    }

    /// Starts `tests/mcp/oauth_server.py`: a server that needs a login, with the SDK's own
    /// authorization server (its `/test/…` routes at [`Self::origin`]).
    pub fn start_oauth() -> Option<Self> {
        Self::start_script("oauth_server.py", None, true)
    }

    /// [`Self::start_oauth`], its authorization server naming itself in its answers (`iss`,
    /// RFC 9207) and saying so in its metadata.
    pub fn start_oauth_sending_iss() -> Option<Self> {
        Self::start_with("oauth_server.py", None, true, &[("MCP_TEST_ISS", "1")])
    }

    /// Registers a public client beforehand at `oauth_server.py`, for `redirect_uri`.
    pub async fn register_client(&self, client_id: &str, redirect_uri: &str) {
        let url = format!("{}/test/client", self.origin());
        let body = serde_json::json!({"client_id": client_id, "redirect_uri": redirect_uri});
        let res = reqwest::Client::new()
            .post(url)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success());
    }

    /// Its scheme, host and port.
    pub fn origin(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }

    /// `oauth_server.py`'s counts: token requests by grant type, registrations, revocations.
    pub async fn stats(&self) -> serde_json::Value {
        let url = format!("{}/test/stats", self.origin());
        reqwest::get(url).await.unwrap().json().await.unwrap()
    }

    /// Every token `oauth_server.py` issued, for canary scans.
    pub async fn tokens(&self) -> Vec<String> {
        let url = format!("{}/test/tokens", self.origin());
        reqwest::get(url).await.unwrap().json().await.unwrap()
    }

    /// Makes every access token `oauth_server.py` issued stop working, as an expiry does.
    pub async fn expire(&self) {
        self.test_post("expire").await;
    }

    /// Ends every grant `oauth_server.py` made: refreshes are refused from then on.
    pub async fn revoke(&self) {
        self.test_post("revoke").await;
    }

    async fn test_post(&self, what: &str) {
        let url = format!("{}/test/{what}", self.origin());
        let res = reqwest::Client::new().post(url).send().await.unwrap();
        assert!(res.status().is_success());
    }

    fn start_script(name: &str, key: Option<&str>, stateless: bool) -> Option<Self> {
        Self::start_with(name, key, stateless, &[])
    }

    fn start_with(
        name: &str,
        key: Option<&str>,
        stateless: bool,
        env: &[(&str, &str)],
    ) -> Option<Self> {
        let python = python()?;
        let mut command = Command::new(python);
        command
            .arg(script(name))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .envs(env.iter().copied())
            .env_remove("MCP_TEST_KEY");
        if let Some(key) = key {
            command.env("MCP_TEST_KEY", key);
        }
        if stateless {
            command.env("MCP_TEST_STATELESS", "1");
        }
        let mut child = command.spawn().expect("the MCP test server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the MCP test server says where it listens");
        let url = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_string();
        Some(Self { url, child })
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
