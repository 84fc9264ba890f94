//! One component loaded outside the server, as the server would load it from PLUGINS_DIR:
//! `chatd plugins call`, `check` and `install` (`call.rs`, `check.rs`, `install.rs`).

use std::path::Path;

use crate::config::Config;
use crate::plugins::loading::load::{Loader, Plugin};
use crate::plugins::package::Package;

/// One component file loaded as the server loads one from PLUGINS_DIR, under the operator
/// settings this configuration (variables and file) gives, with only the `--grant`s named
/// (all when none is); its compiled code from the compile cache `chatd plugins` shares with
/// the servers on this machine (`runtime::cache::for_command`).
pub async fn load_one(config: &Config, file: &Path, grants: &[String]) -> Result<Plugin, String> {
    let mut package = Package::read(file).map_err(|e| e.to_string())?;
    package.manifest_json = super::call_grants::narrow(&package.manifest_json, grants)
        .map_err(|e| format!("--grant {e}"))?;
    let engine = crate::plugins::runtime::engine::new_engine().map_err(|e| e.to_string())?;
    let cache = crate::plugins::runtime::cache::for_command(config);
    Loader::new(engine, operator_settings(config)?, cache)
        .load_admitted(package, signed_only(config))
        .await
        .map_err(|e| e.to_string())
}

/// Whether a plugin would be admitted by its signature (CHATD_PLUGIN_KEYS): the compile cache
/// then keeps its code only under CHATD_SECRET_KEY, as for the server (`runtime/cache.rs`).
pub fn signed_only(config: &Config) -> bool {
    config.chatd_plugin_keys.is_some()
}

/// The operator settings this configuration gives: the variables, and the file when there is
/// one (its services, plugin settings and declared providers).
pub fn operator_settings(
    config: &Config,
) -> Result<crate::plugins::capabilities::operator::OperatorSettings, String> {
    match &config.config {
        Some(path) => {
            let file = crate::config::file::FileConfig::load(path).map_err(|e| e.to_string())?;
            let devbox = crate::plugins::capabilities::ssh::DevboxAccess::from_config(config);
            crate::plugins::capabilities::operator::OperatorSettings::new(config, &file, devbox)
        }
        None => Ok(crate::plugins::capabilities::operator::OperatorSettings::from_config(config)),
    }
}
