//! Black-box tests of the HTTP API: each starts a real chatd server on 127.0.0.1:0 with its own
//! temporary database (or the real binary, in `lifecycle`), and speaks HTTP to it. The same
//! tests run on PostgreSQL in `tests/api_postgres`.

/// This suite's servers use SQLite (`support::test_database`).
const POSTGRES: bool = false;

mod anatomy;
mod attachments;
mod auth;
mod bundled_tools;
mod chats;
mod codec;
mod completions;
mod cross_origin;
mod declared_providers;
mod devbox;
mod documents;
mod fixtures;
mod full_disk;
mod history;
mod hot_reload;
mod isolation;
mod large_bodies;
mod library;
mod lifecycle;
mod limits;
mod live_replies;
mod machine_cache;
#[path = "../common/mcp.rs"]
mod mcp;
mod mcp_oauth;
mod mcp_per_user;
mod mcp_server;
mod mcp_tools;
mod models_titles;
mod oidc;
mod openai;
mod openai_files;
mod openai_frameworks;
mod openai_js;
mod openai_mixed;
mod openai_options;
mod openai_responses;
#[path = "../common/openai_sdk.rs"]
mod openai_sdk;
mod openai_stream;
mod openai_tools;
mod openai_tuning;
mod operator_cli;
mod people;
mod plugin_languages;
mod plugin_memory;
mod plugin_provider;
mod plugin_services;
mod plugins;
mod plugins_cli;
mod plugins_install;
mod plugins_new;
#[allow(dead_code)]
mod postgres;
#[path = "../common/process.rs"]
mod process;
mod python;
#[path = "../common/python_call.rs"]
mod python_call;
mod rebinding;
mod refusals;
mod retries;
mod retrieval;
mod retrieval_corpus;
mod runs;
mod search_runs;
mod search_streams;
mod searches;
mod sessions;
mod stops;
mod structure;
mod support;
mod usage;
#[path = "../common/wasm.rs"]
mod wasm;
mod web_page;
#[path = "../common/wires.rs"]
mod wires;
mod wit_versions;
mod workspace;
