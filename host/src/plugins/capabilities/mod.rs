//! What a plugin is granted: its manifest's request decided against the operator's
//! configuration, one capability at a time. Deny by default. A capability is one interface of
//! `wit/host.wit` a plugin may be granted, in a folder of its own here: its `mod.rs` decides the
//! grant in one function (`grant`: [`http::grant`], [`ssh::grant`], [`config::grant`],
//! [`log::grant`]), its `host.rs` implements the WIT interface on a view of its own (only its
//! part of the call's state). This file dispatches: [`resolve`] calls each `grant` once and
//! gathers the result in [`Capabilities`], held by every call's store. Services
//! ([`crate::egress::reach::Reach`]) feed the `http` grant and the `config` one.
//!
//! - `grants.services` and `provider.service`: services by name; a service the plugin's id is
//!   not an owner of, or a name no service has, refuses the plugin (it does not load).
//! - A declared provider ([`declared_manifest`]) runs an adapter's component under its own id
//!   with its own upstream and nothing else of the adapter's manifest but its declared settings:
//!   the adapter's services (someone else's keys) are not its.
//!
//! # Adding a capability `x`
//!
//! 1. `wit/host.wit`: `interface x`, in the `host-imports` world, in a new WIT version beside
//!    the frozen ones (`wit/PENDING_CHANGES.md`); `plugin-sdk/wit/` is its copy.
//! 2. Here, `x/mod.rs`: the grant's type and `pub fn grant(manifest, …)`, the one function that
//!    decides it (`pub fn grant()` when every plugin gets it, as `log`), with its unit tests;
//!    `x/host.rs`: `XView<'a>` and the WIT `Host` impl on it.
//! 3. This file: a field of [`Capabilities`], and one call to `x::grant` in [`resolve`].
//! 4. `plugins/manifest.rs`: what a manifest asks for, in `Grants` (not for one every plugin
//!    gets).
//! 5. `plugins/runtime/state.rs`: `PluginState::x`, building the view; `plugins/runtime/linker.rs`
//!    (every world) or a world's `link` (`worlds/`): `x::add_to_linker` with it;
//!    `plugins/bindings.rs`: the interface in `world!`'s shared list, or a world's.
//! 6. `plugin-sdk/src/host.rs`: what plugin authors call.
//!
//! `tests/api/anatomy.rs::every_host_interface_has_the_anatomy_of_a_capability` reads
//! `wit/host.wit` and fails when an interface lacks one of these. [`files`] has the same folder
//! anatomy but implements WASI's filesystem rather than an interface of `wit/host.wit`.

pub mod config;
pub mod files;
pub mod http;
pub mod log;
pub mod operator;
pub mod ssh;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::egress::reach::Reach;
use crate::egress::services::Service;
use crate::egress::{Clients, HttpGrant, Origin};
use crate::plugins::capabilities::log::LogGrant;
use crate::plugins::capabilities::operator::OperatorSettings;
use crate::plugins::capabilities::ssh::SshGrant;
use crate::plugins::manifest::{Grants, Manifest};
use crate::plugins::memory::TotalMemory;
use crate::plugins::package::Source;

/// What a plugin was granted, decided once at load time and shared by its calls.
#[derive(Clone, Debug)]
pub struct Capabilities {
    /// Readable settings (`config`).
    pub config: Arc<BTreeMap<String, String>>,
    pub http: Arc<HttpGrant>,
    /// The host's shared connection pools.
    pub clients: Clients,
    /// The devbox, for the devbox tools while they are enabled.
    pub ssh: Option<Arc<SshGrant>>,
    pub log: LogGrant,
    /// A session's folder as its filesystem: the bundled interpreter's only.
    pub files: Option<files::FilesGrant>,
    /// Not a grant: the memory all of the host's instances share (`state.rs`), set by the
    /// loader; unlimited until then.
    pub memory: TotalMemory,
}

impl Capabilities {
    /// Nothing granted but the log.
    pub fn none() -> Self {
        Self {
            config: Arc::default(),
            http: Arc::new(HttpGrant::none()),
            clients: Clients::new(),
            ssh: None,
            log: crate::plugins::capabilities::log::grant(),
            files: None,
            memory: TotalMemory::unlimited(),
        }
    }
}

/// A decided grant: the capabilities, a line per grant for operators (credentials named by
/// their setting, never shown), and what the log should say (operator settings not readable).
pub struct Resolved {
    pub caps: Capabilities,
    pub lines: Vec<String>,
    pub warnings: Vec<String>,
}

/// A manifest asked for something this host will not grant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plugin {id}: {reason}")]
pub struct GrantError {
    pub id: String,
    pub reason: String,
}

/// Decides what `manifest` (loaded from `source`) gets. `own` is a declared provider's
/// upstream, granted to it whatever its manifest says; `clients` are the host's shared
/// connection pools.
pub fn resolve(
    manifest: &Manifest,
    source: &Source,
    host: &OperatorSettings,
    clients: Clients,
    own: Option<&Service>,
) -> Result<Resolved, GrantError> {
    let refuse = |reason: String| GrantError {
        id: manifest.id.clone(),
        reason,
    };
    let (id, kind) = (manifest.id.as_str(), manifest.kind);
    let service = |name: &str, field: &str| {
        host.services.get(name).ok_or_else(|| {
            refuse(format!(
                "{field}: {name:?} is not a service; known: {}",
                host.services.names().collect::<Vec<_>>().join(", ")
            ))
        })
    };
    let mut reach = Reach::default();
    for name in &manifest.grants.services {
        let named = service(name, "grants.services")?;
        reach
            .add(named, id, kind.as_str(), None)
            .map_err(|e| refuse(format!("grants.services: {e}")))?;
    }
    if let Some(name) = &manifest.provider.service {
        let named = service(name, "provider.service")?;
        reach
            .add(
                named,
                id,
                kind.as_str(),
                Some(crate::plugins::PROVIDER_BASE_URL),
            )
            .map_err(|e| refuse(format!("provider.service: {e}")))?;
    }
    if let Some(own) = own {
        reach
            .add(
                own,
                id,
                kind.as_str(),
                Some(crate::plugins::PROVIDER_BASE_URL),
            )
            .map_err(refuse)?;
    }
    let mut lines = std::mem::take(&mut reach.lines);
    let http = crate::plugins::capabilities::http::grant(
        manifest,
        reach.trusted,
        reach.credentials,
        host.allow_private,
    )
    .map_err(refuse)?;
    let ssh = crate::plugins::capabilities::ssh::grant(manifest, &host.devbox).map_err(refuse)?;
    let files = files::grant(manifest, source, &host.python).map_err(refuse)?;
    let settings = crate::plugins::capabilities::config::grant(
        manifest,
        id,
        reach.settings,
        &host.host_values,
        host.plugin_values.get(id),
    )
    .map_err(refuse)?;
    lines.extend(http_lines(&http));
    lines.extend(
        manifest
            .grants
            .config
            .iter()
            .map(|key| format!("config {key}")),
    );
    lines.extend(crate::plugins::capabilities::config::describe(
        manifest,
        &settings.values,
    ));
    match (&ssh, manifest.grants.ssh) {
        (Some(grant), _) => lines.push(format!(
            "ssh to the devbox {} (commands up to {} ms)",
            grant.devbox.describe(),
            grant.limit.as_millis()
        )),
        (None, true) => lines.push("ssh requested: no devbox (the tool is not enabled)".into()),
        (None, false) => {}
    }
    if let Some(files) = &files {
        lines.push(format!(
            "files: a session's own folder in memory (files up to {} MiB, {} per call)",
            files.limits.max_file_bytes >> 20,
            files.limits.max_files_per_call
        ));
    }
    Ok(Resolved {
        caps: Capabilities {
            config: Arc::new(settings.values),
            http: Arc::new(http),
            clients,
            ssh,
            log: crate::plugins::capabilities::log::grant(),
            files,
            memory: TotalMemory::unlimited(),
        },
        lines,
        warnings: settings.ignored,
    })
}

/// The manifest a declared provider runs an adapter's component under: the provider's id, the
/// adapter's limits, declared settings and references option, and no grants (its upstream is
/// given to [`resolve`] as `own`).
pub fn declared_manifest(adapter: &Manifest, id: &str) -> Manifest {
    let mut manifest = adapter.clone();
    manifest.id = id.to_string();
    manifest.grants = Grants::default();
    manifest.provider.service = None;
    manifest
}

fn http_lines(http: &HttpGrant) -> Vec<String> {
    let mut lines: Vec<String> = http
        .origins
        .iter()
        .map(|o: &Origin| format!("http {o}"))
        .collect();
    if http.public_web {
        lines.push(if http.allow_private {
            "public web, private networks included (CHATD_ALLOW_PRIVATE_NETWORKS)".into()
        } else {
            "public web".into()
        });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::config::file::FileConfig;
    use crate::egress::Place;
    use std::time::Duration;

    fn manifest(id: &str, kind: &str, grants: &str) -> Manifest {
        Manifest::parse(&format!(
            r#"{{"id":"{id}","kind":"{kind}","wit":"chatd:plugin@0.1.0","grants":{grants}}}"#
        ))
        .unwrap()
    }

    fn tool(id: &str, grants: &str) -> Manifest {
        manifest(id, "tool", grants)
    }

    fn host(args: &[&str]) -> OperatorSettings {
        host_with_file(args, "")
    }

    fn host_with_file(args: &[&str], file: &str) -> OperatorSettings {
        let config =
            Config::from_args(std::iter::once("chatd").chain(args.iter().copied())).unwrap();
        let file = FileConfig::parse(file, &|_| None).unwrap();
        OperatorSettings::new(
            &config,
            &file,
            crate::plugins::capabilities::ssh::DevboxAccess::from_config(&config),
        )
        .unwrap()
    }

    fn resolve(m: &Manifest, host: &OperatorSettings) -> Result<Resolved, GrantError> {
        super::resolve(m, &Source::Bundled, host, Clients::new(), None)
    }

    #[test]
    fn nothing_is_granted_by_default() {
        let granted = resolve(&tool("x", "{}"), &host(&[])).unwrap();
        let caps = granted.caps;
        assert!(caps.config.is_empty());
        assert!(caps.http.origins.is_empty() && caps.http.trusted.is_empty());
        assert!(caps.http.credentials.is_empty());
        assert!(!caps.http.public_web);
        assert!(granted.lines.is_empty());
    }

    #[test]
    fn a_service_grants_its_origin_setting_and_credential_to_its_owner_only() {
        let settings = host(&[
            "--engine-a-base-url",
            "http://127.0.0.1:9000/",
            "--engine-a-api-key",
            "k-123",
        ]);
        let m = tool("web_search", r#"{"services":["engine_a","engine_b"]}"#);
        let granted = resolve(&m, &settings).unwrap();
        let caps = &granted.caps;
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
        assert_eq!(
            caps.http.credentials[0].to,
            Place::Header(reqwest::header::HeaderName::from_static("x-api-key"))
        );
        assert_eq!(caps.http.credentials[0].value.expose(), "k-123");
        assert!(!caps.config.values().any(|v| v.contains("k-123")));
        assert_eq!(
            granted.lines,
            [
                "service engine_a: http://127.0.0.1:9000 with ENGINE_A_API_KEY (header x-api-key)",
                "service engine_b (ENGINE_B_BASE_URL unset: nothing)"
            ]
        );
        let err = resolve(&tool("my_tool", r#"{"services":["engine_a"]}"#), &settings)
            .err()
            .unwrap();
        assert!(
            err.reason
                .contains("belongs to web_search (tool), search_engine_a (search)"),
            "{err}"
        );
        let err = resolve(&tool("x", r#"{"services":["mainframe"]}"#), &settings)
            .err()
            .unwrap();
        assert!(
            err.reason
                .starts_with("grants.services: \"mainframe\" is not a service"),
            "{err}"
        );
    }

    #[test]
    fn a_provider_service_is_also_its_base_url_and_goes_to_its_kind_only() {
        let settings = host(&["--provider-a-api-key", "sk-1"]);
        let provider = |kind: &str| {
            Manifest::parse(&format!(
                r#"{{"id":"provider_a","kind":"{kind}","wit":"chatd:plugin@0.1.0","provider":{{"service":"provider_a"}}}}"#
            ))
        };
        let caps = resolve(&provider("provider").unwrap(), &settings)
            .unwrap()
            .caps;
        assert_eq!(
            caps.http.credentials[0].to,
            Place::Header(reqwest::header::AUTHORIZATION)
        );
        assert_eq!(caps.http.credentials[0].value.expose(), "Bearer sk-1");
        assert_eq!(caps.config["base_url"], "https://api.openai.com/v1");
        assert_eq!(
            caps.config["provider_a_base_url"],
            "https://api.openai.com/v1"
        );
        // A tool cannot even declare a provider section.
        assert!(provider("tool").is_err());
        let thief = tool("provider_a", r#"{"services":["provider_a"]}"#);
        let err = resolve(&thief, &settings).err().unwrap();
        assert!(
            err.reason.contains("belongs to provider_a (provider)"),
            "{err}"
        );
    }

    #[test]
    fn the_file_adds_services_and_owners_and_the_environment_wins() {
        let file = r#"
[services.weather]
base_url = "http://127.0.0.1:7000"
api_key = "w-key-123456"
auth = "header:x-api-key"
plugins = ["weather"]

[services.engine_a]
base_url = "http://127.0.0.1:7001"
api_key = "from-file"
plugins = ["company_search"]
"#;
        let settings = host_with_file(&["--engine-a-api-key", "from-env"], file);
        let weather = resolve(&tool("weather", r#"{"services":["weather"]}"#), &settings)
            .unwrap()
            .caps;
        assert_eq!(weather.config["weather_base_url"], "http://127.0.0.1:7000");
        assert_eq!(weather.http.credentials[0].value.expose(), "w-key-123456");
        assert_eq!(
            &*weather.http.scrubbed,
            [b"w-key-123456".to_vec().into_boxed_slice()]
        );
        let other = resolve(
            &tool("company_search", r#"{"services":["engine_a"]}"#),
            &settings,
        )
        .unwrap()
        .caps;
        assert_eq!(other.config["engine_a_base_url"], "http://127.0.0.1:7001");
        assert_eq!(other.http.credentials[0].value.expose(), "from-env");
        let err = resolve(
            &tool("not_listed", r#"{"services":["weather"]}"#),
            &settings,
        )
        .err()
        .unwrap();
        assert!(err.reason.contains("weather belongs to weather"), "{err}");
    }

    #[test]
    fn a_declared_provider_gets_its_own_upstream_and_not_the_adapters() {
        let settings = host(&["--provider-c-api-key", "xai-key"]);
        let adapter = Manifest::parse(
            r#"{"id":"provider_c","kind":"provider","wit":"chatd:plugin@0.1.0","provider":{"service":"provider_c","references":true}}"#,
        )
        .unwrap();
        let groq = declared_manifest(&adapter, "groq");
        assert!(groq.provider.references && groq.provider.service.is_none());
        let own = Service {
            name: "groq".into(),
            base_url: Some(url::Url::parse("https://api.groq.com/openai/v1").unwrap()),
            key: Some(crate::config::Secret::new("gsk-secret-1")),
            auth: crate::config::names::Auth::Bearer,
            headers: Vec::new(),
            owners: vec![crate::egress::services::Owner::any("groq")],
            base_url_key: "groq_base_url".into(),
            set_by: crate::egress::services::SetBy::File("[providers.groq]".into()),
        };
        let caps = super::resolve(
            &groq,
            &Source::Bundled,
            &settings,
            Clients::new(),
            Some(&own),
        )
        .unwrap()
        .caps;
        assert_eq!(caps.config["base_url"], "https://api.groq.com/openai/v1");
        let sent: Vec<&str> = caps
            .http
            .credentials
            .iter()
            .map(|c| c.value.expose())
            .collect();
        assert_eq!(sent, ["Bearer gsk-secret-1"]);
        assert_eq!(
            caps.http.trusted,
            [Origin::parse("https://api.groq.com").unwrap()]
        );
    }

    #[test]
    fn public_web_follows_the_private_network_switch() {
        let m = tool("fetch_url", r#"{"publicWeb":true}"#);
        assert!(!resolve(&m, &host(&[])).unwrap().caps.http.allow_private);
        let open = host(&["--chatd-allow-private-networks", "true"]);
        assert!(resolve(&m, &open).unwrap().caps.http.allow_private);
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
        let refused = resolve(&tool("my_tool", asks), &host(&devbox))
            .err()
            .unwrap();
        assert!(
            refused.reason.contains("only the devbox tools"),
            "{refused}"
        );

        let shell = resolve(&tool("shell_exec", asks), &host(&devbox)).unwrap();
        let grant = shell.caps.ssh.as_ref().expect("granted while enabled");
        assert_eq!(grant.limit, Duration::from_millis(5000));
        assert!(
            shell
                .lines
                .contains(&"ssh to the devbox devbox.example:22 (commands up to 5000 ms)".into())
        );
        // coding_exec is not enabled: it loads, with nothing granted, and does not serve.
        let coding = resolve(&tool("coding_exec", asks), &host(&devbox)).unwrap();
        assert!(coding.caps.ssh.is_none());
        let settings = host(&devbox);
        assert!(settings.refusal("shell_exec").is_none());
        assert_eq!(
            settings.refusal("coding_exec").unwrap(),
            "CHAT_CODING_TOOL_ENABLED is not true"
        );
        assert!(settings.refusal("web_search").is_none());
        let quiet = resolve(&tool("shell_exec", "{}"), &host(&devbox)).unwrap();
        assert!(quiet.caps.ssh.is_none());
    }
}
