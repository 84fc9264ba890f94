//! Compiled code on disk, so a restart does not run cranelift again.
//!
//! An entry is the output of `Engine::precompile_component`, named by the SHA-256 of the wasm
//! bytes and of the engine's `precompile_compatibility_hash` (wasmtime version, target, and every
//! setting that changes code): a changed plugin or a different chatd build never picks up a stale
//! entry. Entries are written to a temporary file and renamed into place, so a reader sees a whole
//! file or none; two processes compiling the same plugin at once both write the same bytes.
//!
//! Loading an entry maps native code into the process (`Component::deserialize_file` is
//! `unsafe` for that reason): the folder must be as trusted as the binary. It lives in chatd's
//! data folder. An entry that fails to load (truncated, or from an incompatible build that
//! somehow shares the name) is compiled again and replaced.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::LoadError;
use crate::config::Config;

/// Where compiled plugin code is kept: PLUGIN_CACHE_DIR, else `plugin-cache` in the data
/// folder; none for an in-memory database without a data folder.
pub fn folder(config: &Config) -> Option<PathBuf> {
    if let Some(dir) = &config.plugin_cache_dir {
        return Some(dir.clone());
    }
    Some(crate::store::data_dir(config)?.join("plugin-cache"))
}

#[derive(Clone, Debug)]
pub struct CompileCache {
    dir: PathBuf,
}

/// Where a component came from this time, for the startup log and the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Cache,
    Compiled,
}

impl CompileCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cached component for `wasm`, or a fresh compile (then stored). Blocking: run it off
    /// the async runtime.
    pub fn load(
        &self,
        engine: &Engine,
        id: &str,
        wasm: &[u8],
    ) -> Result<(Component, Origin), LoadError> {
        let path = self.dir.join(format!("{}.cwasm", key(engine, wasm)));
        if path.exists() {
            // SAFETY: the file is one this cache wrote (precompile output of this engine's
            // configuration, named by its hash) in chatd's own data folder; see the module docs.
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(component) => return Ok((component, Origin::Cache)),
                Err(e) => tracing::warn!(
                    plugin = id,
                    "compile cache entry {} is unusable, compiling again: {e:#}",
                    path.display()
                ),
            }
        }
        let compiled = engine
            .precompile_component(wasm)
            .map_err(|e| LoadError::Compile {
                id: id.to_string(),
                reason: format!("{e:#}"),
            })?;
        if let Err(e) = self.store(&path, &compiled) {
            tracing::warn!(
                plugin = id,
                "cannot write the compile cache at {}: {e}",
                self.dir.display()
            );
        }
        // SAFETY: `compiled` was produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &compiled) }.map_err(|e| {
            LoadError::Compile {
                id: id.to_string(),
                reason: format!("{e:#}"),
            }
        })?;
        Ok((component, Origin::Compiled))
    }

    fn store(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        tmp.write_all(bytes)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Compiles without a cache (tests, `chatd plugins check`). Blocking.
pub fn compile(engine: &Engine, id: &str, wasm: &[u8]) -> Result<Component, LoadError> {
    Component::new(engine, wasm).map_err(|e| LoadError::Compile {
        id: id.to_string(),
        reason: format!("{e:#}"),
    })
}

fn key(engine: &Engine, wasm: &[u8]) -> String {
    let mut build = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut build);
    let mut digest = Sha256::new();
    digest.update(wasm);
    digest.update(build.finish().to_le_bytes());
    digest
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_cache_lives_beside_the_database() {
        let config = |args: &[&str]| {
            Config::from_args(std::iter::once("chatd").chain(args.iter().copied())).unwrap()
        };
        assert_eq!(
            folder(&config(&[])),
            Some(PathBuf::from("data/plugin-cache"))
        );
        assert_eq!(
            folder(&config(&[
                "--database-url",
                "sqlite:///var/lib/chatd/x.db?mode=rwc"
            ])),
            Some(PathBuf::from("/var/lib/chatd/plugin-cache"))
        );
        assert_eq!(
            folder(&config(&["--database-url", "sqlite::memory:"])),
            None
        );
        assert_eq!(
            folder(&config(&["--plugin-cache-dir", "/tmp/c"])),
            Some(PathBuf::from("/tmp/c"))
        );
    }

    /// The smallest component there is.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    #[test]
    fn a_second_load_comes_from_disk_and_a_broken_entry_is_replaced() {
        let engine = Engine::new(wasmtime::Config::new().wasm_component_model(true)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(dir.path().join("cache"));
        let (_, origin) = cache.load(&engine, "empty", EMPTY_COMPONENT).unwrap();
        assert_eq!(origin, Origin::Compiled);
        let (_, origin) = cache.load(&engine, "empty", EMPTY_COMPONENT).unwrap();
        assert_eq!(origin, Origin::Cache);

        let entry = std::fs::read_dir(dir.path().join("cache"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        std::fs::write(&entry, b"not native code").unwrap();
        let (_, origin) = cache.load(&engine, "empty", EMPTY_COMPONENT).unwrap();
        assert_eq!(origin, Origin::Compiled);
        assert_eq!(
            cache.load(&engine, "empty", EMPTY_COMPONENT).unwrap().1,
            Origin::Cache
        );
    }

    #[test]
    fn garbage_is_a_compile_error_naming_the_plugin() {
        let engine = Engine::new(wasmtime::Config::new().wasm_component_model(true)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        match CompileCache::new(dir.path()).load(&engine, "junk", b"\0asm nope") {
            Err(LoadError::Compile { id, .. }) => assert_eq!(id, "junk"),
            other => panic!("{:?}", other.map(|(_, o)| o)),
        }
    }
}
