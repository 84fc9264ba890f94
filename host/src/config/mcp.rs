//! `[mcp.NAME]`: a remote MCP server whose tools join the service-managed tools
//! (`plugins/mcp/`). Only streamable HTTP: a URL, never a command (docs/mcp-tools.md says why).
//!
//! ```toml
//! [mcp.github]
//! url = "https://api.example.com/mcp"
//! api_key = "${GITHUB_MCP_TOKEN}"   # optional; sent as `auth` says, bearer by default
//! auth = "bearer"                    # bearer, header:NAME, query:NAME, none
//! tools = ["search_issues"]          # optional allow-list of the server's own tool names
//! timeout_secs = 60                  # optional: the longest one call may take (1..=600)
//! ```

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
    Ok(DeclaredMcp {
        name: name.to_string(),
        url,
        api_key: super::values::api_key(raw.api_key),
        auth: raw
            .auth
            .map(|a| Auth::parse(&a).map_err(|e| format!("{key}.auth: {e}")))
            .transpose()?,
        headers: super::values::headers(&key, raw.headers)?,
        tools: raw.tools,
        timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ] {
            let error = parse(name, text).unwrap_err();
            assert!(error.starts_with(expected), "{text}: {error}");
        }
    }
}
