//! Backend-owned runs: the registry of running chat and search streams, their event logs
//! ([`crate::runlog`]), and the switches every run watches (shutdown; on a shared database, a lost
//! lease; a client's stop, [`ActiveRuns::request_stop`]). `GET /v1/active-runs` reads the registry,
//! attach reads a run's log, `cacheHit` asks whether a search is streaming.
//!
//! Where runs live is the store's to say. On SQLite one process owns everything, and the
//! registry and logs are this process's memory only (runs are not durable across restarts, per
//! the contract). On PostgreSQL several instances share the runs (`shared.rs`): the database
//! holds which instance owns each live run (the 409 is its unique index) and every event, and
//! any instance replays and follows any run; the owner's own readers still read its memory.
//! `beat.rs` keeps the instance's lease and ends the runs of instances that lost theirs.
//!
//! A kind of run (`chat.rs`, `search.rs`) goes down to what it uses: `registry.rs` registers it
//! and ends it, `task.rs` runs its work.

pub mod beat;
pub mod chat;
pub mod ready;
mod registry;
pub mod search;
mod shared;
mod task;
pub use task::DrivenRun;

pub use registry::{ActiveRuns, ErrorEvents, Run, RunContext, RunKind, StartError, Stopped, end};
