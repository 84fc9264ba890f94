//! Hot reload: PLUGINS_DIR and the configuration file are watched (`notify`: inotify on
//! Linux), and a change triggers a reload once things have been quiet for [`QUIET`], so a file
//! being written is read once, whole, rather than at every write. A folder rescan
//! ([`PluginHost::rescan`]) loads only what changed, compiles off the async runtime, and swaps
//! atomically. The file is watched through its folder (editors replace a file by renaming a new
//! one over it, which a watch on the file itself would lose); a reload reads and checks it
//! whole, and a file that cannot be used is refused with one log line while the last good
//! configuration keeps serving ([`PluginHost::reconfigure`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::registry::PluginHost;

/// How long the folder must be still before it is read again.
pub const QUIET: Duration = Duration::from_millis(150);

/// Starts watching the host's folder (nothing to do without one). The watcher lives as long as
/// the host; the task holds only a weak handle, so it ends when the host is dropped.
pub fn start(host: &Arc<PluginHost>) -> notify::Result<()> {
    let Some(dir) = host.dir() else {
        return Ok(());
    };
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
    *host.watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(watcher);
    tokio::spawn(reload_loop(Arc::downgrade(host), rx));
    tracing::info!("watching {} for plugin changes", dir.display());
    Ok(())
}

/// Starts watching the configuration file, if there is one.
pub fn start_config(host: &Arc<PluginHost>) -> notify::Result<()> {
    let Some(path) = host.config_path().map(Path::to_path_buf) else {
        return Ok(());
    };
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
    *host
        .config_watcher
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Some(watcher);
    let weak = Arc::downgrade(host);
    tokio::spawn(async move {
        let mut rx = rx;
        while quiet_after_change(&mut rx).await {
            let Some(host) = weak.upgrade() else { return };
            host.reload_config().await;
        }
    });
    tracing::info!("watching {} for configuration changes", path.display());
    Ok(())
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

async fn reload_loop(host: Weak<PluginHost>, mut changes: mpsc::Receiver<()>) {
    while quiet_after_change(&mut changes).await {
        let Some(host) = host.upgrade() else { return };
        host.rescan().await;
    }
}
