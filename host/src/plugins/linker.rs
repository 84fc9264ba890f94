//! The linker each world instantiates against: the WASI subset Rust's std needs (io, cli,
//! clocks, random) and the chatd imports. Filesystem and sockets are deliberately not linked.

use wasmtime::Engine;
use wasmtime::component::Linker;
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::p2::bindings::{cli, clocks, random};
use wasmtime_wasi::random::WasiRandom;

use super::bindings;
use super::http::host::HttpHost;
use super::imports::{Records, TurnEventsHost};
use super::log::host::LogHost;
use super::settings::host::ConfigHost;
use super::ssh::host::SshHost;
use super::state::PluginState;

fn wasi_subset(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    wasmtime_wasi_io::add_to_linker_async(linker)?;
    let l = linker;
    clocks::wall_clock::add_to_linker::<PluginState, WasiClocks>(
        l,
        <PluginState as WasiClocksView>::clocks,
    )?;
    clocks::monotonic_clock::add_to_linker::<PluginState, WasiClocks>(
        l,
        <PluginState as WasiClocksView>::clocks,
    )?;
    random::random::add_to_linker::<PluginState, WasiRandom>(l, |t| t.wasi.random())?;
    random::insecure::add_to_linker::<PluginState, WasiRandom>(l, |t| t.wasi.random())?;
    random::insecure_seed::add_to_linker::<PluginState, WasiRandom>(l, |t| t.wasi.random())?;
    cli::exit::add_to_linker::<PluginState, WasiCli>(l, <PluginState as WasiCliView>::cli)?;
    cli::environment::add_to_linker::<PluginState, WasiCli>(l, <PluginState as WasiCliView>::cli)?;
    cli::stdin::add_to_linker::<PluginState, WasiCli>(l, <PluginState as WasiCliView>::cli)?;
    cli::stdout::add_to_linker::<PluginState, WasiCli>(l, <PluginState as WasiCliView>::cli)?;
    cli::stderr::add_to_linker::<PluginState, WasiCli>(l, <PluginState as WasiCliView>::cli)?;
    cli::terminal_input::add_to_linker::<PluginState, WasiCli>(
        l,
        <PluginState as WasiCliView>::cli,
    )?;
    cli::terminal_output::add_to_linker::<PluginState, WasiCli>(
        l,
        <PluginState as WasiCliView>::cli,
    )?;
    cli::terminal_stdin::add_to_linker::<PluginState, WasiCli>(
        l,
        <PluginState as WasiCliView>::cli,
    )?;
    cli::terminal_stdout::add_to_linker::<PluginState, WasiCli>(
        l,
        <PluginState as WasiCliView>::cli,
    )?;
    cli::terminal_stderr::add_to_linker::<PluginState, WasiCli>(
        l,
        <PluginState as WasiCliView>::cli,
    )?;
    Ok(())
}

/// The chatd interfaces every world imports, each through its own view of the call's state.
fn chatd_imports(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    use bindings::imports::chatd::plugin::{config, http, log, types};
    types::add_to_linker::<PluginState, Records>(linker, |_| Records)?;
    http::add_to_linker::<PluginState, HttpHost>(linker, PluginState::http)?;
    log::add_to_linker::<PluginState, LogHost>(linker, PluginState::log)?;
    config::add_to_linker::<PluginState, ConfigHost>(linker, PluginState::config)?;
    Ok(())
}

/// The linker for `provider` components (and the codec worlds, which import the same).
pub fn provider(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    use bindings::provider::chatd::plugin::{provider_types, turn_events};
    let mut linker = Linker::new(engine);
    wasi_subset(&mut linker)?;
    chatd_imports(&mut linker)?;
    provider_types::add_to_linker::<PluginState, Records>(&mut linker, |_| Records)?;
    turn_events::add_to_linker::<PluginState, TurnEventsHost>(
        &mut linker,
        PluginState::turn_events,
    )?;
    Ok(linker)
}

/// The linker for `tool` components: the only world that imports `ssh`.
pub fn tool(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    use bindings::imports::chatd::plugin::ssh;
    use bindings::tool::chatd::plugin::tool_types;
    let mut linker = Linker::new(engine);
    wasi_subset(&mut linker)?;
    chatd_imports(&mut linker)?;
    ssh::add_to_linker::<PluginState, SshHost>(&mut linker, PluginState::ssh)?;
    tool_types::add_to_linker::<PluginState, Records>(&mut linker, |_| Records)?;
    Ok(linker)
}

/// The linker for `search` components.
pub fn search(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    use bindings::search::chatd::plugin::search_types;
    let mut linker = Linker::new(engine);
    wasi_subset(&mut linker)?;
    chatd_imports(&mut linker)?;
    search_types::add_to_linker::<PluginState, Records>(&mut linker, |_| Records)?;
    Ok(linker)
}
