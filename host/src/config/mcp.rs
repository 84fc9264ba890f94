//! `[mcp.NAME]`: a remote MCP server whose tools join the service-managed tools
//! (`tools/mcp/`). Only streamable HTTP: a URL, never a command (docs/mcp-tools.md says why).
//!
//! ```toml
//! [mcp.github]
//! url = "https://api.example.com/mcp"
//! api_key = "${GITHUB_MCP_TOKEN}"   # optional; sent as `auth` says, bearer by default
//! auth = "bearer"                    # bearer, header:NAME, query:NAME, none
//! tools = ["search_issues"]          # optional allow-list of the server's own tool names
//! timeout_secs = 60                  # optional: the longest one call may take (1..=600)
//! max_tool_text_kib = 128            # optional: its tools' names, descriptions and schemas
//! allow_insecure = false             # optional: accept a key over plain http to another host
//! ```
//!
//! A key (`api_key`, or user information in the URL) over plain `http` to a host that is not
//! loopback is refused unless `allow_insecure = true`, which is logged at every load: anyone on
//! the path would read it.
//!
//! A server that needs a login (`tools/mcp/oauth/`, docs/mcp-tools.md):
//!
//! ```toml
//! [mcp.tracker]
//! url = "https://tracker.example.com/mcp"
//! auth = "oauth"
//! client_id = "chatd"                  # optional: a client registered beforehand
//! client_secret = "${TRACKER_SECRET}"  # optional: its secret
//! scopes = "issues:read"               # optional: asked for when the server names none
//! client_metadata_url = "https://chat.example.com/client.json"  # optional: a CIMD client id
//! per_user = true                      # optional: each person logs in with their own account
//! ```
//!
//! With `per_user = true` the server is connected by each person from the web client, never by
//! the operator: each login is that person's, used for their calls alone, and a person without
//! one is offered none of its tools (`tools/mcp/people.rs`).

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use serde::Deserialize;
use url::Url;

use super::Secret;
use super::names::{Auth, check_id};

/// The longest one call to an MCP server may take unless `timeout_secs` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The most `timeout_secs` may be.
const MAX_TIMEOUT_SECS: u64 = 600;
/// The most names an allow-list may hold.
const MAX_TOOLS: usize = 1_000;
/// What a server's tools may add to every prompt (names, descriptions, input schemas) unless
/// `max_tool_text_kib` says otherwise: 128 KiB, some 32,000 tokens.
pub const DEFAULT_TOOL_TEXT_KIB: u32 = 128;
/// The most `max_tool_text_kib` may be.
const MAX_TOOL_TEXT_KIB: u32 = 4096;

/// A declared MCP server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredMcp {
    pub name: String,
    pub url: Url,
    pub api_key: Option<Secret>,
    /// `None`: bearer.
    pub auth: Option<Auth>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The server's tools offered, by the server's own names; `None`: all of them.
    pub tools: Option<Vec<String>>,
    pub timeout: Duration,
    /// The most bytes its tools' names, descriptions and schemas take together; the tools past
    /// it are left out, said in the log.
    pub max_tool_text: usize,
    /// A key over plain http to a host that is not loopback, accepted (`allow_insecure`).
    pub insecure_key: bool,
    /// `auth = "oauth"`: the server needs a login, and this is the client chatd is.
    pub oauth: Option<OAuthClient>,
    /// `per_user = true`: each person logs in with their own account (only with `oauth`).
    pub per_user: bool,
}

/// The client chatd is to a server's authorization server; every part optional (a client is
/// registered dynamically when none is given).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OAuthClient {
    pub client_id: Option<String>,
    pub client_secret: Option<Secret>,
    /// Space-separated scopes to ask for when the server names none.
    pub scopes: Option<String>,
    /// An https URL serving chatd's Client ID Metadata Document, used as its client id where
    /// the authorization server takes such documents.
    pub client_metadata_url: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMcp {
    url: String,
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    timeout_secs: Option<u64>,
    #[serde(default)]
    max_tool_text_kib: Option<u32>,
    #[serde(default)]
    allow_insecure: bool,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    scopes: Option<String>,
    #[serde(default)]
    client_metadata_url: Option<String>,
    #[serde(default)]
    per_user: bool,
}

/// Checks `[mcp.NAME]`; the error names the key and the rule.
pub(super) fn declared(name: &str, raw: RawMcp) -> Result<DeclaredMcp, String> {
    let key = format!("mcp.{name}");
    check_id(&key, name)?;
    let url = super::values::base_url(&format!("{key}.url"), &raw.url)?;
    if let Some(tools) = &raw.tools {
        if tools.len() > MAX_TOOLS {
            return Err(format!("{key}.tools: at most {MAX_TOOLS} names"));
        }
        if let Some(i) = tools
            .iter()
            .position(|t| t.is_empty() || t.len() > 128 || t.chars().any(char::is_control))
        {
            return Err(format!(
                "{key}.tools[{i}]: a tool name of 1 to 128 characters, no control characters"
            ));
        }
    }
    let timeout = match raw.timeout_secs {
        None => DEFAULT_TIMEOUT,
        Some(secs @ 1..=MAX_TIMEOUT_SECS) => Duration::from_secs(secs),
        Some(_) => return Err(format!("{key}.timeout_secs: from 1 to {MAX_TIMEOUT_SECS}")),
    };
    let max_tool_text = match raw.max_tool_text_kib {
        None => DEFAULT_TOOL_TEXT_KIB,
        Some(kib @ 1..=MAX_TOOL_TEXT_KIB) => kib,
        Some(_) => {
            return Err(format!(
                "{key}.max_tool_text_kib: from 1 to {MAX_TOOL_TEXT_KIB}"
            ));
        }
    } as usize
        * 1024;
    let api_key = super::values::api_key(raw.api_key.clone());
    let oauth = oauth_client(&key, &raw)?;
    let auth = match raw.auth.as_deref() {
        Some("oauth") | None => None,
        Some(a) => Some(Auth::parse(a).map_err(|e| format!("{key}.auth: {e}"))?),
    };
    if oauth.is_some() && api_key.is_some() {
        return Err(format!(
            "{key}.api_key: not with auth = \"oauth\" (the login gives the server's token)"
        ));
    }
    let sends_key = (api_key.is_some() && auth != Some(Auth::None)) || oauth.is_some();
    let sends_userinfo = !url.username().is_empty() || url.password().is_some();
    let exposed = url.scheme() == "http" && !is_loopback(&url);
    if exposed && !raw.allow_insecure {
        let field = match (&oauth, sends_key) {
            (Some(_), _) => "auth",
            (None, true) => "api_key",
            (None, false) => "url",
        };
        if sends_key || sends_userinfo {
            return Err(format!(
                "{key}.{field}: a credential would go over plain http to {}, which is not \
                 loopback, where anyone on the path can read it: use https, or set \
                 allow_insecure = true to send it anyway",
                url.host_str().unwrap_or_default()
            ));
        }
    }
    Ok(DeclaredMcp {
        name: name.to_string(),
        insecure_key: exposed && (sends_key || sends_userinfo),
        url,
        api_key,
        auth,
        headers: super::values::headers(&key, raw.headers)?,
        tools: raw.tools,
        timeout,
        max_tool_text,
        per_user: raw.per_user,
        oauth,
    })
}

/// No two servers share a `client_metadata_url`: the document lists the redirect URIs its
/// issuers accept, and a server's logins come back to a callback of its own only if its
/// document names that one alone (docs/mcp-tools.md; RFC 9700 §4.4).
pub fn one_metadata_document_each(servers: &BTreeMap<String, DeclaredMcp>) -> Result<(), String> {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, server) in servers {
        let Some(url) = server
            .oauth
            .as_ref()
            .and_then(|o| o.client_metadata_url.as_deref())
        else {
            continue;
        };
        if let Some(first) = seen.insert(url, name) {
            return Err(format!(
                "mcp.{name}.client_metadata_url: mcp.{first} has the same one; each server needs \
                 a document of its own, listing its own callback"
            ));
        }
    }
    Ok(())
}

/// `auth = "oauth"` and its client, checked; its keys without it are an error.
fn oauth_client(key: &str, raw: &RawMcp) -> Result<Option<OAuthClient>, String> {
    let given = [
        ("client_id", raw.client_id.is_some()),
        ("client_secret", raw.client_secret.is_some()),
        ("scopes", raw.scopes.is_some()),
        ("client_metadata_url", raw.client_metadata_url.is_some()),
        ("per_user", raw.per_user),
    ];
    if raw.auth.as_deref() != Some("oauth") {
        if let Some((field, _)) = given.iter().find(|(_, set)| *set) {
            return Err(format!("{key}.{field}: only with auth = \"oauth\""));
        }
        return Ok(None);
    }
    let client_id = raw.client_id.as_deref().map(str::trim);
    if let Some(id) = client_id
        && (id.is_empty() || id.len() > 512 || id.chars().any(char::is_control))
    {
        return Err(format!(
            "{key}.client_id: 1 to 512 characters, no control characters"
        ));
    }
    let client_secret = super::values::api_key(raw.client_secret.clone());
    if client_secret.is_some() && client_id.is_none() {
        return Err(format!("{key}.client_secret: needs client_id"));
    }
    let scopes = raw.scopes.as_deref().map(str::trim);
    if let Some(scopes) = scopes
        && (scopes.is_empty()
            || scopes.len() > 1024
            || scopes
                .chars()
                .any(|c| c.is_control() || c == '"' || c == '\\'))
    {
        return Err(format!(
            "{key}.scopes: space-separated scopes, 1 to 1024 characters, no quotes"
        ));
    }
    let client_metadata_url = match raw.client_metadata_url.as_deref() {
        None => None,
        Some(text) => {
            let url = Url::parse(text.trim())
                .ok()
                .filter(|u| u.scheme() == "https" && u.path() != "/" && u.fragment().is_none());
            let url = url.ok_or_else(|| {
                format!("{key}.client_metadata_url: an https URL with a path and no fragment")
            })?;
            Some(url.to_string())
        }
    };
    Ok(Some(OAuthClient {
        client_id: client_id.map(str::to_string),
        client_secret,
        scopes: scopes.map(str::to_string),
        client_metadata_url,
    }))
}

/// Whether `url`'s host is loopback (`localhost`, 127.0.0.0/8, `::1`).
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_over_plain_http_to_another_host_needs_allow_insecure() {
        let refused = parse("a", "url = \"http://mcp.lan/mcp\"\napi_key = \"k\"").unwrap_err();
        assert!(
            refused.starts_with("mcp.a.api_key: a credential would go over plain http to mcp.lan")
                && refused.contains("allow_insecure = true"),
            "{refused}"
        );
        let userinfo = parse("a", "url = \"http://u:p@10.0.0.5/mcp\"").unwrap_err();
        assert!(
            userinfo.starts_with("mcp.a.url: a credential"),
            "{userinfo}"
        );
        let accepted = parse(
            "a",
            "url = \"http://mcp.lan/mcp\"\napi_key = \"k\"\nallow_insecure = true",
        )
        .unwrap();
        assert!(accepted.insecure_key);
        for fine in [
            "url = \"https://mcp.lan/mcp\"\napi_key = \"k\"",
            "url = \"http://127.0.0.1:9/mcp\"\napi_key = \"k\"",
            "url = \"http://[::1]:9/mcp\"\napi_key = \"k\"",
            "url = \"http://localhost/mcp\"\napi_key = \"k\"",
            "url = \"http://mcp.lan/mcp\"",
            "url = \"http://mcp.lan/mcp\"\napi_key = \"k\"\nauth = \"none\"",
        ] {
            let server = parse("a", fine).unwrap_or_else(|e| panic!("{fine}: {e}"));
            assert!(!server.insecure_key, "{fine}");
        }
    }

    fn parse(name: &str, text: &str) -> Result<DeclaredMcp, String> {
        let raw: RawMcp = toml::from_str(text).map_err(|e| e.message().to_string())?;
        declared(name, raw)
    }

    #[test]
    fn the_issue_example_parses_with_its_defaults() {
        let github = parse(
            "github",
            "url = \"https://api.example.com/mcp\"\napi_key = \"t-123456789\"\nauth = \"bearer\"\ntools = [\"search_issues\"]\n",
        )
        .unwrap();
        assert_eq!(github.url.as_str(), "https://api.example.com/mcp");
        assert_eq!(github.api_key.as_ref().unwrap().expose(), "t-123456789");
        assert_eq!(github.auth, Some(Auth::Bearer));
        assert_eq!(
            github.tools.as_deref(),
            Some(&["search_issues".to_string()][..])
        );
        assert_eq!(github.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn an_oauth_server_takes_its_client() {
        let server = parse(
            "tracker",
            "url = \"https://t.example.com/mcp\"\nauth = \"oauth\"\nclient_id = \"chatd\"\n\
             client_secret = \"s-1\"\nscopes = \"a b\"\n\
             client_metadata_url = \"https://chat.example.com/client.json\"",
        )
        .unwrap();
        let client = server.oauth.unwrap();
        assert_eq!(client.client_id.as_deref(), Some("chatd"));
        assert_eq!(client.client_secret.unwrap().expose(), "s-1");
        assert_eq!(client.scopes.as_deref(), Some("a b"));
        assert_eq!(server.auth, None);
        let bare = parse("t", "url = \"http://127.0.0.1:9/mcp\"\nauth = \"oauth\"").unwrap();
        assert_eq!(bare.oauth, Some(OAuthClient::default()));
        assert!(!bare.per_user);
        let each = parse(
            "t",
            "url = \"https://t/mcp\"\nauth = \"oauth\"\nper_user = true",
        );
        assert!(each.unwrap().per_user);
    }

    #[test]
    fn bad_tables_name_the_key_and_the_rule() {
        for (name, text, expected) in [
            ("Git", "url = \"https://x\"", "mcp.Git: the name must match"),
            (
                "a",
                "url = \"stdio:npx\"",
                "mcp.a.url: must be an absolute http(s) URL",
            ),
            ("a", "command = \"npx\"", "unknown field `command`"),
            (
                "a",
                "url = \"https://x\"\ntimeout_secs = 0",
                "mcp.a.timeout_secs: from 1 to 600",
            ),
            (
                "a",
                "url = \"https://x\"\ntools = [\"\"]",
                "mcp.a.tools[0]: a tool name",
            ),
            ("a", "url = \"https://x\"\nauth = \"basic\"", "mcp.a.auth:"),
            (
                "a",
                "url = \"https://x\"\nmax_tool_text_kib = 0",
                "mcp.a.max_tool_text_kib: from 1 to 4096",
            ),
            (
                "a",
                "url = \"https://x\"\nclient_id = \"c\"",
                "mcp.a.client_id: only with auth = \"oauth\"",
            ),
            (
                "a",
                "url = \"https://x\"\nper_user = true",
                "mcp.a.per_user: only with auth = \"oauth\"",
            ),
            (
                "a",
                "url = \"https://x\"\nauth = \"oauth\"\napi_key = \"k\"",
                "mcp.a.api_key: not with auth = \"oauth\"",
            ),
            (
                "a",
                "url = \"https://x\"\nauth = \"oauth\"\nclient_secret = \"s\"",
                "mcp.a.client_secret: needs client_id",
            ),
            (
                "a",
                "url = \"https://x\"\nauth = \"oauth\"\nclient_metadata_url = \"http://c/x.json\"",
                "mcp.a.client_metadata_url: an https URL",
            ),
            (
                "a",
                "url = \"http://mcp.lan/mcp\"\nauth = \"oauth\"",
                "mcp.a.auth: a credential would go over plain http",
            ),
        ] {
            let error = parse(name, text).unwrap_err();
            assert!(error.starts_with(expected), "{text}: {error}");
        }
    }

    #[test]
    fn no_two_servers_share_a_metadata_document() {
        let declared = |name: &str, document: &str| {
            let text = format!(
                "url = \"https://{name}.example.com/mcp\"\nauth = \"oauth\"\n\
                 client_metadata_url = \"https://chat.example.com/{document}.json\""
            );
            (name.to_string(), parse(name, &text).unwrap())
        };
        let own: BTreeMap<String, DeclaredMcp> = [declared("a", "a"), declared("b", "b")]
            .into_iter()
            .collect();
        assert_eq!(one_metadata_document_each(&own), Ok(()));
        let shared: BTreeMap<String, DeclaredMcp> = [declared("a", "same"), declared("b", "same")]
            .into_iter()
            .collect();
        let refused = one_metadata_document_each(&shared).unwrap_err();
        assert!(
            refused.starts_with("mcp.b.client_metadata_url: mcp.a has the same one"),
            "{refused}"
        );
    }
}
