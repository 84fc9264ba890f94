//! A plugin before loading: its manifest's text and its component's bytes, where they came from,
//! and the manifest a one-file plugin carries inside it. What `trust/` admits and `loading/`
//! loads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::plugins::LoadError;

/// Where a plugin came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Built with chatd and embedded in the binary.
    Bundled,
    /// A `.wasm` file in PLUGINS_DIR (its manifest beside it as `.json`, or inside it).
    File(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Bundled => f.write_str("bundled"),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A plugin before loading: its manifest's text and its component's bytes.
pub struct Package {
    pub manifest_json: String,
    pub wasm: Arc<[u8]>,
    pub source: Source,
    /// The manifest came from `NAME.json` beside the component, not from inside it: what a
    /// signature or the lock file covers is the component alone (`trust/`).
    pub manifest_beside: bool,
    /// The SHA-256 of `wasm`, when known in advance: a bundled plugin's, computed at build time
    /// (the compile cache's key, `runtime/cache.rs`).
    pub sha256: Option<[u8; 32]>,
}

impl Package {
    /// Reads `path` (the `.wasm`) and the manifest beside it (`.json`). Either path may be given.
    pub fn read(path: &Path) -> Result<Self, LoadError> {
        let wasm_path = path.with_extension("wasm");
        let manifest_path = path.with_extension("json");
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| LoadError::Io {
                path: p.to_path_buf(),
                reason: e.to_string(),
            })
        };
        let wasm = read(&wasm_path)?;
        let not_utf8 = |path: &Path| LoadError::Io {
            path: path.to_path_buf(),
            reason: "the manifest is not UTF-8".into(),
        };
        // The file beside the component, as before; else the one the component carries.
        let mut manifest_beside = false;
        let manifest_json = match std::fs::read(&manifest_path) {
            Ok(bytes) => {
                manifest_beside = true;
                String::from_utf8(bytes).map_err(|_| not_utf8(&manifest_path))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match embedded_manifest(&wasm) {
                Ok(Some(bytes)) => String::from_utf8(bytes).map_err(|_| not_utf8(&wasm_path))?,
                Ok(None) => {
                    return Err(LoadError::Io {
                        path: manifest_path,
                        reason: format!(
                            "no manifest: neither this file nor a `{MANIFEST_SECTION}` \
                                 section in the component"
                        ),
                    });
                }
                Err(reason) => {
                    return Err(LoadError::Io {
                        path: wasm_path,
                        reason,
                    });
                }
            },
            Err(e) => {
                return Err(LoadError::Io {
                    path: manifest_path,
                    reason: e.to_string(),
                });
            }
        };
        Ok(Self {
            manifest_json,
            wasm: wasm.into(),
            source: Source::File(wasm_path),
            manifest_beside,
            sha256: None,
        })
    }
}

/// The custom section a component may carry its manifest in
/// (`chatd_plugin_sdk::embed_manifest!`), so that a plugin is one `.wasm` file.
pub const MANIFEST_SECTION: &str = "chatd-manifest";

/// The manifest a component carries, if any: the first [`MANIFEST_SECTION`] anywhere in it (the
/// linker keeps a core module's custom sections inside the component).
pub(crate) fn embedded_manifest(wasm: &[u8]) -> Result<Option<Vec<u8>>, String> {
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| format!("not a WebAssembly component: {e}"))? {
            wasmparser::Payload::CustomSection(section) if section.name() == MANIFEST_SECTION => {
                return Ok(Some(section.data().to_vec()));
            }
            _ => {}
        }
    }
    Ok(None)
}
