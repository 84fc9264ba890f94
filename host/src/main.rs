//! The `chatd` binary: parse the configuration, set up logging, serve until a signal.

use std::io::IsTerminal;
use std::process::ExitCode;

use chatd::config::{Config, ConfigError};
use chatd::server::{Server, shutdown_signal};
use chatd::tools::ToolCatalog;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    let config = match Config::load() {
        Ok(config) => config,
        Err(ConfigError::Exit(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(ConfigError::Invalid(line)) => {
            eprintln!("chatd: configuration error: {line}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_ansi(std::io::stdout().is_terminal())
        .init();

    let server = match Server::bind(&config, ToolCatalog::default()).await {
        Ok(server) => server,
        Err(err) => {
            eprintln!("chatd: cannot start: {err}");
            return ExitCode::FAILURE;
        }
    };
    match server.local_addr() {
        Ok(addr) => tracing::info!(
            "chatd listening on http://{addr} (auth: {}, database: {})",
            if config.token_mode() { "token" } else { "open" },
            config.database_url
        ),
        Err(err) => tracing::warn!("listening, address unknown: {err}"),
    }
    if let Err(err) = server.run(shutdown_signal()).await {
        eprintln!("chatd: server error: {err}");
        return ExitCode::FAILURE;
    }
    tracing::info!("chatd stopped");
    ExitCode::SUCCESS
}
