//! `chatd plugins install SOURCE` and `chatd plugins accept ID`: a one-file plugin from a path
//! or an `https://` URL into PLUGINS_DIR, checked as the server would load it (signature,
//! compile, link under this configuration), recorded in the lock file; an update that asks for
//! a grant its installed version lacks is held in the data folder until accepted (what an
//! update asks for is the operator's to see before it runs: the postmark-mcp lesson). Exit
//! codes: 0 installed, 3 held, 1 refused or failed, 2 unusable input.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use crate::config::Config;
use crate::egress::address::is_metadata;
use crate::plugins::manifest::Manifest;
use crate::plugins::package::embedded_manifest;
use crate::plugins::trust::lock::{
    Entry, Exclusive, HELD_DIR, Lock, record_installed, write_whole,
};
use crate::plugins::trust::{Trust, asked, is_limit, new_asks, sha256_hex, signature_path};

/// The largest plugin an install downloads (a Python component is about 20 MiB).
const MAX_DOWNLOAD: usize = 256 * 1024 * 1024;
/// How long a download may take, whole.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(300);

/// Where things go: PLUGINS_DIR, the lock file, the held updates' folder.
pub(super) struct Places {
    pub(super) plugins: PathBuf,
    pub(super) lock: PathBuf,
    pub(super) held: PathBuf,
}

/// A command's failure: the exit code (2: unusable input or configuration, 1: refused or
/// failed), and the line.
pub(super) type Failure = (u8, String);

/// Exit 3: the update is held, not installed.
pub(super) const HELD: u8 = 3;

pub(super) fn places(config: &Config, trust: &Trust) -> Result<Places, Failure> {
    let plugins = config.plugins_dir.clone().ok_or((
        2,
        "PLUGINS_DIR is not set: an installed plugin goes there".to_string(),
    ))?;
    let lock = trust.lock_path().map(Path::to_path_buf).ok_or((
        2,
        "there is no data folder for the lock file (an in-memory database without \
         CHATD_DATA_DIR)"
            .to_string(),
    ))?;
    let held = lock.with_file_name(HELD_DIR);
    // The data folder exists once a server has run; an install may come first.
    if let Some(dir) = lock.parent() {
        std::fs::create_dir_all(dir).map_err(|e| (1, format!("{}: {e}", dir.display())))?;
    }
    Ok(Places {
        plugins,
        lock,
        held,
    })
}

pub(super) fn finish(result: Result<(u8, String), Failure>, command: &str) -> ExitCode {
    match result {
        Ok((code, said)) => {
            println!("{said}");
            ExitCode::from(code)
        }
        Err((code, line)) => {
            eprintln!("chatd: plugins {command}: {line}");
            ExitCode::from(code)
        }
    }
}

/// `chatd plugins install SOURCE`.
pub async fn run(config: &Config, source: &str) -> ExitCode {
    finish(install_inner(config, source).await, "install")
}

async fn install_inner(config: &Config, source: &str) -> Result<(u8, String), Failure> {
    let trust = Trust::from_config(config).map_err(|e| (2, e))?;
    let places = places(config, &trust)?;
    let (wasm, signature) = fetch(source, trust.requires_signatures()).await?;
    // What the lock and the output show: a URL's user and query may hold a token.
    let source = &shown_source(source);
    let manifest_json = embedded_manifest(&wasm)
        .map_err(|e| (1, format!("{source}: {e}")))?
        .ok_or_else(|| {
            (
                1,
                format!(
                    "{source}: not a one-file plugin (no chatd-manifest section); chatd plugins \
                     pack makes one"
                ),
            )
        })?;
    let manifest_json = String::from_utf8(manifest_json)
        .map_err(|_| (1, format!("{source}: the manifest is not UTF-8")))?;
    let manifest = Manifest::parse(&manifest_json).map_err(|e| (1, format!("{source}: {e}")))?;
    let id = manifest.id.clone();
    let signed_by = match (&trust.keys, &signature) {
        (Some(keys), Some(signature)) => Some(
            keys.verify(&wasm, signature)
                .map_err(|e| (1, format!("{id} refused: {e}")))?,
        ),
        (Some(_), None) => {
            return Err((
                1,
                format!(
                    "{id} refused: it is not signed (no {source}.minisig) and \
                     CHATD_PLUGIN_KEYS requires signatures"
                ),
            ));
        }
        (None, _) => None,
    };
    check_loads(config, &id, &wasm).await?;
    let entry = Entry {
        version: manifest.version.clone(),
        source: source.to_string(),
        sha256: sha256_hex(&wasm),
        grants: asked(&manifest).into_iter().collect(),
        signed_by,
        installed_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    };
    let _exclusive = Exclusive::take(&places.lock).map_err(|e| (1, e))?;
    let mut lock = Lock::read(&places.lock).map_err(|e| (1, e))?;
    // An update of what serves; with its file gone, nothing serves and it installs as new.
    let serving = places.plugins.join(format!("{id}.wasm")).is_file();
    if let Some(old) = lock.plugins.get(&id).filter(|_| serving) {
        let before = installed_asks(old, &places.plugins.join(format!("{id}.wasm")));
        let new = new_asks(&before, &entry.grants);
        if !new.is_empty() {
            let new = new.join(", ");
            let said = format!(
                "held: {id} {} asks for grants {} did not have: {new}. The installed version \
                 keeps serving; chatd plugins accept {id} installs it",
                shown(&entry.version),
                shown(&old.version),
            );
            put(&places.held, &id, &wasm, signature.as_deref()).map_err(|e| (1, e))?;
            lock.held.insert(id, entry);
            lock.write(&places.lock).map_err(|e| (1, e))?;
            return Ok((HELD, said));
        }
    }
    let said = format!(
        "installed {id} {} from {source} (SHA-256 {}…{})",
        shown(&entry.version),
        &entry.sha256[..12],
        entry
            .signed_by
            .as_ref()
            .map(|k| format!(", signed by {k}"))
            .unwrap_or_default()
    );
    if lock.held.remove(&id).is_some() {
        remove_held(&places.held, &id);
    }
    lock.plugins.insert(id.clone(), entry);
    // The lock first: the server, seeing the new file, must find its hash already recorded. (A
    // crash between the two leaves the old file refused until this install is run again.)
    lock.write(&places.lock).map_err(|e| (1, e))?;
    record_installed(&places.plugins, installed_ids(&lock, &places.plugins, &id))
        .map_err(|e| (1, e))?;
    put(&places.plugins, &id, &wasm, signature.as_deref()).map_err(|e| (1, e))?;
    Ok((0, said))
}

/// What the installed version asks for, as the lock records it; a lock entry written before
/// limits were asked for gets them from the installed file, when that is still the one locked
/// (else the defaults stand: `new_asks`).
fn installed_asks(old: &Entry, file: &Path) -> Vec<String> {
    let mut asks = old.grants.clone();
    if asks.iter().any(|a| is_limit(a)) {
        return asks;
    }
    let manifest = std::fs::read(file)
        .ok()
        .filter(|wasm| sha256_hex(wasm) == old.sha256)
        .and_then(|wasm| embedded_manifest(&wasm).ok().flatten())
        .and_then(|json| Manifest::parse(std::str::from_utf8(&json).ok()?).ok());
    if let Some(manifest) = manifest {
        asks.extend(asked(&manifest).into_iter().filter(|a| is_limit(a)));
    }
    asks
}

/// What `PLUGINS_DIR/.chatd-installed` names: `id`, being installed (its file comes next), and
/// the lock's other plugins whose file is in the folder.
pub(super) fn installed_ids<'a>(
    lock: &'a Lock,
    folder: &'a Path,
    id: &'a str,
) -> impl Iterator<Item = &'a str> {
    let others = lock
        .plugins
        .keys()
        .map(String::as_str)
        .filter(move |other| folder.join(format!("{other}.wasm")).is_file());
    std::iter::once(id).chain(others)
}

pub(super) fn remove_held(dir: &Path, id: &str) {
    let held = dir.join(format!("{id}.wasm"));
    let _ = std::fs::remove_file(signature_path(&held));
    let _ = std::fs::remove_file(held);
}

/// `source` as recorded and shown: a URL without its user information and query.
fn shown_source(source: &str) -> String {
    match url::Url::parse(source) {
        Ok(mut url) if source.contains("://") => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        _ => source.to_string(),
    }
}

/// What `chatd plugins list` adds: the lock's installed plugins and held updates.
pub fn describe(config: &Config) -> String {
    let Ok(trust) = Trust::from_config(config) else {
        return String::new();
    };
    let Some(path) = trust.lock_path() else {
        return String::new();
    };
    let lock = match Lock::read(path) {
        Ok(lock) => lock,
        Err(e) => return format!("installed: {e}\n"),
    };
    let mut out = String::new();
    if !lock.plugins.is_empty() {
        out.push_str(&format!("installed ({})\n", path.display()));
    }
    for (id, e) in &lock.plugins {
        out.push_str(&format!(
            "  {id} {} from {}, SHA-256 {}…{}\n",
            shown(&e.version),
            e.source,
            &e.sha256[..12.min(e.sha256.len())],
            e.signed_by
                .as_ref()
                .map(|k| format!(", signed by {k}"))
                .unwrap_or_default()
        ));
    }
    if !lock.held.is_empty() {
        out.push_str("held updates (new grants; chatd plugins accept ID installs one)\n");
    }
    for (id, e) in &lock.held {
        let before = lock
            .plugins
            .get(id)
            .map(|p| p.grants.clone())
            .unwrap_or_default();
        let new = new_asks(&before, &e.grants);
        out.push_str(&format!(
            "  {id} {} from {} asks for: {}\n",
            shown(&e.version),
            e.source,
            new.join(", ")
        ));
    }
    out
}

pub(super) fn shown(version: &Option<String>) -> &str {
    version.as_deref().unwrap_or("(no version)")
}

/// The component's bytes and its signature's text, if it has one (`SOURCE.minisig`). When
/// signatures are not required, a signature that cannot be fetched is none (a store may answer
/// 403 for a missing object).
async fn fetch(source: &str, required: bool) -> Result<(Vec<u8>, Option<String>), Failure> {
    if !source.contains("://") {
        let path = Path::new(source);
        let wasm = std::fs::read(path).map_err(|e| (2, format!("{source}: {e}")))?;
        let signature = std::fs::read_to_string(signature_path(path)).ok();
        return Ok((wasm, signature));
    }
    let url = url::Url::parse(source).map_err(|e| (2, format!("{source}: {e}")))?;
    if !allowed(&url) {
        return Err((
            2,
            format!(
                "{source}: an install URL is https:// (http:// only on loopback), never a cloud \
                 metadata address"
            ),
        ));
    }
    // Every redirect hop is held to the same rule.
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() >= 5 {
            attempt.error("more than 5 redirects")
        } else if allowed(attempt.url()) {
            attempt.follow()
        } else {
            attempt.error(
                "a redirect to a URL that is not https:// (http:// only on loopback), or to a \
                 cloud metadata address",
            )
        }
    });
    let client = reqwest::Client::builder()
        .timeout(DOWNLOAD_TIMEOUT)
        .redirect(policy)
        .dns_resolver(std::sync::Arc::new(crate::egress::address::NotMetadata))
        .build()
        .map_err(|e| (1, e.to_string()))?;
    let wasm = download(&client, &url)
        .await?
        .ok_or_else(|| (1, format!("{source}: not found (404)")))?;
    let mut signature_url = url.clone();
    signature_url.set_path(&format!("{}.minisig", url.path()));
    let signature = match download(&client, &signature_url).await {
        Ok(found) => found.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        Err(failure) if required => return Err(failure),
        Err(_) => None,
    };
    Ok((wasm, signature))
}

/// An install URL: https://, or http:// on loopback; never a cloud metadata address (a name
/// resolving to one is refused by the client's resolver, `egress::address::NotMetadata`).
fn allowed(url: &url::Url) -> bool {
    let (loopback, metadata) = match url.host() {
        Some(url::Host::Ipv4(ip)) => (ip.is_loopback(), is_metadata(ip.into())),
        Some(url::Host::Ipv6(ip)) => (ip.is_loopback(), is_metadata(ip.into())),
        Some(url::Host::Domain(name)) => (name == "localhost", false),
        None => (false, false),
    };
    !metadata && (url.scheme() == "https" || (url.scheme() == "http" && loopback))
}

/// GETs `url` whole (at most [`MAX_DOWNLOAD`]); `None` for a 404.
async fn download(client: &reqwest::Client, url: &url::Url) -> Result<Option<Vec<u8>>, Failure> {
    let shown = shown_source(url.as_str());
    let failed = |e: reqwest::Error| {
        // reqwest's line alone hides why (the redirect policy's words are its source); its URL,
        // query and all, is left out: `shown` names it.
        let e = e.without_url();
        let mut why = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            why.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        (1, format!("{shown}: {why}"))
    };
    let mut response = client.get(url.clone()).send().await.map_err(failed)?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !response.status().is_success() {
        return Err((1, format!("{shown}: HTTP {}", response.status())));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        if body.len() + chunk.len() > MAX_DOWNLOAD {
            return Err((1, format!("{shown}: over {} MiB", MAX_DOWNLOAD >> 20)));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// Loads the component as the server would, under this configuration, from a scratch folder.
pub(super) async fn check_loads(config: &Config, id: &str, wasm: &[u8]) -> Result<(), Failure> {
    let scratch = tempfile::tempdir().map_err(|e| (1, e.to_string()))?;
    let path = scratch.path().join(format!("{id}.wasm"));
    std::fs::write(&path, wasm).map_err(|e| (1, e.to_string()))?;
    crate::cli::plugins::one_file::load_one(config, &path, &[])
        .await
        .map(drop)
        .map_err(|e| (1, format!("{id} refused: {e}")))
}

/// Writes `ID.wasm` (and its signature, or removes a stale one) into `dir`, the component last.
pub(super) fn put(
    dir: &Path,
    id: &str,
    wasm: &[u8],
    signature: Option<&str>,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(format!("{id}.wasm"));
    let signature_file = signature_path(&path);
    let written = match signature {
        Some(text) => write_whole(&signature_file, text.as_bytes()),
        None => match std::fs::remove_file(&signature_file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
    };
    written
        .and_then(|()| write_whole(&path, wasm))
        .map_err(|e| format!("{}: {e}", path.display()))
}
