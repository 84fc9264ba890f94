//! The shared wasmtime [`Engine`], its instance allocator, and its epoch ticker.
//!
//! Epoch interruption, not fuel: the ticker bumps the engine's epoch every [`TICK`], and each
//! store yields to the async executor at every tick (so a busy guest never blocks a tokio
//! worker) and traps once its call's deadline, counted in ticks, has passed.
//!
//! Instances come from the pooling allocator: every call gets a fresh instance, and taking a
//! pre-reserved slot (memory, tables, async stack) is a fraction of what mapping and unmapping
//! them per call costs (see BENCHMARKS.md). The pool is address space reserved up front, not
//! memory: a slot is backed by pages only while an instance uses them, and by up to
//! [`KEEP_RESIDENT`] bytes of the pages its last instance wrote where the kernel can scan for
//! them ([`keep_resident`]). Where that reservation is refused (a tight `ulimit -v`), the engine
//! falls back to allocating per instance.

use std::time::Duration;

use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::plugins::manifest::MAX_MEMORY_MIB;

/// How often the epoch advances: the granularity of yields and deadlines.
pub const TICK: Duration = Duration::from_millis(10);

/// Plugin instances alive at once (each call and plugin-driven turn holds one; a shared decoding
/// instance serves many turns).
pub const MAX_CONCURRENT_INSTANCES: u32 = 2_000;
/// Core instances a plugin component may contain (Rust components have a handful).
const CORE_INSTANCES_PER_COMPONENT: u32 = 8;
/// Bytes of a freed slot's memory reset in place and kept mapped rather than released, where the
/// kernel tells which pages the instance wrote (`PAGEMAP_SCAN`, Linux 6.7+): wasmtime scans the
/// memory from its start, resets the written pages it meets, up to this many bytes of them, and
/// releases only what lies past where the scan stopped. Pages the call only read stay mapped as
/// they are. The next call then takes neither the `madvise` nor the page faults that were most
/// of a call's cost (BENCHMARKS.md, "Host overhead per tool call"). The price is resident
/// memory: what each slot's last instance wrote, at most this much, for every slot used at once
/// at the busiest moment.
pub const KEEP_RESIDENT: usize = 2 << 20;

/// What [`KEEP_RESIDENT`] is on this kernel: without the scan nothing is kept, as resetting
/// the whole prefix with `memset` costs more than the faults it saves (measured).
pub fn keep_resident() -> usize {
    if PoolingAllocationConfig::is_pagemap_scan_available() {
        KEEP_RESIDENT
    } else {
        0
    }
}

/// Bytes of `engine`'s freed instance slots kept resident for the next calls; 0 without the
/// instance pool.
pub fn kept_bytes(engine: &Engine) -> usize {
    engine
        .pooling_allocator_metrics()
        .map_or(0, |pool| pool.unused_memory_bytes_resident())
}

/// Builds the engine every plugin shares and starts its ticker.
pub fn new_engine() -> wasmtime::Result<Engine> {
    let engine = match Engine::new(&config(true)) {
        Ok(engine) => engine,
        Err(e) => {
            tracing::warn!(
                "the plugin instance pool could not be reserved ({e:#}); allocating per instance"
            );
            Engine::new(&config(false))?
        }
    };
    tracing::debug!(
        keep_resident = keep_resident(),
        "plugin memory: the pages a call touched in a slot's first bytes stay resident \
         (0: no PAGEMAP_SCAN on this kernel, every page is released)"
    );
    start_ticker(&engine);
    Ok(engine)
}

fn config(pooling: bool) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    if pooling {
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(MAX_CONCURRENT_INSTANCES)
            .total_core_instances(MAX_CONCURRENT_INSTANCES * CORE_INSTANCES_PER_COMPONENT)
            .total_memories(MAX_CONCURRENT_INSTANCES)
            .total_tables(MAX_CONCURRENT_INSTANCES * 2)
            .total_stacks(MAX_CONCURRENT_INSTANCES)
            .max_memories_per_component(8)
            .max_memory_size(MAX_MEMORY_MIB as usize * 1024 * 1024)
            .linear_memory_keep_resident(keep_resident())
            .pagemap_scan(wasmtime::Enabled::Auto)
            .table_keep_resident(64 * 1024);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    config
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
