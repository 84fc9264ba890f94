//! Compiled code on disk, so a restart does not run cranelift again.
//!
//! An entry is the output of `Engine::precompile_component`, named by the SHA-256 of the wasm
//! bytes and of the engine's `precompile_compatibility_hash` (wasmtime version, target, and every
//! setting that changes code): a changed plugin or a different chatd build never picks up a stale
//! entry. Entries are written to a temporary file and renamed into place, so a reader sees a whole
//! file or none; two processes compiling the same plugin at once both write the same bytes.
//!
//! Loading an entry maps native code into the process (`Component::deserialize` is `unsafe` for
//! that reason), so whoever can write the folder could run code as chatd. With CHATD_SECRET_KEY
//! every entry carries a MAC (HMAC-SHA256 under a key derived from it, which is not in the data
//! folder) over the checked source's hash, the engine's and the code: an entry changed on disk,
//! moved under another plugin's name or written under another key is compiled again, logged,
//! never loaded. Without the key, entries are as trusted as the folder, and a plugin admitted by
//! its signature (CHATD_PLUGIN_KEYS) is compiled at every start rather than read from it: its
//! signature would otherwise promise what the folder cannot. An entry that fails to load
//! (truncated, or from an incompatible build) is compiled again and replaced.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::config::{Config, Secret};
use crate::plugins::LoadError;

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
    /// The entries' MAC key, derived from CHATD_SECRET_KEY; `None` without it.
    key: Option<Arc<[u8; 32]>>,
}

/// Where a component came from this time, for the startup log and the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Cache,
    Compiled,
}

/// Bytes of an authenticated entry's MAC, before the code.
const TAG_BYTES: usize = 32;

impl CompileCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            key: None,
        }
    }

    /// This cache with its entries authenticated under a key derived from `secret`
    /// (CHATD_SECRET_KEY), or as it is without one.
    pub fn keyed(self, secret: Option<&Secret>) -> Self {
        let key = secret.map(|secret| {
            let mut mac = HmacSha256::new_from_slice(secret.expose().as_bytes())
                .expect("HMAC takes a key of any length");
            mac.update(b"chatd compile-cache entry key v1");
            Arc::new(mac.finalize().into_bytes().into())
        });
        Self { key, ..self }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cached component for `wasm`, or a fresh compile (then stored). `signed`: the plugin
    /// was admitted by its signature, so without a key the cache is not used for it. `digest`:
    /// the SHA-256 of `wasm` when known in advance (a bundled plugin's, computed at build time;
    /// hashing a 50 MB component at every start costs more than loading it). Blocking: run it
    /// off the async runtime.
    pub fn load(
        &self,
        engine: &Engine,
        id: &str,
        wasm: &[u8],
        signed: bool,
        digest: Option<[u8; 32]>,
    ) -> Result<(Component, Origin), LoadError> {
        let digest = digest.unwrap_or_else(|| Sha256::digest(wasm).into());
        let name = key(engine, &digest);
        let path = match &self.key {
            Some(_) => self.dir.join(format!("{name}.mac.cwasm")),
            None if signed => return Ok((compile(engine, id, wasm)?, Origin::Compiled)),
            None => self.dir.join(format!("{name}.cwasm")),
        };
        if path.exists() {
            match self.read(engine, &path, &digest) {
                Ok(component) => return Ok((component, Origin::Cache)),
                Err(why) => tracing::warn!(
                    plugin = id,
                    "compile cache entry {} {why}, compiling again",
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
        let entry = match &self.key {
            Some(key) => [&tag(key, engine, &digest, &compiled)[..], &compiled[..]].concat(),
            None => compiled.clone(),
        };
        if let Err(e) = self.store(&path, &entry) {
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

    /// Whether an entry for the source of SHA-256 `digest` is on disk (not whether it loads).
    pub fn holds(&self, engine: &Engine, digest: &[u8; 32]) -> bool {
        let name = key(engine, digest);
        let file = match &self.key {
            Some(_) => format!("{name}.mac.cwasm"),
            None => format!("{name}.cwasm"),
        };
        self.dir.join(file).exists()
    }

    /// The entry at `path`, if it may be loaded: with a key, read whole into memory and its MAC
    /// checked before one byte of it is mapped (what is checked is what is loaded).
    fn read(&self, engine: &Engine, path: &Path, digest: &[u8; 32]) -> Result<Component, String> {
        let Some(key) = &self.key else {
            // SAFETY: without a key the folder is trusted as the binary is (module docs).
            return unsafe { Component::deserialize_file(engine, path) }
                .map_err(|e| format!("is unusable ({e:#})"));
        };
        let bytes = std::fs::read(path).map_err(|e| format!("cannot be read ({e})"))?;
        let (found, code) = bytes
            .split_at_checked(TAG_BYTES)
            .ok_or("is too short to carry its MAC")?;
        if !bool::from(found.ct_eq(&tag(key, engine, digest, code))) {
            return Err(
                "does not authenticate under CHATD_SECRET_KEY (changed on disk, \
                        another plugin's, or written under another key)"
                    .into(),
            );
        }
        // SAFETY: the MAC says this cache wrote these bytes for this source under this key, and
        // they are the bytes in memory now.
        unsafe { Component::deserialize(engine, code) }.map_err(|e| format!("is unusable ({e:#})"))
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

type HmacSha256 = Hmac<Sha256>;

/// An entry's MAC: over the source's hash and the engine's (the entry's name) and the code.
fn tag(mac_key: &[u8; 32], engine: &Engine, digest: &[u8; 32], code: &[u8]) -> [u8; TAG_BYTES] {
    let mut mac = HmacSha256::new_from_slice(mac_key).expect("HMAC takes a key of any length");
    mac.update(b"chatd compile-cache entry v1\0");
    mac.update(key(engine, digest).as_bytes());
    mac.update(code);
    mac.finalize().into_bytes().into()
}

/// Compiles without a cache (tests, `chatd plugins check`). Blocking.
pub fn compile(engine: &Engine, id: &str, wasm: &[u8]) -> Result<Component, LoadError> {
    Component::new(engine, wasm).map_err(|e| LoadError::Compile {
        id: id.to_string(),
        reason: format!("{e:#}"),
    })
}

/// An entry's name: the hex SHA-256 of the source's SHA-256 and of the engine's compatibility
/// hash.
fn key(engine: &Engine, source: &[u8; 32]) -> String {
    let mut build = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut build);
    let mut digest = Sha256::new();
    digest.update(source);
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
        let (_, origin) = cache
            .load(&engine, "empty", EMPTY_COMPONENT, false, None)
            .unwrap();
        assert_eq!(origin, Origin::Compiled);
        let (_, origin) = cache
            .load(&engine, "empty", EMPTY_COMPONENT, false, None)
            .unwrap();
        assert_eq!(origin, Origin::Cache);

        let entry = std::fs::read_dir(dir.path().join("cache"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        std::fs::write(&entry, b"not native code").unwrap();
        let (_, origin) = cache
            .load(&engine, "empty", EMPTY_COMPONENT, false, None)
            .unwrap();
        assert_eq!(origin, Origin::Compiled);
        assert_eq!(
            cache
                .load(&engine, "empty", EMPTY_COMPONENT, false, None)
                .unwrap()
                .1,
            Origin::Cache
        );
    }

    /// The empty component with a custom section: another source, another entry.
    const OTHER_COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0\x00\x04\x03abc";

    fn entries(dir: &Path) -> Vec<PathBuf> {
        let mut all: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        all.sort();
        all
    }

    #[test]
    fn with_a_key_an_entry_loads_only_as_written_for_its_source() {
        let engine = Engine::new(wasmtime::Config::new().wasm_component_model(true)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let secret = Secret::new("k".repeat(32));
        let cache = CompileCache::new(dir.path()).keyed(Some(&secret));
        let load = |cache: &CompileCache, wasm: &[u8]| {
            cache.load(&engine, "p", wasm, true, None).unwrap().1
        };
        assert_eq!(load(&cache, EMPTY_COMPONENT), Origin::Compiled);
        assert_eq!(load(&cache, EMPTY_COMPONENT), Origin::Cache);
        assert_eq!(load(&cache, OTHER_COMPONENT), Origin::Compiled);
        let [a, b] = entries(dir.path()).try_into().unwrap();
        assert!(a.to_string_lossy().ends_with(".mac.cwasm"));
        // Another plugin's entry under this one's name: compiled again, and the entry replaced.
        let (a_bytes, b_bytes) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        std::fs::write(&a, &b_bytes).unwrap();
        std::fs::write(&b, &a_bytes).unwrap();
        assert_eq!(load(&cache, EMPTY_COMPONENT), Origin::Compiled);
        assert_eq!(load(&cache, OTHER_COMPONENT), Origin::Compiled);
        assert_eq!(load(&cache, OTHER_COMPONENT), Origin::Cache);
        // One changed byte of code.
        let mut changed = std::fs::read(&a).unwrap();
        *changed.last_mut().unwrap() ^= 1;
        std::fs::write(&a, &changed).unwrap();
        let which = if key(&engine, &Sha256::digest(EMPTY_COMPONENT).into())
            < key(&engine, &Sha256::digest(OTHER_COMPONENT).into())
        {
            EMPTY_COMPONENT
        } else {
            OTHER_COMPONENT
        };
        assert_eq!(load(&cache, which), Origin::Compiled);
        // Another key: nothing written under the first one loads.
        let other = CompileCache::new(dir.path()).keyed(Some(&Secret::new("o".repeat(32))));
        assert_eq!(load(&other, EMPTY_COMPONENT), Origin::Compiled);
        assert_eq!(load(&other, EMPTY_COMPONENT), Origin::Cache);
    }

    #[test]
    fn without_a_key_a_signed_plugin_is_compiled_and_nothing_is_written() {
        let engine = Engine::new(wasmtime::Config::new().wasm_component_model(true)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(dir.path());
        for _ in 0..2 {
            let (_, origin) = cache
                .load(&engine, "p", EMPTY_COMPONENT, true, None)
                .unwrap();
            assert_eq!(origin, Origin::Compiled);
        }
        assert!(entries(dir.path()).is_empty());
    }

    #[test]
    fn garbage_is_a_compile_error_naming_the_plugin() {
        let engine = Engine::new(wasmtime::Config::new().wasm_component_model(true)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        match CompileCache::new(dir.path()).load(&engine, "junk", b"\0asm nope", false, None) {
            Err(LoadError::Compile { id, .. }) => assert_eq!(id, "junk"),
            other => panic!("{:?}", other.map(|(_, o)| o)),
        }
    }
}
