//! The shared wasmtime [`Engine`] and its epoch ticker.
//!
//! Epoch interruption, not fuel: the ticker bumps the engine's epoch every [`TICK`], and each
//! store yields to the async executor at every tick (so a busy guest never blocks a tokio
//! worker) and traps once its call's deadline, counted in ticks, has passed.

use std::time::Duration;

use wasmtime::{Config, Engine};

/// How often the epoch advances: the granularity of yields and deadlines.
pub const TICK: Duration = Duration::from_millis(10);

/// Builds the engine every plugin shares and starts its ticker.
pub fn new_engine() -> wasmtime::Result<Engine> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    let engine = Engine::new(&config)?;
    start_ticker(&engine);
    Ok(engine)
}

/// A plain thread, not a tokio task: it must keep ticking even when every worker is busy running
/// guest code, which is exactly when the ticks matter. It holds only a weak handle, so it ends
/// when the last clone of the engine is dropped.
fn start_ticker(engine: &Engine) {
    let engine = engine.weak();
    std::thread::Builder::new()
        .name("chatd-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(TICK);
                match engine.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })
        .expect("spawn the epoch ticker thread");
}
