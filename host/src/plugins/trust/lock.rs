//! The lock file (`CHATD_DATA_DIR/plugins.lock`, JSON): each installed plugin's source, SHA-256,
//! version, grants and signer, and the updates held until the operator accepts their new
//! grants. `chatd plugins install` and `accept` write it whole (a new file renamed over the old);
//! the server reads it at every scan of PLUGINS_DIR.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's name in the data folder.
pub const FILE: &str = "plugins.lock";
/// The folder of held updates in the data folder.
pub const HELD_DIR: &str = "plugins-held";
/// The file in PLUGINS_DIR naming, a line each, the ids `chatd plugins install` put there: kept
/// apart from the lock (another folder), so that losing the lock does not unpin them silently.
pub const INSTALLED: &str = ".chatd-installed";
/// The format's version, written in the file.
const FORMAT: u32 = 1;

/// One installed plugin (or a held update of one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub version: Option<String>,
    /// Where it was installed from: a path or a URL.
    pub source: String,
    /// SHA-256 of the component, hex.
    pub sha256: String,
    /// What its manifest asks for, as `plugins call --grant` names it.
    pub grants: Vec<String>,
    /// The id of the key that signed it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
    /// When, RFC 3339.
    pub installed_at: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lock {
    #[serde(default)]
    format: u32,
    /// Installed plugins by id (the file in PLUGINS_DIR is `ID.wasm`).
    #[serde(default)]
    pub plugins: BTreeMap<String, Entry>,
    /// Updates held by id: they ask for grants the installed version does not have.
    #[serde(default)]
    pub held: BTreeMap<String, Entry>,
}

impl Lock {
    /// The lock file at `path`; an empty lock when there is none.
    pub fn read(path: &Path) -> Result<Self, String> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| format!("the lock file {}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(format!("the lock file {}: {e}", path.display())),
        }
    }

    /// Writes it whole: beside, then renamed over the old one.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let mut lock = self.clone();
        lock.format = FORMAT;
        let text = serde_json::to_string_pretty(&lock).map_err(|e| e.to_string())?;
        write_whole(path, text.as_bytes())
            .map_err(|e| format!("the lock file {}: {e}", path.display()))
    }
}

/// The ids PLUGINS_DIR's [`INSTALLED`] names; none when there is no such file.
pub fn read_installed(folder: &Path) -> Result<BTreeSet<String>, String> {
    let path = folder.join(INSTALLED);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeSet::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Adds `installed` to PLUGINS_DIR's [`INSTALLED`] (written whole, when anything is new): the id
/// just installed, and the lock's others still in the folder (installs made before the file
/// existed are named at the next install).
pub fn record_installed<'a>(
    folder: &Path,
    installed: impl IntoIterator<Item = &'a str>,
) -> Result<(), String> {
    let mut ids = read_installed(folder)?;
    let before = ids.len();
    ids.extend(installed.into_iter().map(str::to_string));
    if ids.len() == before {
        return Ok(());
    }
    let mut text = String::from(
        "# Plugins installed here by `chatd plugins install`; the lock file in CHATD_DATA_DIR\n\
         # pins their bytes. Without that lock file these are refused, not loaded unpinned.\n",
    );
    for id in &ids {
        text.push_str(id);
        text.push('\n');
    }
    let path = folder.join(INSTALLED);
    write_whole(&path, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `bytes` to a new file of its own in `path`'s folder (created exclusively, so a link
/// planted there is not followed) and renames it over `path`: a reader never sees half a file.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut partial = tempfile::Builder::new()
        .prefix(".chatd-partial-")
        .tempfile_in(folder)?;
    partial.write_all(bytes)?;
    // Readable as a file written the usual way would be (a temporary file starts at 0600): the
    // server may run as another user than the one installing.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        partial
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    partial.persist(path).map(drop).map_err(|e| e.error)
}

/// Holds the lock file against another `install` or `accept` until dropped (the lock is read,
/// changed and written whole, so two at once would lose one's entry).
pub struct Exclusive(#[allow(dead_code)] std::fs::File);

impl Exclusive {
    pub fn take(lock: &Path) -> Result<Self, String> {
        let path: PathBuf = lock.with_extension("lock.lck");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        file.lock()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_it_wrote_and_none_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        assert_eq!(Lock::read(&path).unwrap(), Lock::default());
        let mut lock = Lock::default();
        lock.plugins.insert(
            "units".into(),
            Entry {
                version: Some("1.0.0".into()),
                source: "https://plugins.example/units.wasm".into(),
                sha256: "ab".repeat(32),
                grants: vec!["http:https://api.example".into()],
                signed_by: Some("E7620F1842B4E81F".into()),
                installed_at: "2026-11-27T07:00:00Z".into(),
            },
        );
        lock.write(&path).unwrap();
        let back = Lock::read(&path).unwrap();
        assert_eq!(back.plugins, lock.plugins);
        std::fs::write(&path, "{").unwrap();
        assert!(Lock::read(&path).unwrap_err().contains("the lock file"));
    }

    #[test]
    fn the_folder_remembers_what_was_installed_in_it() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_installed(dir.path()).unwrap().is_empty());
        record_installed(dir.path(), ["units"]).unwrap();
        record_installed(dir.path(), ["weather", "units"]).unwrap();
        record_installed(dir.path(), ["units"]).unwrap();
        let ids: Vec<String> = read_installed(dir.path()).unwrap().into_iter().collect();
        assert_eq!(ids, ["units", "weather"]);
    }
}
