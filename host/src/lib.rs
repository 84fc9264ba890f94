//! chatd: a self-hosted backend for a chat and web-search app. It stores chats and searches,
//! talks to LLM providers through sandboxed WebAssembly plugins, runs tools in a loop with the
//! model, and streams replies to clients over SSE; the binary is `server/src/main.rs`.
//!
//! The code map and the invariants are in ARCHITECTURE.md at the repository's root.

pub mod attachments;
pub mod chat;
pub mod cli;
pub mod config;
pub mod egress;
pub mod http;
pub mod library;
pub mod people;
pub mod plugins;
pub mod runlog;
pub mod runs;
pub mod search;
pub mod server;
pub mod signin;
pub mod store;
pub mod telemetry;
pub mod tools;
pub mod usage;
pub mod vocabulary;
