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
        "web_search (tool, version 0.1.0, bundled)\n  tools:  web_search\n  grants: service engine_a: https://api.exa.ai with ENGINE_A_API_KEY (header x-api-key)\n          service engine_b (ENGINE_B_BASE_URL unset: nothing)\n          config chat_web_search_engine\n  limits: 64 MiB memory, 30000 ms per call\n"
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

/// Writes `mine.wasm` and `mine.json` into `dir`, runs `chatd plugins check` on `target` (a
/// path relative to `dir`), and returns its exit code, stdout and stderr.
fn check(
    dir: &std::path::Path,
    wasm: &[u8],
    manifest: &str,
    target: &str,
) -> (i32, String, String) {
    std::fs::write(dir.join("mine.wasm"), wasm).unwrap();
    std::fs::write(dir.join("mine.json"), manifest).unwrap();
    let path = dir.join(target);
    let out = run(dir, &["plugins", "check", path.to_str().unwrap()], &[]);
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

#[test]
fn plugins_check_validates_a_file_without_starting_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let hostile = test_component("test-plugin-hostile");
    let tool = r#"{"id":"mine","kind":"tool","wit":"chatd:plugin@0.1.0"}"#;

    let (code, stdout, stderr) = check(dir, &hostile, tool, "mine.wasm");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with("ok: mine (tool, version -, "),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "  tools:  echo, spin, eat_memory, panic, read_env, http_get, config, hold_memory, forge_log, remember\n  grants: none\n"
        ),
        "{stdout}"
    );
    assert!(!dir.join("data").exists(), "no server state is created");

    // The manifest's path works too; a plugin with a bundled id is said to replace it.
    let (code, stdout, _) = check(
        dir,
        &hostile,
        r#"{"id":"fetch_url","kind":"tool","wit":"chatd:plugin@0.1.0"}"#,
        "mine.json",
    );
    assert_eq!(code, 0);
    assert!(
        stdout.ends_with("  note: replaces the bundled plugin fetch_url\n"),
        "{stdout}"
    );

    for (wasm, manifest, expected) in [
        (
            &hostile[..],
            r#"{"id":"mine","kind":"provider","wit":"chatd:plugin@0.1.0"}"#,
            "chatd: plugin check failed: plugin mine: cannot be linked",
        ),
        (
            &hostile[..],
            r#"{"id":"mine","kind":"tool","wit":"chatd:plugin@0.1.0","grants":{"services":["provider_a"]}}"#,
            "chatd: plugin check failed: plugin mine: grants.services: provider_a belongs to provider_a",
        ),
        (
            &hostile[..],
            r#"{"id":"mine","kind":"tool","wit":"chatd:plugin@0.2.0"}"#,
            "chatd: plugin check failed: invalid plugin manifest: wit:",
        ),
        (
            b"\0asm junk",
            tool,
            "chatd: plugin check failed: plugin mine: not a valid component",
        ),
    ] {
        let (code, _, stderr) = check(dir, wasm, manifest, "mine.wasm");
        assert_eq!(code, 1, "{manifest}");
        assert!(stderr.starts_with(expected), "{manifest}: {stderr}");
    }

    // A component that is not there (one without a manifest: the test below).
    let (code, _, stderr) = check(dir, &hostile, tool, "nothing.wasm");
    assert_eq!(code, 1);
    assert!(stderr.contains("nothing.wasm"), "{stderr}");
}

#[test]
fn plugins_list_shows_providers_settings_and_services_from_the_file_and_no_key() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("plugins");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(
        folder.join("weather.json"),
        r#"{"id":"weather","kind":"tool","wit":"chatd:plugin@0.1.0","grants":{"services":["weather"]},
            "settings":[{"name":"units","type":"string","description":"metric or imperial","default":"metric"},
                        {"name":"days","type":"integer","description":"days ahead"}]}"#,
    )
    .unwrap();
    std::fs::write(
        folder.join("weather.wasm"),
        test_component("test-plugin-hostile"),
    )
    .unwrap();
    let file = dir.path().join("chatd.toml");
    std::fs::write(
        &file,
        r#"
[providers.groq]
adapter = "chat_completions"
base_url = "https://api.groq.com/openai/v1"
api_key = "${GROQ_API_KEY}"
models = ["llama-3.3-70b-versatile"]

[services.weather]
base_url = "https://api.weather.example"
api_key = "${WEATHER_API_KEY}"
auth = "header:x-api-key"
plugins = ["weather"]

[plugins.weather.settings]
days = 3
"#,
    )
    .unwrap();
    let out = run(
        dir.path(),
        &["plugins", "list"],
        &[
            ("PLUGINS_DIR", folder.to_str().unwrap()),
            ("CHATD_CONFIG", file.to_str().unwrap()),
            ("GROQ_API_KEY", "gsk-list-secret-1"),
            ("WEATHER_API_KEY", "wx-list-secret-2"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "  grants: service weather: https://api.weather.example with the api_key of [services.weather] (header x-api-key)\n          setting units (string) = \"metric\": metric or imperial\n          setting days (integer) = \"3\": days ahead\n"
        ),
        "{stdout}"
    );
    let providers = stdout
        .split("\nproviders\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        providers.starts_with(
            "  groq: declared, adapter chat_completions; takes tools, the tool-loop instruction, images, text files\n    models: llama-3.3-70b-versatile (from the file)\n    service groq: https://api.groq.com/openai/v1 with the api_key of [providers.groq] (bearer)\n"
        ),
        "{providers}"
    );
    assert!(
        providers.contains("  provider_agent: not served: AGENT_API_KEY is not set\n"),
        "{providers}"
    );
    let everything = format!("{stdout}{}", text(&out.stderr));
    assert!(!everything.contains("list-secret"), "{everything}");
}

/// A component that carries its manifest (`chatd_plugin_sdk::embed_manifest!`) is a plugin on
/// its own: no `NAME.json` beside it. Without either, the refusal names both.
#[test]
fn a_component_carrying_its_manifest_is_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("plugins");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(
        folder.join("alone.wasm"),
        test_component("test-plugin-hostile"),
    )
    .unwrap();
    let ollama = test_component("example-ollama");
    std::fs::write(folder.join("bare.wasm"), ollama).unwrap();
    let out = run(
        dir.path(),
        &["plugins", "list"],
        &[("PLUGINS_DIR", folder.to_str().unwrap())],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("hostile (tool, version 0.2.0, "),
        "{stdout}"
    );
    assert!(stdout.contains("alone.wasm"), "{stdout}");
    assert!(
        stdout.contains("bare.json: no manifest: neither this file nor a `chatd-manifest` section"),
        "{stdout}"
    );
    let check = run(
        dir.path(),
        &[
            "plugins",
            "check",
            folder.join("alone.wasm").to_str().unwrap(),
        ],
        &[],
    );
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(text(&check.stdout).starts_with("ok: hostile (tool, version 0.2.0"));
}

/// `chatd plugins call`: one tool run outside the server, its result on stdout, its log on
/// stderr, then its duration and memory; a tool that breaks its limit fails its call only.
#[test]
fn plugins_call_runs_one_tool_and_reports_its_cost() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("alone.wasm");
    std::fs::write(&wasm, test_component("test-plugin-hostile")).unwrap();
    let file = wasm.to_str().unwrap();
    let out = run(
        dir.path(),
        &[
            "plugins",
            "call",
            file,
            "--tool",
            "echo",
            "--args",
            r#"{"text":"hello"}"#,
        ],
        &[],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.starts_with("ok: echo\nhello\ntook "), "{stdout}");
    assert!(
        stdout.contains("memory peak ") && stdout.contains("of 64 MiB"),
        "{stdout}"
    );
    assert!(text(&out.stderr).contains("echo called with 5 bytes"));

    let out = run(
        dir.path(),
        &["plugins", "call", file, "--tool", "eat_memory"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("failed: ") && stdout.contains("memory"),
        "{stdout}"
    );

    for (args, says) in [
        (vec!["--tool", "nope"], "has no tool \"nope\""),
        (
            vec!["--tool", "echo", "--args", "[1]"],
            "--args: must be a JSON object",
        ),
    ] {
        let mut all = vec!["plugins", "call", file];
        all.extend(args);
        let out = run(dir.path(), &all, &[]);
        assert_eq!(out.status.code(), Some(2));
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    }
}

/// A plugin cannot forge a line of the host's text log: whatever it writes through the log
/// interface or to stderr, every control and line-separator character is escaped.
#[test]
fn a_plugin_cannot_forge_a_line_of_the_text_log() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("alone.wasm");
    std::fs::write(&wasm, test_component("test-plugin-hostile")).unwrap();
    let file = wasm.to_str().unwrap();
    let out = run(
        dir.path(),
        &["plugins", "call", file, "--tool", "forge_log"],
        &[("NO_COLOR", "1")],
    );
    let log = text(&out.stderr);
    assert!(out.status.success(), "{}{log}", text(&out.stdout));
    for c in ['\r', '\x0b', '\x0c', '\u{85}', '\u{2028}', '\u{2029}'] {
        assert!(!log.contains(c), "{c:?} in the log: {log:?}");
    }
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("forged by")).collect();
    assert_eq!(lines.len(), 2, "one line each, whatever they held: {log:?}");
    assert!(
        lines[0].contains(r"a\rINFO forged by log\u{b}b\u{c}c\u{85}d\u{2028}e\u{2029}f\nINFO"),
        "{log:?}"
    );
    assert!(
        lines[1].contains(r"g\rINFO forged by stderr\u{b}h\u{2028}i"),
        "{log:?}"
    );
    for line in lines {
        assert!(line.contains("INFO") || line.contains("WARN"), "{line}");
    }
}

/// `chatd plugins call --grant`: the call runs with only the named grants of its manifest,
/// never one it does not ask for.
#[test]
fn plugins_call_runs_with_only_the_grants_named() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("narrow.wasm");
    std::fs::write(&wasm, test_component("test-plugin-hostile")).unwrap();
    std::fs::write(
        dir.path().join("narrow.json"),
        r#"{"id":"narrow","kind":"tool","wit":"chatd:plugin@0.1.0",
            "grants":{"config":["title_model","agent_model"]}}"#,
    )
    .unwrap();
    let file = wasm.to_str().unwrap();
    let call = |grants: &[&str]| {
        let mut args = vec!["plugins", "call", file, "--tool", "config"];
        for grant in grants {
            args.extend(["--grant", grant]);
        }
        run(
            dir.path(),
            &args,
            &[("TITLE_MODEL", "tiny-1"), ("AGENT_MODEL", "agent-1")],
        )
    };
    let all = text(&call(&[]).stdout);
    assert!(
        all.contains("\"title_model\", \"tiny-1\"") && all.contains("agent_model"),
        "{all}"
    );
    let one = text(&call(&["config:title_model"]).stdout);
    assert!(
        one.contains("title_model") && !one.contains("agent_model"),
        "{one}"
    );
    let none = call(&["none"]);
    assert!(
        text(&none.stdout).starts_with("ok: config\n[]\n"),
        "{}",
        text(&none.stdout)
    );
    let wider = call(&["ssh"]);
    assert_eq!(wider.status.code(), Some(2));
    assert!(
        text(&wider.stderr).contains("\"ssh\": the manifest does not ask for it"),
        "{}",
        text(&wider.stderr)
    );
}
