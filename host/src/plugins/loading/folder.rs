//! PLUGINS_DIR as the last scan found it: an entry per `.wasm` file, loaded again only when its
//! bytes or its manifest changed, keeping its last good version when a new one fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::plugins::LoadError;
use crate::plugins::loading::load::{Loader, Plugin};
use crate::plugins::package::Package;
use crate::plugins::trust::Scan;
use crate::telemetry;

/// What the folder held at the last scan, per `.wasm` file.
#[derive(Clone)]
pub(super) struct FolderEntry {
    /// SHA-256 of the component and the manifest: unchanged files are not loaded again.
    pub(super) fingerprint: [u8; 32],
    /// The last version that loaded.
    pub(super) good: Option<Arc<Plugin>>,
    /// Why the current files did not load, if they did not.
    pub(super) load_error: Option<String>,
    /// Why the loaded version is not serving (an id or tool name taken), if it is not.
    pub(super) conflict: Option<String>,
}

/// Loads the file at `path` into its entry of `folder`, unless it is unchanged and loaded.
pub(super) async fn scan_file(
    loader: &Loader,
    trust: &Scan<'_>,
    folder: &mut BTreeMap<PathBuf, FolderEntry>,
    path: PathBuf,
) {
    let package = Package::read(&path);
    let fingerprint = match &package {
        Ok(p) => fingerprint(p),
        Err(_) => [0; 32],
    };
    // Unchanged and loaded: nothing to do. A file that failed is tried again (the failure
    // may have been passing: a describe timing out under load).
    if folder.get(&path).is_some_and(|e| {
        e.fingerprint == fingerprint && fingerprint != [0; 32] && e.load_error.is_none()
    }) {
        return;
    }
    let loaded = match package {
        Ok(package) => match trust.admit(&path, &package) {
            Ok(signer) => loader.load_admitted(package, signer.is_some()).await,
            Err(why) => Err(LoadError::Untrusted(why)),
        },
        Err(e) => Err(e),
    };
    let entry = folder.entry(path.clone()).or_insert(FolderEntry {
        fingerprint,
        good: None,
        load_error: None,
        conflict: None,
    });
    entry.fingerprint = fingerprint;
    match loaded {
        Ok(plugin) => {
            // Operators see what a folder plugin holds when it arrives.
            tracing::info!(
                plugin = plugin.id(),
                version = plugin.manifest().version.as_deref().unwrap_or("-"),
                "plugin loaded from {}; grants: {}",
                path.display(),
                if plugin.grants.is_empty() {
                    "none".to_string()
                } else {
                    plugin.grants.join("; ")
                }
            );
            telemetry::metrics::plugin_load(plugin.id(), true);
            entry.good = Some(Arc::new(plugin));
            entry.load_error = None;
        }
        Err(e) => {
            // Its id may be unreadable: the file's name, the operator's, stands for it.
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            telemetry::metrics::plugin_load(&stem, false);
            let keeps = match &entry.good {
                Some(old) => format!("; the previous version of {} keeps serving", old.id()),
                None => String::new(),
            };
            tracing::error!("plugin file {} refused: {e}{keeps}", path.display());
            entry.load_error = Some(e.to_string());
        }
    }
}

/// The folder's `*.wasm` files, sorted by name.
pub(super) fn wasm_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "wasm") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn fingerprint(package: &Package) -> [u8; 32] {
    let mut digest = Sha256::new();
    digest.update((package.wasm.len() as u64).to_le_bytes());
    digest.update(&package.wasm);
    digest.update(package.manifest_json.as_bytes());
    digest.finalize().into()
}
