//! Services: the upstreams the operator configured, each an origin, a key, how the key goes on the
//! wire, a few non-secret headers, and the plugins that may be granted it. One table holds them
//! all: the built-in ones (`plugins/builtin.rs`, from the environment) and the configuration
//! file's `[services.NAME]`; a declared provider's upstream is a service of its own; an MCP
//! server's is one too.
//!
//! What granting one gives is `reach.rs`'s. The plugin never sees the key: not in a setting,
//! not in the environment (none is linked), not in a response ([`super::scrub`] removes it from
//! what comes back).

use std::collections::BTreeMap;

use reqwest::header::{HeaderName, HeaderValue};
use url::Url;

use crate::config::Secret;
use crate::config::names::Auth;

/// A plugin that may be granted a service: its id, and for the built-in services the world it
/// must implement (a tool that takes a bundled provider's id does not get that provider's key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub id: String,
    /// The plugin world it must implement, as manifests spell it (`tool`, `provider`,
    /// `search`); `None`: any.
    pub kind: Option<&'static str>,
}

impl Owner {
    pub fn any(id: &str) -> Self {
        Self {
            id: id.to_string(),
            kind: None,
        }
    }

    pub fn of_kind(id: &str, kind: &'static str) -> Self {
        Self {
            id: id.to_string(),
            kind: Some(kind),
        }
    }

    fn admits(&self, id: &str, kind: &str) -> bool {
        self.id == id && self.kind.is_none_or(|k| k == kind)
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            Some(kind) => write!(f, "{} ({kind})", self.id),
            None => f.write_str(&self.id),
        }
    }
}

/// Where a service's values come from, so messages can name the setting and never the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetBy {
    /// A built-in service's environment variables (or flags), as `docs/configuration.md` lists them.
    Variables {
        base_url: &'static str,
        key: Option<&'static str>,
    },
    /// A table of the configuration file: `[services.weather]`, `[providers.groq]`.
    File(String),
}

impl SetBy {
    pub(super) fn key_name(&self) -> String {
        match self {
            SetBy::Variables { key: Some(var), .. } => (*var).to_string(),
            SetBy::Variables { base_url, .. } => format!("the key of {base_url}"),
            SetBy::File(table) => format!("the api_key of {table}"),
        }
    }

    pub(super) fn base_url_name(&self) -> String {
        match self {
            SetBy::Variables { base_url, .. } => (*base_url).to_string(),
            SetBy::File(table) => format!("{table} base_url"),
        }
    }
}

/// An operator-configured upstream.
#[derive(Clone, Debug)]
pub struct Service {
    /// The name a manifest asks for in `grants.services` (or `provider.service`).
    pub name: String,
    /// Unset: the service grants nothing.
    pub base_url: Option<Url>,
    pub key: Option<Secret>,
    pub auth: Auth,
    /// Non-secret headers the host adds to every request to the origin (OpenRouter's
    /// `HTTP-Referer`, an API version).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The plugins that may be granted it.
    pub owners: Vec<Owner>,
    /// The setting a granted plugin reads the base URL under.
    pub base_url_key: String,
    pub set_by: SetBy,
}

impl Service {
    /// Its owners as operators read them: `web_search (tool), search_engine_a (search)`.
    pub fn owner_list(&self) -> String {
        self.owners
            .iter()
            .map(Owner::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn admits(&self, id: &str, kind: &str) -> bool {
        self.owners.iter().any(|o| o.admits(id, kind))
    }
}

/// Every service, by name.
#[derive(Clone, Debug, Default)]
pub struct Services(BTreeMap<String, Service>);

impl Services {
    pub fn new(services: impl IntoIterator<Item = Service>) -> Self {
        Self(services.into_iter().map(|s| (s.name.clone(), s)).collect())
    }

    pub fn get(&self, name: &str) -> Option<&Service> {
        self.0.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Service> {
        self.0.values()
    }
}
