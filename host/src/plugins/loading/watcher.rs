//! Watching for hot reload: a folder (PLUGINS_DIR) or a file (the configuration file) is watched
//! (`notify`: inotify on Linux), and a change calls back once things have been quiet for
//! [`QUIET`], so a file being written is read once, whole, rather than at every write. A file is
//! watched through its folder (editors replace a file by renaming a new one over it, which a
//! watch on the file itself would lose). What a change does is the caller's
//! (`plugin_host.rs`: a rescan, or a reload of the configuration file).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// How long the folder must be still before it is read again.
pub const QUIET: Duration = Duration::from_millis(150);

/// Watches `dir`; after each quiet change calls `changed`, until it answers `false` or the
/// returned watcher is dropped.
pub fn folder<F, Fut>(dir: &Path, changed: F) -> notify::Result<RecommendedWatcher>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = bool> + Send + 'static,
{
    // One pending signal is enough: a scan reads the whole folder.
    let (tx, rx) = mpsc::channel::<()>(1);
    let mut watcher =
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
            Ok(event) if event.kind.is_access() => {}
            Ok(_) => {
                let _ = tx.try_send(());
            }
            Err(e) => tracing::warn!("watching PLUGINS_DIR: {e}"),
        })?;
    watcher.watch(dir, RecursiveMode::NonRecursive)?;
    tokio::spawn(call_when_quiet(rx, changed));
    Ok(watcher)
}

/// Watches the file at `path` through its folder; after each quiet change to it calls
/// `changed`, until it answers `false` or the returned watcher is dropped.
pub fn file<F, Fut>(path: &Path, changed: F) -> notify::Result<RecommendedWatcher>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = bool> + Send + 'static,
{
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_os_string());
    let (tx, rx) = mpsc::channel::<()>(1);
    let mut watcher =
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
            Ok(event) if event.kind.is_access() => {}
            Ok(event) => {
                let ours = event
                    .paths
                    .iter()
                    .any(|p| p.file_name().map(|n| n.to_os_string()) == name);
                if ours {
                    let _ = tx.try_send(());
                }
            }
            Err(e) => tracing::warn!("watching the configuration file: {e}"),
        })?;
    watcher.watch(&folder, RecursiveMode::NonRecursive)?;
    tokio::spawn(call_when_quiet(rx, changed));
    Ok(watcher)
}

async fn call_when_quiet<F, Fut>(mut changes: mpsc::Receiver<()>, changed: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    while quiet_after_change(&mut changes).await {
        if !changed().await {
            return;
        }
    }
}

/// Waits for a change, then for [`QUIET`] without one; `false` once the watcher is gone.
async fn quiet_after_change(changes: &mut mpsc::Receiver<()>) -> bool {
    if changes.recv().await.is_none() {
        return false;
    }
    loop {
        match tokio::time::timeout(QUIET, changes.recv()).await {
            Ok(Some(())) => continue,
            Ok(None) => return false,
            Err(_quiet) => return true,
        }
    }
}
