//! Serving: the plugins loaded (PLUGINS_DIR's after the server listens), the data folder
//! prepared, the server bound and run until a signal. What `chatd` does without a command.

use std::process::ExitCode;

use crate::config::{Config, MetricsAccess};
use crate::plugins::LoadError;
use crate::plugins::loading::plugin_host::PluginHost;
use crate::server::{Server, shutdown_signal};

/// Serves until SIGTERM or Ctrl-C; `tracing`: whether traces are exported (for the listening
/// line).
pub async fn run(config: &Config, tracing: bool) -> ExitCode {
    // Refused by `Cli::load` unless the operator opted in; then said at every start.
    if let Ok(Some(warning)) = config.exposure.decide(&config.host, config.token_mode()) {
        tracing::warn!("{warning}");
    }
    // Before anything is compiled into it; created once the configuration is known good.
    if let Err(line) = crate::store::check_data_dir(config) {
        eprintln!("chatd: cannot start: {line}");
        return ExitCode::FAILURE;
    }
    match crate::server::raise_open_files_limit() {
        // Two per live stream, and a margin for the database, plugins and listeners.
        Ok(n) if n < 4_096 => tracing::warn!(
            "open files are limited to {n}: about {} live streams at once; raise the hard \
             limit (LimitNOFILE, ulimit -Hn; docs/deploying.md)",
            n.saturating_sub(256) / 2
        ),
        Ok(n) => tracing::debug!("open files are limited to {n}"),
        Err(e) => tracing::debug!("the limit on open files is left as it is: {e}"),
    }
    let shutdown = shutdown_signal();
    let started = std::time::Instant::now();
    let plugins = match PluginHost::start_in_background(config).await {
        Ok(plugins) => plugins,
        // The configuration file is configuration: refused as an invalid variable is.
        Err(LoadError::Config(line)) => {
            eprintln!("chatd: configuration error: {line}");
            return ExitCode::from(2);
        }
        Err(err) => {
            eprintln!("chatd: cannot start: {err}");
            return ExitCode::FAILURE;
        }
    };
    // After the configuration is known good: a refused startup creates nothing.
    if let Err(line) = crate::store::prepare_data_dir(config) {
        eprintln!("chatd: cannot start: {line}");
        return ExitCode::FAILURE;
    }
    let snapshot = plugins.snapshot();
    tracing::info!(
        "{} plugins loaded in {} ms ({} from the compile cache){}",
        snapshot.plugins.len(),
        started.elapsed().as_millis(),
        snapshot.plugins.iter().filter(|p| p.from_cache).count(),
        match (plugins.folder_loading(), plugins.loading()) {
            (true, _) => "; PLUGINS_DIR is loading in the background",
            (false, Some(_)) => "; the python tool's interpreter is compiling in the background",
            (false, None) => "",
        }
    );
    drop(snapshot);
    let server = match Server::bind(config, plugins).await {
        Ok(server) => server,
        Err(err) => {
            eprintln!("chatd: cannot start: {err}");
            return ExitCode::FAILURE;
        }
    };
    match server.local_addr() {
        Ok(addr) => tracing::info!(
            "chatd listening on http://{addr} (auth: {}, database: {}, metrics: {}, traces: {})",
            if config.token_mode() { "token" } else { "open" },
            config.database_url,
            match config.chatd_metrics {
                MetricsAccess::On => "/metrics",
                MetricsAccess::Open => "/metrics without the token",
                MetricsAccess::Off => "off",
            },
            match (tracing, config.otlp_traces_endpoint()) {
                (true, Some(endpoint)) => endpoint,
                _ => "off".to_string(),
            }
        ),
        Err(err) => tracing::warn!("listening, address unknown: {err}"),
    }
    server.run(shutdown).await;
    tracing::info!("chatd stopped");
    ExitCode::SUCCESS
}
