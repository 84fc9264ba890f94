//! The `chatd` binary: parse the configuration, set up the log, traces and metrics, load the
//! plugins, serve until a signal. `chatd plugins …`, `config check`, `export`, `import` and
//! `backup` run an operator command instead of serving.

use std::process::ExitCode;

use chatd::config::{
    Command, Config, ConfigCommand, ConfigError, DatabaseUrl, MetricsAccess, PluginsCommand,
};
use chatd::plugins::LoadError;
use chatd::plugins::commands;
use chatd::plugins::loading::plugin_host::PluginHost;
use chatd::server::{Server, shutdown_signal};
use chatd::store::{Store, transfer};
use chatd::telemetry::{LogTo, Telemetry};

fn main() -> ExitCode {
    return_large_buffers();
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
    // Before the runtime: the trace exporter's client is a blocking one, made and dropped
    // outside async code.
    let to = if config.command.is_some() {
        LogTo::Stderr
    } else {
        LogTo::Stdout
    };
    let telemetry = match Telemetry::install(&config, to) {
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
    let code = runtime.block_on(run(config, telemetry.tracing()));
    // Blocking work still running (a name lookup of a database host that does not answer, a
    // plugin compiling for a reload) is not waited for: shutdown is bounded (`server.rs`).
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    telemetry.shutdown();
    code
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

async fn run(config: Config, tracing: bool) -> ExitCode {
    match &config.command {
        Some(Command::Plugins(PluginsCommand::List)) => return commands::list(&config).await,
        Some(Command::Plugins(PluginsCommand::Check { file })) => {
            return commands::check(&config, file).await;
        }
        Some(Command::Plugins(PluginsCommand::Install { source })) => {
            return chatd::plugins::install::install(&config, source).await;
        }
        Some(Command::Plugins(PluginsCommand::Accept { id })) => {
            return chatd::plugins::install::accept(&config, id).await;
        }
        Some(Command::Plugins(PluginsCommand::New {
            kind,
            name,
            lang,
            dir,
            sdk_path,
        })) => {
            return chatd::plugins::scaffold::run(*kind, name, *lang, dir, sdk_path.as_deref());
        }
        Some(Command::Plugins(PluginsCommand::Pack {
            component,
            manifest,
            out,
        })) => return chatd::plugins::pack::run(component, manifest, out),
        Some(Command::Plugins(PluginsCommand::Call {
            file,
            tool,
            args,
            grants,
        })) => {
            return commands::call(&config, file, tool, args, grants).await;
        }
        Some(Command::Config(ConfigCommand::Check)) => {
            return commands::config_check(&config).await;
        }
        Some(Command::Export) => return export(&config.database_url).await,
        Some(Command::Import {
            file,
            skip_existing,
        }) => return import(&config, file, *skip_existing).await,
        Some(Command::Backup { file }) => return backup(&config.database_url, file).await,
        None => {}
    }

    // Refused by `Config::load` unless the operator opted in; then said at every start.
    if let Ok(Some(warning)) = config.exposure.decide(&config.host, config.token_mode()) {
        tracing::warn!("{warning}");
    }
    // Before anything is compiled into it; created once the configuration is known good.
    if let Err(line) = chatd::store::check_data_dir(&config) {
        eprintln!("chatd: cannot start: {line}");
        return ExitCode::FAILURE;
    }
    let shutdown = shutdown_signal();
    let started = std::time::Instant::now();
    let plugins = match PluginHost::start_in_background(&config).await {
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
    if let Err(line) = chatd::store::prepare_data_dir(&config) {
        eprintln!("chatd: cannot start: {line}");
        return ExitCode::FAILURE;
    }
    let snapshot = plugins.snapshot();
    tracing::info!(
        "{} plugins loaded in {} ms ({} from the compile cache){}",
        snapshot.plugins.len(),
        started.elapsed().as_millis(),
        snapshot.plugins.iter().filter(|p| p.from_cache).count(),
        if plugins.folder_loading() {
            "; PLUGINS_DIR is loading in the background"
        } else {
            ""
        }
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

/// `chatd export`: JSON Lines on stdout, counts on stderr.
async fn export(url: &DatabaseUrl) -> ExitCode {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match transfer::export(url, &mut out).await {
        Ok(counts) => {
            eprintln!("chatd: exported {counts}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chatd: export failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `chatd import FILE`: into DATABASE_URL's database, opened (and migrated) as a server opens
/// it; on SQLite the serving lock is taken, so a running server refuses it.
async fn import(config: &Config, file: &std::path::Path, skip_existing: bool) -> ExitCode {
    let input: Box<dyn std::io::BufRead> = if file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        match std::fs::File::open(file) {
            Ok(f) => Box::new(std::io::BufReader::new(f)),
            Err(e) => {
                eprintln!("chatd: cannot read {}: {e}", file.display());
                return ExitCode::from(2);
            }
        }
    };
    let timeout = std::time::Duration::from_secs(config.database_timeout_secs);
    let store = match Store::open(
        &config.database_url,
        config.database_max_connections,
        timeout,
    )
    .await
    {
        Ok(store) => store,
        Err(e) => {
            eprintln!("chatd: import failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = store.import(input, skip_existing).await;
    store.close().await;
    match result {
        Ok(done) => {
            eprintln!("chatd: imported {}", done.stored);
            if done.skipped.0.iter().any(|(_, n)| *n > 0) {
                eprintln!("chatd: skipped (already there) {}", done.skipped);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chatd: import failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `chatd backup FILE`.
async fn backup(url: &DatabaseUrl, file: &std::path::Path) -> ExitCode {
    match transfer::backup(url, file).await {
        Ok(()) => {
            eprintln!("chatd: backed up {url} to {}", file.display());
            ExitCode::SUCCESS
        }
        Err(line) => {
            eprintln!("chatd: {line}");
            ExitCode::FAILURE
        }
    }
}
