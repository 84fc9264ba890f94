//! A plugin's manifest: who it is, which world it implements, what it asks to be granted, and
//! its limits. The operator's configuration decides what of the request is actually granted.

use serde::Deserialize;

/// The WIT package every plugin of this build must target.
pub const WIT_PACKAGE: &str = "chatd:plugin@0.1.0";

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
}

impl Kind {
    /// As manifests spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Provider => "provider",
            Kind::Tool => "tool",
            Kind::Search => "search",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// Unique id, `[a-z0-9_-]{1,64}`; a PLUGINS_DIR plugin with a bundled one's id replaces it.
    pub id: String,
    pub kind: Kind,
    /// Must be [`WIT_PACKAGE`].
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
}

/// What a provider plugin says of how it takes a turn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderOptions {
    /// A turn's large values (image data, long texts) come as tokens that the host fills in
    /// as it sends the request body (`plugins/refs.rs`). For `codec-provider` components, whose
    /// request the host sends.
    #[serde(default)]
    pub references: bool,
}

/// What the plugin asks for. Nothing is granted by default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Grants {
    /// Origins (`scheme://host[:port]`) the plugin may call.
    #[serde(default)]
    pub http: Vec<String>,
    /// Operator-configured upstreams (`engine_a`, `provider_a`, …; see
    /// [`super::grants::SERVICES`]): the base URL's origin becomes reachable, its `…_base_url`
    /// setting readable, and the host adds the service's credential to requests to it. Each
    /// service belongs to fixed plugin ids; another plugin asking for it does not load.
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
        let id_ok = !self.id.is_empty()
            && self.id.len() <= 64
            && self
                .id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !id_ok {
            return Err(ManifestError(format!(
                "id: {:?} must match [a-z0-9_-]{{1,64}}",
                self.id
            )));
        }
        if self.wit != WIT_PACKAGE {
            return Err(ManifestError(format!(
                "wit: {:?} is not supported; this chatd speaks {WIT_PACKAGE}",
                self.wit
            )));
        }
        if self.provider != ProviderOptions::default() && self.kind != Kind::Provider {
            return Err(ManifestError(
                "provider: only a provider plugin's manifest has this section".into(),
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
        for service in &self.grants.services {
            if super::grants::service(service).is_none() {
                return Err(ManifestError(format!(
                    "grants.services: {service:?} is not a service; known: {}",
                    super::grants::SERVICES
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
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
            (base(r#","grants":{"files":true}"#), "unknown field"),
            (
                base(r#","grants":{"services":["mainframe"]}"#),
                "grants.services",
            ),
            (base(r#","limits":{"memoryMib":0}"#), "limits.memoryMib"),
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
