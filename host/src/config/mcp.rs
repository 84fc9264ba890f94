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
    let api_key = super::values::api_key(raw.api_key);
    let auth = raw
        .auth
        .map(|a| Auth::parse(&a).map_err(|e| format!("{key}.auth: {e}")))
        .transpose()?;
    let sends_key = api_key.is_some() && auth != Some(Auth::None);
    let sends_userinfo = !url.username().is_empty() || url.password().is_some();
    let exposed = url.scheme() == "http" && !is_loopback(&url);
    if exposed && !raw.allow_insecure {
        let field = if sends_key { "api_key" } else { "url" };
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
    })
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
        ] {
            let error = parse(name, text).unwrap_err();
            assert!(error.starts_with(expected), "{text}: {error}");
        }
    }
}
