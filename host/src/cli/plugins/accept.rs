//! `chatd plugins accept ID`: a held update installed with its new grants (and limits), checked
//! again as the server would load it under this configuration.

use std::process::ExitCode;

use super::install::{
    Failure, check_loads, finish, installed_ids, places, put, remove_held, shown,
};
use crate::config::Config;
use crate::plugins::trust::lock::{Exclusive, Lock, record_installed};
use crate::plugins::trust::{Trust, sha256_hex, signature_path};

/// `chatd plugins accept ID`.
pub async fn run(config: &Config, id: &str) -> ExitCode {
    finish(accept_inner(config, id).await, "accept")
}

async fn accept_inner(config: &Config, id: &str) -> Result<(u8, String), Failure> {
    if !crate::config::names::is_name(id, b"-") {
        return Err((2, format!("{id:?} is not a plugin id ([a-z0-9_-]{{1,64}})")));
    }
    let trust = Trust::from_config(config).map_err(|e| (2, e))?;
    let places = places(config, &trust)?;
    let _exclusive = Exclusive::take(&places.lock).map_err(|e| (1, e))?;
    let mut lock = Lock::read(&places.lock).map_err(|e| (1, e))?;
    let entry = lock
        .held
        .remove(id)
        .ok_or_else(|| (2, format!("no update of {id} is held")))?;
    let held = places.held.join(format!("{id}.wasm"));
    let wasm = std::fs::read(&held).map_err(|e| (1, format!("{}: {e}", held.display())))?;
    if sha256_hex(&wasm) != entry.sha256 {
        return Err((
            1,
            format!(
                "{} changed since it was held; install it again",
                held.display()
            ),
        ));
    }
    let signature = std::fs::read_to_string(signature_path(&held)).ok();
    if let Some(keys) = &trust.keys {
        let signature = signature.as_deref().ok_or_else(|| {
            (
                1,
                format!("{id} refused: it is not signed and CHATD_PLUGIN_KEYS requires signatures"),
            )
        })?;
        keys.verify(&wasm, signature)
            .map_err(|e| (1, format!("{id} refused: {e}")))?;
    }
    // The configuration may have changed since it was held.
    check_loads(config, id, &wasm).await?;
    let said = format!(
        "installed {id} {} from {}, with its new grants: {}",
        shown(&entry.version),
        entry.source,
        entry.grants.join(", ")
    );
    lock.plugins.insert(id.to_string(), entry);
    lock.write(&places.lock).map_err(|e| (1, e))?;
    record_installed(&places.plugins, installed_ids(&lock, &places.plugins, id))
        .map_err(|e| (1, e))?;
    put(&places.plugins, id, &wasm, signature.as_deref()).map_err(|e| (1, e))?;
    remove_held(&places.held, id);
    Ok((0, said))
}
