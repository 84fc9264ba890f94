//! What a plugin is granted: its manifest's request, decided against the operator's
//! configuration. Deny by default; every rule is here.
//!
//! - `grants.http` origins: granted as listed, at public addresses only (private ones too with
//!   CHATD_ALLOW_PRIVATE_NETWORKS): a manifest, written by the plugin's author, cannot aim the
//!   host at cloud metadata or the LAN. `chatd plugins list` shows what each plugin holds.
//! - `grants.publicWeb`: any public address; loopback, private, link-local and metadata addresses
//!   stay refused unless CHATD_ALLOW_PRIVATE_NETWORKS.
//! - `grants.services`: an operator-configured upstream ([`SERVICES`]). Granted only to the plugin
//!   ids it belongs to: a third-party tool cannot borrow the provider key, even though it would
//!   never see it. The base URL's origin becomes reachable (loopback included: the operator chose
//!   it), its `…_base_url` setting readable, and the host adds the credential to every request to
//!   that origin. A service whose base URL is unset grants nothing.
//! - `grants.config`: non-secret settings ([`SETTINGS`]) only. Secrets are never settings.
//! - `grants.ssh`: the devbox ([`super::ssh`]), for the devbox tools only (`coding_exec`,
//!   `shell_exec`, as tools): any other plugin asking for it does not load. Granted while the
//!   tool's CHAT_*_ENABLED is true, with the tool's own time limit; the plugin never learns the
//!   host, the user or the key.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderName;
use url::Url;

use base64::Engine as _;

use super::http::{Clients, Credential, HttpGrant, Origin};
use super::manifest::{Kind, Manifest};
use super::ssh::{DEVBOX_TOOLS, Devbox, SshGrant};
use super::state::Capabilities;
use crate::config::{Config, Secret, WebSearchEngine};

/// The most response body a plugin may read from one request.
pub const MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;

/// How a service's credential goes on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key as the value of this header.
    Header(&'static str),
    /// No credential.
    None,
}

/// An operator-configured upstream a plugin can be granted.
#[derive(Debug)]
pub struct Service {
    /// The name a manifest uses in `grants.services`.
    pub name: &'static str,
    /// The setting holding its base URL (an environment variable of DESIGN.md §3).
    pub base_url_var: &'static str,
    /// The setting holding its key, if it has one.
    pub key_var: Option<&'static str>,
    pub auth: Auth,
    /// The plugins that may be granted it: an id and the world it must implement. A tool that
    /// calls itself `provider_a` does not get the provider key.
    pub owners: &'static [(&'static str, Kind)],
}

impl Service {
    /// Its owners as operators read them: `web_search (tool), search_engine_a (search)`.
    pub fn owner_list(&self) -> String {
        self.owners
            .iter()
            .map(|(id, kind)| format!("{id} ({})", kind.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The config key under which a granted plugin reads the base URL.
    pub fn base_url_key(&self) -> String {
        self.base_url_var.to_ascii_lowercase()
    }
}

/// Every service. Ids are the bundled plugins' ids; a PLUGINS_DIR plugin that overrides one by id
/// takes its place, and its grants, deliberately.
pub const SERVICES: &[Service] = &[
    Service {
        name: "provider_a",
        base_url_var: "PROVIDER_A_BASE_URL",
        key_var: Some("PROVIDER_A_API_KEY"),
        auth: Auth::Bearer,
        owners: &[("provider_a", Kind::Provider)],
    },
    Service {
        name: "provider_b",
        base_url_var: "PROVIDER_B_BASE_URL",
        key_var: Some("PROVIDER_B_API_KEY"),
        auth: Auth::Header("x-api-key"),
        owners: &[("provider_b", Kind::Provider)],
    },
    Service {
        name: "provider_c",
        base_url_var: "PROVIDER_C_BASE_URL",
        key_var: Some("PROVIDER_C_API_KEY"),
        auth: Auth::Bearer,
        owners: &[("provider_c", Kind::Provider)],
    },
    Service {
        name: "agent",
        base_url_var: "AGENT_API_BASE_URL",
        key_var: Some("AGENT_API_KEY"),
        auth: Auth::Bearer,
        owners: &[("provider_agent", Kind::Provider)],
    },
    Service {
        name: "engine_a",
        base_url_var: "ENGINE_A_BASE_URL",
        key_var: Some("ENGINE_A_API_KEY"),
        auth: Auth::Header("x-api-key"),
        owners: &[
            ("web_search", Kind::Tool),
            ("search_engine_a", Kind::Search),
        ],
    },
    Service {
        name: "engine_b",
        base_url_var: "ENGINE_B_BASE_URL",
        key_var: None,
        auth: Auth::None,
        owners: &[("web_search", Kind::Tool)],
    },
];

/// The non-secret settings a plugin may ask to read (`grants.config`), as config keys.
pub const SETTINGS: &[&str] = &["chat_web_search_engine", "agent_model", "title_model"];

pub fn service(name: &str) -> Option<&'static Service> {
    SERVICES.iter().find(|s| s.name == name)
}

/// The operator's configuration as the plugin host needs it: each service's base URL and key,
/// the readable settings, and the private-network switch.
#[derive(Clone, Debug, Default)]
pub struct HostSettings {
    services: BTreeMap<&'static str, (Option<Url>, Option<Secret>)>,
    settings: BTreeMap<&'static str, String>,
    pub allow_private: bool,
    /// The devbox, when a devbox tool is enabled.
    devbox: Option<Arc<Devbox>>,
    /// Devbox tool id → whether it is enabled, and its time limit.
    devbox_tools: BTreeMap<&'static str, (bool, Duration)>,
}

impl HostSettings {
    pub fn from_config(config: &Config) -> Self {
        let services = BTreeMap::from([
            (
                "provider_a",
                (
                    Some(config.provider_a_base_url.clone()),
                    config.provider_a_api_key.clone(),
                ),
            ),
            (
                "provider_b",
                (
                    Some(config.provider_b_base_url.clone()),
                    config.provider_b_api_key.clone(),
                ),
            ),
            (
                "provider_c",
                (
                    Some(config.provider_c_base_url.clone()),
                    config.provider_c_api_key.clone(),
                ),
            ),
            (
                "agent",
                (
                    Some(config.agent_api_base_url.clone()),
                    config.agent_api_key.clone(),
                ),
            ),
            (
                "engine_a",
                (
                    Some(config.engine_a_base_url.clone()),
                    config.engine_a_api_key.clone(),
                ),
            ),
            ("engine_b", (config.engine_b_base_url.clone(), None)),
        ]);
        let mut settings = BTreeMap::from([
            (
                "chat_web_search_engine",
                match config.chat_web_search_engine {
                    WebSearchEngine::EngineA => "engine_a",
                    WebSearchEngine::EngineB => "engine_b",
                }
                .to_string(),
            ),
            ("title_model", config.title_model.clone()),
        ]);
        if let Some(model) = &config.agent_model {
            settings.insert("agent_model", model.clone());
        }
        let devbox = match Devbox::from_config(config) {
            Ok(devbox) => devbox.map(Arc::new),
            Err(e) => {
                // Only the B64 key's copy can fail here (the configuration checked the rest);
                // the tools then answer that SSH is not available, and the log says why.
                tracing::error!("the devbox key could not be prepared: {e}");
                None
            }
        };
        let devbox_tools = BTreeMap::from([
            (
                "coding_exec",
                (
                    config.chat_coding_tool_enabled,
                    Duration::from_millis(config.chat_coding_exec_timeout_ms),
                ),
            ),
            (
                "shell_exec",
                (
                    config.chat_shell_tool_enabled,
                    Duration::from_millis(config.chat_shell_exec_timeout_ms),
                ),
            ),
        ]);
        Self {
            services,
            settings,
            allow_private: config.chatd_allow_private_networks,
            devbox,
            devbox_tools,
        }
    }

    /// Why the plugin (or tool) with this id may not serve, if it may not: a devbox tool
    /// serves only while it is enabled.
    pub fn refusal(&self, id: &str) -> Option<String> {
        match (
            self.devbox_tools.get(id),
            DEVBOX_TOOLS.iter().find(|(tool, _)| *tool == id),
        ) {
            (Some((false, _)), Some((_, var))) => Some(format!("{var} is not true")),
            _ => None,
        }
    }
}

/// A manifest asked for something this host will not grant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plugin {id}: {reason}")]
pub struct GrantError {
    pub id: String,
    pub reason: String,
}

/// Decides what `manifest` gets. `clients` are the host's shared connection pools.
pub fn resolve(
    manifest: &Manifest,
    host: &HostSettings,
    clients: Clients,
) -> Result<Capabilities, GrantError> {
    let refuse = |reason: String| GrantError {
        id: manifest.id.clone(),
        reason,
    };
    let grants = &manifest.grants;
    let mut origins = Vec::new();
    for origin in &grants.http {
        origins.push(
            Origin::parse(origin)
                .ok_or_else(|| refuse(format!("grants.http: {origin:?} is not an origin")))?,
        );
    }
    let mut reach = Reach::default();
    for name in &grants.services {
        reach.add_service(manifest, host, name).map_err(refuse)?;
    }
    let ssh = ssh_grant(manifest, host).map_err(refuse)?;
    for key in &grants.config {
        if !SETTINGS.contains(&key.as_str()) {
            return Err(refuse(format!(
                "grants.config: {key:?} is not a setting plugins may read; known: {}",
                SETTINGS.join(", ")
            )));
        }
        if let Some(value) = host.settings.get(key.as_str()) {
            reach.config.insert(key.clone(), value.clone());
        }
    }
    Ok(Capabilities {
        config: Arc::new(reach.config),
        http: Arc::new(HttpGrant {
            trusted: reach.trusted,
            origins,
            public_web: grants.public_web,
            allow_private: host.allow_private,
            credentials: reach.credentials,
            max_body_bytes: MAX_BODY_BYTES,
            max_timeout: Duration::from_millis(manifest.limits.timeout_ms),
        }),
        clients,
        ssh,
    })
}

/// What a plugin's services give it: origins it reaches at any address, the settings it reads
/// (their base URLs), the credentials the host adds for it.
#[derive(Default)]
struct Reach {
    trusted: Vec<Origin>,
    config: BTreeMap<String, String>,
    credentials: Vec<Credential>,
}

impl Reach {
    /// Grants service `name` to the plugin of `manifest`, if it is one of the service's owners;
    /// a service the operator did not configure gives nothing.
    fn add_service(
        &mut self,
        manifest: &Manifest,
        host: &HostSettings,
        name: &str,
    ) -> Result<(), String> {
        let service =
            service(name).ok_or_else(|| format!("grants.services: {name:?} is not a service"))?;
        if !service
            .owners
            .contains(&(manifest.id.as_str(), manifest.kind))
        {
            return Err(format!(
                "grants.services: {name} belongs to {}; no other plugin can be granted it",
                service.owner_list()
            ));
        }
        let Some((Some(base), key)) = host.services.get(service.name) else {
            return Ok(()); // not configured: nothing to reach
        };
        let origin = Origin::of(base)
            .ok_or_else(|| format!("{}: the base URL has no host", service.base_url_var))?;
        // A user and password in the URL are a credential too: the plugin reads the URL without
        // them, and the host sends them as Basic authentication to that origin.
        let (base, basic) = split_userinfo(base);
        self.config.insert(
            service.base_url_key(),
            base.as_str().trim_end_matches('/').to_string(),
        );
        let mut authorization_taken = false;
        if let (Some(key), Some(header)) = (key, credential_header(service.auth)) {
            let value = match service.auth {
                Auth::Bearer => Secret::new(format!("Bearer {}", key.expose())),
                _ => key.clone(),
            };
            authorization_taken = header == reqwest::header::AUTHORIZATION;
            self.credentials.push(Credential {
                origin: origin.clone(),
                header,
                value,
            });
        }
        if let Some(basic) = basic.filter(|_| !authorization_taken) {
            self.credentials.push(Credential {
                origin: origin.clone(),
                header: reqwest::header::AUTHORIZATION,
                value: basic,
            });
        }
        if !self.trusted.contains(&origin) {
            self.trusted.push(origin);
        }
        Ok(())
    }
}

/// The devbox, for a devbox tool that asks for SSH while it is enabled; refused to any other
/// plugin that asks.
fn ssh_grant(manifest: &Manifest, host: &HostSettings) -> Result<Option<Arc<SshGrant>>, String> {
    if !manifest.grants.ssh {
        return Ok(None);
    }
    if manifest.kind != Kind::Tool || !host.devbox_tools.contains_key(manifest.id.as_str()) {
        return Err(
            "grants.ssh: only the devbox tools coding_exec and shell_exec may use SSH".into(),
        );
    }
    Ok(
        match (&host.devbox, host.devbox_tools.get(manifest.id.as_str())) {
            (Some(devbox), Some((true, limit))) => Some(Arc::new(SshGrant {
                devbox: devbox.clone(),
                limit: *limit,
            })),
            _ => None,
        },
    )
}

/// The URL without `user:password@`, and those as a Basic `Authorization` value.
fn split_userinfo(url: &Url) -> (Url, Option<Secret>) {
    if url.username().is_empty() && url.password().is_none() {
        return (url.clone(), None);
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let pair = format!(
        "{}:{}",
        decode(url.username()),
        decode(url.password().unwrap_or(""))
    );
    let mut bare = url.clone();
    let _ = bare.set_username("");
    let _ = bare.set_password(None);
    let value = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    );
    (bare, Some(Secret::new(value)))
}

fn credential_header(auth: Auth) -> Option<HeaderName> {
    match auth {
        Auth::Bearer => Some(reqwest::header::AUTHORIZATION),
        Auth::Header(name) => Some(HeaderName::from_static(name)),
        Auth::None => None,
    }
}

/// What a plugin holds, one line per grant, for operators (`chatd plugins list`). Credentials
/// are named by their variable, never shown.
pub fn describe(manifest: &Manifest, caps: &Capabilities) -> Vec<String> {
    let mut lines = Vec::new();
    for name in &manifest.grants.services {
        let Some(service) = service(name) else {
            continue;
        };
        let Some(base) = caps.config.get(&service.base_url_key()) else {
            lines.push(format!(
                "service {name} ({} unset: nothing)",
                service.base_url_var
            ));
            continue;
        };
        let origin = Origin::parse(base);
        let sent: Vec<&str> = caps
            .http
            .credentials
            .iter()
            .filter(|c| origin.as_ref() == Some(&c.origin))
            .map(|c| match service.key_var {
                Some(var) if !c.value.expose().starts_with("Basic ") => var,
                _ => "the base URL's user and password",
            })
            .collect();
        lines.push(match sent.as_slice() {
            [] => format!("service {name}: {base}"),
            sent => format!("service {name}: {base} with {}", sent.join(" and ")),
        });
    }
    for origin in &caps.http.origins {
        lines.push(format!("http {origin}"));
    }
    if caps.http.public_web {
        lines.push(if caps.http.allow_private {
            "public web, private networks included (CHATD_ALLOW_PRIVATE_NETWORKS)".into()
        } else {
            "public web".into()
        });
    }
    for key in &manifest.grants.config {
        lines.push(format!("config {key}"));
    }
    match (&caps.ssh, manifest.grants.ssh) {
        (Some(grant), _) => lines.push(format!(
            "ssh to the devbox {} (commands up to {} ms)",
            grant.devbox.describe(),
            grant.limit.as_millis()
        )),
        (None, true) => lines.push("ssh requested: no devbox (the tool is not enabled)".into()),
        (None, false) => {}
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(id: &str, grants: &str) -> Manifest {
        Manifest::parse(&format!(
            r#"{{"id":"{id}","kind":"tool","wit":"chatd:plugin@0.1.0","grants":{grants}}}"#
        ))
        .unwrap()
    }

    fn host(args: &[&str]) -> HostSettings {
        let config =
            Config::from_args(std::iter::once("chatd").chain(args.iter().copied())).unwrap();
        HostSettings::from_config(&config)
    }

    fn client() -> Clients {
        Clients::new()
    }

    #[test]
    fn nothing_is_granted_by_default() {
        let caps = resolve(&manifest("x", "{}"), &host(&[]), client()).unwrap();
        assert!(caps.config.is_empty());
        assert!(caps.http.origins.is_empty() && caps.http.trusted.is_empty());
        assert!(caps.http.credentials.is_empty());
        assert!(!caps.http.public_web);
    }

    #[test]
    fn a_service_grants_its_origin_setting_and_credential_to_its_owner_only() {
        let settings = host(&[
            "--engine-a-base-url",
            "http://127.0.0.1:9000/",
            "--engine-a-api-key",
            "k-123",
        ]);
        let m = manifest("web_search", r#"{"services":["engine_a","engine_b"]}"#);
        let caps = resolve(&m, &settings, client()).unwrap();
        assert_eq!(
            caps.http.trusted,
            [Origin::parse("http://127.0.0.1:9000").unwrap()]
        );
        assert!(caps.http.origins.is_empty());
        assert_eq!(caps.config["engine_a_base_url"], "http://127.0.0.1:9000");
        assert!(
            !caps.config.contains_key("engine_b_base_url"),
            "engine_b is not configured, so it grants nothing"
        );
        assert_eq!(caps.http.credentials.len(), 1);
        assert_eq!(caps.http.credentials[0].header, "x-api-key");
        assert_eq!(caps.http.credentials[0].value.expose(), "k-123");
        assert!(
            !caps.config.values().any(|v| v.contains("k-123")),
            "the key is not a setting"
        );
        let lines = describe(&m, &caps);
        assert_eq!(
            lines,
            [
                "service engine_a: http://127.0.0.1:9000 with ENGINE_A_API_KEY",
                "service engine_b (ENGINE_B_BASE_URL unset: nothing)"
            ]
        );

        let thief = manifest("my_tool", r#"{"services":["engine_a"]}"#);
        let err = resolve(&thief, &settings, client()).unwrap_err();
        assert!(
            err.reason
                .contains("belongs to web_search (tool), search_engine_a (search)"),
            "{err}"
        );
    }

    #[test]
    fn bearer_services_send_an_authorization_header_to_their_kind_of_plugin_only() {
        let settings = host(&["--provider-a-api-key", "sk-1"]);
        let provider = |kind: &str| {
            Manifest::parse(&format!(
                r#"{{"id":"provider_a","kind":"{kind}","wit":"chatd:plugin@0.1.0","grants":{{"services":["provider_a"]}}}}"#
            ))
            .unwrap()
        };
        let caps = resolve(&provider("provider"), &settings, client()).unwrap();
        assert_eq!(caps.http.credentials[0].header, "authorization");
        assert_eq!(caps.http.credentials[0].value.expose(), "Bearer sk-1");
        assert_eq!(
            caps.config["provider_a_base_url"],
            "https://api.openai.com/v1"
        );
        // A tool that calls itself provider_a is not the provider.
        let err = resolve(&provider("tool"), &settings, client()).unwrap_err();
        assert!(
            err.reason.contains("belongs to provider_a (provider)"),
            "{err}"
        );
    }

    #[test]
    fn a_password_in_a_base_url_never_reaches_the_plugin() {
        let settings = host(&[
            "--chat-web-search-engine",
            "engine_b",
            "--engine-b-base-url",
            "http://searx:p%40ss@searx.lan:8080/base",
        ]);
        let m = manifest("web_search", r#"{"services":["engine_b"]}"#);
        let caps = resolve(&m, &settings, client()).unwrap();
        assert_eq!(
            caps.config["engine_b_base_url"],
            "http://searx.lan:8080/base"
        );
        assert_eq!(caps.http.credentials.len(), 1);
        assert_eq!(caps.http.credentials[0].header, "authorization");
        // base64("searx:p@ss")
        assert_eq!(
            caps.http.credentials[0].value.expose(),
            "Basic c2Vhcng6cEBzcw=="
        );
        let lines = describe(&m, &caps).join("\n");
        assert!(
            !lines.contains("p%40ss") && !lines.contains("p@ss"),
            "{lines}"
        );
    }

    #[test]
    fn settings_are_the_non_secret_ones_only() {
        let settings = host(&[
            "--chat-web-search-engine",
            "engine_b",
            "--engine-b-base-url",
            "http://searx.lan:8080",
        ]);
        let caps = resolve(
            &manifest(
                "x",
                r#"{"config":["chat_web_search_engine","agent_model"]}"#,
            ),
            &settings,
            client(),
        )
        .unwrap();
        assert_eq!(
            *caps.config,
            BTreeMap::from([("chat_web_search_engine".to_string(), "engine_b".to_string())])
        );
        let err = resolve(
            &manifest("x", r#"{"config":["engine_a_api_key"]}"#),
            &settings,
            client(),
        )
        .unwrap_err();
        assert!(err.reason.starts_with("grants.config"), "{err}");
    }

    #[test]
    fn public_web_follows_the_private_network_switch() {
        let m = manifest("fetch_url", r#"{"publicWeb":true}"#);
        assert!(
            !resolve(&m, &host(&[]), client())
                .unwrap()
                .http
                .allow_private
        );
        let open = host(&["--chatd-allow-private-networks", "true"]);
        assert!(resolve(&m, &open, client()).unwrap().http.allow_private);
    }

    #[test]
    fn ssh_is_for_the_enabled_devbox_tools_only() {
        let devbox = [
            "--chat-shell-tool-enabled",
            "true",
            "--chat-coding-remote-host",
            "devbox.example",
            "--chat-shell-exec-timeout-ms",
            "5000",
        ];
        let asks = r#"{"ssh":true}"#;
        let refused = resolve(&manifest("my_tool", asks), &host(&devbox), client()).unwrap_err();
        assert!(
            refused.reason.contains("only the devbox tools"),
            "{refused}"
        );

        let shell = resolve(&manifest("shell_exec", asks), &host(&devbox), client()).unwrap();
        let grant = shell.ssh.as_ref().expect("granted while enabled");
        assert_eq!(grant.limit, Duration::from_millis(5000));
        assert!(
            describe(&manifest("shell_exec", asks), &shell)
                .contains(&"ssh to the devbox devbox.example:22 (commands up to 5000 ms)".into())
        );
        // coding_exec is not enabled: it loads, with nothing granted, and does not serve.
        let coding = resolve(&manifest("coding_exec", asks), &host(&devbox), client()).unwrap();
        assert!(coding.ssh.is_none());
        let settings = host(&devbox);
        assert!(settings.refusal("shell_exec").is_none());
        assert_eq!(
            settings.refusal("coding_exec").unwrap(),
            "CHAT_CODING_TOOL_ENABLED is not true"
        );
        assert!(settings.refusal("web_search").is_none());
        // Without the manifest asking, nothing.
        let quiet = resolve(&manifest("shell_exec", "{}"), &host(&devbox), client()).unwrap();
        assert!(quiet.ssh.is_none());
    }
}
