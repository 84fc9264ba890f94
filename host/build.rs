//! Makes sure the `wasm32-wasip2` target is installed for the pinned toolchain.
//!
//! rustup adds the targets listed in rust-toolchain.toml only when it installs the toolchain; a
//! machine that already had 1.95.0 lacks the target, and the plugin components (the test
//! plugins today, the bundled plugins next) are built for it. So the build adds it, and says so
//! when it cannot.

use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../rust-toolchain.toml");
    ensure_wasm_target();
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
        // No rustup (a distro toolchain): nothing to manage; a missing target shows up where it
        // is needed, with the same hint.
        _ => return,
    };
    if listed.lines().any(|line| line.trim() == TARGET) {
        return;
    }
    match rustup(&["target", "add", TARGET]).status() {
        Ok(status) if status.success() => {}
        _ => println!(
            "cargo:warning=the {TARGET} target is missing and could not be added; run `rustup target add {TARGET}`"
        ),
    }
}
