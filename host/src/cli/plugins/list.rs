//! `chatd plugins list`: the plugins this configuration loads (id, kind, version, source, tools,
//! grants, limits), the files refused and why, the installed and held ones, then the providers.

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::config::Config;

use super::{describe, host, providers};

/// `chatd plugins list`.
pub async fn run(config: &Config) -> ExitCode {
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
    out.push_str(&crate::cli::plugins::install::describe(config));
    out.push_str(&providers(&snapshot));
    print!("{out}");
    ExitCode::SUCCESS
}
