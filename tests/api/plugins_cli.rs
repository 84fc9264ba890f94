//! `chatd plugins list` and `chatd plugins check FILE`, run as the real binary.

use std::process::Output;

use crate::lifecycle::chatd;
use crate::support::{plugin_cache_dir, test_component};

fn run(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let cache = plugin_cache_dir();
    let mut env = env.to_vec();
    env.push(("PLUGIN_CACHE_DIR", cache.to_str().unwrap()));
    chatd(dir, &env).args(args).output().expect("run chatd")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn plugins_list_shows_id_kind_version_grants_and_source() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("plugins");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(
        folder.join("extra.json"),
        r#"{"id":"extra","kind":"tool","wit":"chatd:plugin@0.1.0","version":"1.2.3","grants":{"http":["https://api.example.com"]}}"#,
    )
    .unwrap();
    std::fs::write(
        folder.join("extra.wasm"),
        test_component("test-plugin-hostile"),
    )
    .unwrap();
    std::fs::write(folder.join("broken.json"), "{}").unwrap();
    std::fs::write(folder.join("broken.wasm"), b"junk").unwrap();
    let out = run(
        dir.path(),
        &["plugins", "list"],
        &[
            ("PLUGINS_DIR", folder.to_str().unwrap()),
            ("ENGINE_A_API_KEY", "sk-list-secret"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(
        "web_search (tool, version 0.1.0, bundled)\n  tools:  web_search\n  grants: service engine_a: https://api.exa.ai with ENGINE_A_API_KEY\n          service engine_b (ENGINE_B_BASE_URL unset: nothing)\n          config chat_web_search_engine\n  limits: 64 MiB memory, 30000 ms per call\n"
    ), "{stdout}");
    assert!(
        stdout.contains(
            "fetch_url (tool, version 0.1.0, bundled)\n  tools:  fetch_url\n  grants: public web\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "extra (tool, version 1.2.3, {})",
            folder.join("extra.wasm").display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("  grants: http https://api.example.com:443\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "refused {}: invalid plugin manifest: missing field `id`",
            folder.join("broken.wasm").display()
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("sk-list-secret") && !text(&out.stderr).contains("sk-list-secret"));
}

#[test]
fn plugins_check_validates_a_file_without_starting_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("mine.wasm");
    std::fs::write(&wasm, test_component("test-plugin-hostile")).unwrap();
    std::fs::write(
        dir.path().join("mine.json"),
        r#"{"id":"mine","kind":"tool","wit":"chatd:plugin@0.1.0"}"#,
    )
    .unwrap();
    let out = run(
        dir.path(),
        &["plugins", "check", wasm.to_str().unwrap()],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("ok: mine (tool, version -, "),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "  tools:  echo, spin, eat_memory, panic, read_env, http_get, config\n  grants: none\n"
        ),
        "{stdout}"
    );
    assert!(
        !dir.path().join("data").exists(),
        "no server state is created"
    );

    // The manifest's path works too, and a wrong kind is named.
    std::fs::write(
        dir.path().join("mine.json"),
        r#"{"id":"mine","kind":"provider","wit":"chatd:plugin@0.1.0"}"#,
    )
    .unwrap();
    let out = run(
        dir.path(),
        &[
            "plugins",
            "check",
            dir.path().join("mine.json").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("chatd: plugin check failed: plugin mine: cannot be linked"),
        "{stderr}"
    );

    // A service the plugin does not own.
    std::fs::write(
        dir.path().join("mine.json"),
        r#"{"id":"mine","kind":"tool","wit":"chatd:plugin@0.1.0","grants":{"services":["provider_a"]}}"#,
    )
    .unwrap();
    let out = run(
        dir.path(),
        &["plugins", "check", wasm.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("grants.services: provider_a belongs to provider_a"),
        "{}",
        text(&out.stderr)
    );

    // A tool name the bundled plugins already provide.
    let fetch_like = dir.path().join("fetch.wasm");
    std::fs::copy(&wasm, &fetch_like).unwrap();
    std::fs::write(
        dir.path().join("fetch.json"),
        r#"{"id":"other","kind":"tool","wit":"chatd:plugin@0.1.0"}"#,
    )
    .unwrap();
    let out = run(
        dir.path(),
        &["plugins", "check", fetch_like.to_str().unwrap()],
        &[],
    );
    assert!(
        out.status.success(),
        "hostile's tool names are free: {}",
        text(&out.stderr)
    );

    // Not a component; a missing manifest.
    std::fs::write(&wasm, b"\0asm junk").unwrap();
    std::fs::write(
        dir.path().join("mine.json"),
        r#"{"id":"mine","kind":"tool","wit":"chatd:plugin@0.1.0"}"#,
    )
    .unwrap();
    let out = run(
        dir.path(),
        &["plugins", "check", wasm.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("plugin mine: not a valid component"),
        "{}",
        text(&out.stderr)
    );
    let out = run(
        dir.path(),
        &[
            "plugins",
            "check",
            dir.path().join("nothing.wasm").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("nothing.json"),
        "{}",
        text(&out.stderr)
    );
}
