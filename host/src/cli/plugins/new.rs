//! `chatd plugins new tool|provider NAME [--lang rust|python|js]`: a plugin project to build
//! from, with its manifest and a test. The templates are the files beside this one, with
//! `{{name}}` (and for Rust `{{sdk_dependency}}`) filled in; Python and JavaScript projects also
//! get chatd's WIT (`wit/`), which their toolchains read. Providers are Rust only: a provider
//! is a codec built on the SDK (`plugin-sdk/src/codec.rs`), which the other languages lack.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::grammar::{NewKind, PluginLang};

/// The plugin SDK's version, which a Rust project depends on when no `--sdk-path` is given (a
/// unit test holds it to `plugin-sdk/Cargo.toml`'s).
const SDK_VERSION: &str = "0.2.0";

/// One file of a template: its path in the project and its text.
type File = (&'static str, &'static str);

const WIT: [File; 3] = [
    ("wit/host.wit", include_str!("../../../../wit/host.wit")),
    ("wit/types.wit", include_str!("../../../../wit/types.wit")),
    ("wit/worlds.wit", include_str!("../../../../wit/worlds.wit")),
];

const RUST_TOOL: [File; 4] = [
    (
        "Cargo.toml",
        include_str!("../../../scaffold/rust-tool/Cargo.toml"),
    ),
    (
        "manifest.json",
        include_str!("../../../scaffold/rust-tool/manifest.json"),
    ),
    (
        "src/lib.rs",
        include_str!("../../../scaffold/rust-tool/lib.rs"),
    ),
    (
        "README.md",
        include_str!("../../../scaffold/rust-tool/README.md"),
    ),
];

const RUST_PROVIDER: [File; 4] = [
    (
        "Cargo.toml",
        include_str!("../../../scaffold/rust-provider/Cargo.toml"),
    ),
    (
        "manifest.json",
        include_str!("../../../scaffold/rust-provider/manifest.json"),
    ),
    (
        "src/lib.rs",
        include_str!("../../../scaffold/rust-provider/lib.rs"),
    ),
    (
        "README.md",
        include_str!("../../../scaffold/rust-provider/README.md"),
    ),
];

const PYTHON_TOOL: [File; 5] = [
    (
        "app.py",
        include_str!("../../../scaffold/python-tool/app.py"),
    ),
    (
        "manifest.json",
        include_str!("../../../scaffold/python-tool/manifest.json"),
    ),
    (
        "build.sh",
        include_str!("../../../scaffold/python-tool/build.sh"),
    ),
    (
        "test_plugin.py",
        include_str!("../../../scaffold/python-tool/test_plugin.py"),
    ),
    (
        "README.md",
        include_str!("../../../scaffold/python-tool/README.md"),
    ),
];

const JS_TOOL: [File; 5] = [
    ("app.js", include_str!("../../../scaffold/js-tool/app.js")),
    (
        "manifest.json",
        include_str!("../../../scaffold/js-tool/manifest.json"),
    ),
    (
        "build.sh",
        include_str!("../../../scaffold/js-tool/build.sh"),
    ),
    (
        "plugin.test.mjs",
        include_str!("../../../scaffold/js-tool/plugin.test.mjs"),
    ),
    (
        "README.md",
        include_str!("../../../scaffold/js-tool/README.md"),
    ),
];

/// Runs the command: exit 0 after one line per step to take next, 2 for an unusable name,
/// language or folder, 1 when the files cannot be written.
pub fn run(
    kind: NewKind,
    name: &str,
    lang: PluginLang,
    dir: &Path,
    sdk_path: Option<&Path>,
) -> ExitCode {
    if let Err(why) = check_name(name) {
        eprintln!("chatd: plugins new: NAME: {why}");
        return ExitCode::from(2);
    }
    let files: Vec<File> = match (kind, lang) {
        (NewKind::Tool, PluginLang::Rust) => RUST_TOOL.to_vec(),
        (NewKind::Provider, PluginLang::Rust) => RUST_PROVIDER.to_vec(),
        (NewKind::Tool, PluginLang::Python) => [&PYTHON_TOOL[..], &WIT].concat(),
        (NewKind::Tool, PluginLang::Js) => [&JS_TOOL[..], &WIT].concat(),
        (NewKind::Provider, _) => {
            eprintln!(
                "chatd: plugins new: --lang: providers are written in Rust (a provider is a \
                 codec on the plugin SDK); tools in rust, python or js"
            );
            return ExitCode::from(2);
        }
    };
    let root = dir.join(name);
    if root.exists() {
        eprintln!(
            "chatd: plugins new: {} exists; nothing was written",
            root.display()
        );
        return ExitCode::from(2);
    }
    let sdk = match sdk_dependency(kind, sdk_path) {
        Ok(line) => line,
        Err(why) => {
            eprintln!("chatd: plugins new: --sdk-path: {why}");
            return ExitCode::from(2);
        }
    };
    for (path, text) in files {
        let text = text
            .replace("{{name}}", name)
            .replace("{{name_upper}}", &name.to_uppercase())
            .replace("{{sdk_dependency}}", &sdk);
        if let Err(e) = write(&root.join(path), &text) {
            eprintln!(
                "chatd: plugins new: cannot write {}: {e}",
                root.join(path).display()
            );
            return ExitCode::FAILURE;
        }
    }
    println!("{}", next_steps(&root, lang));
    ExitCode::SUCCESS
}

/// A name that is at once a manifest id, a tool name, a crate name and a Python identifier.
fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if first_ok && rest_ok && name.len() <= 64 {
        Ok(())
    } else {
        Err(format!(
            "{name:?} must match [a-z][a-z0-9_]{{0,63}} (it is the plugin's id, its tool's name \
             and its crate's)"
        ))
    }
}

/// The SDK as the Rust project's dependency: by path when given, else by version.
fn sdk_dependency(kind: NewKind, path: Option<&Path>) -> Result<String, String> {
    let feature = match kind {
        NewKind::Tool => "tool",
        NewKind::Provider => "provider",
    };
    let source = match path {
        Some(path) => {
            let path =
                std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
            if !path.join("Cargo.toml").is_file() {
                return Err(format!("{} has no Cargo.toml", path.display()));
            }
            format!("path = {:?}", path.display().to_string())
        }
        None => format!("version = {SDK_VERSION:?}"),
    };
    Ok(format!(
        "chatd-plugin-sdk = {{ {source}, features = [\"{feature}\"] }}"
    ))
}

fn write(path: &PathBuf, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)
}

fn next_steps(root: &Path, lang: PluginLang) -> String {
    let (build, test) = match lang {
        PluginLang::Rust => ("cargo build --release --target wasm32-wasip2", "cargo test"),
        PluginLang::Python => ("sh build.sh", "python3 -m unittest"),
        PluginLang::Js => ("sh build.sh", "node --test"),
    };
    format!(
        "wrote {}\nnext: cd {0} && {build} && {test} (README.md says more)",
        root.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_depends_on_the_sdks_own_version() {
        let cargo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugin-sdk/Cargo.toml");
        let text = std::fs::read_to_string(cargo).unwrap();
        let version = text
            .lines()
            .find_map(|l| l.strip_prefix("version = \""))
            .and_then(|v| v.strip_suffix('"'));
        assert_eq!(version, Some(SDK_VERSION));
    }

    #[test]
    fn a_name_is_an_id_a_tool_a_crate_and_an_identifier() {
        assert!(check_name("word_count").is_ok());
        assert!(check_name("w2").is_ok());
        for bad in ["", "2words", "Word", "word-count", "wörd", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
