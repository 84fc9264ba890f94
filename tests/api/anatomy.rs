//! The code's anatomy, checked against what it is derived from rather than against a list kept
//! by hand:
//!
//! - every interface of `wit/host.wit` is a capability with all its parts (the steps in
//!   `host/src/plugins/capabilities/mod.rs`);
//! - ARCHITECTURE.md, the code map, names only paths that exist where it names them, has an
//!   entry for every folder of `host/src`, and claims no order of layers the imports
//!   contradict.

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

/// Whether a backquoted piece of the map names a file or folder of the repository: no space,
/// no `::`, not outside it, and a known ending or a trailing `/`.
fn looks_like_a_path(piece: &str) -> bool {
    !piece.is_empty()
        && !piece.contains(' ')
        && !piece.contains("::")
        && !piece.starts_with("../")
        && !piece.starts_with('/')
        && (piece.ends_with(".rs")
            || piece.ends_with(".md")
            || piece.ends_with(".py")
            || piece.ends_with(".wit")
            || piece.ends_with(".toml")
            || piece.ends_with('/'))
}

/// The backquoted paths of `text`, in order.
fn named_paths(text: &str) -> Vec<String> {
    text.split('`')
        .enumerate()
        .filter(|(i, piece)| i % 2 == 1 && looks_like_a_path(piece))
        .map(|(_, piece)| piece.to_string())
        .collect()
}

/// A path the map names, and the folders it may be read under besides the repository's root
/// and `host/src/`: those of its section's heading (and their `src/`), and the folders named
/// before it in its entry (a `- ` item with its lines, a sub-item with its item's, or a
/// paragraph), as they resolved.
#[derive(Debug)]
struct Mention {
    path: String,
    bases: Vec<String>,
}

/// One entry of the map: a `- ` item, a sub-item or a paragraph, its lines joined; its
/// section's folders; for a sub-item, its item's text.
struct Entry {
    text: String,
    section: Vec<String>,
    parent: String,
}

/// The map's entries, in order (fenced code left out).
fn entries(map: &str) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let mut section: Vec<String> = Vec::new();
    // The current item's text (a sub-item's parent), and the entry being read.
    let mut item = String::new();
    let mut current: Option<(Entry, bool)> = None;
    let mut code = false;
    for line in map.lines() {
        if line.starts_with("```") {
            code = !code;
            continue;
        }
        if code {
            continue;
        }
        let top = line.starts_with("- ");
        let nested = line.starts_with("  - ");
        let blank = line.trim().is_empty();
        let prose = !blank && !top && !nested && !line.starts_with('#');
        if let Some((entry, in_list)) = &mut current
            && prose
            && (*in_list == line.starts_with(' '))
        {
            entry.text.push(' ');
            entry.text.push_str(line.trim());
            continue;
        }
        if let Some((entry, _)) = current.take() {
            if entry.parent.is_empty() && entry.text.starts_with("- ") {
                item = entry.text.clone();
            }
            out.push(entry);
        }
        let entry = |text: &str, parent: &str| Entry {
            text: text.to_string(),
            section: section.clone(),
            parent: parent.to_string(),
        };
        if let Some(heading) = line.strip_prefix("### ") {
            // A heading's names are mentions too, read from the root.
            out.push(Entry {
                text: heading.to_string(),
                section: Vec::new(),
                parent: String::new(),
            });
            section = named_paths(heading)
                .into_iter()
                .filter(|p| p.ends_with('/'))
                .flat_map(|p| [p.clone(), format!("{p}src/")])
                .collect();
            item.clear();
        } else if line.starts_with("## ") {
            section.clear();
            item.clear();
        } else if top {
            current = Some((entry(line, ""), true));
        } else if nested {
            current = Some((entry(line, &item), true));
        } else if prose {
            item.clear();
            current = Some((entry(line, ""), false));
        }
    }
    out.extend(current.map(|(entry, _)| entry));
    out
}

/// Every path the map names, with where it may be read ([`Mention`]).
fn mentions(map: &str, paths: &BTreeSet<String>) -> Vec<Mention> {
    let mut all = Vec::new();
    for entry in entries(map) {
        let mut bases = entry.section.clone();
        // A sub-item reads its item's folders first; only its own names are its mentions.
        let inherited = named_paths(&entry.parent);
        let own = named_paths(&entry.text);
        for (i, path) in inherited.iter().chain(&own).enumerate() {
            let mention = Mention {
                path: path.clone(),
                bases: bases.clone(),
            };
            if path.ends_with('/') {
                let found: Vec<String> =
                    candidates(&mention).filter(|c| paths.contains(c)).collect();
                bases.extend(found);
            }
            if i >= inherited.len() {
                all.push(mention);
            }
        }
    }
    all
}

/// Where `mention` may be: from the root, from `host/src/`, from each of its bases.
fn candidates(mention: &Mention) -> impl Iterator<Item = String> + '_ {
    ["", "host/src/"]
        .into_iter()
        .map(str::to_string)
        .chain(mention.bases.iter().cloned())
        .map(|base| format!("{base}{}", mention.path))
}

/// Every file and folder of the repository (folders with a trailing `/`), as paths from its
/// root, without what builds and tools leave (`target/`, `.git/`, `node_modules/`).
fn repository_paths() -> BTreeSet<String> {
    fn walk(dir: &Path, under: &str, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if matches!(name.as_str(), "target" | ".git" | "node_modules") {
                continue;
            }
            if entry.path().is_dir() {
                let folder = format!("{under}{name}/");
                walk(&entry.path(), &folder, out);
                out.insert(folder);
            } else {
                out.insert(format!("{under}{name}"));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(&root(), "", &mut out);
    out
}

/// Whether the full path `candidate` (with `*` for any characters within one name) is a file
/// of the repository, or a folder when it ends with `/`.
fn exists(candidate: &str, paths: &BTreeSet<String>) -> bool {
    if !candidate.contains('*') {
        return paths.contains(candidate);
    }
    let parts: Vec<&str> = candidate.split('/').collect();
    paths.iter().any(|p| {
        let names: Vec<&str> = p.split('/').collect();
        names.len() == parts.len()
            && parts
                .iter()
                .zip(&names)
                .all(|(pattern, name)| matches(pattern, name))
    })
}

/// Whether `name` matches `pattern`, a name with at most one `*`.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((before, after)) => {
            name.len() >= before.len() + after.len()
                && name.starts_with(before)
                && name.ends_with(after)
        }
    }
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
    let gone: Vec<String> = mentions(&map, &paths)
        .into_iter()
        .filter(|m| !candidates(m).any(|c| exists(&c, &paths)))
        .map(|m| {
            format!(
                "{} (read under the root, host/src/ or {:?})",
                m.path, m.bases
            )
        })
        .collect();
    assert!(
        gone.is_empty(),
        "ARCHITECTURE.md names paths that do not exist where it names them: {gone:#?}"
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
    let map = "### `plugin-sdk/` — a crate\n`host.rs` is there.\n\n\
               ### `host/` — the host\n\
               - `http/`: `host.rs`, then\n  `origin.rs`.\n\
               - `plugins/`: the host, then:\n  - `plugins/capabilities/`: `host.rs`.\n\
               - `tools/`: `host.rs`, `plugins_*.rs`, `tests/api/plugins_*.rs`.\n\
               - `egress/`: `tree.rs`.\n\nA paragraph: `http/`, `host.rs`; `mod.rs`.\n";
    let resolved: Vec<(String, bool)> = mentions(map, &paths)
        .iter()
        .map(|m| (m.path.clone(), candidates(m).any(|c| exists(&c, &paths))))
        .collect();
    assert_eq!(
        resolved,
        [
            ("plugin-sdk/", true),
            ("host.rs", true),
            ("host/", true),
            ("http/", true),
            ("host.rs", true),
            ("origin.rs", true),
            ("plugins/", true),
            ("plugins/capabilities/", true),
            ("host.rs", false),
            ("tools/", true),
            ("host.rs", false),
            ("plugins_*.rs", false),
            ("tests/api/plugins_*.rs", true),
            ("egress/", true),
            ("tree.rs", false),
            ("http/", true),
            ("host.rs", true),
            ("mod.rs", true),
        ]
        .map(|(p, r)| (p.to_string(), r)),
        "a stale or misplaced name is found out"
    );
}

/// The orders the map claims, against the imports: the host's layers (its entries and the
/// Layers invariant) are `.ci/layers.py`'s, which checks every import against them; the
/// plugin host's "lowest first" order lists every part of `plugins/`, and none imports a part
/// listed after it.
#[test]
fn each_order_of_layers_agrees_with_the_imports() {
    let map = read("ARCHITECTURE.md");
    let script = read(".ci/layers.py");
    let listed = script
        .split("\"host/src\": [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect(".ci/layers.py lists the host's layers");
    let layers: Vec<String> = listed
        .split(',')
        .map(|l| l.trim().trim_matches('"').to_string())
        .filter(|l| !l.is_empty())
        .collect();
    // Prose is wrapped anywhere: the invariant is looked for in the map's words.
    let words = map.split_whitespace().collect::<Vec<_>>().join(" ");
    let invariant = words
        .split("**Layers.** The host's top-level modules, lowest first:")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .expect("the Layers invariant");
    let claimed: Vec<String> = invariant.split(',').map(|l| l.trim().to_string()).collect();
    assert_eq!(
        claimed, layers,
        "the Layers invariant against .ci/layers.py"
    );
    let host = map
        .split("`host/src/lib.rs`'s modules,")
        .nth(1)
        .and_then(|rest| rest.split("\n### ").next())
        .expect("the host's entries");
    let entries: Vec<String> = host
        .lines()
        .filter_map(|l| l.strip_prefix("- `"))
        .map(|l| l.split('`').next().unwrap())
        .map(|name| {
            name.trim_end_matches('/')
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    assert_eq!(entries, layers, "the host's entries against .ci/layers.py");

    let order = plugin_order(&map);
    let mut parts: BTreeSet<String> = std::fs::read_dir(root().join("host/src/plugins"))
        .unwrap()
        .flatten()
        .map(|e| {
            e.file_name()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .filter(|name| name != "mod")
        .collect();
    let named: BTreeSet<String> = order.iter().cloned().collect();
    parts.retain(|p| !named.contains(p));
    assert!(parts.is_empty(), "the plugins' order leaves out {parts:?}");
    let mut upward = Vec::new();
    for (i, part) in order.iter().enumerate() {
        for import in plugin_imports(part) {
            match order.iter().position(|p| *p == import) {
                Some(j) if j > i => {
                    upward.push(format!("{part} imports {import}, listed after it"))
                }
                _ => {}
            }
        }
    }
    assert!(
        upward.is_empty(),
        "the plugins' order is not the imports': {upward:?}"
    );
}

/// The parts of `plugins/` in the order the map lists them, lowest first: the files before
/// "then:", then each sub-item's first name.
fn plugin_order(map: &str) -> Vec<String> {
    let item = map
        .split("\n- `plugins/`: ")
        .nth(1)
        .and_then(|rest| rest.split("\n- ").next())
        .expect("the plugins/ entry");
    let (files, rest) = item
        .split_once("Lowest first:")
        .and_then(|(_, rest)| rest.split_once("then:"))
        .expect("a lowest-first order");
    let name = |path: &str| {
        path.trim_end_matches('/')
            .trim_end_matches(".rs")
            .trim_start_matches("plugins/")
            .to_string()
    };
    let mut order: Vec<String> = named_paths(files).iter().map(|p| name(p)).collect();
    for sub in rest.split("\n  - ").skip(1) {
        let first = named_paths(sub)
            .into_iter()
            .next()
            .expect("a sub-item names its part");
        order.push(name(&first));
    }
    order
}

/// The parts of `plugins/` that `part`'s code (tests and comments left out) imports.
fn plugin_imports(part: &str) -> BTreeSet<String> {
    let dir = root().join("host/src/plugins");
    let mut files = Vec::new();
    let file = dir.join(format!("{part}.rs"));
    if file.exists() {
        files.push((file, true));
    } else {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, bool)>, top: bool) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out, false);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    // `super::` in a folder's mod.rs names a sibling of the folder.
                    let at_top = top && path.file_name().is_some_and(|n| n == "mod.rs");
                    out.push((path, at_top));
                }
            }
        }
        walk(&dir.join(part), &mut files, true);
    }
    let mut imports = BTreeSet::new();
    for (path, top) in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap()
            .lines()
            .map(|l| l.split("//").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        let mut prefixes = vec!["crate::plugins::"];
        if top {
            prefixes.push("super::");
        }
        for prefix in prefixes {
            for after in code.split(prefix).skip(1) {
                let names: Vec<&str> = match after.strip_prefix('{') {
                    Some(group) => group
                        .split('}')
                        .next()
                        .unwrap()
                        .split(',')
                        .map(|n| n.trim().split("::").next().unwrap())
                        .collect(),
                    None => vec![
                        after
                            .split(|c: char| !c.is_alphanumeric() && c != '_')
                            .next()
                            .unwrap(),
                    ],
                };
                imports.extend(
                    names
                        .into_iter()
                        .filter(|n| !n.is_empty() && *n != part)
                        .map(str::to_string),
                );
            }
        }
    }
    imports
}

/// Nothing in the repository leans on a document outside it: the design notes chatd was begun
/// from are not here, so a rule is cited where the repository states it (`docs/`, this map).
#[test]
fn nothing_cites_a_document_outside_the_repository() {
    let outside = concat!("DESIGN", ".md");
    let cited: Vec<String> = repository_paths()
        .into_iter()
        .filter(|p| !p.ends_with('/') && !p.starts_with("web/assets/vendor/"))
        .filter(|p| {
            [".rs", ".md", ".toml", ".py", ".js", ".wit", ".sh"]
                .iter()
                .any(|e| p.ends_with(e))
                || p.starts_with(".ci/")
        })
        .filter(|p| std::fs::read_to_string(root().join(p)).is_ok_and(|t| t.contains(outside)))
        .collect();
    assert!(cited.is_empty(), "{outside} is cited in {cited:?}");
}
