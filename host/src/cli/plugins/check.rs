//! `chatd plugins check FILE`: whether one component and its manifest would load beside the
//! bundled plugins, without starting the server; exit 1 when it would be refused.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use crate::config::Config;

use super::describe;
use crate::plugins::loading::embedded;
use crate::plugins::loading::load::Loader;
use crate::plugins::loading::plugin_host::PluginHost;
use crate::plugins::package::Package;

/// `chatd plugins check FILE`.
pub async fn run(config: &Config, file: &Path) -> ExitCode {
    match check_file(config, file).await {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("chatd: plugin check failed: {why}");
            ExitCode::FAILURE
        }
    }
}

async fn check_file(config: &Config, file: &Path) -> Result<String, String> {
    let package = Package::read(file).map_err(|e| e.to_string())?;
    let engine = crate::plugins::runtime::engine::new_engine().map_err(|e| e.to_string())?;
    // The file under test and the bundled plugins come from the compile cache: the data
    // folder's when it exists (a check creates no data folder), then the machine's.
    let cache = crate::plugins::runtime::cache::for_command(config);
    let loader = Loader::new(engine, super::one_file::operator_settings(config)?, cache);
    let plugin = loader
        .load_admitted(package, super::one_file::signed_only(config))
        .await
        .map_err(|e| e.to_string())?;
    // Would it serve next to the bundled plugins? Same rules as the snapshot's assembly
    // (`snapshot.rs`).
    let bundled = PluginHost::load(loader, embedded::packages(), None)
        .await
        .map_err(|e| e.to_string())?;
    let mut notes = String::new();
    let snapshot = bundled.snapshot();
    if snapshot.plugin(plugin.id()).is_some() {
        let _ = writeln!(notes, "  note: replaces the bundled plugin {}", plugin.id());
    }
    for tool in &plugin.tools {
        if let Some(other) = snapshot.tool(&tool.name).filter(|o| o.id() != plugin.id()) {
            return Err(format!(
                "plugin {}: tool {} is already provided by the bundled plugin {}",
                plugin.id(),
                tool.name,
                other.id()
            ));
        }
    }
    Ok(format!("ok: {}{notes}", describe(&plugin)))
}
