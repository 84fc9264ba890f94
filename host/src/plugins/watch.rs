//! Hot reload: PLUGINS_DIR is watched (`notify`: inotify on Linux), and any change to it
//! triggers a rescan once the folder has been quiet for [`QUIET`], so a file being copied in
//! is read once, whole, rather than at every write. The rescan itself ([`PluginHost::rescan`])
//! loads only what changed, compiles off the async runtime, and swaps atomically.

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

async fn reload_loop(host: Weak<PluginHost>, mut changes: mpsc::Receiver<()>) {
    while changes.recv().await.is_some() {
        loop {
            match tokio::time::timeout(QUIET, changes.recv()).await {
                Ok(Some(())) => continue,
                Ok(None) => return,
                Err(_quiet) => break,
            }
        }
        let Some(host) = host.upgrade() else { return };
        host.rescan().await;
    }
}
