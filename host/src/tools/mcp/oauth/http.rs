//! The OAuth flow's own HTTP: metadata, registration and token requests, each through
//! [`crate::egress::send`] under a grant of its own ([`OAuthHttp::grant`]). No redirect is
//! followed (a 3xx is the answer), bodies are capped, and no credential is added by the
//! grant: what a request carries (a client secret, a code, a refresh token) is in its body or
//! its `Authorization`, put there by the flow for the one endpoint it was verified for.

use std::time::Duration;

use serde_json::Value;
use url::Url;

use crate::egress::{Clients, HttpGrant, Incoming, Origin, Outgoing, send};

/// The most an OAuth answer may be: metadata and tokens are small.
const MAX_BODY: u64 = 256 * 1024;
/// The most of a server's `error_description` quoted, in characters.
const QUOTED: usize = 200;
/// The longest one OAuth request may take.
const TIMEOUT: Duration = Duration::from_secs(15);

/// An answer: its status, its headers, its body.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as a JSON object, when it is one.
    pub fn json(&self) -> Option<serde_json::Map<String, Value>> {
        match serde_json::from_slice(&self.body) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// An OAuth error answer's `error` and `error_description`, quoted briefly: never the body
    /// itself, which might echo what was sent.
    pub fn oauth_error(&self) -> String {
        let Some(body) = self.json() else {
            return String::new();
        };
        let field = |name: &str| {
            body.get(name)
                .and_then(Value::as_str)
                .map(|s| s.chars().take(QUOTED).collect::<String>())
        };
        match (field("error"), field("error_description")) {
            (Some(error), Some(description)) => format!(": {error}: {description}"),
            (Some(error), None) => format!(": {error}"),
            _ => String::new(),
        }
    }
}

/// The OAuth requests of one MCP server.
#[derive(Clone)]
pub struct OAuthHttp {
    clients: Clients,
    grant: HttpGrant,
}

impl OAuthHttp {
    /// Requests for the server at `server`: its own origin at any address (the operator chose
    /// it), any other origin at a public address, or also at a loopback or private one when
    /// `local` (the server itself is on such a network, as test servers and on-premises
    /// deployments are); never a link-local or metadata address.
    pub fn new(clients: Clients, server: &Url, local: bool) -> Self {
        let grant = HttpGrant {
            trusted: Origin::of(server).into_iter().collect(),
            public_web: true,
            local_network: local,
            max_body_bytes: MAX_BODY,
            max_timeout: TIMEOUT,
            ..HttpGrant::none()
        };
        Self { clients, grant }
    }

    pub async fn get(&self, url: &Url, accept: &str) -> Result<Answer, String> {
        let headers = vec![("accept".to_string(), accept.to_string())];
        self.send(reqwest::Method::GET, url, headers, None).await
    }

    /// A form POST (token, revocation); `authorization` is a Basic client credential.
    pub async fn post_form(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        authorization: Option<String>,
    ) -> Result<Answer, String> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let mut headers = vec![
            (
                "content-type".to_string(),
                "application/x-www-form-urlencoded".to_string(),
            ),
            ("accept".to_string(), "application/json".to_string()),
        ];
        if let Some(value) = authorization {
            headers.push(("authorization".to_string(), value));
        }
        self.send(reqwest::Method::POST, url, headers, Some(body.into_bytes()))
            .await
    }

    /// A JSON POST (dynamic client registration).
    pub async fn post_json(&self, url: &Url, body: &Value) -> Result<Answer, String> {
        let headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("accept".to_string(), "application/json".to_string()),
        ];
        let body = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        self.send(reqwest::Method::POST, url, headers, Some(body))
            .await
    }

    async fn send(
        &self,
        method: reqwest::Method,
        url: &Url,
        headers: Vec<(String, String)>,
        body: Option<Vec<u8>>,
    ) -> Result<Answer, String> {
        let outgoing = Outgoing {
            method,
            url: url.to_string(),
            headers,
            body,
            timeout: Some(TIMEOUT),
            follow_redirects: false,
        };
        let why = |e: crate::egress::Refusal| format!("{}: {}", bare(url), refusal(e));
        let mut incoming: Incoming = send(&self.clients, &self.grant, outgoing)
            .await
            .map_err(why)?;
        let mut body = Vec::new();
        while let Some(chunk) = incoming.next_chunk().await.map_err(why)? {
            body.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status: incoming.status,
            headers: incoming.headers,
            body,
        })
    }
}

fn refusal(refusal: crate::egress::Refusal) -> String {
    use crate::egress::Refusal;
    match refusal {
        Refusal::Denied(why) | Refusal::Invalid(why) | Refusal::Connection(why) => why,
        Refusal::Timeout => "timed out".into(),
        Refusal::TooLarge(cap) => format!("the answer is over the {cap}-byte cap"),
    }
}

/// `url` without its query (which may hold a code or a state) for an error message.
pub fn bare(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(http: &OAuthHttp, url: &str) -> bool {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let url = Url::parse(url).unwrap();
        match runtime.block_on(http.get(&url, "application/json")) {
            Err(why) => why.contains("not granted") || why.contains("resolves to"),
            Ok(_) => false,
        }
    }

    #[test]
    fn a_public_servers_login_reaches_no_local_address_and_none_reaches_metadata() {
        let public = Url::parse("https://mcp.example.com/mcp").unwrap();
        let http = OAuthHttp::new(Clients::new(), &public, false);
        for url in [
            "http://127.0.0.1:9/.well-known/oauth-authorization-server",
            "http://10.0.0.5/token",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]:9/token",
        ] {
            assert!(refused(&http, url), "{url}");
        }
        let local = Url::parse("http://127.0.0.1:9/mcp").unwrap();
        let http = OAuthHttp::new(Clients::new(), &local, true);
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/token",
            "http://100.100.100.200/latest/meta-data/",
            "http://[::ffff:100.100.100.200]/token",
            "http://169.254.170.2/v2/credentials",
            "http://192.0.0.192/",
            "http://[fd00:ec2::254]/",
        ] {
            assert!(refused(&http, url), "{url}");
        }
        // A loopback address is reachable for a local server (nothing listens: not refused).
        assert!(!refused(&http, "http://127.0.0.1:1/token"));
    }
}
