//! The plugin host's built-in table, as data: the contract's four providers, the six services of
//! chatd's bundled plugins with the environment variables that configure them, the search
//! plugin and the devbox tools. The one file of the host that names a bundled plugin; everything
//! else looks them up here.
//!
//! A default provider is served by the plugin of its id (bundled, or a PLUGINS_DIR plugin that
//! replaces it), on the service its manifest names (`provider.service`); what it needs (tools,
//! the tool-loop instruction, attachments) its plugin declares in its profile.

use reqwest::header::HeaderName;

use crate::config::names::Auth;
use crate::config::{Config, Secret, WebSearchEngine};
use crate::egress::services::{Owner, Service, SetBy};
use crate::plugins::manifest::Kind;

/// A provider the contract names.
pub struct DefaultProvider {
    pub id: &'static str,
    /// The variable of its key.
    pub key_var: &'static str,
    /// Its key, as configured.
    pub key: fn(&Config) -> Option<&Secret>,
    /// The built-in service that is its upstream (its plugin's `provider.service`): the
    /// configuration file may give the key there when the variable is unset.
    pub service: &'static str,
    /// Served only while its key is set (the agent: "any non-empty value"); the others are
    /// listed without one, with an error naming the variable.
    pub only_with_key: bool,
}

/// The contract's providers, in its order.
pub const PROVIDERS: &[DefaultProvider] = &[
    DefaultProvider {
        id: "provider_a",
        key_var: "PROVIDER_A_API_KEY",
        key: |config| config.provider_a_api_key.as_ref(),
        service: "provider_a",
        only_with_key: false,
    },
    DefaultProvider {
        id: "provider_b",
        key_var: "PROVIDER_B_API_KEY",
        key: |config| config.provider_b_api_key.as_ref(),
        service: "provider_b",
        only_with_key: false,
    },
    DefaultProvider {
        id: "provider_c",
        key_var: "PROVIDER_C_API_KEY",
        key: |config| config.provider_c_api_key.as_ref(),
        service: "provider_c",
        only_with_key: false,
    },
    DefaultProvider {
        id: "provider_agent",
        key_var: "AGENT_API_KEY",
        key: |config| config.agent_api_key.as_ref(),
        service: "agent",
        only_with_key: true,
    },
];

/// The provider of title suggestions (the contract: a fixed small model of it, TITLE_MODEL).
pub const TITLE_PROVIDER: &str = "provider_a";

/// The provider whose model list AGENT_MODEL joins.
pub const AGENT_MODEL_PROVIDER: &str = "provider_agent";

/// Whether `id` is one of the contract's providers.
pub fn is_default_provider(id: &str) -> bool {
    PROVIDERS.iter().any(|p| p.id == id)
}

/// The plugin that serves search mode. Operators may replace it by dropping a plugin with this
/// id in PLUGINS_DIR; the `engine_a` service and its key are granted to this id only.
pub const SEARCH_PLUGIN: &str = "search_engine_a";

/// A devbox tool: its plugin id, the variable that enables it, and its switch and time limit as
/// configured.
pub struct DevboxTool {
    pub id: &'static str,
    pub enable_var: &'static str,
    pub enabled: fn(&Config) -> bool,
    pub limit: fn(&Config) -> std::time::Duration,
}

/// The tools that may use SSH to the devbox (the only plugins that may).
pub const DEVBOX_TOOLS: &[DevboxTool] = &[
    DevboxTool {
        id: "coding_exec",
        enable_var: "CHAT_CODING_TOOL_ENABLED",
        enabled: |config| config.chat_coding_tool_enabled,
        limit: |config| std::time::Duration::from_millis(config.chat_coding_exec_timeout_ms),
    },
    DevboxTool {
        id: "shell_exec",
        enable_var: "CHAT_SHELL_TOOL_ENABLED",
        enabled: |config| config.chat_shell_tool_enabled,
        limit: |config| std::time::Duration::from_millis(config.chat_shell_exec_timeout_ms),
    },
];

/// The internal system instruction of the tool loop (the contract's "internal system instruction";
/// it names the bundled tools), sent first when tools are enabled, to the providers whose profile
/// asks for it.
pub const TOOL_LOOP_INSTRUCTION: &str = "You can call tools to answer. Use web_search for \
    current events and facts you are not sure of, and fetch_url to read a page in full. Call a \
    tool only when it helps; when you have enough, answer directly. When an answer relies on \
    web pages, cite their URLs. If a tool fails, say so briefly and continue with what you have.";

/// The six built-in services with the operator's values: each provider's upstream, and the two
/// search engines.
pub fn services(config: &Config) -> Vec<Service> {
    let builtin = |name: &str,
                   base_url_var: &'static str,
                   key_var: Option<&'static str>,
                   base_url: Option<url::Url>,
                   key: Option<Secret>,
                   auth: Auth,
                   owners: Vec<Owner>| Service {
        name: name.to_string(),
        base_url,
        key,
        auth,
        headers: Vec::new(),
        owners,
        base_url_key: base_url_var.to_ascii_lowercase(),
        set_by: SetBy::Variables {
            base_url: base_url_var,
            key: key_var,
        },
    };
    let x_api_key = || Auth::Header(HeaderName::from_static("x-api-key"));
    vec![
        builtin(
            "provider_a",
            "PROVIDER_A_BASE_URL",
            Some("PROVIDER_A_API_KEY"),
            Some(config.provider_a_base_url.clone()),
            config.provider_a_api_key.clone(),
            Auth::Bearer,
            vec![Owner::of_kind("provider_a", Kind::Provider.as_str())],
        ),
        builtin(
            "provider_b",
            "PROVIDER_B_BASE_URL",
            Some("PROVIDER_B_API_KEY"),
            Some(config.provider_b_base_url.clone()),
            config.provider_b_api_key.clone(),
            x_api_key(),
            vec![Owner::of_kind("provider_b", Kind::Provider.as_str())],
        ),
        builtin(
            "provider_c",
            "PROVIDER_C_BASE_URL",
            Some("PROVIDER_C_API_KEY"),
            Some(config.provider_c_base_url.clone()),
            config.provider_c_api_key.clone(),
            Auth::Bearer,
            vec![Owner::of_kind("provider_c", Kind::Provider.as_str())],
        ),
        builtin(
            "agent",
            "AGENT_API_BASE_URL",
            Some("AGENT_API_KEY"),
            Some(config.agent_api_base_url.clone()),
            config.agent_api_key.clone(),
            Auth::Bearer,
            vec![Owner::of_kind("provider_agent", Kind::Provider.as_str())],
        ),
        builtin(
            "engine_a",
            "ENGINE_A_BASE_URL",
            Some("ENGINE_A_API_KEY"),
            Some(config.engine_a_base_url.clone()),
            config.engine_a_api_key.clone(),
            x_api_key(),
            vec![
                Owner::of_kind("web_search", Kind::Tool.as_str()),
                Owner::of_kind("search_engine_a", Kind::Search.as_str()),
            ],
        ),
        builtin(
            "engine_b",
            "ENGINE_B_BASE_URL",
            None,
            config.engine_b_base_url.clone(),
            None,
            Auth::None,
            vec![Owner::of_kind("web_search", Kind::Tool.as_str())],
        ),
    ]
}

/// Whether `name` is one of the built-in services (the configuration file may add owners to one,
/// and fill in what its variables leave unset).
pub fn is_builtin_service(name: &str) -> bool {
    BUILTIN_SERVICES.contains(&name)
}

const BUILTIN_SERVICES: &[&str] = &[
    "provider_a",
    "provider_b",
    "provider_c",
    "agent",
    "engine_a",
    "engine_b",
];

/// The bundled interpreter (`plugins/python`): its plugin id, the only one the `files` grant
/// goes to (`capabilities/files`), and the tool it provides (`tools/python`).
pub const INTERPRETER: &str = "python_interpreter";
pub const INTERPRETER_TOOL: &str = "python";

/// The host settings a plugin may ask to read (`grants.config`), with their values.
pub fn operator(config: &Config) -> Vec<(&'static str, Option<String>)> {
    vec![
        (
            "chat_web_search_engine",
            Some(
                match config.chat_web_search_engine {
                    WebSearchEngine::EngineA => "engine_a",
                    WebSearchEngine::EngineB => "engine_b",
                }
                .to_string(),
            ),
        ),
        ("agent_model", config.agent_model.clone()),
        ("title_model", Some(config.title_model.clone())),
    ]
}
