//! A plugin's manifest: who it is, which world it implements, what it asks to be granted, and
//! its limits. The operator's configuration decides what of the request is actually granted.

use serde::Deserialize;

use crate::config::names::is_name;

/// The WIT package this build speaks: the newest version, the one `/wit` holds.
pub const WIT_PACKAGE: &str = "chatd:plugin@0.1.4";
/// Every version a plugin may be built for, oldest first. A released version stays here and in
/// `wit/vX.Y.Z/`, frozen; the host links a component built for any of them (wasmtime matches an
/// import of `@0.1.0` with the host's `@0.1.4`, additive changes only within 0.1), which
/// `tests/api/wit_versions.rs` checks on a component built against `wit/v0.1.0/`.
pub const WIT_PACKAGES: [&str; 5] = [
    "chatd:plugin@0.1.0",
    "chatd:plugin@0.1.1",
    "chatd:plugin@0.1.2",
    "chatd:plugin@0.1.3",
    WIT_PACKAGE,
];

/// Memory a plugin instance may use when its manifest does not say.
pub const DEFAULT_MEMORY_MIB: u32 = 64;
/// The most memory a manifest may ask for.
pub const MAX_MEMORY_MIB: u32 = 1024;
/// A call's wall-clock limit when the manifest does not say.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The longest call limit a manifest may ask for (the coding tool's default is 10 minutes).
pub const MAX_TIMEOUT_MS: u64 = 15 * 60 * 1000;

/// Which world a plugin implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Provider,
    Tool,
    Search,
    /// Documents to text, for the library (WIT 0.1.3's `extractor` world).
    Extractor,
}

impl Kind {
    /// As manifests spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Provider => "provider",
            Kind::Tool => "tool",
            Kind::Search => "search",
            Kind::Extractor => "extractor",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// Unique id, `[a-z0-9_-]{1,64}`; a PLUGINS_DIR plugin with a bundled one's id replaces it.
    pub id: String,
    pub kind: Kind,
    /// The version it was built for: one of [`WIT_PACKAGES`].
    pub wit: String,
    /// A version string for operators (`chatd plugins list`).
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub grants: Grants,
    #[serde(default)]
    pub limits: Limits,
    /// What a provider plugin takes; only for `kind: provider`.
    #[serde(default)]
    pub provider: ProviderOptions,
    /// The settings the plugin reads through `config`, which the operator gives in
    /// `[plugins.ID.settings]`; only these are readable.
    #[serde(default)]
    pub settings: Vec<SettingSpec>,
}

/// A setting a plugin declares.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingSpec {
    /// `[a-z0-9_]{1,64}`; not a name the host gives itself (`base_url`, `…_base_url`, the host
    /// settings of `grants.config`).
    pub name: String,
    #[serde(rename = "type")]
    pub kind: SettingType,
    /// What it does, for operators (`chatd plugins list`).
    pub description: String,
    /// Its value when the operator gives none; `None`: unset (the plugin reads nothing).
    #[serde(default)]
    pub default: Option<serde_json::Value>,
}

/// The type of a declared setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SettingType {
    String,
    Integer,
    Number,
    Boolean,
}

impl SettingType {
    pub fn as_str(self) -> &'static str {
        match self {
            SettingType::String => "string",
            SettingType::Integer => "integer",
            SettingType::Number => "number",
            SettingType::Boolean => "boolean",
        }
    }
}

/// What a provider plugin says of how it takes a turn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderOptions {
    /// A turn's large values (image data, long texts) come as tokens that the host fills in
    /// as it sends the request body (`plugins/worlds/provider/references.rs`). For `codec-provider` components, whose
    /// request the host sends.
    #[serde(default)]
    pub references: bool,
    /// The service that is its upstream when it serves under its own id: granted as
    /// `grants.services` are, and its base URL readable as `base_url` too. When an operator runs
    /// it as the adapter of a declared provider, that provider's own upstream takes its place.
    #[serde(default)]
    pub service: Option<String>,
}

/// What the plugin asks for. Nothing is granted by default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Grants {
    /// Origins (`scheme://host[:port]`) the plugin may call.
    #[serde(default)]
    pub http: Vec<String>,
    /// Operator-configured upstreams by name (the built-in ones of `plugins/builtin.rs`, and the
    /// configuration file's `[services.NAME]`; see [`crate::plugins::services`]): the base URL's origin
    /// becomes reachable, its `…_base_url` setting readable, and the host adds the service's
    /// credential to requests to it. A service lists the plugin ids that may have it; another
    /// plugin asking for it, or a name no service has, does not load.
    #[serde(default)]
    pub services: Vec<String>,
    /// Any public address (fetch_url, web search); private ranges stay refused.
    #[serde(default)]
    pub public_web: bool,
    /// Non-secret settings the plugin may read through the `config` import.
    #[serde(default)]
    pub config: Vec<String>,
    /// Commands on the operator's devbox.
    #[serde(default)]
    pub ssh: bool,
    /// A session's own folder as its filesystem (`capabilities/files`): the bundled interpreter's
    /// grant, refused to every other plugin.
    #[serde(default)]
    pub files: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Limits {
    #[serde(default = "default_memory")]
    pub memory_mib: u32,
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_mib: DEFAULT_MEMORY_MIB,
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }
    }
}

fn default_memory() -> u32 {
    DEFAULT_MEMORY_MIB
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// A manifest that cannot be used; the message names the field and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid plugin manifest: {0}")]
pub struct ManifestError(pub String);

impl Manifest {
    pub fn parse(json: &str) -> Result<Self, ManifestError> {
        let manifest: Manifest =
            serde_json::from_str(json).map_err(|e| ManifestError(e.to_string()))?;
        manifest.check()?;
        Ok(manifest)
    }

    fn check(&self) -> Result<(), ManifestError> {
        if !is_name(&self.id, b"-") {
            return Err(ManifestError(format!(
                "id: {:?} must match [a-z0-9_-]{{1,64}}",
                self.id
            )));
        }
        if !WIT_PACKAGES.contains(&self.wit.as_str()) {
            return Err(ManifestError(format!(
                "wit: {:?} is not a version this chatd knows ({}); a newer chatd may load it",
                self.wit,
                WIT_PACKAGES.join(", ")
            )));
        }
        if self.provider != ProviderOptions::default() && self.kind != Kind::Provider {
            return Err(ManifestError(
                "provider: only a provider plugin's manifest has this section".into(),
            ));
        }
        if self.kind == Kind::Extractor && WIT_PACKAGES[..3].contains(&self.wit.as_str()) {
            return Err(ManifestError(
                "wit: an extractor is built for chatd:plugin@0.1.3 or newer (the version that \
                 added its world)"
                    .into(),
            ));
        }
        if self.kind == Kind::Extractor
            && (self.grants != Grants::default() || !self.settings.is_empty())
        {
            return Err(ManifestError(
                "grants: an extractor is granted nothing and reads no settings (its world \
                 imports only log): remove grants and settings"
                    .into(),
            ));
        }
        if !(1..=MAX_MEMORY_MIB).contains(&self.limits.memory_mib) {
            return Err(ManifestError(format!(
                "limits.memoryMib: must be 1 to {MAX_MEMORY_MIB}"
            )));
        }
        if !(1..=MAX_TIMEOUT_MS).contains(&self.limits.timeout_ms) {
            return Err(ManifestError(format!(
                "limits.timeoutMs: must be 1 to {MAX_TIMEOUT_MS}"
            )));
        }
        for (i, setting) in self.settings.iter().enumerate() {
            setting
                .check(&self.settings[..i])
                .map_err(|e| ManifestError(format!("settings[{i}]: {e}")))?;
        }
        for origin in &self.grants.http {
            let url = url::Url::parse(origin)
                .map_err(|e| ManifestError(format!("grants.http: {origin:?}: {e}")))?;
            let bare = matches!(url.scheme(), "http" | "https")
                && url.host().is_some()
                && url.path() == "/"
                && url.query().is_none()
                && url.username().is_empty();
            if !bare {
                return Err(ManifestError(format!(
                    "grants.http: {origin:?} must be an origin, scheme://host[:port]"
                )));
            }
        }
        Ok(())
    }
}

/// Settings the host itself gives under these names.
const RESERVED_SETTINGS: &[&str] = &[
    "base_url",
    "chat_web_search_engine",
    "agent_model",
    "title_model",
];

impl SettingSpec {
    fn check(&self, earlier: &[SettingSpec]) -> Result<(), String> {
        let name = &self.name;
        if !is_name(name, b"") {
            return Err(format!("name {name:?} must match [a-z0-9_]{{1,64}}"));
        }
        if RESERVED_SETTINGS.contains(&name.as_str()) || name.ends_with("_base_url") {
            return Err(format!("name {name:?} is one the host gives itself"));
        }
        if earlier.iter().any(|s| &s.name == name) {
            return Err(format!("{name} is declared twice"));
        }
        if self.description.trim().is_empty() {
            return Err(format!("{name} has no description"));
        }
        if let Some(default) = &self.default
            && !self.kind.admits_json(default)
        {
            return Err(format!(
                "{name}: the default is not of type {}",
                self.kind.as_str()
            ));
        }
        Ok(())
    }
}

impl SettingType {
    fn admits_json(self, value: &serde_json::Value) -> bool {
        match self {
            SettingType::String => value.is_string(),
            SettingType::Integer => value.is_i64(),
            SettingType::Number => value.is_number(),
            SettingType::Boolean => value.is_boolean(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_manifest_and_defaults() {
        let m = Manifest::parse(
            r#"{"id":"web_search","kind":"tool","wit":"chatd:plugin@0.1.0",
                "grants":{"http":["https://api.exa.ai"],"config":["engine"]},"limits":{"timeoutMs":5000}}"#,
        )
        .unwrap();
        assert_eq!(m.kind, Kind::Tool);
        assert_eq!(m.grants.http, ["https://api.exa.ai"]);
        assert!(!m.grants.public_web && !m.grants.ssh);
        assert_eq!(
            m.limits,
            Limits {
                memory_mib: DEFAULT_MEMORY_MIB,
                timeout_ms: 5000
            }
        );
    }

    #[test]
    fn names_the_wit_version_it_was_built_for() {
        for version in WIT_PACKAGES {
            let json = format!(r#"{{"id":"x","kind":"tool","wit":"{version}"}}"#);
            assert_eq!(Manifest::parse(&json).unwrap().wit, version);
        }
        let newer = r#"{"id":"x","kind":"tool","wit":"chatd:plugin@0.2.0"}"#;
        let why = Manifest::parse(newer).unwrap_err().to_string();
        assert!(
            why.contains("\"chatd:plugin@0.2.0\" is not a version this chatd knows")
                && why.contains(
                    "chatd:plugin@0.1.0, chatd:plugin@0.1.1, chatd:plugin@0.1.2, chatd:plugin@0.1.3, \
                     chatd:plugin@0.1.4"
                ),
            "{why}"
        );
    }

    #[test]
    fn refuses_what_it_cannot_honour() {
        let base = |extra: &str| {
            format!(r#"{{"id":"x","kind":"tool","wit":"chatd:plugin@0.1.0"{extra}}}"#)
        };
        for (json, expected) in [
            (
                r#"{"id":"Bad Id","kind":"tool","wit":"chatd:plugin@0.1.0"}"#.to_string(),
                "id:",
            ),
            (
                r#"{"id":"x","kind":"tool","wit":"chatd:plugin@9.0.0"}"#.to_string(),
                "wit:",
            ),
            (
                r#"{"id":"x","kind":"widget","wit":"chatd:plugin@0.1.0"}"#.to_string(),
                "unknown variant",
            ),
            (
                base(r#","grants":{"http":["https://x.test/path"]}"#),
                "grants.http",
            ),
            (base(r#","grants":{"sockets":true}"#), "unknown field"),
            (
                base(r#","settings":[{"name":"base_url","type":"string","description":"d"}]"#),
                "settings[0]: name \"base_url\" is one the host gives itself",
            ),
            (
                base(
                    r#","settings":[{"name":"days","type":"integer","description":"d","default":"3"}]"#,
                ),
                "settings[0]: days: the default is not of type integer",
            ),
            (
                base(r#","settings":[{"name":"days","type":"date","description":"d"}]"#),
                "unknown variant",
            ),
            (base(r#","limits":{"memoryMib":0}"#), "limits.memoryMib"),
            (
                r#"{"id":"x","kind":"extractor","wit":"chatd:plugin@0.1.2"}"#.to_string(),
                "wit: an extractor is built for chatd:plugin@0.1.3 or newer",
            ),
            (
                r#"{"id":"x","kind":"extractor","wit":"chatd:plugin@0.1.3","grants":{"http":["https://x.test"]}}"#
                    .to_string(),
                "grants: an extractor is granted nothing",
            ),
            (
                base(r#","limits":{"timeoutMs":99999999999}"#),
                "limits.timeoutMs",
            ),
        ] {
            let err = Manifest::parse(&json).unwrap_err();
            assert!(err.0.contains(expected), "{json} → {err}");
        }
    }
}
