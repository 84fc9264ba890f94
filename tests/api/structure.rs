//! The map's invariants about where things are written (ARCHITECTURE.md, "Invariants"), checked
//! over the host's source text:
//!
//! - no host file but the plugin host's built-in table (`plugins/builtin.rs`) names a bundled
//!   plugin's id (every `plugins/*/manifest.json`): providers, search and tools are data;
//! - wire types (serde `Serialize` or utoipa `ToSchema` derives) are declared only where the map
//!   says: `http/`, the streams' events (`events.rs`), `attachments/wire.rs` and `vocabulary.rs`;
//!   `config/` and `plugins/` only read files (`Deserialize`);
//! - the SDK's copy of the WIT (`plugin-sdk/wit/`) is the workspace's `/wit`, byte for byte.
//!
//! Exempt: unit tests (a file's `#[cfg(test)]` items); `bundled/build.rs`, which lists the plugin
//! crates compiled into the binary (a build list like the workspace's `Cargo.toml`, not
//! behaviour), is outside `host/src`. The layering rules (no import cycle, no upward import) are `.ci/layers.py`'s.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every host source file, as its path under `host/src` and its code without unit tests.
fn host_code() -> Vec<(String, String)> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../host/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "host/src has the host's code: {files:?}");
    files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let code = without_unit_tests(&text);
            let rel = file
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (rel, code)
        })
        .collect()
}

/// `text` without its unit tests: every `#[cfg(test)]` item (a `mod tests { … }`, or a helper
/// function), found by its braces.
fn without_unit_tests(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        // The item ends with its first `;` before any brace, or where its braces close.
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The ids of the bundled plugins, from their manifests.
fn bundled_ids() -> Vec<String> {
    let plugins = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins");
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(plugins).unwrap() {
        let manifest = entry.unwrap().path().join("manifest.json");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            ids.push(json["id"].as_str().unwrap().to_string());
        }
    }
    ids.sort();
    ids
}

/// Whether `line` has `id` as a whole word (`provider_a_api_key` is a variable, not the id).
fn names(line: &str, id: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(id).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + id.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

#[test]
fn no_host_code_outside_the_builtin_table_names_a_bundled_plugin() {
    let ids = bundled_ids();
    for id in [
        "provider_a",
        "provider_agent",
        "search_engine_a",
        "web_search",
        "shell_exec",
    ] {
        assert!(ids.iter().any(|i| i == id), "{id} is bundled: {ids:?}");
    }
    let mut found = Vec::new();
    let mut table = String::new();
    for (file, code) in host_code() {
        if file == "plugins/builtin.rs" {
            table = code;
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue; // docs may say which plugin they mean
            }
            for id in &ids {
                if names(line, id) {
                    found.push(format!("host/src/{file}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "host code names a bundled plugin outside plugins/builtin.rs (declare it in the \
         plugin's profile, or add it to the built-in table):\n{}",
        found.join("\n")
    );
    // The check itself: the table does name them (the tools are listed by their manifests).
    for id in ["provider_a", "provider_b", "provider_c", "provider_agent"] {
        assert!(table.lines().any(|l| names(l, id)), "{id}");
    }
    for id in ["search_engine_a", "shell_exec", "coding_exec"] {
        assert!(table.lines().any(|l| names(l, id)), "{id}");
    }
    assert!(!names("provider_a_api_key", "provider_a"));
    assert!(names("\"provider_a\",", "provider_a"));
}

/// Where each derive may be written.
fn derive_allowed(file: &str, derive: &str) -> bool {
    let wire = file.starts_with("http/")
        || file == "chat/events.rs"
        || file == "search/events.rs"
        || file == "attachments/wire.rs"
        || file == "vocabulary.rs";
    match derive {
        "Deserialize" => {
            wire || file.starts_with("config/")
                || file.starts_with("plugins/")
                || file == "tools/mcp/oauth/saved.rs"
        }
        // The lock file and a sealed MCP login are formats chatd writes as well as reads.
        "Serialize" => {
            wire || file == "plugins/trust/lock.rs" || file == "tools/mcp/oauth/saved.rs"
        }
        _ => wire,
    }
}

#[test]
fn wire_types_are_declared_only_where_the_map_says() {
    let mut found = Vec::new();
    let mut seen = 0;
    for (file, code) in host_code() {
        // Every `derive(…)` (one line or several, inside `cfg_attr` too), and any hand-written
        // `impl Serialize`/`impl ToSchema`.
        for (at, _) in code.match_indices("derive(") {
            let list = &code[at + "derive(".len()..];
            let list = &list[..list.find(')').unwrap_or(list.len())];
            let line = code[..at].lines().count();
            for derive in ["Serialize", "Deserialize", "ToSchema"] {
                let named = list
                    .split(',')
                    .any(|d| d.trim().rsplit("::").next() == Some(derive));
                if named {
                    seen += 1;
                    if !derive_allowed(&file, derive) {
                        found.push(format!("host/src/{file}:{line}: {derive}"));
                    }
                }
            }
        }
        for derive in ["Serialize", "ToSchema"] {
            let by_hand = code.contains(&format!("impl {derive} for"))
                || code.contains(&format!("::{derive} for"));
            if by_hand && !derive_allowed(&file, derive) {
                found.push(format!("host/src/{file}: impl {derive}"));
            }
        }
    }
    assert!(seen > 20, "the derives are found: {seen}");
    assert!(
        found.is_empty(),
        "a wire type outside http/, the streams' events, attachments/wire.rs and vocabulary.rs \
         (ARCHITECTURE.md, \"Invariants\"):\n{}",
        found.join("\n")
    );
    assert!(!derive_allowed("store/records.rs", "Serialize"));
    assert!(derive_allowed("chat/events.rs", "Serialize"));
    assert!(!derive_allowed("runs/events.rs", "Serialize"));
    // The unit-test filter keeps what follows a `#[cfg(test)]` helper.
    let kept =
        without_unit_tests("a\n#[cfg(test)]\nfn t() { x }\nb\n#[cfg(test)]\nmod tests { y }\n");
    assert!(kept.contains('a') && kept.contains('b') && !kept.contains('x') && !kept.contains('y'));
}

/// The SDK builds against its own copy of the WIT (`plugin-sdk/wit/`), so that the crate
/// packages alone (`cargo package -p chatd-plugin-sdk`, run by `.ci/run`); the copy must be the
/// workspace's `/wit`, which the host builds against, file for file and byte for byte.
#[test]
fn the_sdk_carries_the_workspace_wit_byte_for_byte() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let wit_files = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "wit"))
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect();
        files.sort();
        files
    };
    let workspace = wit_files(&root.join("wit"));
    let sdk = wit_files(&root.join("plugin-sdk/wit"));
    assert!(!workspace.is_empty());
    let names =
        |files: &[(String, Vec<u8>)]| files.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&sdk), names(&workspace), "the same files");
    for ((name, theirs), (_, ours)) in workspace.iter().zip(&sdk) {
        assert!(
            theirs == ours,
            "plugin-sdk/wit/{name} differs from wit/{name}: copy wit/*.wit into plugin-sdk/wit/"
        );
    }
}
