//! The operator's configuration file (`--config PATH` / CHATD_CONFIG, TOML): providers declared
//! without code, services for plugins, plugin settings. Optional: without one, chatd runs on its
//! environment variables alone, exactly as before.
//!
//! ```toml
//! [providers.groq]                  # a provider id, no code
//! adapter = "chat_completions"      # a loaded provider's adapter name, or a provider plugin id
//! base_url = "https://api.groq.com/openai/v1"
//! api_key = "${GROQ_API_KEY}"       # read from chatd's environment when the file is loaded
//! models = ["llama-3.3-70b-versatile"]  # optional: else the upstream's list
//! display_name = "Groq"             # optional: the pickers' label (else the id)
//! featured_models = ["llama-3.3-70b-versatile"]  # optional: listed first by the pickers
//!
//! [services.weather]                # an upstream and its secret, for the plugins listed
//! base_url = "https://api.weather.example"
//! api_key = "${WEATHER_API_KEY}"
//! auth = "header:x-api-key"         # bearer (default), header:NAME, none
//! plugins = ["weather"]
//!
//! [plugins.weather.settings]        # non-secret settings the plugin declares and reads
//! units = "metric"
//!
//! [mcp.github]                      # a remote MCP server's tools (`mcp.rs`)
//! url = "https://api.example.com/mcp"
//!
//! [retry]                           # provider turns refused before answering (`retry.rs`)
//! attempts = 3
//!
//! [pricing."provider_a/*"]          # what a model's tokens cost (`pricing.rs`)
//! input_per_million = 0.4
//!
//! [auth.oidc]                       # signing in with an identity provider (`oidc.rs`)
//! issuer = "https://id.example.com"
//! client_id = "chatd"
//! ```
//!
//! Loading is all or nothing: the text is parsed, every `${VAR}` is read from the environment (an
//! unset one is an error naming it), and every table is checked, before anything is used. An
//! error is one line naming the key and the rule, never a value. What can only be checked
//! against the loaded plugins (an adapter's name, a setting's declared type) is checked where
//! the file is applied (`plugins::operator`).

use std::collections::BTreeMap;
use std::path::Path;

use reqwest::header::{HeaderName, HeaderValue};
use serde::Deserialize;
use url::Url;

use super::Secret;
use super::names::{Auth, check_id};
use super::values::{api_key, base_url, headers};

/// The most models a declared provider may list.
const MAX_MODELS: usize = 1_000;
/// The most models a declared provider may feature, and its display name's longest length.
const MAX_FEATURED: usize = 50;
const MAX_DISPLAY_NAME: usize = 64;

/// A file that cannot be used: one line, naming the key and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct FileError {
    pub path: String,
    pub reason: String,
}

/// A validated configuration file.
#[derive(Clone, Debug, Default)]
pub struct FileConfig {
    /// `[providers.ID]`, by id.
    pub providers: BTreeMap<String, DeclaredProvider>,
    /// `[services.NAME]`, by name.
    pub services: BTreeMap<String, DeclaredService>,
    /// `[plugins.ID.settings]`: plugin id → setting → value.
    pub plugin_settings: BTreeMap<String, BTreeMap<String, SettingValue>>,
    /// `[retry]`: provider turns tried again, and fallbacks.
    pub retry: super::retry::RetrySettings,
    /// `[mcp.NAME]`, by name.
    pub mcp: BTreeMap<String, super::mcp::DeclaredMcp>,
    /// `[python]`: the bundled interpreter's settings given here.
    pub python: super::python::FilePython,
    /// `[pricing."PROVIDER/MODEL"]`: what models cost (`pricing.rs`).
    pub pricing: std::sync::Arc<super::pricing::Pricing>,
    /// `[auth.oidc]`: signing in with an OpenID Connect provider (`oidc.rs`).
    pub oidc: Option<std::sync::Arc<super::oidc::Oidc>>,
    /// Accepted, but worth a log line (a literal secret).
    pub warnings: Vec<String>,
}

/// A provider the operator declared: an adapter's component under its own id, with its own
/// upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredProvider {
    pub id: String,
    pub adapter: String,
    pub base_url: Url,
    pub api_key: Option<Secret>,
    /// `None`: the way the adapter's upstream expects (its profile).
    pub auth: Option<Auth>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// A fixed model list; `None`: asked of the upstream.
    pub models: Option<Vec<String>>,
    /// What clients show instead of the id (`GET /v1/models`' `displayName`).
    pub display_name: Option<String>,
    /// The models clients list first, in this order (`featuredModels`); the operator's choice
    /// among the listed ones, not a restriction.
    pub featured_models: Vec<String>,
}

/// A service the operator declared (or the file's values for a built-in one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredService {
    pub name: String,
    /// Required for a new service; for a built-in one, in place of its variable when that is
    /// not set.
    pub base_url: Option<Url>,
    pub api_key: Option<Secret>,
    pub auth: Option<Auth>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The plugin ids that may be granted it (for a built-in service: in addition to its own).
    pub plugins: Vec<String>,
}

/// A plugin setting's value as written.
#[derive(Clone, Debug, PartialEq)]
pub enum SettingValue {
    String(String),
    Integer(i64),
    Float(f64),
    Boolean(bool),
}

impl SettingValue {
    /// Its TOML type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            SettingValue::String(_) => "string",
            SettingValue::Integer(_) => "integer",
            SettingValue::Float(_) => "number",
            SettingValue::Boolean(_) => "boolean",
        }
    }

    /// As the plugin reads it through `config.get`.
    pub fn render(&self) -> String {
        match self {
            SettingValue::String(s) => s.clone(),
            SettingValue::Integer(n) => n.to_string(),
            SettingValue::Float(x) => x.to_string(),
            SettingValue::Boolean(b) => b.to_string(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    providers: BTreeMap<String, RawProvider>,
    #[serde(default)]
    services: BTreeMap<String, RawService>,
    #[serde(default)]
    plugins: BTreeMap<String, RawPlugin>,
    #[serde(default)]
    retry: super::retry::RawRetry,
    #[serde(default)]
    mcp: BTreeMap<String, super::mcp::RawMcp>,
    #[serde(default)]
    python: super::python::RawPython,
    #[serde(default)]
    pricing: BTreeMap<String, super::pricing::RawPrice>,
    #[serde(default)]
    auth: super::oidc::RawAuth,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProvider {
    adapter: String,
    base_url: String,
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    models: Option<Vec<String>>,
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    featured_models: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawService {
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    plugins: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlugin {
    #[serde(default)]
    settings: toml::Table,
}

impl FileConfig {
    /// Reads and checks the file at `path`, with `${VAR}` from chatd's environment.
    pub fn load(path: &Path) -> Result<Self, FileError> {
        let text = std::fs::read_to_string(path).map_err(|e| FileError {
            path: path.display().to_string(),
            reason: format!("cannot read it: {e}"),
        })?;
        Self::parse(&text, &|name| std::env::var(name).ok()).map_err(|reason| FileError {
            path: path.display().to_string(),
            reason,
        })
    }

    /// Parses and checks `text`; `env` answers `${VAR}`. The error names the key and the rule.
    pub fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e
                .span()
                .map(|span| text[..span.start.min(text.len())].lines().count().max(1));
            let message = e.message().replace('\n', " ");
            match line {
                Some(line) => format!("line {line}: {message}"),
                None => message,
            }
        })?;
        let mut literal_secrets = Vec::new();
        expand_table(&mut table, "", env, &mut literal_secrets)?;
        let raw: RawFile =
            serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
                let path = e.path().to_string();
                let inner = without_values(&e.into_inner().message().replace('\n', " "));
                if path == "." {
                    inner
                } else {
                    format!("{path}: {inner}")
                }
            })?;
        let mut file = FileConfig {
            warnings: literal_secrets
                .into_iter()
                .map(|key| {
                    format!("{key}: a literal secret in the file; prefer \"${{VAR}}\" from the environment")
                })
                .collect(),
            ..FileConfig::default()
        };
        for (id, raw) in raw.providers {
            let provider = declared_provider(&id, raw)?;
            file.providers.insert(id, provider);
        }
        for (name, raw) in raw.services {
            let service = declared_service(&name, raw)?;
            file.services.insert(name, service);
        }
        for (id, raw) in raw.plugins {
            check_id(&format!("plugins.{id}"), &id)?;
            let mut settings = BTreeMap::new();
            for (name, value) in raw.settings {
                let key = format!("plugins.{id}.settings.{name}");
                let value = match value {
                    toml::Value::String(s) => SettingValue::String(s),
                    toml::Value::Integer(n) => SettingValue::Integer(n),
                    toml::Value::Float(x) => SettingValue::Float(x),
                    toml::Value::Boolean(b) => SettingValue::Boolean(b),
                    _ => return Err(format!("{key}: must be a string, a number or a boolean")),
                };
                settings.insert(name, value);
            }
            file.plugin_settings.insert(id, settings);
        }
        file.retry = raw.retry.check()?;
        file.python = raw.python.check()?;
        file.pricing = std::sync::Arc::new(super::pricing::check(raw.pricing)?);
        file.oidc = super::oidc::check(raw.auth)?.map(std::sync::Arc::new);
        for (name, raw) in raw.mcp {
            let server = super::mcp::declared(&name, raw)?;
            if server.insecure_key {
                file.warnings.push(format!(
                    "mcp.{name}: its key goes over plain http to {} (allow_insecure = true)",
                    server.url.host_str().unwrap_or_default()
                ));
            }
            file.mcp.insert(name, server);
        }
        super::mcp::one_metadata_document_each(&file.mcp)?;
        Ok(file)
    }
}

/// serde's message without the values it quotes (`invalid type: string "…"`): after `${VAR}`
/// expansion a misplaced value may be a key, and these messages go to the log.
fn without_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut quoted = false;
    for c in message.chars() {
        match (c, quoted) {
            ('"', false) => {
                quoted = true;
                out.push('…');
            }
            ('"', true) => quoted = false,
            (c, false) => out.push(c),
            (_, true) => {}
        }
    }
    out
}

fn declared_provider(id: &str, raw: RawProvider) -> Result<DeclaredProvider, String> {
    let key = format!("providers.{id}");
    check_id(&key, id)?;
    let adapter = raw.adapter.trim().to_string();
    if adapter.is_empty() {
        return Err(format!("{key}.adapter: must name an adapter"));
    }
    let models = raw
        .models
        .map(|models| {
            model_ids(
                &format!("{key}.models"),
                &models,
                MAX_MODELS,
                "omit it to ask the upstream",
            )
        })
        .transpose()?;
    let featured_models = raw
        .featured_models
        .map(|models| {
            model_ids(
                &format!("{key}.featured_models"),
                &models,
                MAX_FEATURED,
                "or omit it",
            )
        })
        .transpose()?
        .unwrap_or_default();
    let display_name = match raw.display_name.as_deref().map(str::trim) {
        None => None,
        Some(name) if !name.is_empty() && name.chars().count() <= MAX_DISPLAY_NAME => {
            Some(name.to_string())
        }
        Some(_) => {
            return Err(format!(
                "{key}.display_name: must be non-blank and at most {MAX_DISPLAY_NAME} characters"
            ));
        }
    };
    Ok(DeclaredProvider {
        id: id.to_string(),
        adapter,
        base_url: base_url(&format!("{key}.base_url"), &raw.base_url)?,
        api_key: api_key(raw.api_key),
        auth: raw
            .auth
            .map(|a| Auth::parse(&a).map_err(|e| format!("{key}.auth: {e}")))
            .transpose()?,
        headers: headers(&key, raw.headers)?,
        models,
        display_name,
        featured_models,
    })
}

/// A list of 1 to `max` model ids at `key`, trimmed, each once.
fn model_ids(key: &str, models: &[String], max: usize, hint: &str) -> Result<Vec<String>, String> {
    if models.is_empty() || models.len() > max {
        return Err(format!("{key}: must list 1 to {max} models ({hint})"));
    }
    let mut kept: Vec<String> = Vec::new();
    for (i, model) in models.iter().enumerate() {
        let model = model.trim();
        if model.is_empty() || model.chars().count() > 256 {
            return Err(format!(
                "{key}[{i}]: must be a non-blank model id of at most 256 characters"
            ));
        }
        if !kept.iter().any(|m| m == model) {
            kept.push(model.to_string());
        }
    }
    Ok(kept)
}

fn declared_service(name: &str, raw: RawService) -> Result<DeclaredService, String> {
    let key = format!("services.{name}");
    check_id(&key, name)?;
    for (i, plugin) in raw.plugins.iter().enumerate() {
        check_id(&format!("{key}.plugins[{i}]"), plugin)?;
    }
    Ok(DeclaredService {
        name: name.to_string(),
        base_url: raw
            .base_url
            .map(|url| base_url(&format!("{key}.base_url"), &url))
            .transpose()?,
        api_key: api_key(raw.api_key),
        auth: raw
            .auth
            .map(|a| Auth::parse(&a).map_err(|e| format!("{key}.auth: {e}")))
            .transpose()?,
        headers: headers(&key, raw.headers)?,
        plugins: raw.plugins,
    })
}

/// Replaces every `${VAR}` in the table's strings with the environment's value; `prefix` is the
/// table's key path. Keys named `api_key` holding a literal (no `${`) are collected in
/// `literal_secrets`.
fn expand_table(
    table: &mut toml::Table,
    prefix: &str,
    env: &dyn Fn(&str) -> Option<String>,
    literal_secrets: &mut Vec<String>,
) -> Result<(), String> {
    for (name, value) in table.iter_mut() {
        let key = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        expand_value(value, &key, env, literal_secrets, name == "api_key")?;
    }
    Ok(())
}

fn expand_value(
    value: &mut toml::Value,
    key: &str,
    env: &dyn Fn(&str) -> Option<String>,
    literal_secrets: &mut Vec<String>,
    is_secret: bool,
) -> Result<(), String> {
    match value {
        toml::Value::String(text) => {
            if is_secret && !text.contains("${") && !text.trim().is_empty() {
                literal_secrets.push(key.to_string());
            }
            *text = expand(text, env).map_err(|e| format!("{key}: {e}"))?;
        }
        toml::Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                expand_value(item, &format!("{key}[{i}]"), env, literal_secrets, false)?;
            }
        }
        toml::Value::Table(table) => expand_table(table, key, env, literal_secrets)?,
        _ => {}
    }
    Ok(())
}

/// `text` with each `${NAME}` replaced by `env(NAME)`; `$$` is a literal `$`.
fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body.find('}').ok_or("a \"${\" has no closing \"}\"")?;
            let name = &body[..end];
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!("${{{name}}} is not a variable name"));
            }
            let value = env(name).ok_or_else(|| format!("${{{name}}}: {name} is not set"))?;
            out.push_str(&value);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "GROQ_API_KEY" => Some("gsk-1".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn parse(text: &str) -> Result<FileConfig, String> {
        FileConfig::parse(text, &env)
    }

    #[test]
    fn the_issue_example_parses() {
        let file = parse(
            r#"
[providers.groq]
adapter = "chat_completions"
base_url = "https://api.groq.com/openai/v1"
api_key = "${GROQ_API_KEY}"
models = ["llama-3.3-70b-versatile"]
display_name = " Groq (fast) "
featured_models = ["b", "a", "b"]

[services.weather]
base_url = "https://api.weather.example"
api_key = "literal-key"
auth = "header:x-api-key"
plugins = ["weather"]

[plugins.weather.settings]
units = "metric"
days = 3
"#,
        )
        .unwrap();
        let groq = &file.providers["groq"];
        assert_eq!(groq.adapter, "chat_completions");
        assert_eq!(groq.api_key.as_ref().unwrap().expose(), "gsk-1");
        assert_eq!(groq.models.as_deref().unwrap(), ["llama-3.3-70b-versatile"]);
        assert_eq!(groq.display_name.as_deref(), Some("Groq (fast)"));
        assert_eq!(groq.featured_models, ["b", "a"]);
        assert_eq!(groq.auth, None);
        let weather = &file.services["weather"];
        assert_eq!(
            weather.auth,
            Some(Auth::Header(HeaderName::from_static("x-api-key")))
        );
        assert_eq!(weather.plugins, ["weather"]);
        assert_eq!(
            file.plugin_settings["weather"]["days"],
            SettingValue::Integer(3)
        );
        assert_eq!(file.warnings.len(), 1);
        assert!(file.warnings[0].starts_with("services.weather.api_key: a literal secret"));
        assert!(!file.warnings[0].contains("literal-key"));
        assert!(parse("").unwrap().providers.is_empty());
    }

    #[test]
    fn errors_name_the_key_and_the_rule_and_never_a_value() {
        for (text, expected) in [
            (
                "[providers.groq]\nadapter = 1\nbase_url = \"x\"",
                "providers.groq.adapter: invalid type",
            ),
            (
                "[providers.groq]\nadaptr = \"a\"\nbase_url = \"http://h\"",
                "providers.groq.adaptr: unknown field `adaptr`",
            ),
            (
                "[providers.groq]\nadapter = \"a\"\nbase_url = \"ftp://h\"",
                "providers.groq.base_url: must be an absolute http(s) URL",
            ),
            (
                "[providers.groq]\nadapter = \"a\"\nbase_url = \"http://h\"\napi_key = \"${NOPE}\"",
                "providers.groq.api_key: ${NOPE}: NOPE is not set",
            ),
            (
                "[providers.groq]\nadapter = \"a\"\nbase_url = \"http://h\"\nmodels = []",
                "providers.groq.models: must list 1 to",
            ),
            (
                "[providers.Groq]\nadapter = \"a\"\nbase_url = \"http://h\"",
                "providers.Groq: the name must match",
            ),
            (
                "[providers.g]\nadapter = \"a\"\nbase_url = \"http://h\"\ndisplay_name = \" \"",
                "providers.g.display_name: must be non-blank and at most 64 characters",
            ),
            (
                "[providers.g]\nadapter = \"a\"\nbase_url = \"http://h\"\nfeatured_models = [\"\"]",
                "providers.g.featured_models[0]: must be a non-blank model id",
            ),
            (
                "[providers.g]\nadapter = \"a\"\nbase_url = \"http://h\"\nauth = \"basic\"",
                "providers.g.auth: must be bearer, header:NAME, query:NAME or none",
            ),
            (
                "[providers.g]\nadapter = \"a\"\nbase_url = \"http://h\"\nheaders = { host = \"x\" }",
                "providers.g.headers.host: set by the host",
            ),
            (
                "[plugins.w.settings]\nlist = [1]",
                "plugins.w.settings.list: must be a string, a number or a boolean",
            ),
            ("[frontend]\nx = 1", "unknown field `frontend`"),
            ("[providers.g\nadapter = 1", "line 1:"),
            (
                "[providers.g]\nadapter = \"a\"\nbase_url = \"http://${EMPTY\"",
                "providers.g.base_url: a \"${\" has no closing",
            ),
        ] {
            let err = parse(text).unwrap_err();
            assert!(
                err.starts_with(expected) || err.contains(expected),
                "{text:?} → {err}"
            );
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn a_misplaced_secret_is_not_echoed() {
        for text in [
            "[providers.g]\nadapter = \"a\"\nbase_url = \"http://h\"\nmodels = \"${GROQ_API_KEY}\"",
            "[providers.g]\nadapter = \"a\"\nbase_url = \"http://h\"\nauth = \"${GROQ_API_KEY}\"",
            "[providers.g]\nadapter = \"a\"\nbase_url = \"${GROQ_API_KEY}\"",
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.starts_with("providers.g."), "{err}");
            assert!(!err.contains("gsk-1"), "{err}");
        }
    }

    #[test]
    fn variables_expand_anywhere_and_dollars_escape() {
        assert_eq!(expand("a${GROQ_API_KEY}b", &env).unwrap(), "agsk-1b");
        assert_eq!(expand("$$5 and $x", &env).unwrap(), "$5 and $x");
        assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
        assert!(expand("${1X}", &env).is_err());
        // An empty key is no key.
        let file = parse(
            "[providers.ollama]\nadapter = \"chat_completions\"\nbase_url = \"http://127.0.0.1:11434/v1\"\napi_key = \"${EMPTY}\"",
        )
        .unwrap();
        assert!(file.providers["ollama"].api_key.is_none());
        assert!(file.warnings.is_empty());
    }

    use super::super::retry::{Fallback, RetryPolicy, RetrySettings};
    use std::time::Duration;

    fn parse_retry(text: &str) -> Result<RetrySettings, String> {
        FileConfig::parse(text, &|_| None).map(|f| f.retry)
    }

    #[test]
    fn retry_defaults_apply_to_every_provider_and_a_provider_overrides_them() {
        let none = parse_retry("").unwrap();
        assert_eq!(none.policy("provider_a"), RetryPolicy::default());
        let file = parse_retry(
            "[retry]\nattempts = 2\nmax_wait_ms = 500\n\
             [retry.providers.provider_a]\nattempts = 5\n\
             fallback = { provider = \"provider_c\", model = \" m \" }\n",
        )
        .unwrap();
        assert_eq!(file.policy("provider_b").attempts, 2);
        let a = file.policy("provider_a");
        assert_eq!(a.attempts, 5);
        assert_eq!(a.max_wait, Duration::from_millis(500));
        assert_eq!(
            a.fallback,
            Some(Fallback {
                provider: "provider_c".into(),
                model: "m".into()
            })
        );
    }

    #[test]
    fn retry_bad_values_name_their_key() {
        let cases = [
            (
                "[retry]\nattempts = 0",
                "retry.attempts: must be an integer from 1",
            ),
            (
                "[retry]\nmax_wait_ms = -1",
                "retry.max_wait_ms: must be an integer from 0",
            ),
            (
                "[retry.providers.provider_a]\nfallback = { provider = \"provider_a\", model = \"m\" }",
                "retry.providers.provider_a.fallback.provider: must be another provider",
            ),
            (
                "[retry.providers.provider_a]\nfallback = { provider = \"x\", model = \"\" }",
                "retry.providers.provider_a.fallback.model: must be a non-blank",
            ),
            ("[retry]\ntries = 3", "retry.tries: unknown field"),
        ];
        for (text, expected) in cases {
            let error = parse_retry(text).unwrap_err();
            assert!(error.starts_with(expected), "{text:?}: {error}");
        }
    }
}
