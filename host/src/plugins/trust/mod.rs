//! Which plugin files may load: the one function [`Scan::admit`], asked for every file of
//! PLUGINS_DIR before it is compiled (`folder.rs`; the lock is read once per scan). A file the lock (`lock.rs`) records must
//! have the bytes it was installed with; when the operator lists signing keys
//! (CHATD_PLUGIN_KEYS, `keys.rs`), every file must be one file (its manifest inside) signed by
//! one of them. Bundled plugins are chatd's own and not asked. `chatd plugins install` writes
//! what this reads (`install.rs`).

pub mod keys;
pub mod lock;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::plugins::manifest::Manifest;
use crate::plugins::package::Package;

/// What the operator trusts: their signing keys, the lock file of what was installed, and
/// PLUGINS_DIR's record of which of its files were installed (`lock::INSTALLED`): a folder
/// whose installed files the lock no longer records (deleted, replaced) loads none of them,
/// rather than every one unpinned.
#[derive(Default)]
pub struct Trust {
    pub(crate) keys: Option<keys::Keys>,
    lock: Option<PathBuf>,
    folder: Option<PathBuf>,
}

impl Trust {
    /// The configuration's: CHATD_PLUGIN_KEYS read now (a file that cannot be used is a
    /// configuration error), the lock in the data folder.
    pub fn from_config(config: &Config) -> Result<Self, String> {
        let keys = match &config.chatd_plugin_keys {
            Some(path) => Some(keys::Keys::read(path)?),
            None => None,
        };
        let lock = crate::store::data_dir(config).map(|dir| dir.join(lock::FILE));
        Ok(Self {
            keys,
            lock,
            folder: config.plugins_dir.clone(),
        })
    }

    /// Whether signatures are required.
    pub fn requires_signatures(&self) -> bool {
        self.keys.is_some()
    }

    /// The lock file's path, if there is a data folder.
    pub fn lock_path(&self) -> Option<&Path> {
        self.lock.as_deref()
    }

    /// What one scan of the folder admits by: the lock file read once for all its files.
    pub fn scan(&self) -> Scan<'_> {
        let lock = match &self.lock {
            Some(path) => lock::Lock::read(path),
            None => Ok(lock::Lock::default()),
        };
        let installed = match &self.folder {
            Some(folder) => lock::read_installed(folder),
            None => Ok(BTreeSet::new()),
        };
        let lock_missing = self.lock.as_deref().is_none_or(|path| !path.exists());
        Scan {
            trust: self,
            lock,
            installed,
            lock_missing,
        }
    }
}

/// One scan's view of the operator's trust ([`Trust::scan`]).
pub struct Scan<'a> {
    trust: &'a Trust,
    lock: Result<lock::Lock, String>,
    /// The ids PLUGINS_DIR says were installed there.
    installed: Result<BTreeSet<String>, String>,
    /// There is no lock file (or no data folder for one).
    lock_missing: bool,
}

impl Scan<'_> {
    /// Whether the file at `path`, read as `package`, may load; the line saying why not. With
    /// keys, also the id of the key that signed it. An installed plugin is pinned by its id as
    /// well as its file's name: its id loads only from `ID.wasm` with the installed bytes and the
    /// manifest inside them (a `NAME.json` beside it would replace that manifest, grants and all).
    pub fn admit(&self, path: &Path, package: &Package) -> Result<Option<String>, String> {
        let signer = match &self.trust.keys {
            Some(keys) => Some(signed_by(keys, path, package)?),
            None => None,
        };
        let lock = self.lock.as_ref().map_err(Clone::clone)?;
        let installed = self.installed.as_ref().map_err(Clone::clone)?;
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        // The id inside (a manifest that does not parse is refused by the load after this).
        let id = Manifest::parse(&package.manifest_json).map(|m| m.id).ok();
        for name in [Some(stem.as_ref()), id.as_deref()].into_iter().flatten() {
            if installed.contains(name) && !lock.plugins.contains_key(name) {
                let lock_file = self.trust.lock.as_ref().map_or_else(
                    || "CHATD_DATA_DIR/plugins.lock".into(),
                    |p| p.display().to_string(),
                );
                let state = if self.lock_missing {
                    "is missing"
                } else {
                    "does not record it"
                };
                return Err(format!(
                    "{name} was installed with chatd plugins install ({}), but the lock file \
                     {lock_file} {state}: restore the lock file from a backup, or install {name} \
                     again with chatd plugins install",
                    lock::INSTALLED
                ));
            }
        }
        for locked in [Some(stem.as_ref()), id.as_deref()].into_iter().flatten() {
            let Some(entry) = lock.plugins.get(locked) else {
                continue;
            };
            if stem != locked {
                return Err(format!(
                    "its id {locked} was installed as {locked}.wasm (from {}); another file may \
                     not take it",
                    entry.source
                ));
            }
            if package.manifest_beside {
                return Err(format!(
                    "{locked} was installed as one file; the {locked}.json beside it would \
                     replace its manifest: remove it"
                ));
            }
            let found = sha256_hex(&package.wasm);
            if found != entry.sha256 {
                return Err(format!(
                    "its bytes changed since it was installed from {} (SHA-256 {}…, locked \
                     {}…); install it again with chatd plugins install",
                    entry.source,
                    &found[..12],
                    &entry.sha256[..12.min(entry.sha256.len())]
                ));
            }
        }
        Ok(signer)
    }
}

/// The key that signed the one-file plugin at `path` (`PATH.minisig` beside it).
fn signed_by(keys: &keys::Keys, path: &Path, package: &Package) -> Result<String, String> {
    if package.manifest_beside {
        return Err(
            "signatures are required (CHATD_PLUGIN_KEYS) and a signed plugin is one \
                    file: its manifest beside it would not be covered (chatd plugins pack)"
                .into(),
        );
    }
    let signature_path = signature_path(path);
    let signature = std::fs::read_to_string(&signature_path).map_err(|_| {
        format!(
            "it is not signed: signatures are required (CHATD_PLUGIN_KEYS) and there is no {}",
            signature_path.display()
        )
    })?;
    keys.verify(&package.wasm, &signature)
}

/// Where a plugin file's signature is: `NAME.wasm.minisig`, as minisign names it.
pub fn signature_path(wasm: &Path) -> PathBuf {
    let mut name = wasm.as_os_str().to_owned();
    name.push(".minisig");
    PathBuf::from(name)
}

/// What a manifest asks for: its kind, and its grants in the words of `plugins call --grant`
/// (origins normalised, so `https://A.example:443` is `https://a.example`). An update whose set
/// has anything new is held (`install.rs`).
pub fn asked(manifest: &Manifest) -> BTreeSet<String> {
    let g = &manifest.grants;
    let mut asks = BTreeSet::new();
    asks.insert(format!("kind:{}", manifest.kind.as_str()));
    asks.extend(g.http.iter().map(|o| format!("http:{}", origin(o))));
    asks.extend(g.services.iter().map(|s| format!("service:{s}")));
    asks.extend(g.config.iter().map(|k| format!("config:{k}")));
    if let Some(service) = &manifest.provider.service {
        asks.insert(format!("service:{service}"));
    }
    if manifest.provider.references {
        asks.insert("provider-references".into());
    }
    if g.public_web {
        asks.insert("public-web".into());
    }
    if g.ssh {
        asks.insert("ssh".into());
    }
    // Limits are asked for too: an update raising them is held as a new grant would be.
    asks.insert(format!("{MEMORY_ASK}{}", manifest.limits.memory_mib));
    asks.insert(format!("{TIMEOUT_ASK}{}", manifest.limits.timeout_ms));
    asks
}

/// How [`asked`] names a manifest's limits.
const MEMORY_ASK: &str = "limit:memoryMib=";
const TIMEOUT_ASK: &str = "limit:timeoutMs=";

/// Whether `ask` (of [`asked`]) is a limit rather than a grant.
pub fn is_limit(ask: &str) -> bool {
    ask.starts_with("limit:")
}

/// What of `new` the installed version's `old` asks did not have: a grant it lacked, or a limit
/// above its own (a lower one is no new power). An entry recorded before limits were asked for
/// had the defaults.
pub fn new_asks<'a>(old: &[String], new: &'a [String]) -> Vec<&'a str> {
    let limit = |asks: &[String], prefix: &str, default: u64| {
        asks.iter()
            .find_map(|a| a.strip_prefix(prefix)?.parse::<u64>().ok())
            .unwrap_or(default)
    };
    let limits = [
        (
            MEMORY_ASK,
            u64::from(crate::plugins::manifest::DEFAULT_MEMORY_MIB),
        ),
        (TIMEOUT_ASK, crate::plugins::manifest::DEFAULT_TIMEOUT_MS),
    ];
    new.iter()
        .filter(
            |ask| match limits.iter().find(|(p, _)| ask.starts_with(p)) {
                Some((prefix, default)) => limit(new, prefix, 0) > limit(old, prefix, *default),
                None => !old.contains(ask),
            },
        )
        .map(String::as_str)
        .collect()
}

/// An origin as the URL standard serialises it; as written when it does not parse.
pub fn origin(text: &str) -> String {
    url::Url::parse(text)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_else(|_| text.to_string())
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_manifest_asks_for_names_its_kind_and_normalised_origins() {
        let manifest = Manifest::parse(
            r#"{"id":"w","kind":"tool","wit":"chatd:plugin@0.1.2",
                "grants":{"http":["https://API.example.com:443"],"services":["weather"],
                "config":["title_model"],"publicWeb":true}}"#,
        )
        .unwrap();
        let asks: Vec<String> = asked(&manifest).into_iter().collect();
        assert_eq!(
            asks,
            [
                "config:title_model",
                "http:https://api.example.com",
                "kind:tool",
                "limit:memoryMib=64",
                "limit:timeoutMs=30000",
                "public-web",
                "service:weather"
            ]
        );
    }

    #[test]
    fn a_raised_limit_is_new_and_a_lowered_one_is_not() {
        let asks = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let old = asks(&["kind:tool", "limit:memoryMib=128", "limit:timeoutMs=30000"]);
        let raised = asks(&["kind:tool", "limit:memoryMib=512", "limit:timeoutMs=30000"]);
        assert_eq!(new_asks(&old, &raised), ["limit:memoryMib=512"]);
        let lowered = asks(&["kind:tool", "limit:memoryMib=64", "limit:timeoutMs=1000"]);
        assert!(new_asks(&old, &lowered).is_empty());
        // Recorded before limits were asked for: the defaults (64 MiB, 30 s).
        let before = asks(&["kind:tool"]);
        assert_eq!(new_asks(&before, &raised), ["limit:memoryMib=512"]);
        assert!(new_asks(&before, &asks(&["kind:tool", "limit:memoryMib=64"])).is_empty());
        assert_eq!(new_asks(&old, &asks(&["ssh"])), ["ssh"]);
    }
}
