//! `chatd config check`: the environment and the configuration file validated as startup
//! validates them, then what they give (the server's settings, providers, services, MCP
//! servers and plugins), keys never shown; exit 2 where startup would stop.

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::config::Config;

use super::plugins::{describe, host, providers};

/// `chatd config check`: the environment and the configuration file validated as startup
/// validates them (the plugins linked under them, the compile cache read when present), then
/// what they give, keys never shown. Exit 2 where startup would stop with a configuration error.
pub async fn run(config: &Config) -> ExitCode {
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
        let key = match (&server.oauth, &server.api_key) {
            (Some(_), _) => match crate::server::login_key(config) {
                crate::tools::mcp::KeySource::Missing(why) => {
                    format!("login (oauth), not served: {why}")
                }
                _ => "login (oauth)".to_string(),
            },
            (None, Some(_)) => "set".to_string(),
            (None, None) => "none".to_string(),
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
