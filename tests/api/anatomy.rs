//! The code's anatomy, checked against what it is derived from rather than against a list kept
//! by hand:
//!
//! - every interface of `wit/host.wit` is a capability with all its parts (the steps in
//!   `host/src/plugins/capabilities/mod.rs`);
//! - ARCHITECTURE.md, the code map, names only paths that exist, and has an entry for every
//!   folder of `host/src`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The interfaces `wit/host.wit` declares.
fn host_interfaces() -> Vec<String> {
    read("wit/host.wit")
        .lines()
        .filter_map(|line| line.trim().strip_prefix("interface "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|name| name.trim_end_matches('{').to_string())
        .collect()
}

#[test]
fn every_host_interface_has_the_anatomy_of_a_capability() {
    let interfaces = host_interfaces();
    assert!(interfaces.len() >= 4, "{interfaces:?}");
    let capabilities = read("host/src/plugins/capabilities/mod.rs");
    let state = read("host/src/plugins/runtime/state.rs");
    let bindings = read("host/src/plugins/bindings.rs");
    let manifest = read("host/src/plugins/manifest.rs");
    let sdk = read("plugin-sdk/src/host.rs");
    let mut linkers = read("host/src/plugins/runtime/linker.rs");
    for world in ["tool.rs", "search.rs", "provider/mod.rs"] {
        linkers.push_str(&read(&format!("host/src/plugins/worlds/{world}")));
    }
    let mut missing = Vec::new();
    for name in &interfaces {
        let dir = format!("host/src/plugins/capabilities/{name}");
        let (grant_rs, host_rs) = (format!("{dir}/mod.rs"), format!("{dir}/host.rs"));
        let (Ok(grant), Ok(host)) = (
            std::fs::read_to_string(root().join(&grant_rs)),
            std::fs::read_to_string(root().join(&host_rs)),
        ) else {
            missing.push(format!("{name}: its folder {dir} with mod.rs and host.rs"));
            continue;
        };
        let checks = [
            (
                grant.contains("pub fn grant("),
                format!("{grant_rs}: pub fn grant("),
            ),
            (
                host.contains("View<'a>") && host.contains("::Host for "),
                format!("{host_rs}: a view type and the WIT Host impl on it"),
            ),
            (
                capabilities.contains(&format!("{name}::grant(")),
                format!("capabilities/mod.rs: {name}::grant( in resolve"),
            ),
            (
                state.contains(&format!("pub fn {name}(&mut self)")),
                format!("runtime/state.rs: PluginState::{name}"),
            ),
            (
                linkers.contains(&format!("{name}::add_to_linker")),
                format!("a linker: {name}::add_to_linker"),
            ),
            (
                bindings.contains(&format!("\"chatd:plugin/{name}\"")),
                format!("bindings.rs: chatd:plugin/{name} reused by the worlds"),
            ),
            // Asked for in the manifest's grants, unless every plugin gets it.
            (
                manifest.contains(&format!("    pub {name}: ")) || grant.contains("pub fn grant()"),
                format!("manifest.rs: Grants::{name}"),
            ),
            (
                sdk.contains(&format!("chatd::plugin::{name}")),
                format!("plugin-sdk/src/host.rs: a wrapper of {name}"),
            ),
        ];
        missing.extend(
            checks
                .into_iter()
                .filter(|(present, _)| !present)
                .map(|(_, what)| format!("{name}: {what}")),
        );
    }
    assert!(missing.is_empty(), "capabilities lack: {missing:#?}");
}

/// The backquoted paths of the map that name a file or folder of the repository: those with a
/// `/` or a known ending, resolved from the repository root, or from `host/src/` (the map names
/// the host's modules by their path there), or from the section's folder.
fn named_paths(map: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for (i, piece) in map.split('`').enumerate() {
        let looks_like_a_path = !piece.contains(' ')
            && !piece.contains("::")
            && !piece.starts_with("../")
            && !piece.starts_with('/')
            && (piece.ends_with(".rs")
                || piece.ends_with(".md")
                || piece.ends_with(".py")
                || piece.ends_with(".wit")
                || piece.ends_with(".toml")
                || piece.ends_with('/'));
        if i % 2 == 1 && looks_like_a_path {
            paths.push(piece.to_string());
        }
    }
    paths
}

/// Every file and folder of the repository (folders with a trailing `/`), as paths from its
/// root, without what builds and tools leave (`target/`, `.git/`, `node_modules/`).
fn repository_paths() -> Vec<String> {
    fn walk(dir: &Path, under: &str, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if matches!(name.as_str(), "target" | ".git" | "node_modules") {
                continue;
            }
            if entry.path().is_dir() {
                let folder = format!("{under}{name}/");
                walk(&entry.path(), &folder, out);
                out.push(folder);
            } else {
                out.push(format!("{under}{name}"));
            }
        }
    }
    let mut out = Vec::new();
    walk(&root(), "", &mut out);
    out
}

/// Whether `path` (as the map writes it: from the repository's root, or from its section's
/// folder, with `*` for any characters) is the end of a path of the repository.
fn exists(path: &str, paths: &[String]) -> bool {
    let (before, after) = path.split_once('*').unwrap_or((path, ""));
    paths.iter().any(|p| {
        let p = format!("/{p}");
        match path.contains('*') {
            false => p.ends_with(&format!("/{path}")),
            true => p.ends_with(after) && p.contains(&format!("/{before}")),
        }
    })
}

/// Every folder of `host/src`, as its path there with a trailing `/`.
fn host_folders(dir: &Path, under: &str, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.path().is_dir() {
            let name = format!("{under}{}/", entry.file_name().to_string_lossy());
            host_folders(&entry.path(), &name, out);
            out.insert(name);
        }
    }
}

/// Every Rust file of `host/src`, as its path there, with its number of lines.
fn host_files() -> Vec<(String, usize)> {
    repository_paths()
        .into_iter()
        .filter_map(|p| p.strip_prefix("host/src/").map(str::to_string))
        .filter(|p| p.ends_with(".rs"))
        .map(|p| {
            let lines = read(&format!("host/src/{p}")).lines().count();
            (p, lines)
        })
        .collect()
}

#[test]
fn the_code_map_names_paths_that_exist_and_every_host_folder() {
    let map = read("ARCHITECTURE.md");
    let lines = map.lines().count();
    assert!(
        lines <= 300,
        "ARCHITECTURE.md is {lines} lines (at most 300)"
    );
    let paths = repository_paths();
    let gone: Vec<String> = named_paths(&map)
        .into_iter()
        .filter(|path| !exists(path, &paths))
        .collect();
    assert!(
        gone.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {gone:?}"
    );
    let mut folders = BTreeSet::new();
    host_folders(&root().join("host/src"), "", &mut folders);
    let unmapped: Vec<&String> = folders
        .iter()
        .filter(|folder| !map.contains(&format!("`{folder}`")))
        .collect();
    assert!(
        unmapped.is_empty(),
        "ARCHITECTURE.md has no entry for {unmapped:?}"
    );
    // A file of host/src past 800 lines is named in the map, which says why.
    let long: Vec<String> = host_files()
        .into_iter()
        .filter(|(_, lines)| *lines > 800)
        .map(|(file, _)| file)
        .filter(|file| !map.contains(&format!("`{file}`")))
        .collect();
    assert!(
        long.is_empty(),
        "over 800 lines and not in ARCHITECTURE.md: {long:?}"
    );
    // Nothing outside the repository but the contract.
    for line in map.lines() {
        if line.contains("../shared/") {
            assert!(
                line.contains("CONTRACT.md"),
                "the map leans on ../shared/: {line}"
            );
        }
    }
}

#[test]
fn the_map_reader_finds_paths_and_only_paths() {
    let found = named_paths("`host/src/http/` and `x.rs`, `a b`, `crate::x`, `fn()`, `v0.1.0/`");
    assert_eq!(found, ["host/src/http/", "x.rs", "v0.1.0/"]);
    let paths = repository_paths();
    assert!(exists("http/host.rs", &paths) && exists("plugins_*.rs", &paths));
    assert!(!exists("http/nowhere.rs", &paths) && !exists("ttp/host.rs", &paths));
}
