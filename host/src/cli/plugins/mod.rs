//! `chatd plugins …`: one file per subcommand (list, check, call, install, accept, new, pack),
//! and what they share: the plugin host a configuration gives ([`host`]), a plugin and the
//! providers as operators read them ([`describe`], [`providers`]), one component loaded outside
//! the server ([`one_file`]).

pub mod accept;
pub mod call;
pub mod call_grants;
pub mod check;
pub mod install;
pub mod list;
pub mod new;
pub mod one_file;
pub mod pack;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use crate::config::Config;
use crate::plugins::loading::load::Plugin;
use crate::plugins::loading::plugin_host::PluginHost;
use crate::plugins::loading::snapshot::Snapshot;

/// The plugin host this configuration gives, or the exit code after the line saying why: 2 for
/// a configuration error, as the server refuses it at startup.
pub(crate) async fn host(config: &Config) -> Result<Arc<PluginHost>, ExitCode> {
    match PluginHost::from_config(config).await {
        Ok(host) => Ok(host),
        Err(crate::plugins::LoadError::Config(line)) => {
            eprintln!("chatd: configuration error: {line}");
            Err(ExitCode::from(2))
        }
        Err(e) => {
            eprintln!("chatd: {e}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// The providers the server would serve: what runs each (its own plugin, or an adapter under a
/// declared id), what its profile says, and its upstream grant (keys named, never shown).
pub(crate) fn providers(snapshot: &Snapshot) -> String {
    let mut out = String::from("providers\n");
    for served in snapshot.providers() {
        let own = snapshot
            .plugin(&served.id)
            .zip(served.plugin.as_ref())
            .is_some_and(|(listed, running)| Arc::ptr_eq(listed, running));
        let runs = match (&served.plugin, own) {
            (None, _) => "not linked".to_string(),
            (Some(_), true) => "its plugin".to_string(),
            (Some(_), false) => format!(
                "declared, adapter {}",
                served.profile.adapter.as_deref().unwrap_or("?")
            ),
        };
        let p = &served.profile;
        let takes: Vec<&str> = [
            (p.tools, "tools"),
            (p.tool_instruction, "the tool-loop instruction"),
            (p.images, "images"),
            (p.text_files, "text files"),
        ]
        .into_iter()
        .filter_map(|(yes, what)| yes.then_some(what))
        .collect();
        let takes = match takes.is_empty() {
            true => "nothing but text".to_string(),
            false => takes.join(", "),
        };
        let _ = writeln!(out, "  {}: {runs}; takes {takes}", served.id);
        if let Some(models) = &served.models {
            let _ = writeln!(out, "    models: {} (from the file)", models.join(", "));
        }
        if let Some(error) = &served.error {
            let _ = writeln!(out, "    error: {error}");
        }
        // A declared provider's upstream is not in the plugin list above: show it here.
        if let (Some(plugin), false) = (&served.plugin, own) {
            for line in &plugin.grants {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    for (id, why) in snapshot.unserved() {
        let _ = writeln!(out, "  {id}: not served: {why}");
    }
    out
}

/// A plugin as operators read it: id, kind, version, source, then its tools, grants, limits.
pub fn describe(plugin: &Plugin) -> String {
    let m = plugin.manifest();
    let mut out = format!(
        "{} ({}, version {}, {})\n",
        m.id,
        m.kind.as_str(),
        m.version.as_deref().unwrap_or("-"),
        plugin.source
    );
    if !plugin.tools.is_empty() {
        let names: Vec<&str> = plugin.tools.iter().map(|t| t.name.as_str()).collect();
        let _ = writeln!(out, "  tools:  {}", names.join(", "));
    }
    match plugin.grants.split_first() {
        None => out.push_str("  grants: none\n"),
        Some((first, rest)) => {
            let _ = writeln!(out, "  grants: {first}");
            for line in rest {
                let _ = writeln!(out, "          {line}");
            }
        }
    }
    let _ = writeln!(
        out,
        "  limits: {} MiB memory, {} ms per call",
        m.limits.memory_mib, m.limits.timeout_ms
    );
    out
}
