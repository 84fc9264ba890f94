//! Writes `migrations.rs` into OUT_DIR, which embeds each store's migration files. The bundled
//! plugins are built and embedded by their own crate (`bundled/`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(env("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ has a parent")
        .to_path_buf();
    println!("cargo:rerun-if-changed=build.rs");
    // `write_migrations` embeds the folder, and a new migration must rebuild the crate that
    // embeds it.
    println!(
        "cargo:rerun-if-changed={}",
        root.join("migrations").display()
    );
    write_migrations(&root);
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name}"))
}

/// `migrations.rs`: each store's migration files, by name, in the binary (`store/migrations.rs`
/// reads them as sqlx's `migrate!` would, without its proc-macro crate, which built sqlx and
/// SQLite a second time for the compiler).
fn write_migrations(root: &Path) {
    let mut code = String::new();
    for (constant, folder) in [("SQLITE", "sqlite"), ("POSTGRES", "postgres")] {
        let dir = root.join("migrations").join(folder);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "sql"))
            .collect();
        files.sort();
        writeln!(code, "pub const {constant}: &[(&str, &str)] = &[").unwrap();
        for file in files {
            let name = file.file_name().expect("a file name").to_string_lossy();
            writeln!(
                code,
                "    ({name:?}, include_str!({:?})),",
                file.display().to_string()
            )
            .unwrap();
        }
        code.push_str("];\n");
    }
    let out = PathBuf::from(env("OUT_DIR")).join("migrations.rs");
    std::fs::write(out, code).expect("write migrations.rs");
}
