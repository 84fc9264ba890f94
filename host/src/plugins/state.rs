//! What one plugin call's wasmtime `Store` holds: the plugin's identity and settings, its
//! resource table, its memory limiter, and a WASI context with nothing in it.
//!
//! The WASI context exists only because Rust's std for `wasm32-wasip2` imports a few WASI
//! interfaces at startup (io streams, cli environment and stdio, clocks, random). Only those are
//! linked ([`super::linker`]); they see no environment variables, no arguments, empty stdin, a
//! stdout that goes nowhere, and a stderr the host keeps for the log and for trap messages. Filesystem and sockets are never linked, so a component that
//! imports them does not load.

use std::collections::BTreeMap;
use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime::{StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::bindings::provider::chatd::plugin::provider_types::TurnEvent;
use super::http::HttpGrant;
use super::manifest::Manifest;

/// What a plugin was granted, decided once at load time and shared by its calls.
#[derive(Clone, Debug)]
pub struct Capabilities {
    /// Granted non-secret settings.
    pub config: Arc<BTreeMap<String, String>>,
    pub http: Arc<HttpGrant>,
    /// The shared HTTP client (connection pool) for allow-listed origins.
    pub client: reqwest::Client,
}

impl Capabilities {
    /// Nothing granted.
    pub fn none() -> Self {
        Self {
            config: Arc::default(),
            http: Arc::new(HttpGrant::none()),
            client: super::http::base_client()
                .build()
                .expect("the default HTTP client builds"),
        }
    }
}

/// Guest stderr kept per call; writes past it fail (Rust's panic handler ignores that).
const STDERR_CAPACITY: usize = 64 * 1024;

pub struct PluginState {
    /// The plugin's id, for log lines.
    pub id: Arc<str>,
    pub caps: Capabilities,
    pub table: ResourceTable,
    pub limits: StoreLimits,
    pub(super) wasi: WasiCtx,
    /// Where a provider turn's events go (`turn-events.emit`); `None` outside a turn.
    pub events: Option<tokio::sync::mpsc::Sender<TurnEvent>>,
    /// What the guest writes to stderr during the call (Rust panics write their message there).
    stderr: MemoryOutputPipe,
}

impl PluginState {
    pub fn new(manifest: &Manifest, caps: Capabilities) -> Self {
        let memory = manifest.limits.memory_mib as usize * 1024 * 1024;
        let stderr = MemoryOutputPipe::new(STDERR_CAPACITY);
        Self {
            id: manifest.id.as_str().into(),
            caps,
            table: ResourceTable::new(),
            // One instance, a few tables and memories: what a Rust component needs, no more.
            limits: StoreLimitsBuilder::new()
                .memory_size(memory)
                .instances(16)
                .tables(32)
                .memories(16)
                .trap_on_grow_failure(true)
                .build(),
            events: None,
            wasi: WasiCtxBuilder::new().stderr(stderr.clone()).build(),
            stderr,
        }
    }

    /// The guest's stderr so far, as text.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.contents()).into_owned()
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wasmtime_wasi_io::IoView for PluginState {
    fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }
}
