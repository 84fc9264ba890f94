//! Startup configuration: every variable (`docs/configuration.md` lists them) and the contract's devbox table, parsed
//! once into [`Config`]. Each setting is a CLI flag with an environment fallback; an invalid value
//! stops startup with one line naming the variable and the rule ([`Config::load`]). The optional
//! configuration file (`--config`, CHATD_CONFIG) is [`file`]; where it and a variable set the
//! same thing, the variable wins ([`Config::is_set`]).
//!
//! Secrets are wrapped in [`Secret`] so that `Debug` (and therefore any log line that prints the
//! config) never shows them, and `--help` never echoes their environment values.

pub mod embedding;
pub mod exposure;
pub mod file;
pub mod mcp;
pub mod names;
pub mod oidc;
mod parse;
pub mod pricing;
pub mod python;
pub mod retry;
pub mod values;

use embedding::parse_embedding_model;
use parse::*;
use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, FromArgMatches, Parser};
use url::Url;

/// A credential. Its `Debug` is redacted; read it with [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Where the data lives: an SQLite file (one instance) or a PostgreSQL database (one or more).
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(String),
    Postgres(String),
}

/// Shown without a password: the URL goes to the log at start.
impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatabaseUrl::Sqlite(url) => f.write_str(url),
            DatabaseUrl::Postgres(url) => f.write_str(&redact_url(url)),
        }
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({self})")
    }
}

/// The chat `web_search` tool's backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum WebSearchEngine {
    EngineA,
    EngineB,
}

/// The log's format on stdout (LOG_FORMAT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum LogFormat {
    /// A line of text per event (tracing-subscriber's format).
    #[default]
    Text,
    /// One JSON object per line, with the trace id when tracing is on.
    Json,
}

/// Whether metrics are kept and who may read `GET /metrics` (CHATD_METRICS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum MetricsAccess {
    /// Kept and served; in token mode `/metrics` needs the token like any route.
    #[default]
    On,
    /// Kept and served without the token, for a scraper that cannot send one.
    Open,
    /// Not kept; `/metrics` is not served.
    Off,
}

#[derive(clap::Args, Clone, Debug)]
pub struct Config {
    /// Listen address.
    #[arg(long, env = "HOST", value_name = "HOST", default_value = "127.0.0.1")]
    pub host: String,
    /// Listen port (0 picks a free one).
    #[arg(long, env = "PORT", value_name = "PORT", default_value = "8787", value_parser = parse_port)]
    pub port: u16,
    /// `sqlite://PATH` (file and folder are created) or `postgres://USER:PASSWORD@HOST/DB`
    /// (several instances may share it; TLS with `?sslmode=verify-full&sslrootcert=CA.pem`).
    #[arg(long, env = "DATABASE_URL", value_name = "DATABASE_URL",
          default_value = "sqlite://data/chatd.db", value_parser = parse_database_url)]
    pub database_url: DatabaseUrl,
    /// PostgreSQL only: the most connections this instance opens (docs/operating.md, "Running several
    /// instances").
    #[arg(long, env = "DATABASE_MAX_CONNECTIONS", value_name = "DATABASE_MAX_CONNECTIONS",
          default_value = "16", value_parser = parse_max_connections)]
    pub database_max_connections: u32,
    /// The longest chatd waits for the database in one operation, a connection included: past
    /// it the request is answered 503 naming the database, and `/ready` says not ready.
    #[arg(long, env = "DATABASE_TIMEOUT_SECS", value_name = "DATABASE_TIMEOUT_SECS",
          default_value = "5", value_parser = parse_database_timeout)]
    pub database_timeout_secs: u64,
    /// When set, every /v1 route needs `Authorization: Bearer <ADMIN_TOKEN>`.
    #[arg(long, env = "ADMIN_TOKEN", value_name = "ADMIN_TOKEN", hide_env_values = true,
          value_parser = parse_admin_token)]
    pub admin_token: Option<Secret>,

    /// provider_a's key (OpenAI); unset: provider_a is not served.
    #[arg(long, env = "PROVIDER_A_API_KEY", value_name = "PROVIDER_A_API_KEY", hide_env_values = true, value_parser = parse_secret)]
    pub provider_a_api_key: Option<Secret>,
    /// provider_a's API base URL.
    #[arg(long, env = "PROVIDER_A_BASE_URL", value_name = "PROVIDER_A_BASE_URL", default_value = "https://api.openai.com/v1", value_parser = parse_http_url)]
    pub provider_a_base_url: Url,
    /// provider_b's key (Anthropic); unset: provider_b is not served.
    #[arg(long, env = "PROVIDER_B_API_KEY", value_name = "PROVIDER_B_API_KEY", hide_env_values = true, value_parser = parse_secret)]
    pub provider_b_api_key: Option<Secret>,
    /// provider_b's API base URL.
    #[arg(long, env = "PROVIDER_B_BASE_URL", value_name = "PROVIDER_B_BASE_URL", default_value = "https://api.anthropic.com/v1", value_parser = parse_http_url)]
    pub provider_b_base_url: Url,
    /// provider_c's key (xAI); unset: provider_c is not served.
    #[arg(long, env = "PROVIDER_C_API_KEY", value_name = "PROVIDER_C_API_KEY", hide_env_values = true, value_parser = parse_secret)]
    pub provider_c_api_key: Option<Secret>,
    /// provider_c's API base URL.
    #[arg(long, env = "PROVIDER_C_BASE_URL", value_name = "PROVIDER_C_BASE_URL", default_value = "https://api.x.ai/v1", value_parser = parse_http_url)]
    pub provider_c_base_url: Url,
    /// Any non-empty value serves the agent provider (the agent server may need no auth).
    #[arg(long, env = "AGENT_API_KEY", value_name = "AGENT_API_KEY", hide_env_values = true, value_parser = parse_secret)]
    pub agent_api_key: Option<Secret>,
    /// The agent server's OpenAI-compatible base URL.
    #[arg(long, env = "AGENT_API_BASE_URL", value_name = "AGENT_API_BASE_URL", default_value = "http://127.0.0.1:8642/v1", value_parser = parse_http_url)]
    pub agent_api_base_url: Url,
    /// The agent provider's one model (default: whatever the agent server lists).
    #[arg(long, env = "AGENT_MODEL", value_name = "AGENT_MODEL")]
    pub agent_model: Option<String>,
    /// The fixed small model of title suggestions (of the title provider, `plugins/builtin.rs`).
    #[arg(
        long,
        env = "TITLE_MODEL",
        value_name = "TITLE_MODEL",
        default_value = "gpt-4.1-mini"
    )]
    pub title_model: String,
    /// How often the providers' model lists are asked for again.
    #[arg(long, env = "MODELS_REFRESH_SECS", value_name = "MODELS_REFRESH_SECS", default_value = "86400", value_parser = parse_positive_u64)]
    pub models_refresh_secs: u64,

    /// The search engine's key (Exa): searches and the chat `web_search` tool.
    #[arg(long, env = "ENGINE_A_API_KEY", value_name = "ENGINE_A_API_KEY", hide_env_values = true, value_parser = parse_secret)]
    pub engine_a_api_key: Option<Secret>,
    /// The search engine's API base URL.
    #[arg(long, env = "ENGINE_A_BASE_URL", value_name = "ENGINE_A_BASE_URL", default_value = "https://api.exa.ai", value_parser = parse_http_url)]
    pub engine_a_base_url: Url,
    /// A SearXNG-style engine for the chat `web_search` tool (with CHAT_WEB_SEARCH_ENGINE=engine_b).
    #[arg(long, env = "ENGINE_B_BASE_URL", value_name = "ENGINE_B_BASE_URL", value_parser = parse_http_url)]
    pub engine_b_base_url: Option<Url>,
    /// The chat `web_search` tool's engine: `engine_a` or `engine_b`.
    #[arg(
        long,
        env = "CHAT_WEB_SEARCH_ENGINE",
        value_name = "CHAT_WEB_SEARCH_ENGINE",
        default_value = "engine_a",
        value_enum
    )]
    pub chat_web_search_engine: WebSearchEngine,
    /// Model/tool cycles before the tool-limit message.
    #[arg(long, env = "CHAT_MAX_TOOL_ROUNDS", value_name = "CHAT_MAX_TOOL_ROUNDS", default_value = "100", value_parser = parse_positive_u32, allow_hyphen_values = true)]
    pub chat_max_tool_rounds: u32,

    /// Offers the `coding_exec` tool (Codex on the devbox): `true` or `false`.
    #[arg(long, env = "CHAT_CODING_TOOL_ENABLED", value_name = "CHAT_CODING_TOOL_ENABLED", default_value = "false", value_parser = parse_bool, action = clap::ArgAction::Set)]
    pub chat_coding_tool_enabled: bool,
    /// Offers the `shell_exec` tool (a shell command on the devbox): `true` or `false`.
    #[arg(long, env = "CHAT_SHELL_TOOL_ENABLED", value_name = "CHAT_SHELL_TOOL_ENABLED", default_value = "false", value_parser = parse_bool, action = clap::ArgAction::Set)]
    pub chat_shell_tool_enabled: bool,
    /// The devbox: host or address, may hold `user@host`.
    #[arg(
        long,
        env = "CHAT_CODING_REMOTE_HOST",
        value_name = "CHAT_CODING_REMOTE_HOST"
    )]
    pub chat_coding_remote_host: Option<String>,
    /// The devbox's SSH user (a user in CHAT_CODING_REMOTE_HOST wins).
    #[arg(
        long,
        env = "CHAT_CODING_REMOTE_USER",
        value_name = "CHAT_CODING_REMOTE_USER"
    )]
    pub chat_coding_remote_user: Option<String>,
    /// The devbox's SSH port.
    #[arg(long, env = "CHAT_CODING_REMOTE_PORT", value_name = "CHAT_CODING_REMOTE_PORT", default_value = "22", value_parser = parse_port)]
    pub chat_coding_remote_port: u16,
    /// The devbox folder commands run in, created when missing (`~/…` is the remote home).
    #[arg(
        long,
        env = "CHAT_CODING_REMOTE_WORKDIR",
        value_name = "CHAT_CODING_REMOTE_WORKDIR"
    )]
    pub chat_coding_remote_workdir: Option<String>,
    /// The devbox's private key file (preferred over the base64 form).
    #[arg(
        long,
        env = "CHAT_CODING_SSH_KEY_PATH",
        value_name = "CHAT_CODING_SSH_KEY_PATH"
    )]
    pub chat_coding_ssh_key_path: Option<PathBuf>,
    /// The devbox's private key, base64-encoded (written 0600 to a private folder).
    #[arg(long, env = "CHAT_CODING_SSH_PRIVATE_KEY_B64", value_name = "CHAT_CODING_SSH_PRIVATE_KEY_B64", hide_env_values = true, value_parser = parse_secret)]
    pub chat_coding_ssh_private_key_b64: Option<Secret>,
    /// The longest one `coding_exec` command may run.
    #[arg(long, env = "CHAT_CODING_EXEC_TIMEOUT_MS", value_name = "CHAT_CODING_EXEC_TIMEOUT_MS", default_value = "600000", value_parser = parse_positive_u64)]
    pub chat_coding_exec_timeout_ms: u64,
    /// The longest one `shell_exec` command may run.
    #[arg(long, env = "CHAT_SHELL_EXEC_TIMEOUT_MS", value_name = "CHAT_SHELL_EXEC_TIMEOUT_MS", default_value = "120000", value_parser = parse_positive_u64)]
    pub chat_shell_exec_timeout_ms: u64,

    /// The bundled `python` tool (`python.rs`).
    #[command(flatten)]
    pub python: python::PythonVars,

    /// Host names, browser origins, open mode on a network (`exposure.rs`).
    #[command(flatten)]
    pub exposure: exposure::Exposure,
    /// A key for what chatd authenticates at rest (the compile cache's entries): at least 32
    /// characters, kept out of the data folder. Without it, signed plugins are compiled at every
    /// start rather than read from the compile cache.
    #[arg(long, env = "CHATD_SECRET_KEY", value_name = "CHATD_SECRET_KEY", hide_env_values = true, value_parser = parse_secret_key)]
    pub chatd_secret_key: Option<Secret>,
    /// The model whose embeddings index the library, `PROVIDER/MODEL` (docs/files.md); unset:
    /// keyword retrieval only.
    #[arg(long, env = "CHATD_EMBEDDING_MODEL", value_name = "CHATD_EMBEDDING_MODEL", value_parser = parse_embedding_model)]
    pub chatd_embedding_model: Option<embedding::EmbeddingModel>,
    /// Lets tool plugins reach loopback, private and link-local addresses.
    #[arg(long, env = "CHATD_ALLOW_PRIVATE_NETWORKS", value_name = "CHATD_ALLOW_PRIVATE_NETWORKS", default_value = "false", value_parser = parse_bool, action = clap::ArgAction::Set)]
    pub chatd_allow_private_networks: bool,
    /// On shutdown, how long runs in flight may take to finish before they are stopped with an
    /// error recorded.
    #[arg(long, env = "CHATD_SHUTDOWN_GRACE_SECS", value_name = "CHATD_SHUTDOWN_GRACE_SECS", default_value = "30", value_parser = parse_positive_u64)]
    pub chatd_shutdown_grace_secs: u64,
    /// Folder of operator plugins.
    #[arg(long, env = "PLUGINS_DIR", value_name = "PLUGINS_DIR")]
    pub plugins_dir: Option<PathBuf>,
    /// The folder for what is not in the database: compiled plugins, the devbox's pinned host key
    /// (default: the SQLite database's folder; `./data` on PostgreSQL). Created if missing.
    #[arg(long, env = "CHATD_DATA_DIR", value_name = "CHATD_DATA_DIR")]
    pub chatd_data_dir: Option<PathBuf>,
    /// Compiled plugin code, kept so a restart does not compile again (default: `plugin-cache`
    /// in CHATD_DATA_DIR).
    #[arg(long, env = "PLUGIN_CACHE_DIR", value_name = "PLUGIN_CACHE_DIR")]
    pub plugin_cache_dir: Option<PathBuf>,
    /// The machine's compiled plugin code, shared by every data folder and by `chatd plugins`
    /// (default: `$XDG_CACHE_HOME/chatd`, else `~/.cache/chatd`).
    #[arg(long, env = "CHATD_CACHE_DIR", value_name = "CHATD_CACHE_DIR")]
    pub chatd_cache_dir: Option<PathBuf>,
    /// A file of minisign public keys (ed25519; `.pub` files, one or more). When set, every
    /// plugin in PLUGINS_DIR must be one file signed by one of them (`NAME.wasm.minisig`
    /// beside it); others are refused.
    #[arg(long, env = "CHATD_PLUGIN_KEYS", value_name = "CHATD_PLUGIN_KEYS")]
    pub chatd_plugin_keys: Option<PathBuf>,
    /// The most memory all plugin instances together may hold, in MiB: past it a call that asks
    /// for more fails with a trap naming this setting, and the server stays up. Default: 4096
    /// or half the memory this process may use (the machine's, or its cgroup's limit), the
    /// smaller.
    #[arg(long, env = "CHATD_PLUGIN_MEMORY_TOTAL_MIB", value_name = "CHATD_PLUGIN_MEMORY_TOTAL_MIB", value_parser = parse_memory_total)]
    pub chatd_plugin_memory_total_mib: Option<u64>,
    /// The configuration file (TOML): declared providers, services, plugin settings. Watched
    /// and reloaded when it changes.
    #[arg(
        long = "config",
        env = "CHATD_CONFIG",
        value_name = "CHATD_CONFIG",
        global = true
    )]
    pub config: Option<PathBuf>,

    /// The log on stdout: `text` (the default) or `json`, one object per line.
    #[arg(
        long,
        env = "LOG_FORMAT",
        value_name = "LOG_FORMAT",
        default_value = "text"
    )]
    pub log_format: LogFormat,
    /// Metrics: `on` (served at /metrics, behind the token in token mode), `open` (no token
    /// needed) or `off` (not kept, not served).
    #[arg(
        long,
        env = "CHATD_METRICS",
        value_name = "CHATD_METRICS",
        default_value = "on"
    )]
    pub chatd_metrics: MetricsAccess,
    /// Traces are exported over OTLP/HTTP when this (or the traces endpoint) is set: the
    /// collector's base URL, `/v1/traces` appended. The SDK reads the other OTEL_* variables.
    #[arg(
        long,
        env = "OTEL_EXPORTER_OTLP_ENDPOINT",
        value_name = "OTEL_EXPORTER_OTLP_ENDPOINT"
    )]
    pub otel_exporter_otlp_endpoint: Option<String>,
    /// The traces' own endpoint, used as it is.
    #[arg(
        long,
        env = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        value_name = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )]
    pub otel_exporter_otlp_traces_endpoint: Option<String>,
    /// The OTLP protocol: chatd exports `http/protobuf` only.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_PROTOCOL", value_name = "OTEL_EXPORTER_OTLP_PROTOCOL", value_parser = parse_otlp_protocol)]
    pub otel_exporter_otlp_protocol: Option<String>,
    /// The traces' OTLP protocol: `http/protobuf` only.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", value_name = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", value_parser = parse_otlp_protocol)]
    pub otel_exporter_otlp_traces_protocol: Option<String>,
    /// `none` turns trace export off whatever the endpoint says; `otlp` is the only exporter.
    #[arg(long, env = "OTEL_TRACES_EXPORTER", value_name = "OTEL_TRACES_EXPORTER", value_parser = parse_traces_exporter)]
    pub otel_traces_exporter: Option<String>,

    /// The settings given as a variable or a flag (not left at their defaults), by field name.
    #[arg(skip)]
    pub explicit: BTreeSet<String>,
}

/// The settings alone, as a command line: what [`Config::from_args`] parses (the binary's
/// grammar, with its subcommands, is `cli/`'s).
#[derive(Parser)]
#[command(
    name = "chatd",
    version,
    about = "Self-hosted backend for chat and web search with LLMs"
)]
struct Settings {
    #[command(flatten)]
    config: Config,
}

impl Config {
    /// The settings of a command line without subcommands (tests, benchmarks, tools), and the
    /// environment, checked as [`Config::finish`] checks them.
    pub fn from_args<I, T>(args: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = Settings::command()
            .try_get_matches_from(args)
            .map_err(ConfigError::from_clap)?;
        let settings = Settings::from_arg_matches(&matches).map_err(ConfigError::from_clap)?;
        settings.config.finish(&matches)
    }

    /// The settings as parsed into `matches`, completed and checked: which were given as a
    /// variable or a flag (not left at their defaults), empty values as unset, then the rules
    /// that span variables. `Err` holds the one line to print before exiting.
    pub fn finish(mut self, matches: &clap::ArgMatches) -> Result<Self, ConfigError> {
        self.explicit = matches
            .ids()
            .filter(|id| {
                matches!(
                    matches.value_source(id.as_str()),
                    Some(
                        clap::parser::ValueSource::CommandLine
                            | clap::parser::ValueSource::EnvVariable
                    )
                )
            })
            .map(|id| id.to_string())
            .collect();
        self.drop_empty_values();
        self.check()?;
        Ok(self)
    }

    /// `KEY=` in an env file means "not set": an empty key or optional name counts as absent
    /// (the contract: the agent provider is listed for "any non-empty" AGENT_API_KEY).
    fn drop_empty_values(&mut self) {
        for secret in [
            &mut self.provider_a_api_key,
            &mut self.provider_b_api_key,
            &mut self.provider_c_api_key,
            &mut self.agent_api_key,
            &mut self.engine_a_api_key,
            &mut self.chat_coding_ssh_private_key_b64,
            &mut self.chatd_secret_key,
        ] {
            if secret.as_ref().is_some_and(|s| s.0.trim().is_empty()) {
                *secret = None;
            }
        }
        for text in [
            &mut self.agent_model,
            &mut self.chat_coding_remote_host,
            &mut self.chat_coding_remote_user,
            &mut self.chat_coding_remote_workdir,
            &mut self.otel_exporter_otlp_endpoint,
            &mut self.otel_exporter_otlp_traces_endpoint,
            &mut self.otel_traces_exporter,
        ] {
            if text.as_deref().is_some_and(|s| s.trim().is_empty()) {
                *text = None;
            }
        }
    }

    fn check(&self) -> Result<(), ConfigError> {
        for (value, var) in [
            (
                &self.otel_exporter_otlp_endpoint,
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
            (
                &self.otel_exporter_otlp_traces_endpoint,
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            ),
        ] {
            if let Some(value) = value
                && let Err(rule) = parse_http_url(value)
            {
                return Err(ConfigError::Invalid(format!(
                    "{var}: invalid value {value:?}: {rule}"
                )));
            }
        }
        if self.chat_web_search_engine == WebSearchEngine::EngineB
            && self.engine_b_base_url.is_none()
        {
            return Err(ConfigError::Invalid(
                "CHAT_WEB_SEARCH_ENGINE: engine_b requires ENGINE_B_BASE_URL to be set".into(),
            ));
        }
        let host_missing = self.chat_coding_remote_host.is_none();
        for (enabled, var) in [
            (self.chat_coding_tool_enabled, "CHAT_CODING_TOOL_ENABLED"),
            (self.chat_shell_tool_enabled, "CHAT_SHELL_TOOL_ENABLED"),
        ] {
            if enabled && host_missing {
                return Err(ConfigError::Invalid(format!(
                    "{var}: true requires CHAT_CODING_REMOTE_HOST to be set"
                )));
            }
        }
        // The key is checked when a devbox tool will use it, so a bad deployment fails at once
        // rather than at the model's first command.
        if self.chat_coding_tool_enabled || self.chat_shell_tool_enabled {
            if let Some(path) = &self.chat_coding_ssh_key_path
                && let Err(e) = std::fs::File::open(path)
            {
                return Err(ConfigError::Invalid(format!(
                    "CHAT_CODING_SSH_KEY_PATH: cannot read {}: {e}",
                    path.display()
                )));
            }
            if let Some(b64) = &self.chat_coding_ssh_private_key_b64 {
                use base64::Engine as _;
                let decoded = base64::engine::general_purpose::STANDARD.decode(b64.0.trim());
                if decoded.map_or(true, |key| key.is_empty()) {
                    return Err(ConfigError::Invalid(
                        "CHAT_CODING_SSH_PRIVATE_KEY_B64: must be a base64-encoded private key"
                            .into(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether the setting of field `name` (`provider_a_base_url`) was given as a variable or a
    /// flag rather than left at its default.
    pub fn is_set(&self, name: &str) -> bool {
        self.explicit.contains(name)
    }

    pub fn token_mode(&self) -> bool {
        self.admin_token.is_some()
    }

    /// CHATD_PLUGIN_MEMORY_TOTAL_MIB, or its default: 4096, or half the memory this process may
    /// use when that is less (a small container must not be OOM-killed before the cap bites).
    pub fn plugin_memory_total_mib(&self) -> u64 {
        self.chatd_plugin_memory_total_mib.unwrap_or_else(|| {
            let half = usable_memory_bytes().map_or(u64::MAX, |bytes| (bytes / 2) >> 20);
            DEFAULT_PLUGIN_MEMORY_TOTAL_MIB.min(half).max(64)
        })
    }

    /// Where traces go (OTLP/HTTP), when they are exported: the traces endpoint as given, else
    /// the base endpoint with `/v1/traces`, as the OpenTelemetry specification says.
    pub fn otlp_traces_endpoint(&self) -> Option<String> {
        if self.otel_traces_exporter.as_deref() == Some("none") {
            return None;
        }
        if let Some(endpoint) = &self.otel_exporter_otlp_traces_endpoint {
            return Some(endpoint.trim().to_string());
        }
        let base = self.otel_exporter_otlp_endpoint.as_deref()?.trim();
        Some(format!("{}/v1/traces", base.trim_end_matches('/')))
    }
}

/// CHATD_PLUGIN_MEMORY_TOTAL_MIB's default on a machine with 8 GiB or more.
pub const DEFAULT_PLUGIN_MEMORY_TOTAL_MIB: u64 = 4096;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// One line naming the variable and the rule.
    #[error("{0}")]
    Invalid(String),
    /// `--help` or `--version`: clap's own text, printed as is, exit 0.
    #[error("{0}")]
    Exit(String),
}

impl ConfigError {
    /// The one line for a command line clap refused (help and version as `Exit`).
    pub fn from_clap(err: clap::Error) -> Self {
        match err.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                return ConfigError::Exit(err.render().to_string());
            }
            _ => {}
        }
        let var = match err.get(ContextKind::InvalidArg) {
            // value_name is the environment variable, so "--port <PORT>" names it.
            Some(ContextValue::String(arg)) => arg
                .split_once('<')
                .and_then(|(_, rest)| rest.split_once('>'))
                .map(|(name, _)| name.to_string())
                .unwrap_or_else(|| arg.clone()),
            _ => String::new(),
        };
        // A secret's value is never repeated (a short CHATD_SECRET_KEY is still most of one).
        let secret = Settings::command().get_arguments().any(|a| {
            a.is_hide_env_values_set()
                && a.get_value_names()
                    .is_some_and(|names| names.iter().any(|n| n.as_str() == var))
        });
        let value = match err.get(ContextKind::InvalidValue) {
            Some(ContextValue::String(_)) if secret => None,
            Some(ContextValue::String(v)) => Some(redact_userinfo(v)),
            _ => None,
        };
        let rule = match (err.kind(), std::error::Error::source(&err)) {
            (_, Some(source)) => source.to_string(),
            (ErrorKind::InvalidValue, _) => match err.get(ContextKind::ValidValue) {
                Some(ContextValue::Strings(valid)) => {
                    format!("must be one of {}", valid.join(", "))
                }
                _ => "invalid value".into(),
            },
            _ => {
                // Not a value problem (unknown flag and the like): clap's first line says it.
                let rendered = err.render().to_string();
                let first = rendered.lines().next().unwrap_or("invalid arguments");
                return ConfigError::Invalid(first.trim_start_matches("error: ").to_string());
            }
        };
        ConfigError::Invalid(match value {
            Some(v) if !var.is_empty() => format!("{var}: invalid value {v:?}: {rule}"),
            _ => format!("{var}: {rule}"),
        })
    }
}

/// `scheme://user:password@host/…` → `scheme://***@host/…`, so a URL's credentials never reach
/// stderr or the log (and the log collector behind it). A query that may carry a password
/// (`?password=…`) is dropped too.
pub(crate) fn redact_url(value: &str) -> String {
    let value = redact_userinfo(value);
    match value.split_once('?') {
        Some((base, query)) if query.to_ascii_lowercase().contains("password") => {
            format!("{base}?***")
        }
        _ => value,
    }
}

fn redact_userinfo(value: &str) -> String {
    if let Some((scheme, rest)) = value.split_once("://") {
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..authority_end].rfind('@') {
            return format!("{scheme}://***@{}", &rest[at + 1..]);
        }
        // A password holding an unescaped `/`, `?` or `#` ends the authority early, and the URL
        // does not parse: nothing after the scheme is shown.
        if rest.contains('@') && Url::parse(value).is_err() {
            return format!("{scheme}://***");
        }
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(args: &[&str]) -> String {
        match Config::from_args(std::iter::once("chatd").chain(args.iter().copied())) {
            Err(ConfigError::Invalid(line)) => line,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    fn ok(args: &[&str]) -> Config {
        Config::from_args(std::iter::once("chatd").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn allowed_hosts_are_a_list_of_names() {
        assert!(ok(&[]).exposure.chatd_allowed_hosts.is_empty());
        assert_eq!(
            ok(&["--chatd-allowed-hosts", "Chat.LAN, 192.168.1.5"])
                .exposure
                .chatd_allowed_hosts,
            vec!["chat.lan".to_string(), "192.168.1.5".to_string()]
        );
        assert!(
            err(&["--chatd-allowed-hosts", "http://chat.lan/"])
                .starts_with("CHATD_ALLOWED_HOSTS: invalid value")
        );
    }

    #[test]
    fn telemetry_settings_are_checked_and_the_traces_endpoint_follows_the_spec() {
        assert!(err(&["--log-format", "xml"]).starts_with("LOG_FORMAT: invalid value \"xml\""));
        assert!(err(&["--chatd-metrics", "yes"]).starts_with("CHATD_METRICS: invalid value"));
        assert_eq!(
            err(&["--otel-exporter-otlp-protocol", "grpc"]),
            r#"OTEL_EXPORTER_OTLP_PROTOCOL: invalid value "grpc": chatd exports OTLP as http/protobuf only"#
        );
        assert!(
            err(&["--otel-exporter-otlp-endpoint", "collector:4318"])
                .starts_with("OTEL_EXPORTER_OTLP_ENDPOINT: invalid value \"collector:4318\"")
        );
        assert_eq!(ok(&[]).otlp_traces_endpoint(), None);
        assert_eq!(ok(&[]).log_format, LogFormat::Text);
        assert_eq!(ok(&[]).chatd_metrics, MetricsAccess::On);
        let base = ["--otel-exporter-otlp-endpoint", "http://c:4318/"];
        assert_eq!(
            ok(&base).otlp_traces_endpoint().as_deref(),
            Some("http://c:4318/v1/traces")
        );
        let own = ["--otel-exporter-otlp-traces-endpoint", "http://t:1/x"];
        assert_eq!(
            ok(&[base[0], base[1], own[0], own[1]])
                .otlp_traces_endpoint()
                .as_deref(),
            Some("http://t:1/x")
        );
        let none = ["--otel-traces-exporter", "none"];
        assert_eq!(
            ok(&[base[0], base[1], none[0], none[1]]).otlp_traces_endpoint(),
            None
        );
        // `KEY=` means unset.
        assert_eq!(
            ok(&["--otel-exporter-otlp-endpoint", ""]).otlp_traces_endpoint(),
            None
        );
    }

    #[test]
    fn invalid_values_name_the_variable_and_rule() {
        assert_eq!(
            err(&["--port", "abc"]),
            r#"PORT: invalid value "abc": must be an integer from 0 to 65535"#
        );
        assert_eq!(
            err(&["--chat-max-tool-rounds", "0"]),
            r#"CHAT_MAX_TOOL_ROUNDS: invalid value "0": must be an integer of at least 1"#
        );
        assert_eq!(
            err(&["--chat-max-tool-rounds", "-1"]),
            r#"CHAT_MAX_TOOL_ROUNDS: invalid value "-1": must be an integer of at least 1"#
        );
        assert!(
            err(&["--chat-web-search-engine", "bing"])
                .starts_with("CHAT_WEB_SEARCH_ENGINE: invalid value \"bing\"")
        );
        assert!(err(&["--database-url", "mysql://x"]).starts_with("DATABASE_URL: invalid value"));
        assert!(err(&["--chat-web-search-engine", "engine_b"]).contains("ENGINE_B_BASE_URL"));
        let e = err(&["--chat-shell-tool-enabled", "true"]);
        assert!(e.starts_with("CHAT_SHELL_TOOL_ENABLED:"), "{e}");
        assert!(err(&["--chatd-allow-private-networks", "yes"]).contains("must be true or false"));
        assert!(!err(&["--port", "abc"]).contains('\n'));
        assert!(err(&["--admin-token", " "]).starts_with("ADMIN_TOKEN: must not be blank"));
        assert_eq!(
            err(&["--chatd-secret-key", "hunter2"]),
            "CHATD_SECRET_KEY: must be at least 32 characters (e.g. the output of `openssl rand \
             -base64 32`)"
        );
    }

    #[test]
    fn rejected_urls_do_not_echo_credentials() {
        let e = err(&["--database-url", "mysql://u:hunter2@db/chatd"]);
        assert!(!e.contains("hunter2"), "{e}");
        assert!(e.contains("mysql://***@db/chatd"), "{e}");
        assert_eq!(redact_userinfo("https://x/a@b"), "https://x/a@b");
        // A password with an unescaped `/` or `?` is still hidden.
        for typed in ["postgres://u:pa/ss@db/x", "postgres://u:p?ss@db/x"] {
            let shown = DatabaseUrl::Postgres(typed.into()).to_string();
            assert!(
                !shown.contains("pa/ss") && !shown.contains("p?ss"),
                "{shown}"
            );
        }
        let url = DatabaseUrl::Postgres("postgres://u:hunter2@db/chatd?password=x".into());
        assert_eq!(url.to_string(), "postgres://***@db/chatd?***");
        assert!(!format!("{url:?}").contains("hunter2"));
    }

    #[test]
    fn admin_token_is_trimmed() {
        let config = Config::from_args(["chatd", "--admin-token", " s3cret \n"]).unwrap();
        assert_eq!(config.admin_token.unwrap().expose(), "s3cret");
    }

    #[test]
    fn empty_keys_and_names_count_as_unset() {
        let config =
            Config::from_args(["chatd", "--agent-api-key", "", "--agent-model", " "]).unwrap();
        assert!(config.agent_api_key.is_none());
        assert!(config.agent_model.is_none());
    }

    #[test]
    fn every_setting_has_help_text() {
        let command = Settings::command();
        let missing: Vec<String> = command
            .get_arguments()
            .filter(|a| !a.is_hide_set() && a.get_help().is_none())
            .map(|a| a.get_id().to_string())
            .collect();
        assert!(missing.is_empty(), "no --help text: {missing:?}");
        assert!(command.get_arguments().count() > 45);
    }

    #[test]
    fn the_database_timeout_is_bounded() {
        assert!(err(&["--database-timeout-secs", "0"]).starts_with("DATABASE_TIMEOUT_SECS"));
    }

    #[test]
    fn secrets_are_redacted_in_debug() {
        let config = Config::from_args(["chatd", "--admin-token", "hunter2"]).unwrap();
        assert!(!format!("{config:?}").contains("hunter2"));
        assert_eq!(config.admin_token.unwrap().expose(), "hunter2");
    }
}
