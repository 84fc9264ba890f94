//! Providers are data: no host code outside the defaults table (`host/src/defaults.rs`) names a
//! bundled provider id. Behaviour that differs between providers comes from the provider's
//! declared profile; what the contract pins to an id (the four defaults, their variables, the
//! title provider) is in that one table.
//!
//! Exempt: unit tests (a file's `#[cfg(test)]` tail), and `host/build.rs`, which lists the plugin
//! crates compiled into the binary (a build list like the workspace's `Cargo.toml`, not
//! behaviour).

use std::path::{Path, PathBuf};

const BUNDLED: &[&str] = &["provider_a", "provider_b", "provider_c", "provider_agent"];

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
fn no_host_code_outside_the_defaults_table_names_a_bundled_provider() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "host/src has the host's code: {files:?}");
    let mut found = Vec::new();
    for file in &files {
        if file.ends_with("defaults.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for (n, line) in code.lines().enumerate() {
            for id in BUNDLED {
                if names(line, id) {
                    found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "host code names a bundled provider outside defaults.rs (declare it in the provider's \
         profile, or add it to the defaults table):\n{}",
        found.join("\n")
    );
    // The check itself: the defaults table does name them.
    let defaults = std::fs::read_to_string(src.join("defaults.rs")).unwrap();
    for id in BUNDLED {
        assert!(defaults.lines().any(|l| names(l, id)), "{id}");
    }
    assert!(!names("provider_a_api_key", "provider_a"));
    assert!(names("\"provider_a\",", "provider_a"));
}
