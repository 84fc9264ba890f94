//! The official OpenAI SDKs as chatd's clients: `tests/openai/sdk.py` on the Python SDK. The
//! Python is CHATD_OPENAI_PYTHON, else `target/openai-venv/bin/python` (what `.ci/run`
//! installs, `openai` pinned). Without it the tests say so and pass, unless
//! CHATD_REQUIRE_OPENAI_SDK is set (`.ci/run` sets it), so CI never skips them.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The Python with the `openai` package, if there is one.
pub fn python() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = std::env::var_os("CHATD_OPENAI_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/openai-venv/bin/python"));
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var_os("CHATD_REQUIRE_OPENAI_SDK").is_none(),
        "CHATD_REQUIRE_OPENAI_SDK is set but {} is missing (.ci/run installs it)",
        python.display()
    );
    eprintln!(
        "skipped: no Python with the openai package at {} (python3 -m venv target/openai-venv && target/openai-venv/bin/pip install openai==3.57.0)",
        python.display()
    );
    None
}

/// Runs `sdk.py BASE_URL COMMAND ARGS…` with `token` as the API key: what it printed, as JSON.
pub async fn python_sdk(python: &Path, base_url: &str, token: &str, command: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/openai/sdk.py");
    let out = tokio::process::Command::new(python)
        .arg(script)
        .arg(base_url)
        .args(command)
        .env("OPENAI_API_KEY", token)
        .env_remove("OPENAI_BASE_URL")
        .output()
        .await
        .expect("the SDK script runs");
    assert!(
        out.status.success(),
        "the SDK script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script prints JSON")
}
