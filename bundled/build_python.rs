//! Builds the bundled interpreter (`plugins/python`): CPython as a WebAssembly component, made by
//! componentize-py (pinned) from `plugins/python/app.py` with the packages of
//! `plugins/python/requirements.txt` (pinned by hash) imported at build time, so the component
//! starts from a snapshot with them loaded.
//!
//! Python is needed at build time (README's requirements): componentize-py comes from PyPI into
//! `target/plugin-venv` (the venv `.ci/plugin-toolchains` makes, same version) unless
//! COMPONENTIZE_PY names one, and the packages into `target/python-interpreter/site-*`. The
//! component is kept under a name made from its inputs (the app, the requirements, the WIT, the
//! componentize-py version), so a build that changes none of them does not run componentize-py
//! again.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The componentize-py release the interpreter is built with (and `.ci/plugin-toolchains`
/// installs).
const COMPONENTIZE_PY: &str = "0.25.1";

/// Builds the interpreter if its inputs changed; returns the component's path.
pub fn build(root: &Path) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let work = target.join("python-interpreter");
    std::fs::create_dir_all(&work).expect("create target/python-interpreter");
    let app = root.join("plugins/python");
    let requirements = app.join("requirements.txt");
    let mut inputs = DefaultHasher::new();
    COMPONENTIZE_PY.hash(&mut inputs);
    for file in [app.join("app.py"), requirements.clone()]
        .into_iter()
        .chain(wit_files(&root.join("wit")))
    {
        read(&file).hash(&mut inputs);
    }
    let out = work.join(format!("python-{:016x}.wasm", inputs.finish()));
    if out.is_file() {
        return out;
    }
    let componentize = componentize_py(root, &target);
    let site = site_packages(&work, &target, &requirements);
    let partial = out.with_extension("wasm.partial");
    let status = Command::new(&componentize)
        .arg("-q")
        .arg("-d")
        .arg(root.join("wit"))
        .args(["-w", "tool", "componentize", "-p"])
        .arg(&app)
        .arg("-p")
        .arg(&site)
        .arg("app")
        .arg("-o")
        .arg(&partial)
        .status()
        .unwrap_or_else(|e| panic!("run {}: {e}", componentize.display()));
    if !status.success() {
        panic!("componentize-py could not build plugins/python (see the output above)");
    }
    std::fs::rename(&partial, &out).expect("keep the built interpreter");
    // Earlier builds' components are of no further use.
    for entry in std::fs::read_dir(&work).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path != out && name.starts_with("python-") && name.ends_with(".wasm") {
            let _ = std::fs::remove_file(path);
        }
    }
    out
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The WIT files the interpreter is built against, in a stable order.
fn wit_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read wit/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wit"))
        .collect();
    files.sort();
    files
}

/// componentize-py at the pinned version: COMPONENTIZE_PY, else `target/plugin-venv`'s,
/// installed there from PyPI when missing.
fn componentize_py(root: &Path, target: &Path) -> PathBuf {
    println!("cargo:rerun-if-env-changed=COMPONENTIZE_PY");
    println!("cargo:rerun-if-env-changed=PYTHON");
    if let Some(given) = std::env::var_os("COMPONENTIZE_PY") {
        return PathBuf::from(given);
    }
    let venv = target.join("plugin-venv");
    let bin = venv.join("bin/componentize-py");
    let pinned = || {
        Command::new(&bin)
            .arg("--version")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(COMPONENTIZE_PY))
    };
    if pinned() {
        return bin;
    }
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let made = Command::new(&python)
        .current_dir(root)
        .arg("-m")
        .arg("venv")
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        panic!(
            "building chatd's Python interpreter needs Python 3.10+ with venv at build time \
             ({python} -m venv failed; install python3 and python3-venv, or set PYTHON or \
             COMPONENTIZE_PY); see README.md"
        );
    }
    let installed = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "-q",
            &format!("componentize-py=={COMPONENTIZE_PY}"),
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !installed || !pinned() {
        panic!(
            "pip could not install componentize-py {COMPONENTIZE_PY} into {}",
            venv.display()
        );
    }
    bin
}

/// The bundled packages, installed by hash into a folder named after the requirements.
fn site_packages(work: &Path, target: &Path, requirements: &Path) -> PathBuf {
    let mut hash = DefaultHasher::new();
    read(requirements).hash(&mut hash);
    let site = work.join(format!("site-{:016x}", hash.finish()));
    if site.is_dir() {
        return site;
    }
    let partial = work.join("site.partial");
    let _ = std::fs::remove_dir_all(&partial);
    let pip = match std::env::var_os("COMPONENTIZE_PY") {
        // A given componentize-py may have no pip beside it: the build's own Python installs.
        Some(_) => None,
        None => Some(target.join("plugin-venv/bin/pip")),
    };
    let mut cmd = match &pip {
        Some(pip) => Command::new(pip),
        None => {
            let mut cmd =
                Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()));
            cmd.args(["-m", "pip"]);
            cmd
        }
    };
    let installed = cmd
        .args([
            "install",
            "-q",
            "--no-deps",
            "--require-hashes",
            "--only-binary",
            ":all:",
            "--target",
        ])
        .arg(&partial)
        .arg("-r")
        .arg(requirements)
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        panic!(
            "pip could not install the interpreter's packages ({}); see the output above",
            requirements.display()
        );
    }
    std::fs::rename(&partial, &site).expect("keep the installed packages");
    site
}
