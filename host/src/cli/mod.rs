//! The `chatd` binary: its grammar (`grammar.rs`), then one file per command: [`serve`] (no
//! command), `config check` ([`config_check`]), [`export`], [`import`], [`backup`], and the
//! plugin commands ([`plugins`]: list, check, call, install, accept, new, pack), and [`mcp`]
//! (call, login), and [`users`]. Here: parse,
//! set up the log, traces and metrics, and dispatch.

pub mod backup;
pub mod config_check;
pub mod export;
pub mod grammar;
pub mod import;
pub mod mcp;
pub mod plugins;
pub mod serve;
pub mod users;

use std::process::ExitCode;

use crate::config::ConfigError;
use crate::telemetry::{LogTo, Telemetry};
use grammar::{Cli, Command, ConfigCommand, McpCommand, PluginsCommand};

/// Runs the binary with its bundled plugins: parses the command line and environment, then
/// serves or runs the command. The plugins are an argument so that a binary cannot forget them
/// (a lib built without `testing` has none of its own: `plugins/loading/embedded.rs`).
pub fn main(bundled: &'static [crate::plugins::loading::embedded::Bundled]) -> ExitCode {
    crate::plugins::loading::embedded::provide(bundled);
    let cli = match Cli::load() {
        Ok(cli) => cli,
        Err(ConfigError::Exit(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(ConfigError::Invalid(line)) => {
            eprintln!("chatd: configuration error: {line}");
            return ExitCode::from(2);
        }
    };
    // Before the runtime: the trace exporter's client is a blocking one, made and dropped
    // outside async code. A command's log goes to stderr: its stdout is its output.
    let to = match cli.command {
        Some(_) => LogTo::Stderr,
        None => LogTo::Stdout,
    };
    let telemetry = match Telemetry::install(&cli.config, to) {
        Ok(telemetry) => telemetry,
        Err(line) => {
            eprintln!("chatd: configuration error: {line}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("chatd: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(dispatch(cli, telemetry.tracing()));
    // Blocking work still running (a name lookup of a database host that does not answer, a
    // plugin compiling for a reload) is not waited for: shutdown is bounded (`server.rs`).
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    telemetry.shutdown();
    code
}

/// The command's file, or the server.
async fn dispatch(cli: Cli, tracing: bool) -> ExitCode {
    let config = &cli.config;
    let Some(command) = &cli.command else {
        return serve::run(config, tracing).await;
    };
    match command {
        Command::Plugins(PluginsCommand::List) => plugins::list::run(config).await,
        Command::Plugins(PluginsCommand::Check { file }) => plugins::check::run(config, file).await,
        Command::Plugins(PluginsCommand::Call {
            file,
            tool,
            args,
            grants,
        }) => plugins::call::run(config, file, tool, args, grants).await,
        Command::Plugins(PluginsCommand::Install { source }) => {
            plugins::install::run(config, source).await
        }
        Command::Plugins(PluginsCommand::Accept { id }) => plugins::accept::run(config, id).await,
        Command::Plugins(PluginsCommand::New {
            kind,
            name,
            lang,
            dir,
            sdk_path,
        }) => plugins::new::run(*kind, name, *lang, dir, sdk_path.as_deref()),
        Command::Plugins(PluginsCommand::Pack {
            component,
            manifest,
            out,
        }) => plugins::pack::run(component, manifest, out),
        Command::Config(ConfigCommand::Check) => config_check::run(config).await,
        Command::Mcp(McpCommand::Call {
            url,
            tool,
            args,
            client_id,
            client_secret,
            client_metadata_url,
            scopes,
        }) => {
            let client = mcp::call::configured(
                client_id.as_deref(),
                client_secret.as_deref(),
                client_metadata_url.as_deref(),
                scopes.as_deref(),
            );
            let call = mcp::call::Call {
                url,
                tool: tool.as_deref(),
                args: args.as_deref(),
                client,
            };
            mcp::call::run(config, call).await
        }
        Command::Mcp(McpCommand::Login { name }) => mcp::login::run(config, name).await,
        Command::Users(command) => users::run(config, command).await,
        Command::Export => export::run(&config.database_url).await,
        Command::Import {
            file,
            skip_existing,
        } => import::run(config, file, *skip_existing).await,
        Command::Backup { file } => backup::run(&config.database_url, file).await,
    }
}
