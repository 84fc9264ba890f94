//! What each world's linker starts from: the WASI subset Rust's std needs (io, cli, clocks,
//! random) and the chatd imports every world has; a world adds its own in `worlds/`. Filesystem
//! and sockets are deliberately not linked, except for a plugin granted `files` ([`files`]).

use wasmtime::Engine;
use wasmtime::component::Linker;
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::p2::bindings::{cli, clocks, random};
use wasmtime_wasi::random::WasiRandom;

use crate::plugins::bindings;
use crate::plugins::capabilities::config::host::ConfigHost;
use crate::plugins::capabilities::http::host::HttpHost;
use crate::plugins::capabilities::log::host::LogHost;
use crate::plugins::runtime::records::Records;
use crate::plugins::runtime::state::PluginState;

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

/// What a plugin granted `files` links besides its world's imports: the session's folder as
/// `wasi:filesystem`, and `wasi:sockets`, which CPython imports, answering every use with
/// `access-denied` (`state.rs` allows no TCP, UDP or name lookup).
pub fn files(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::sockets;
    use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView};
    crate::plugins::capabilities::files::host::add_to_linker(linker, PluginState::files)?;
    let l = linker;
    let view = <PluginState as WasiSocketsView>::sockets;
    sockets::tcp::add_to_linker::<PluginState, WasiSockets>(l, view)?;
    sockets::udp::add_to_linker::<PluginState, WasiSockets>(l, view)?;
    sockets::udp_create_socket::add_to_linker::<PluginState, WasiSockets>(l, view)?;
    sockets::tcp_create_socket::add_to_linker::<PluginState, WasiSockets>(l, view)?;
    sockets::instance_network::add_to_linker::<PluginState, WasiSockets>(l, view)?;
    sockets::network::add_to_linker::<PluginState, WasiSockets>(l, &Default::default(), view)?;
    sockets::ip_name_lookup::add_to_linker::<PluginState, WasiSockets>(l, view)?;
    Ok(())
}

/// What every world's linker starts from: the WASI subset and the chatd imports all worlds
/// share; each world adds its own (`worlds/`).
pub fn shared(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    let mut linker = Linker::new(engine);
    wasi_subset(&mut linker)?;
    chatd_imports(&mut linker)?;
    Ok(linker)
}

/// What an extractor's world links: the WASI subset, `types` and `log`, and nothing that
/// reaches out (no `http`, no `config`), whatever an operator's settings would grant it.
pub fn log_only(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    use bindings::imports::chatd::plugin::{log, types};
    let mut linker = Linker::new(engine);
    wasi_subset(&mut linker)?;
    types::add_to_linker::<PluginState, Records>(&mut linker, |_| Records)?;
    log::add_to_linker::<PluginState, LogHost>(&mut linker, PluginState::log)?;
    Ok(linker)
}
