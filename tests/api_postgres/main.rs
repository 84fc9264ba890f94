//! The black-box suite again, on PostgreSQL: the same test files as `tests/api`, each server on
//! a fresh database in a throwaway cluster this process starts (`tests/api/postgres.rs`). What
//! passes on both is what holds the two stores to one behaviour.
//!
//! Left out: what never reaches the store (the plugin host's own tests, the codec, the devbox,
//! the fixtures) and the binary's lifecycle on SQLite's files (`lifecycle`).

/// This suite's servers use PostgreSQL (`support::test_database`).
const POSTGRES: bool = true;

#[path = "../api/attachments.rs"]
mod attachments;
#[path = "../api/auth.rs"]
mod auth;
#[path = "../api/bundled_tools.rs"]
mod bundled_tools;
#[path = "../api/chats.rs"]
mod chats;
#[path = "../api/completions.rs"]
mod completions;
#[path = "../api/cross_origin.rs"]
mod cross_origin;
#[path = "../api/declared_providers.rs"]
mod declared_providers;
mod deploy;
#[path = "../api/documents.rs"]
mod documents;
mod faults;
#[path = "../api/history.rs"]
mod history;
mod instances;
#[path = "../api/isolation.rs"]
mod isolation;
mod kept_exchanges;
#[path = "../api/large_bodies.rs"]
mod large_bodies;
#[path = "../api/library.rs"]
mod library;
#[path = "../api/limits.rs"]
mod limits;
#[path = "../api/live_replies.rs"]
mod live_replies;
#[path = "../common/mcp.rs"]
mod mcp;
mod mcp_logins;
#[path = "../api/mcp_oauth.rs"]
mod mcp_oauth;
#[path = "../api/mcp_per_user.rs"]
mod mcp_per_user;
#[path = "../api/mcp_server.rs"]
mod mcp_server;
#[path = "../api/models_titles.rs"]
mod models_titles;
mod moves;
#[path = "../api/oidc.rs"]
mod oidc;
#[path = "../api/people.rs"]
mod people;
#[path = "../api/postgres.rs"]
mod postgres;
#[path = "../common/process.rs"]
mod process;
mod proxy;
#[path = "../api/python.rs"]
mod python;
#[path = "../common/python_call.rs"]
mod python_call;
#[path = "../api/refusals.rs"]
mod refusals;
#[path = "../api/retries.rs"]
mod retries;
#[path = "../api/retrieval.rs"]
mod retrieval;
#[path = "../api/retrieval_corpus.rs"]
mod retrieval_corpus;
#[path = "../api/runs.rs"]
mod runs;
#[path = "../api/search_runs.rs"]
mod search_runs;
#[path = "../api/search_streams.rs"]
mod search_streams;
#[path = "../api/searches.rs"]
mod searches;
#[path = "../api/sessions.rs"]
mod sessions;
#[path = "../api/stops.rs"]
mod stops;
#[path = "../api/support.rs"]
#[allow(dead_code)]
mod support;
#[path = "../api/usage.rs"]
mod usage;
#[path = "../common/wasm.rs"]
mod wasm;
#[path = "../common/wires.rs"]
mod wires;
#[path = "../api/workspace.rs"]
mod workspace;
