//! What one plugin call's wasmtime `Store` holds: the plugin's identity and settings, its
//! resource table, its memory limiter, and a WASI context with nothing in it.
//!
//! The WASI context exists only because Rust's std for `wasm32-wasip2` imports a few WASI
//! interfaces at startup (io streams, cli environment and stdio, clocks, random). Only those are
//! linked ([`crate::plugins::runtime::linker`]); they see no environment variables, no arguments, empty stdin, a
//! stdout that goes nowhere, and a stderr the host keeps for the log and for trap messages (a
//! session's stdout and stderr are its caller's instead, [`SessionOutput`]). Filesystem and sockets are not linked, so a component that
//! imports them does not load; the bundled interpreter alone gets its session's folder as its
//! filesystem (`capabilities/files`) and sockets that refuse every use.

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::plugins::bindings::optioned_codec_provider::chatd::plugin::turn_options::Options as TurnOptions;
use crate::plugins::bindings::provider::chatd::plugin::provider_types::TurnEvent;
use crate::plugins::bindings::tuned_codec_provider::chatd::plugin::turn_tuning::Tuning as TurnTuning;
use crate::plugins::capabilities::Capabilities;
use crate::plugins::capabilities::config::host::ConfigView;
use crate::plugins::capabilities::files::host::FilesView;
use crate::plugins::capabilities::files::tree::Folder;
use crate::plugins::capabilities::http::host::HttpView;
use crate::plugins::capabilities::log::host::LogView;
use crate::plugins::capabilities::ssh::host::SshView;
use crate::plugins::manifest::Manifest;
use crate::plugins::memory::TotalMemory;
use crate::plugins::runtime::capture::Capture;

/// Guest stderr kept per store (one call, or a shared decoding instance, which is retired at half
/// of it); writes past it fail (Rust's panic handler ignores that).
const STDERR_CAPACITY: usize = 64 * 1024;
/// Host resources (open HTTP responses…) one call may hold; far above what a plugin needs,
/// far below what would strain the host.
const MAX_RESOURCES: usize = 256;
/// Host resources a session may hold: its open files, folders and their streams. CPython's
/// WASI adapter holds at most 128 descriptors, each with up to two streams; a guest past this
/// is told `ENOMEM` by the folder (`capabilities/files/host.rs`), never trapped.
const MAX_SESSION_RESOURCES: usize = 1024;
/// The most elements a table may grow to (Rust components use a few hundred).
pub const MAX_TABLE_ELEMENTS: usize = 100_000;

/// One store's limits (one call's, or a shared decoding instance's): the manifest's memory for
/// all of the instance's memories together, within what all instances may hold
/// ([`TotalMemory`]), table sizes, and counts. Failing to grow traps, with a message that says
/// why.
pub struct Limiter {
    memory_cap: usize,
    memory_used: usize,
    /// What every instance holds together; `memory_used` of it is this store's.
    total: TotalMemory,
    /// The most memory in use at once: what `chatd plugins call` reports.
    memory_peak: usize,
    /// A growth past the cap was refused since [`Limiter::take_cap_hit`] last looked.
    cap_hit: bool,
    /// Refuse a growth past a cap as the guest's allocator expects (`memory.grow` answers -1)
    /// rather than trapping: a session's interpreter then raises `MemoryError` and lives on.
    pub quiet: bool,
}

impl Limiter {
    /// Whether a growth past the memory cap was refused since the last time this was asked.
    pub fn take_cap_hit(&mut self) -> bool {
        std::mem::take(&mut self.cap_hit)
    }

    /// The most memory the store's instances held at once, in bytes.
    pub fn memory_peak(&self) -> usize {
        self.memory_peak
    }

    /// The peak is counted again from what is held now (a session's next call).
    pub fn reset_peak(&mut self) {
        self.memory_peak = self.memory_used;
    }

    /// More than half the memory cap is in use: a long-lived instance should make way for a
    /// fresh one (wasm memory never shrinks).
    pub fn more_than_half_used(&self) -> bool {
        self.memory_used > self.memory_cap / 2
    }
}

impl Drop for Limiter {
    fn drop(&mut self) {
        self.total.give_back(self.memory_used);
    }
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Past the memory's own declared maximum wasmtime refuses the growth after asking here,
        // and no hook says so: refused here instead, so nothing is counted that never grows
        // (`memory.grow` answers -1, as the guest expects).
        if maximum.is_some_and(|maximum| desired > maximum) {
            return Ok(false);
        }
        let after = self.memory_used - current.min(self.memory_used) + desired;
        if after > self.memory_cap {
            self.cap_hit = true;
            if self.quiet {
                return Ok(false);
            }
            wasmtime::bail!(
                "forcing trap when growing memory to {desired} bytes: the plugin's memory \
                 limit is {} bytes",
                self.memory_cap
            );
        }
        let more = after.saturating_sub(self.memory_used);
        if self.total.take(more).is_err() {
            self.cap_hit = true;
            if self.quiet {
                return Ok(false);
            }
            wasmtime::bail!(
                "forcing trap when growing memory to {desired} bytes: all plugin instances \
                 together hold {} MiB, and CHATD_PLUGIN_MEMORY_TOTAL_MIB is {} MiB",
                self.total.in_use() >> 20,
                self.total.cap() >> 20
            );
        }
        self.memory_used = after;
        self.memory_peak = self.memory_peak.max(after);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MAX_TABLE_ELEMENTS {
            wasmtime::bail!(
                "forcing trap when growing a table to {desired} elements: the limit is \
                 {MAX_TABLE_ELEMENTS}"
            );
        }
        Ok(true)
    }

    // A Rust component has a handful of core instances, tables and memories; a Python one
    // (componentize-py) about 20. Their memory is capped in total above, so the counts only
    // bound bookkeeping.
    fn instances(&self) -> usize {
        64
    }
    fn tables(&self) -> usize {
        64
    }
    fn memories(&self) -> usize {
        32
    }
}

pub struct PluginState {
    /// The plugin's id, for log lines.
    pub id: Arc<str>,
    pub caps: Capabilities,
    pub table: ResourceTable,
    pub limits: Limiter,
    /// HTTP responses the guest holds open ([`crate::plugins::capabilities::http::host`] caps them).
    pub open_responses: usize,
    /// Log lines written during the call (`capabilities/log/host.rs` caps them).
    pub log_lines: usize,
    pub(super) wasi: WasiCtx,
    /// Where a provider turn's events go (`turn-events.emit`); `None` outside a turn.
    pub events: Option<tokio::sync::mpsc::Sender<TurnEvent>>,
    /// What the provider turn being built asks (`turn-options.current`,
    /// `turn-tuning.current`); `None` outside `start` and `turn`.
    pub turn_asks: Option<Arc<TurnAsks>>,
    /// A session's folder, for a plugin granted `files` (`capabilities/files`); `None` gives
    /// the guest no preopened directory.
    pub folder: Option<Folder>,
    /// What the guest writes to stderr during the call (Rust panics write their message there);
    /// a session's is in `output` instead.
    stderr: MemoryOutputPipe,
    /// A session's stdout and stderr, kept by the host up to a cap ([`PluginState::session`]).
    pub output: Option<SessionOutput>,
}

/// What a provider turn asks beyond its request, as the provider imports read it: its options
/// (0.1.2) and its tuning (0.1.3).
#[derive(Clone, Debug)]
pub struct TurnAsks {
    pub options: TurnOptions,
    pub tuning: TurnTuning,
}

/// A session's stdout and stderr: what its code prints, for its caller, not for the log.
#[derive(Clone, Debug)]
pub struct SessionOutput {
    pub stdout: Capture,
    pub stderr: Capture,
}

impl PluginState {
    pub fn new(manifest: &Manifest, caps: Capabilities) -> Self {
        Self::with_output(manifest, caps, None)
    }

    /// A session's state: its stdout and stderr go to [`SessionOutput`], each keeping at most
    /// `output_chars` characters per call, whatever the guest writes.
    pub fn session(manifest: &Manifest, caps: Capabilities, output_chars: usize) -> Self {
        let output = SessionOutput {
            stdout: Capture::new(output_chars),
            stderr: Capture::new(output_chars),
        };
        let mut state = Self::with_output(manifest, caps, Some(output));
        state.table.set_max_capacity(MAX_SESSION_RESOURCES);
        state
    }

    fn with_output(manifest: &Manifest, caps: Capabilities, output: Option<SessionOutput>) -> Self {
        let memory = manifest.limits.memory_mib as usize * 1024 * 1024;
        let stderr = MemoryOutputPipe::new(STDERR_CAPACITY);
        let total = caps.memory.clone();
        // Sockets are linked only for the interpreter (whose CPython imports them) and are
        // refused to it as to everyone: no TCP, no UDP, no name lookups.
        let mut wasi = WasiCtxBuilder::new();
        wasi.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        match &output {
            Some(output) => wasi
                .stdout(output.stdout.clone())
                .stderr(output.stderr.clone()),
            None => wasi.stderr(stderr.clone()),
        };
        Self {
            id: manifest.id.as_str().into(),
            caps,
            table: {
                let mut table = ResourceTable::new();
                table.set_max_capacity(MAX_RESOURCES);
                table
            },
            limits: Limiter {
                memory_cap: memory,
                memory_used: 0,
                total,
                memory_peak: 0,
                cap_hit: false,
                quiet: false,
            },
            open_responses: 0,
            log_lines: 0,
            events: None,
            turn_asks: None,
            folder: None,
            wasi: wasi.build(),
            stderr,
            output,
        }
    }

    /// The guest's stderr so far, as text.
    pub fn stderr_text(&self) -> String {
        self.stderr_since(0).0
    }

    /// What the guest wrote to stderr after its first `offset` bytes, as text, and how many
    /// bytes it has written in all (the offset for next time).
    pub fn stderr_since(&self, offset: usize) -> (String, usize) {
        let all = self.stderr.contents();
        let new = all.get(offset..).unwrap_or_default();
        (String::from_utf8_lossy(new).into_owned(), all.len())
    }
}

/// The view each WIT interface is linked through ([`crate::plugins::runtime::linker`]): the part of the state
/// that capability may touch, and nothing else.
impl PluginState {
    pub fn http(&mut self) -> HttpView<'_> {
        HttpView {
            grant: &self.caps.http,
            clients: &self.caps.clients,
            table: &mut self.table,
            open_responses: &mut self.open_responses,
        }
    }

    pub fn log(&mut self) -> LogView<'_> {
        LogView {
            plugin: &self.id,
            grant: self.caps.log,
            lines: &mut self.log_lines,
        }
    }

    pub fn config(&mut self) -> ConfigView<'_> {
        ConfigView {
            values: &self.caps.config,
        }
    }

    pub fn files(&mut self) -> FilesView<'_> {
        FilesView {
            folder: self.folder.as_ref(),
            table: &mut self.table,
        }
    }

    pub fn ssh(&mut self) -> SshView<'_> {
        SshView {
            plugin: &self.id,
            grant: self.caps.ssh.as_ref(),
        }
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
