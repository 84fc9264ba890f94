//! The `chatd` binary: parse the configuration, set up logging, load the plugins, serve until a
//! signal. `chatd plugins …` runs an operator command instead of serving.

use std::io::IsTerminal;
use std::process::ExitCode;

use chatd::config::{Command, Config, ConfigError, PluginsCommand};
use chatd::plugins::registry::PluginHost;
use chatd::plugins::{LoadError, commands};
use chatd::server::{Server, shutdown_signal};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    return_large_buffers();
    run()
}

/// Buffers of 128 KiB and more (a request's attachments, tens of MiB) are given back to the
/// system when freed. glibc's malloc would otherwise raise its mmap threshold after the first
/// large free and serve later large buffers from its heaps, which keep them: the server's
/// resident memory grew with every large request (BENCHMARKS.md, "The largest request").
fn return_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator; no thread has started yet.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

#[tokio::main]
async fn run() -> ExitCode {
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
    let logs = tracing_subscriber::fmt().with_env_filter(
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
    );
    if config.command.is_some() {
        // An operator command's stdout holds only its answer; its logs go to stderr.
        logs.with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr)
            .init();
    } else {
        logs.with_ansi(std::io::stdout().is_terminal()).init();
    }

    match &config.command {
        Some(Command::Plugins(PluginsCommand::List)) => return commands::list(&config).await,
        Some(Command::Plugins(PluginsCommand::Check { file })) => {
            return commands::check(&config, file).await;
        }
        None => {}
    }

    let shutdown = shutdown_signal();
    let started = std::time::Instant::now();
    let plugins = match PluginHost::start(&config).await {
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
    let snapshot = plugins.snapshot();
    tracing::info!(
        "{} plugins loaded in {} ms ({} from the compile cache)",
        snapshot.plugins.len(),
        started.elapsed().as_millis(),
        snapshot.plugins.iter().filter(|p| p.from_cache).count()
    );
    drop(snapshot);
    let server = match Server::bind(&config, plugins).await {
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
    server.run(shutdown).await;
    tracing::info!("chatd stopped");
    ExitCode::SUCCESS
}
