//! The plugin host: wasmtime components behind the WIT package `chatd:plugin` (`/wit`), in
//! folders that show its anatomy, lowest first (ARCHITECTURE.md keeps the order):
//!
//! - [`manifest`], [`package`] (a component's bytes before loading), [`memory`] (what all
//!   instances hold together), [`bindings`] (the WIT bindings), [`builtin`] (the built-in
//!   table);
//! - [`capabilities`]: one folder per host import a plugin may be granted, each deciding its
//!   own grant (its `mod.rs`) and implementing its WIT interface on its own view (`host.rs`);
//!   how to add one is in its module docs;
//! - [`runtime`]: the engine, the compile cache, the linker, a call's store and its limits
//!   ([`runtime::Core`]: a fresh store and instance per call under the manifest's memory cap
//!   and deadline), a session's kept store and output;
//! - [`worlds`]: one module per WIT world a plugin implements (tool, search, provider);
//! - [`trust`]: which folder files may load; [`loading`]: from bytes to a serving plugin: load,
//!   the folder, the snapshot, the [`loading::plugin_host::PluginHost`] that swaps it;
//! - [`failure`]: a plugin's failure in words.
//!
//! Here: [`LoadError`], and the setting every provider reads its upstream under. The sandbox's
//! invariants are in ARCHITECTURE.md.

pub mod bindings;
pub mod builtin;
pub mod capabilities;
pub mod failure;
pub mod loading;
pub mod manifest;
pub mod memory;
pub mod package;
pub mod runtime;
#[cfg(feature = "testing")]
pub mod testing;
pub mod trust;
pub mod worlds;

use manifest::Kind;

/// The setting a provider reads its upstream's base URL under, whichever service that is.
pub const PROVIDER_BASE_URL: &str = "base_url";

/// A plugin that cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot start the plugin engine: {0}")]
    Engine(String),
    #[error("{}: {reason}", path.display())]
    Io {
        path: std::path::PathBuf,
        reason: String,
    },
    /// The configuration file cannot be used (one line naming the key and the rule).
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Manifest(#[from] manifest::ManifestError),
    #[error(transparent)]
    Grant(#[from] capabilities::GrantError),
    #[error("plugin {id}: its tools cannot be used: {reason}")]
    Describe { id: String, reason: String },
    #[error("plugin {id}: its provider profile cannot be used: {reason}")]
    Profile { id: String, reason: String },
    #[error("plugin {id}: not a valid component: {reason}")]
    Compile { id: String, reason: String },
    #[error("plugin {id}: cannot be linked: {reason}")]
    Link { id: String, reason: String },
    /// Refused before it was read further: its bytes are not the installed ones, or it is
    /// not signed as the operator requires (`trust/`).
    #[error("{0}")]
    Untrusted(String),
    #[error("plugin {id}: the manifest says {found:?}, expected {expected:?}")]
    WrongKind {
        id: String,
        expected: Kind,
        found: Kind,
    },
}

impl LoadError {
    pub(crate) fn link(id: &str) -> impl Fn(wasmtime::Error) -> LoadError + '_ {
        move |e| LoadError::Link {
            id: id.to_string(),
            reason: format!("{e:#}"),
        }
    }
}
