//! Compiled code on disk, so a restart, another data folder on the machine or `chatd plugins
//! call` does not run cranelift again.
//!
//! Two folders hold entries ([`CompileCache::folders`]): the data folder's (`plugin-cache`, or
//! PLUGIN_CACHE_DIR) first, then the machine's (CHATD_CACHE_DIR, else `$XDG_CACHE_HOME/chatd`,
//! else `~/.cache/chatd`: [`machine_folder`]), shared by every data folder. An entry is read from
//! the first that holds one that loads; an entry found only in the machine's is linked (copied
//! across file systems) into the data folder's, and a fresh compile is written into the first
//! and linked into the other. Either may be unwritable (a read-only home): the other still
//! serves.
//!
//! An entry is the output of `Engine::precompile_component`, named by the SHA-256 of the wasm
//! bytes and of the engine's `precompile_compatibility_hash` (wasmtime version, target, and every
//! setting that changes code): a changed plugin or a different chatd build never picks up a stale
//! entry. Entries are written to a temporary file and renamed into place, so a reader sees a whole
//! file or none; two processes compiling the same plugin at once both write the same bytes.
//!
//! Loading an entry maps native code into the process (`Component::deserialize` is `unsafe` for
//! that reason), so whoever can write the folder could run code as chatd. With CHATD_SECRET_KEY
//! every entry carries a MAC (HMAC-SHA256 under a key derived from it, which is not in either
//! folder) over the checked source's hash, the engine's and the code, and its name carries the
//! key's id (a MAC of a constant, never the key): instances with different keys sharing the
//! machine's folder keep entries of their own; an entry changed on disk, moved under another
//! plugin's name or written under another key is compiled again, logged, never loaded. Without
//! the key, entries are as trusted as the folders, and a plugin admitted by its signature
//! (CHATD_PLUGIN_KEYS) is compiled at every start rather than read from them: its signature
//! would otherwise promise what the folders cannot. An entry that fails to load (truncated, or
//! from an incompatible build) is compiled again and replaced.

use std::ffi::OsString;
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

/// Where the data folder's compiled plugin code is kept: PLUGIN_CACHE_DIR, else `plugin-cache`
/// in the data folder; none for an in-memory database without a data folder.
pub fn folder(config: &Config) -> Option<PathBuf> {
    if let Some(dir) = &config.plugin_cache_dir {
        return Some(dir.clone());
    }
    Some(crate::store::data_dir(config)?.join("plugin-cache"))
}

/// The machine's compile cache, shared by every data folder: CHATD_CACHE_DIR, else
/// `$XDG_CACHE_HOME/chatd`, else `$HOME/.cache/chatd`; none for a process without a home.
pub fn machine_folder(config: &Config) -> Option<PathBuf> {
    config.chatd_cache_dir.clone().or_else(|| {
        default_machine_folder(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
    })
}

/// The XDG base directory rule: a relative or empty XDG_CACHE_HOME is ignored.
fn default_machine_folder(xdg: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let absolute = |value: Option<OsString>| value.map(PathBuf::from).filter(|p| p.is_absolute());
    absolute(xdg)
        .map(|cache| cache.join("chatd"))
        .or_else(|| absolute(home).map(|home| home.join(".cache").join("chatd")))
}

/// The compile cache a server reads and writes under `config`: the data folder's, then the
/// machine's, keyed by CHATD_SECRET_KEY when set.
pub fn for_server(config: &Config) -> Option<CompileCache> {
    keyed(config, folder(config))
}

/// The compile cache `chatd plugins` reads and writes under `config`: as the server's, but the
/// data folder's only when it exists (a command creates no data folder).
pub fn for_command(config: &Config) -> Option<CompileCache> {
    keyed(config, folder(config).filter(|dir| dir.is_dir()))
}

fn keyed(config: &Config, data: Option<PathBuf>) -> Option<CompileCache> {
    let folders: Vec<PathBuf> = data.into_iter().chain(machine_folder(config)).collect();
    let cache = CompileCache::in_folders(folders)?;
    Some(cache.keyed(config.chatd_secret_key.as_ref()))
}

#[derive(Clone, Debug)]
pub struct CompileCache {
    /// Read in this order; each compile kept in all.
    folders: Vec<PathBuf>,
    /// The entries' MAC key, derived from CHATD_SECRET_KEY, and its id; `None` without it.
    key: Option<(Arc<[u8; 32]>, Arc<str>)>,
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
    /// A cache in one folder.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            folders: vec![dir.into()],
            key: None,
        }
    }

    /// A cache in `folders`, read in this order (a folder named twice counts once); `None`
    /// without any.
    pub fn in_folders(folders: Vec<PathBuf>) -> Option<Self> {
        let mut unique: Vec<PathBuf> = Vec::with_capacity(folders.len());
        for folder in folders {
            if !unique.contains(&folder) {
                unique.push(folder);
            }
        }
        (!unique.is_empty()).then_some(Self {
            folders: unique,
            key: None,
        })
    }

    /// This cache with its entries authenticated under a key derived from `secret`
    /// (CHATD_SECRET_KEY), or as it is without one.
    pub fn keyed(self, secret: Option<&Secret>) -> Self {
        let key = secret.map(|secret| {
            let mut mac = HmacSha256::new_from_slice(secret.expose().as_bytes())
                .expect("HMAC takes a key of any length");
            mac.update(b"chatd compile-cache entry key v1");
            let key: [u8; 32] = mac.finalize().into_bytes().into();
            let mut id = HmacSha256::new_from_slice(&key).expect("HMAC takes a key of any length");
            id.update(b"chatd compile-cache key id v1");
            let id: String = id.finalize().into_bytes()[..8]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            (Arc::new(key), Arc::from(id))
        });
        Self { key, ..self }
    }

    /// The folders it reads, in order.
    pub fn folders(&self) -> &[PathBuf] {
        &self.folders
    }

    /// The file name of the entry for the source of SHA-256 `digest`.
    fn file_name(&self, engine: &Engine, digest: &[u8; 32]) -> String {
        let name = key(engine, digest);
        match &self.key {
            Some((_, id)) => format!("{name}.{id}.mac.cwasm"),
            None => format!("{name}.cwasm"),
        }
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
        if self.key.is_none() && signed {
            return Ok((compile(engine, id, wasm)?, Origin::Compiled));
        }
        let file = self.file_name(engine, &digest);
        for (i, folder) in self.folders.iter().enumerate() {
            let path = folder.join(&file);
            if !path.exists() {
                continue;
            }
            match self.read(engine, &path, &digest) {
                Ok(component) => {
                    for earlier in &self.folders[..i] {
                        if let Err(e) = share(&path, earlier, &file) {
                            tracing::warn!(
                                plugin = id,
                                "cannot write the compile cache at {}: {e}",
                                earlier.display()
                            );
                        }
                    }
                    return Ok((component, Origin::Cache));
                }
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
            Some((key, _)) => [&tag(key, engine, &digest, &compiled)[..], &compiled[..]].concat(),
            None => compiled.clone(),
        };
        self.keep(id, &file, &entry);
        // SAFETY: `compiled` was produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &compiled) }.map_err(|e| {
            LoadError::Compile {
                id: id.to_string(),
                reason: format!("{e:#}"),
            }
        })?;
        Ok((component, Origin::Compiled))
    }

    /// Keeps `entry` as `file` in every folder: written once, then linked into the others (one
    /// copy on disk when they share a file system: a container whose home is its data volume).
    fn keep(&self, id: &str, file: &str, entry: &[u8]) {
        let mut written: Option<PathBuf> = None;
        for (i, folder) in self.folders.iter().enumerate() {
            let done = match &written {
                Some(path) => share(path, folder, file),
                None => store(folder, file, entry),
            };
            match done {
                Ok(()) => {
                    written.get_or_insert_with(|| folder.join(file));
                }
                // The data folder's is where operators look; the machine's may be read-only
                // (a container's home), which costs only the sharing.
                Err(e) if i == 0 => tracing::warn!(
                    plugin = id,
                    "cannot write the compile cache at {}: {e}",
                    folder.display()
                ),
                Err(e) => tracing::debug!(
                    plugin = id,
                    "cannot write the compile cache at {}: {e}",
                    folder.display()
                ),
            }
        }
    }

    /// Whether an entry for the source of SHA-256 `digest` is on disk (not whether it loads).
    pub fn holds(&self, engine: &Engine, digest: &[u8; 32]) -> bool {
        let file = self.file_name(engine, digest);
        self.folders
            .iter()
            .any(|folder| folder.join(&file).exists())
    }

    /// The entry at `path`, if it may be loaded: with a key, read whole into memory and its MAC
    /// checked before one byte of it is mapped (what is checked is what is loaded).
    fn read(&self, engine: &Engine, path: &Path, digest: &[u8; 32]) -> Result<Component, String> {
        let Some((key, _)) = &self.key else {
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
}

/// Writes `bytes` as `folder`'s entry `file`, whole or not at all.
fn store(folder: &Path, file: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(folder)?;
    let mut tmp = tempfile::NamedTempFile::new_in(folder)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(folder.join(file)).map_err(|e| e.error)?;
    Ok(())
}

/// Makes the entry at `from` `folder`'s entry `file` too: a hard link (no copy, and entries are
/// never changed in place: [`store`] renames), or a copy across file systems.
fn share(from: &Path, folder: &Path, file: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(folder)?;
    match tempfile::Builder::new().make_in(folder, |tmp| std::fs::hard_link(from, tmp)) {
        Ok(linked) => {
            // Renaming a link onto the same file (another process shared it first) succeeds
            // and leaves the link's name behind: the temporary path removes it when dropped.
            let linked = linked.into_temp_path();
            std::fs::rename(&linked, folder.join(file))
        }
        Err(_) => store(folder, file, &std::fs::read(from)?),
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
        // Another key: entries of its own beside the first key's, and nothing written under
        // the first one loads under its name.
        let other = CompileCache::new(dir.path()).keyed(Some(&Secret::new("o".repeat(32))));
        assert_eq!(load(&other, EMPTY_COMPONENT), Origin::Compiled);
        assert_eq!(load(&other, EMPTY_COMPONENT), Origin::Cache);
        assert_eq!(entries(dir.path()).len(), 3);
        assert_eq!(load(&cache, OTHER_COMPONENT), Origin::Cache);
        let digest: [u8; 32] = Sha256::digest(EMPTY_COMPONENT).into();
        let (mine, theirs) = (
            dir.path().join(cache.file_name(&engine, &digest)),
            dir.path().join(other.file_name(&engine, &digest)),
        );
        assert_ne!(mine, theirs);
        std::fs::copy(&mine, &theirs).unwrap();
        assert_eq!(load(&other, EMPTY_COMPONENT), Origin::Compiled);
    }

    fn dir_that_is_not_there() -> PathBuf {
        tempfile::tempdir().unwrap().path().join("gone")
    }

    #[test]
    fn the_machine_folder_follows_the_xdg_rule() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            default_machine_folder(os("/x/cache"), os("/home/a")),
            Some(PathBuf::from("/x/cache/chatd"))
        );
        assert_eq!(
            default_machine_folder(os("relative"), os("/home/a")),
            Some(PathBuf::from("/home/a/.cache/chatd"))
        );
        assert_eq!(
            default_machine_folder(os(""), os("/home/a")),
            Some(PathBuf::from("/home/a/.cache/chatd"))
        );
        assert_eq!(default_machine_folder(None, None), None);
        let config = Config::from_args(["chatd", "--chatd-cache-dir", "/m"]).unwrap();
        assert_eq!(machine_folder(&config), Some(PathBuf::from("/m")));
        let both = for_server(&config).unwrap();
        assert_eq!(
            both.folders(),
            [PathBuf::from("data/plugin-cache"), PathBuf::from("/m")]
        );
        let missing = dir_that_is_not_there();
        let config = Config::from_args([
            "chatd",
            "--chatd-cache-dir",
            "/m",
            "--plugin-cache-dir",
            missing.to_str().unwrap(),
        ])
        .unwrap();
        assert_eq!(
            for_command(&config).unwrap().folders(),
            [PathBuf::from("/m")]
        );
        assert_eq!(for_server(&config).unwrap().folders().len(), 2);
    }

    #[test]
    fn another_data_folder_takes_the_machines_entries_and_keeps_them_too() {
        let engine = Engine::new(wasmtime::Config::new().wasm_component_model(true)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (a, b, machine) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("machine"),
        );
        let secret = Secret::new("k".repeat(32));
        let cache = |data: &Path| {
            CompileCache::in_folders(vec![data.to_path_buf(), machine.clone()])
                .unwrap()
                .keyed(Some(&secret))
        };
        let load = |cache: &CompileCache| cache.load(&engine, "p", EMPTY_COMPONENT, true, None);
        assert_eq!(load(&cache(&a)).unwrap().1, Origin::Compiled);
        assert_eq!((entries(&a).len(), entries(&machine).len()), (1, 1));
        // A second data folder: from the machine's, and kept in its own.
        assert!(cache(&b).holds(&engine, &Sha256::digest(EMPTY_COMPONENT).into()));
        assert_eq!(load(&cache(&b)).unwrap().1, Origin::Cache);
        assert_eq!(entries(&b).len(), 1);
        assert_eq!(
            std::fs::read(&entries(&b)[0]).unwrap(),
            std::fs::read(&entries(&machine)[0]).unwrap()
        );
        // The data folder's serves without the machine's.
        std::fs::remove_dir_all(&machine).unwrap();
        assert_eq!(load(&cache(&b)).unwrap().1, Origin::Cache);
        // A machine folder that cannot be written (a file stands where it would be): the data
        // folder's is written, and the load succeeds.
        std::fs::write(&machine, b"a file").unwrap();
        let c = dir.path().join("c");
        assert_eq!(load(&cache(&c)).unwrap().1, Origin::Compiled);
        assert_eq!(load(&cache(&c)).unwrap().1, Origin::Cache);
        assert_eq!(entries(&c).len(), 1);
        // A folder named twice is one folder.
        assert_eq!(
            CompileCache::in_folders(vec![a.clone(), a.clone()])
                .unwrap()
                .folders(),
            [a]
        );
        assert!(CompileCache::in_folders(vec![]).is_none());
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
