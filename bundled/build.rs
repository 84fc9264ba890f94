//! Builds the bundled plugins (`/plugins/*`) for `wasm32-wasip2`, and the interpreter beside
//! them, and writes `bundled.rs` into OUT_DIR, which embeds each one's manifest and component.
//!
//! A crate of its own, not chatd's lib's build script: cargo runs a package's build script
//! before compiling the package, so chatd's lib waited for these minutes of nested build; the
//! binary (`server/`) now links the two, compiled beside each other (issue 59's first build,
//! BENCHMARKS.md).
//!
//! The target: rustup adds the targets listed in rust-toolchain.toml only when it installs the
//! toolchain, so a machine that already had 1.95.0 lacks `wasm32-wasip2`. The build adds it, or
//! stops with the exact command to run.
//!
//! The plugins are built by a nested `cargo build --release` with its own target folder
//! (`target/wasm-plugins`): a different folder from the outer build's, so the two never wait on
//! each other's lock, and always release, because plugin code speed does not depend on how chatd
//! itself is built.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build_python.rs"]
mod python;

const TARGET: &str = "wasm32-wasip2";

/// The bundled plugins, in the order they are listed (the order of `GET /v1/chat-tools`). Each
/// is a workspace member at `plugins/<name>` with its manifest at `plugins/<name>/manifest.json`;
/// its package and library are named `<name>`.
const BUNDLED: &[&str] = &[
    "web_search",
    "fetch_url",
    "provider_a",
    "provider_b",
    "provider_c",
    "provider_agent",
    "search_engine_a",
    "shell_exec",
    "coding_exec",
    "doc_text",
];

fn main() {
    let root = PathBuf::from(env("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bundled/ has a parent")
        .to_path_buf();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build_python.rs");
    // The root manifest too: its profiles and workspace dependencies shape the nested build.
    for watched in [
        "rust-toolchain.toml",
        "Cargo.toml",
        "Cargo.lock",
        "plugins",
        "plugin-sdk",
        "wit",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    ensure_wasm_target();
    // The interpreter beside the plugins, not after them: they share no input, installing
    // componentize-py and the packages waits on the network and the disk, and the nested cargo
    // alone kept two cores busy for 84% of its 110 s cold (issue 59's first build).
    let (wasm_dir, python) = std::thread::scope(|scope| {
        let python = scope.spawn(|| python::build(&root));
        let wasm_dir = build_plugins(&root);
        let python = python
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (wasm_dir, python)
    });
    write_bundled(&root, &wasm_dir, &python);
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name}"))
}

fn rustup(args: &[&str]) -> Command {
    let mut cmd = Command::new("rustup");
    cmd.args(args);
    // The toolchain cargo runs under (rust-toolchain.toml's), not rustup's default.
    if let Ok(toolchain) = std::env::var("RUSTUP_TOOLCHAIN") {
        cmd.args(["--toolchain", &toolchain]);
    }
    cmd
}

fn ensure_wasm_target() {
    let listed = match rustup(&["target", "list", "--installed"]).output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        // No rustup (a distro toolchain): nothing to manage; a missing target shows up when the
        // plugins are built, with the same hint.
        _ => return,
    };
    if listed.lines().any(|line| line.trim() == TARGET) {
        return;
    }
    let added = rustup(&["target", "add", TARGET])
        .status()
        .is_ok_and(|s| s.success());
    if !added {
        panic!(
            "the {TARGET} target is missing and could not be added; run `rustup target add {TARGET}`"
        );
    }
}

/// Runs the nested build; returns the folder holding the `.wasm` files.
fn build_plugins(root: &Path) -> PathBuf {
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("wasm-plugins");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        // --locked: the outer build resolved the whole workspace, so the lock file is complete;
        // the nested build must never rewrite it (build.rs watches it).
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            TARGET,
            "--target-dir",
        ])
        .arg(&target_dir);
    for name in BUNDLED {
        cmd.args(["-p", name]);
    }
    // What the outer build set for itself must not leak into the nested one (flags for the
    // host target, the outer target folder, this package's build-script variables).
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let outer_only = key.starts_with("CARGO_CFG_")
            || key.starts_with("CARGO_FEATURE_")
            || key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_MANIFEST_")
            || matches!(
                &*key,
                "CARGO_ENCODED_RUSTFLAGS"
                    | "RUSTFLAGS"
                    | "CARGO_BUILD_TARGET"
                    | "CARGO_TARGET_DIR"
                    | "CARGO_BUILD_TARGET_DIR"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    // `cargo clippy` runs the outer build through clippy-driver; not the plugins.
                    | "RUSTC_WORKSPACE_WRAPPER"
            );
        if outer_only {
            cmd.env_remove(&*key);
        }
    }
    // Components without DWARF: smaller, faster to compile at startup; the name section stays,
    // so a trap's backtrace still names functions.
    cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo");
    let status = cmd
        .status()
        .expect("run cargo to build the bundled plugins");
    if !status.success() {
        panic!(
            "building the bundled plugins for {TARGET} failed (see the output above); if the \
             target is missing, run `rustup target add {TARGET}`"
        );
    }
    target_dir.join(TARGET).join("release")
}

fn write_bundled(root: &Path, wasm_dir: &Path, python: &Path) {
    let mut code = String::from(
        "/// The bundled plugins: (manifest JSON, component bytes, their SHA-256), in listing \
         order. A `static`, not a `const`: one copy of the bytes whoever names it.\n\
         pub static BUNDLED: &[(&str, &[u8], [u8; 32])] = &[\n",
    );
    for name in BUNDLED {
        let manifest = root.join("plugins").join(name).join("manifest.json");
        let wasm = wasm_dir.join(format!("{name}.wasm"));
        assert!(manifest.is_file(), "{} is missing", manifest.display());
        assert!(wasm.is_file(), "{} was not built", wasm.display());
        entry(&mut code, &manifest, &wasm);
    }
    // The interpreter last: it is listed after the tools above.
    entry(
        &mut code,
        &root.join("plugins/python/manifest.json"),
        python,
    );
    code.push_str("];\n");
    let out = PathBuf::from(env("OUT_DIR")).join("bundled.rs");
    std::fs::write(out, code).expect("write bundled.rs");
}

/// One `BUNDLED` line: the manifest, the component, and the component's SHA-256, computed here
/// once rather than by every start (the compile cache's key).
fn entry(code: &mut String, manifest: &Path, wasm: &Path) {
    use sha2::Digest as _;
    let bytes = std::fs::read(wasm).unwrap_or_else(|e| panic!("read {}: {e}", wasm.display()));
    let digest: [u8; 32] = sha2::Sha256::digest(&bytes).into();
    writeln!(
        code,
        "    (include_str!({:?}), include_bytes!({:?}), {digest:?}),",
        manifest.display().to_string(),
        wasm.display().to_string()
    )
    .unwrap();
}
