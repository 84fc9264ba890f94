//! chatd: the server behind a chat and web-search app.
//!
//! # Code map
//!
//! - [`config`]: every setting, parsed once at startup (CLI flags with env fallback), and the
//!   optional configuration file (`config::file`, TOML, hot-reloaded). Invalid values stop
//!   startup with one line naming the variable (or the file's key) and the rule.
//! - [`defaults`]: the contract's four providers and the built-in services, as data: the one
//!   module that names a bundled plugin.
//! - [`server`]: wiring. Opens the store, binds, serves, shuts down gracefully. `main` and the
//!   black-box tests start the server the same way.
//! - [`http`]: routes, DTOs, the error type, auth and request-log middleware, the OpenAPI
//!   document generated from the routes, and the bundled web client (`http::web`, the files of
//!   `/web` embedded at build time). Mounted at `/` and `/api`.
//! - [`store`]: SQLite or PostgreSQL through sqlx, one `Store` and one behaviour; embedded
//!   migrations from `/migrations/<backend>`. On SQLite writes go as batches (several
//!   statements, one round trip to the connection's thread) through one writer connection; on
//!   PostgreSQL as transactions with row locks, shared by several instances.
//! - [`model`]: the shared vocabulary (roles, providers, ids, timestamps).
//! - [`attachments`]: the attachment policy (count, type by magic number, sizes).
//! - [`tools`]: the tool catalogue, the one answer to "which tools exist".
//! - [`chat`]: chat completions: the model↔tool loop (text live as it comes, refused turns
//!   tried again, a client's stop), the transcript rules, the stream's events, model lists,
//!   title suggestion.
//! - [`search`]: search mode: one run of the search plugin's search and answer side by side,
//!   its stream events, the seed message of a chat started from a search.
//! - [`runs`]: backend-owned runs: the registry behind `GET /v1/active-runs` and attach, each
//!   run's event log, a client's stop, the shutdown grace period; on PostgreSQL the runs shared
//!   by the instances (events and stop requests in the database, from any instance) and the
//!   instance's lease.
//! - [`plugins`]: the plugin host: wasmtime components, their grants (one folder per
//!   capability: http, ssh for the devbox tools only, settings, log), the services whose keys
//!   the host adds, bundled, PLUGINS_DIR and declared providers with hot reload, the compile
//!   cache.
//! - [`telemetry`]: what operators see besides the API: Prometheus metrics (process-wide
//!   families, served at `/metrics`), OpenTelemetry spans exported over OTLP when configured,
//!   and the log's format (text or JSON with the trace id).
//!
//! # Invariants
//!
//! - The store is the only module with SQL; the HTTP layer is the only one with JSON DTOs, with
//!   two exceptions: [`chat::events`] and [`search::events`], the streams' events, serialized by
//!   the run that outlives its request.
//! - A run's effects happen in the contract's order: a tool message is stored before its
//!   terminal event, the reply and its usage are one transaction before `done`, a failure is
//!   recorded before `error`.
//! - Every error a client sees is `{ "message": … }`; bad input is a 4xx naming the field and the
//!   rule, never a 5xx. A rejected request writes nothing: validation finishes before the store
//!   is called, and each write is one transaction.
//! - Auth is deny-by-default: the token check wraps every route and the fallback; only
//!   `/health`, `/openapi.json` and the web client's embedded files (`http::web`) are open, and
//!   `/metrics` only when the operator opens it (CHATD_METRICS=open).
//! - Nothing logs a token, a key, or a request body. Secrets are [`config::Secret`], whose
//!   `Debug` is redacted. The same holds for traces and metrics: span attributes are set only by
//!   [`telemetry::trace`]'s constructors, and metric labels are bounded words, never request
//!   text ([`telemetry::metrics`]).
//! - The host never parses or builds a vendor payload; those live in plugins (`/plugins`), and
//!   a plugin reaches only what [`plugins::grants`] decided, through host functions.
//! - A search run stores its outcome only when at least one of its parts succeeded: a run
//!   whose search and answer both fail leaves the previous run's outcome in place.

pub mod attachments;
pub mod chat;
pub mod config;
pub mod http;
pub mod plugins;
pub mod runlog;
pub mod runs;
pub mod search;
pub mod server;
pub mod store;
pub mod telemetry;
pub mod tools;
pub mod vocabulary;
