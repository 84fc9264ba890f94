//! The operator commands `chatd plugins list`, `chatd plugins check FILE` and `chatd config
//! check`: what the server would load with this configuration (its plugins with their grants,
//! settings and services, then its providers; `config check` adds the server's settings, the
//! services and the MCP servers), and whether one plugin file is usable, without starting the
//! server. All print to stdout; `check` exits non-zero when the plugin would be refused.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::config::Config;
use crate::plugins::loading::embedded;
use crate::plugins::loading::load::{Loader, Plugin};
use crate::plugins::loading::plugin_host::PluginHost;
use crate::plugins::loading::snapshot::Snapshot;
use crate::plugins::package::Package;

/// The plugin host this configuration gives, or the exit code after the line saying why: 2 for
/// a configuration error, as the server refuses it at startup.
async fn host(config: &Config) -> Result<Arc<PluginHost>, ExitCode> {
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

/// `chatd plugins call FILE --tool NAME --args JSON`: exit 0 when the tool answered, 1 when it
/// failed (its error, a trap, a timeout, a limit), 2 when the file or the arguments are unusable.
pub async fn call(
    config: &Config,
    file: &Path,
    tool: &str,
    args: &str,
    grants: &[String],
) -> ExitCode {
    let arguments: serde_json::Value = match serde_json::from_str(args) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => {
            eprintln!("chatd: plugin call: --args: must be a JSON object");
            return ExitCode::from(2);
        }
    };
    let plugin = match crate::plugins::standalone::load_one(config, file, grants).await {
        Ok(plugin) => plugin,
        Err(why) => {
            eprintln!("chatd: plugin call: {why}");
            return ExitCode::from(2);
        }
    };
    let Some(instance) = plugin.as_tool() else {
        eprintln!("chatd: plugin call: {} is not a tool plugin", plugin.id());
        return ExitCode::from(2);
    };
    if !plugin.tools.iter().any(|t| t.name == tool) {
        let names: Vec<&str> = plugin.tools.iter().map(|t| t.name.as_str()).collect();
        eprintln!(
            "chatd: plugin call: --tool: {} has no tool {tool:?} (it has {})",
            plugin.id(),
            names.join(", ")
        );
        return ExitCode::from(2);
    }
    let started = std::time::Instant::now();
    let (outcome, peak) = instance.invoke_measured(tool, &arguments.to_string()).await;
    let took = started.elapsed();
    let (mut out, code) = match outcome {
        Ok(Ok(output)) => {
            let mut text = format!("ok: {}\n{}\n", tool, output.content);
            if let Some(summary) = output.summary {
                let _ = writeln!(text, "summary: {summary}");
            }
            (text, ExitCode::SUCCESS)
        }
        Ok(Err(error)) => (format!("error: {error:?}\n"), ExitCode::FAILURE),
        Err(failed) => (format!("failed: {failed}\n"), ExitCode::FAILURE),
    };
    let _ = writeln!(
        out,
        "took {:.1} ms (instantiation and call); memory peak {:.1} MiB of {} MiB",
        took.as_secs_f64() * 1000.0,
        peak as f64 / (1024.0 * 1024.0),
        plugin.manifest().limits.memory_mib
    );
    print!("{out}");
    code
}

/// `chatd plugins list`.
pub async fn list(config: &Config) -> ExitCode {
    let host = match host(config).await {
        Ok(host) => host,
        Err(code) => return code,
    };
    let mut out = String::new();
    let snapshot = host.snapshot();
    for plugin in &snapshot.plugins {
        out.push_str(&describe(plugin));
    }
    let refused = host.refused();
    for r in &refused {
        let _ = writeln!(out, "refused {}: {}", r.path.display(), r.reason);
    }
    out.push_str(&crate::plugins::install::describe(config));
    out.push_str(&providers(&snapshot));
    print!("{out}");
    ExitCode::SUCCESS
}

/// The providers the server would serve: what runs each (its own plugin, or an adapter under a
/// declared id), what its profile says, and its upstream grant (keys named, never shown).
fn providers(snapshot: &Snapshot) -> String {
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

/// `chatd plugins check FILE`.
pub async fn check(config: &Config, file: &Path) -> ExitCode {
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
    // The file under test is compiled fresh; the bundled plugins come from the server's compile
    // cache when it exists (a check creates nothing).
    let cache = crate::plugins::runtime::cache::folder(config)
        .filter(|dir| dir.is_dir())
        .map(|dir| {
            crate::plugins::runtime::cache::CompileCache::new(dir)
                .keyed(config.chatd_secret_key.as_ref())
        });
    let mut loader = Loader::new(
        engine,
        crate::plugins::standalone::operator_settings(config)?,
        None,
    );
    let plugin = loader.load(package).await.map_err(|e| e.to_string())?;
    // Would it serve next to the bundled plugins? Same rules as the snapshot's assembly
    // (`snapshot.rs`).
    loader.cache = cache;
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

/// `chatd config check`: the environment and the configuration file validated as startup
/// validates them (the plugins linked under them, the compile cache read when present), then
/// what they give, keys never shown. Exit 2 where startup would stop with a configuration error.
pub async fn config_check(config: &Config) -> ExitCode {
    let host = match host(config).await {
        Ok(host) => host,
        Err(code) => return code,
    };
    let mut out = settings(config);
    out.push_str("plugins\n");
    let snapshot = host.snapshot();
    for plugin in &snapshot.plugins {
        for line in describe(plugin).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    for r in host.refused() {
        let _ = writeln!(out, "  refused {}: {}", r.path.display(), r.reason);
    }
    out.push_str(&providers(&snapshot));
    out.push_str("services\n");
    for service in host.loader().settings().services.iter() {
        let origin = service
            .base_url
            .as_ref()
            .map_or_else(|| "not set: grants nothing".into(), redact);
        let key = if service.key.is_some() { "set" } else { "none" };
        let _ = writeln!(
            out,
            "  {}: {origin}; key {key}; for {}",
            service.name,
            service.owner_list()
        );
    }
    out.push_str("mcp servers\n");
    let file = config
        .config
        .as_deref()
        .and_then(|path| crate::config::file::FileConfig::load(path).ok());
    for (name, server) in file.iter().flat_map(|f| &f.mcp) {
        let tools = server
            .tools
            .as_ref()
            .map_or_else(|| "all tools".into(), |t| format!("tools {}", t.join(", ")));
        let key = if server.api_key.is_some() {
            "set"
        } else {
            "none"
        };
        let _ = writeln!(
            out,
            "  {name}: {}; key {key}; {tools}; timeout {} s",
            redact(&server.url),
            server.timeout.as_secs()
        );
    }
    print!("{out}");
    println!("configuration ok");
    ExitCode::SUCCESS
}

/// An upstream's URL as `config check` prints it: scheme, host, port and path; never user
/// information or a query, where keys travel (`?token=…`).
fn redact(url: &url::Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// The server's own settings as startup reads them.
fn settings(config: &Config) -> String {
    let mut out = String::from("server\n");
    let data = crate::store::data_dir(config).map_or_else(
        || "none (in-memory database)".into(),
        |d| d.display().to_string(),
    );
    let lines = [
        ("listen", format!("{}:{}", config.host, config.port)),
        (
            "auth",
            match config.token_mode() {
                true => "token (ADMIN_TOKEN set)".to_string(),
                false if !crate::config::exposure::is_loopback(&config.host) => {
                    "open on the network (CHATD_OPEN_ON_NETWORK=true): anyone reaching the port"
                        .into()
                }
                false if config.exposure.chatd_allowed_hosts.is_empty() => {
                    "open, loopback Hosts only".into()
                }
                false => format!(
                    "open, Hosts {}",
                    config.exposure.chatd_allowed_hosts.join(", ")
                ),
            },
        ),
        (
            "browser origins",
            match config.exposure.chatd_allowed_origins.is_empty() {
                true => "the server's own only".to_string(),
                false => format!(
                    "the server's own and {} (with CORS)",
                    config.exposure.chatd_allowed_origins.join(", ")
                ),
            },
        ),
        ("database", config.database_url.to_string()),
        (
            "database timeout",
            format!("{} s", config.database_timeout_secs),
        ),
        ("data folder", data),
        (
            "configuration file",
            config
                .config
                .as_ref()
                .map_or_else(|| "none".into(), |p| p.display().to_string()),
        ),
        (
            "plugins folder",
            config
                .plugins_dir
                .as_ref()
                .map_or_else(|| "none".into(), |p| p.display().to_string()),
        ),
        (
            "plugin signatures",
            config.chatd_plugin_keys.as_ref().map_or_else(
                || "not required".into(),
                |p| format!("required, by the keys in {}", p.display()),
            ),
        ),
        (
            "shutdown grace",
            format!("{} s", config.chatd_shutdown_grace_secs),
        ),
    ];
    for (name, value) in lines {
        let _ = writeln!(out, "  {name}: {value}");
    }
    out
}
