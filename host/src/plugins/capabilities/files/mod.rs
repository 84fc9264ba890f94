//! The `files` capability: a session's own folder as the component's filesystem, and nothing
//! else of the host's. WASI's `wasi:filesystem` interfaces are implemented over an in-memory
//! tree ([`tree`]), not over the disk: every byte written is counted (per file, per folder, and
//! in the memory all instances share), no path leaves the folder, and dropping the session
//! frees it all. The folder is preopened as [`WORKDIR`].
//!
//! Only the bundled interpreter (`plugins/python`, [`INTERPRETER`]) may hold it: [`grant`] refuses
//! it to any other plugin, a PLUGINS_DIR plugin with the same id included. Sockets stay denied
//! for it as for every plugin (`runtime/linker.rs`).
//!
//! Unlike the capabilities of `wit/host.wit`, this one implements WASI's own interfaces (the
//! interpreter is CPython, which speaks POSIX files through wasi-libc), so its WIT is WASI's
//! (`wit/`, copied from wasmtime-wasi) and `tests/api/anatomy.rs` does not list it.
//!
//! - here: [`Limits`], [`FilesGrant`] and [`grant`];
//! - [`tree`]: the folder and path resolution; [`room`] where an entry may be placed;
//!   [`budget`] what it may hold; [`error`] why an operation failed;
//! - [`host`]: the WIT `wasi:filesystem/{types,preopens}` on [`host::FilesView`].

pub mod budget;
pub mod error;
pub mod host;
pub mod room;
pub mod tree;

use crate::config::python::PythonSettings;
use crate::plugins::builtin::INTERPRETER;
use crate::plugins::manifest::Manifest;
use crate::plugins::package::Source;

/// Where the folder is in the guest's filesystem: the working directory of the code it runs.
pub const WORKDIR: &str = "/mnt/data";

/// What one session's folder may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest file, in bytes (CHAT_PYTHON_MAX_FILE_MIB).
    pub max_file_bytes: u64,
    /// All files together, in bytes.
    pub max_folder_bytes: u64,
    /// Files and folders one call may create (CHAT_PYTHON_MAX_FILES_PER_CALL).
    pub max_files_per_call: usize,
    /// Files and folders in all.
    pub max_entries: usize,
}

/// Files and folders a session's folder may hold in all.
const MAX_ENTRIES: usize = 1_000;

impl Limits {
    pub fn from_settings(python: &PythonSettings) -> Self {
        Self {
            max_file_bytes: python.max_file_bytes,
            // Room for the chat's attachments and a few files as large as allowed.
            max_folder_bytes: python.max_file_bytes * 8,
            max_files_per_call: python.max_files_per_call,
            max_entries: MAX_ENTRIES,
        }
    }
}

/// A granted folder's limits; each session gets its own folder under them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilesGrant {
    pub limits: Limits,
}

/// Decides `files` for `manifest` loaded from `source`: granted to the bundled interpreter
/// when it asks; refused (the plugin does not load) to anything else that asks.
pub fn grant(
    manifest: &Manifest,
    source: &Source,
    python: &PythonSettings,
) -> Result<Option<FilesGrant>, String> {
    if !manifest.grants.files {
        return Ok(None);
    }
    if manifest.id != INTERPRETER || !matches!(source, Source::Bundled) {
        return Err(format!(
            "grants.files: only chatd's bundled interpreter ({INTERPRETER}) may have a folder"
        ));
    }
    Ok(Some(FilesGrant {
        limits: Limits::from_settings(python),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(id: &str, files: bool) -> Manifest {
        Manifest::parse(&format!(
            r#"{{"id":"{id}","kind":"tool","wit":"chatd:plugin@0.1.2","grants":{{"files":{files}}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn only_the_bundled_interpreter_gets_a_folder() {
        let python = PythonSettings::default();
        let granted = grant(&manifest(INTERPRETER, true), &Source::Bundled, &python).unwrap();
        assert_eq!(granted.unwrap().limits.max_file_bytes, 10 << 20);
        assert_eq!(
            grant(&manifest(INTERPRETER, false), &Source::Bundled, &python).unwrap(),
            None
        );
        let folder = Source::File("/plugins/python.wasm".into());
        for (id, source) in [(INTERPRETER, &folder), ("my_tool", &Source::Bundled)] {
            let refused = grant(&manifest(id, true), source, &python).unwrap_err();
            assert!(
                refused.starts_with("grants.files: only chatd's bundled"),
                "{refused}"
            );
        }
    }
}
