//! The official OpenAI SDKs as chatd's clients: `tests/openai/sdk.py` on the Python SDK,
//! `tests/openai/frameworks.py` on the agent frameworks built on it (the OpenAI Agents SDK,
//! LangChain), `tests/openai/sdk.mjs` on the JavaScript SDK. The Python is CHATD_OPENAI_PYTHON, else
//! `target/openai-venv/bin/python`; the JavaScript SDK is `target/openai-node/node_modules/openai`
//! run by Node 22 (CHATD_OPENAI_NODE, else `target/mcp-node/node_modules/node/bin/node`): what
//! `.ci/run` installs, both pinned. Without them the tests say so and pass, unless
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
        "skipped: no Python with the openai package at {} (.ci/run installs it and the frameworks, pinned)",
        python.display()
    );
    None
}

/// Runs `sdk.py BASE_URL COMMAND ARGS…` with `token` as the API key: what it printed, as JSON.
pub async fn python_sdk(python: &Path, base_url: &str, token: &str, command: &[&str]) -> Value {
    let mut script = tokio::process::Command::new(python);
    script.arg(scripts().join("sdk.py"));
    run(script, base_url, token, command).await
}

/// Runs `frameworks.py BASE_URL CASE MODEL` (an agent framework's default use of the Python
/// SDK) with `token` as the API key: what it printed, as JSON.
pub async fn framework(
    python: &Path,
    base_url: &str,
    token: &str,
    case: &str,
    model: &str,
) -> Value {
    let mut script = tokio::process::Command::new(python);
    script.arg(scripts().join("frameworks.py"));
    run(script, base_url, token, &[case, model]).await
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/openai")
}

/// Runs an SDK script: `BASE_URL COMMAND ARGS…`, `token` as the API key; what it printed.
async fn run(
    mut script: tokio::process::Command,
    base_url: &str,
    token: &str,
    command: &[&str],
) -> Value {
    let out = script
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

/// Node 22 and the JavaScript SDK's folder, if both are there.
pub fn node() -> Option<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let node = std::env::var_os("CHATD_OPENAI_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/mcp-node/node_modules/node/bin/node"));
    let module = root.join("target/openai-node/node_modules/openai");
    if node.exists() && module.join("index.mjs").exists() {
        return Some((node, module));
    }
    assert!(
        std::env::var_os("CHATD_REQUIRE_OPENAI_SDK").is_none(),
        "CHATD_REQUIRE_OPENAI_SDK is set but {} or {} is missing (.ci/run installs them)",
        node.display(),
        module.display()
    );
    eprintln!(
        "skipped: no Node 22 at {} or no openai package at {} (npm install openai@7.59.0 in target/openai-node)",
        node.display(),
        module.display()
    );
    None
}

/// Runs `sdk.mjs BASE_URL COMMAND ARGS…` with `token` as the API key: what it printed, as JSON.
pub async fn js_sdk(
    node: &(PathBuf, PathBuf),
    base_url: &str,
    token: &str,
    command: &[&str],
) -> Value {
    let mut script = tokio::process::Command::new(&node.0);
    script
        .arg(scripts().join("sdk.mjs"))
        .env("OPENAI_JS_MODULE", &node.1);
    run(script, base_url, token, command).await
}
