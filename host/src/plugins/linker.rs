//! The linker each world instantiates against: the WASI subset Rust's std needs (io, cli,
//! clocks, random) and the chatd imports. Filesystem and sockets are deliberately not linked.

use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::p2::bindings::{cli, clocks, random};
use wasmtime_wasi::random::WasiRandom;

use super::bindings;
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

/// The linker for `provider` components.
pub fn provider(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    let mut linker = Linker::new(engine);
    wasi_subset(&mut linker)?;
    bindings::provider::Provider::add_to_linker::<PluginState, HasSelf<PluginState>>(
        &mut linker,
        |s| s,
    )?;
    Ok(linker)
}

/// The linker for `tool` components.
pub fn tool(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    let mut linker = Linker::new(engine);
    wasi_subset(&mut linker)?;
    bindings::tool::Tool::add_to_linker::<PluginState, HasSelf<PluginState>>(&mut linker, |s| s)?;
    Ok(linker)
}

/// The linker for `search` components.
pub fn search(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    let mut linker = Linker::new(engine);
    wasi_subset(&mut linker)?;
    bindings::search::Search::add_to_linker::<PluginState, HasSelf<PluginState>>(
        &mut linker,
        |s| s,
    )?;
    Ok(linker)
}
