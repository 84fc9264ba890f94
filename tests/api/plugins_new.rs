//! `chatd plugins new` as a plugin author uses it, in a folder outside the workspace: the
//! project it writes builds with its language's toolchain, its own test passes, and the built
//! component runs in chatd (`plugins call` for tools, `plugins check` for a provider). Rust
//! projects take the SDK by path; Python and JavaScript need the pinned toolchains
//! (`.ci/plugin-toolchains`) and skip without them outside CI.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::plugin_languages::{componentize_js, componentize_py, toolchains};
use crate::support::plugin_cache_dir;

const BIN: &str = env!("CARGO_BIN_EXE_chatd");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `command`, which must succeed; its output.
fn ok(command: &mut Command) -> Output {
    let out = command.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{command:?}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn chatd(args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env("PLUGIN_CACHE_DIR", plugin_cache_dir())
        .env("CHATD_CACHE_DIR", plugin_cache_dir());
    command
}

/// `chatd plugins new KIND NAME --lang LANG` in `dir`; the project's folder.
fn new(dir: &Path, kind: &str, name: &str, lang: &str) -> PathBuf {
    let sdk = root().join("plugin-sdk");
    let out = ok(chatd(&["plugins", "new", kind, name, "--lang", lang])
        .arg("--dir")
        .arg(dir)
        .arg("--sdk-path")
        .arg(&sdk));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("wrote "), "{said}");
    dir.join(name)
}

/// Cargo in the project, on a target folder the runs share (the SDK's dependencies compile once).
fn cargo(project: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    ok(Command::new(cargo)
        .current_dir(project)
        .args(args)
        .env("CARGO_TARGET_DIR", root().join("target/scaffold-test"))
        .env_remove("RUSTFLAGS"))
}

fn wasm(name: &str) -> PathBuf {
    root().join(format!(
        "target/scaffold-test/wasm32-wasip2/release/{name}.wasm"
    ))
}

#[test]
fn a_new_rust_tool_tests_builds_and_runs_in_chatd() {
    let dir = tempfile::tempdir().unwrap();
    let project = new(dir.path(), "tool", "word_count", "rust");
    // Its own test, natively, on the SDK's harness.
    let tested = cargo(&project, &["test"]);
    assert!(String::from_utf8_lossy(&tested.stdout).contains("2 passed"));
    cargo(
        &project,
        &["build", "--release", "--target", "wasm32-wasip2"],
    );
    // One file: the manifest travels inside.
    let out = ok(chatd(&["plugins", "call", "--tool", "word_count"])
        .arg(wasm("word_count"))
        .args(["--args", r#"{"text":"one two three"}"#]));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("ok: word_count\n3 words\n"), "{said}");
    // Not over an existing folder.
    let again = chatd(&["plugins", "new", "tool", "word_count", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
}

#[test]
fn a_new_rust_provider_tests_builds_and_checks() {
    let dir = tempfile::tempdir().unwrap();
    let project = new(dir.path(), "provider", "my_llm", "rust");
    let tested = cargo(&project, &["test"]);
    assert!(String::from_utf8_lossy(&tested.stdout).contains("3 passed"));
    cargo(
        &project,
        &["build", "--release", "--target", "wasm32-wasip2"],
    );
    let config = dir.path().join("chatd.toml");
    std::fs::write(
        &config,
        "[services.my_llm]\nbase_url = \"https://api.example.com\"\napi_key = \"k\"\n\
         plugins = [\"my_llm\"]\n",
    )
    .unwrap();
    let out = ok(chatd(&["plugins", "--config"])
        .arg(&config)
        .arg("check")
        .arg(wasm("my_llm")));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("ok: my_llm (provider"), "{said}");
    // Providers are Rust only: said in one line.
    let python = chatd(&[
        "plugins", "new", "provider", "p", "--lang", "python", "--dir",
    ])
    .arg(dir.path())
    .output()
    .unwrap();
    assert_eq!(python.status.code(), Some(2));
    assert!(!dir.path().join("p").exists());
}

/// A Python or JavaScript project: `sh build.sh`, then its own test (which runs it in chatd).
fn script_project(lang: &str, name: &str, test: &[&str]) {
    if !toolchains() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = new(dir.path(), "tool", name, lang);
    let env = [
        ("CHATD", PathBuf::from(BIN)),
        ("COMPONENTIZE_PY", componentize_py()),
        ("COMPONENTIZE_JS", componentize_js()),
        ("PLUGIN_CACHE_DIR", plugin_cache_dir()),
        ("CHATD_CACHE_DIR", plugin_cache_dir()),
    ];
    ok(Command::new("sh")
        .arg("build.sh")
        .current_dir(&project)
        .envs(env.clone()));
    assert!(project.join(format!("{name}.wasm")).is_file());
    let out = ok(Command::new(test[0])
        .args(&test[1..])
        .current_dir(&project)
        .envs(env));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("pass 2") || said.contains("Ran 2 tests"),
        "{said}"
    );
}

#[test]
fn a_new_python_tool_builds_and_its_test_runs_it_in_chatd() {
    script_project("python", "py_words", &["python3", "-m", "unittest"]);
}

#[test]
fn a_new_javascript_tool_builds_and_its_test_runs_it_in_chatd() {
    script_project("js", "js_words", &["node", "--test"]);
}
