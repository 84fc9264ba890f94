//! Who chatd is to an authorization server, in the MCP spec's order: a pre-registered client
//! (`client_id`, and `client_secret` for a confidential one), else a Client ID Metadata
//! Document (`client_metadata_url`, when the server supports them), else one registered
//! dynamically (RFC 7591); and how it proves it at the token endpoint.

use base64::Engine as _;
use serde_json::{Value, json};

use super::discovery::Issuer;
use super::http::OAuthHttp;
use crate::config::Secret;
use crate::config::mcp::OAuthClient;

/// How a client authenticates at the token endpoint (RFC 8414's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// `client_secret_basic`: HTTP Basic with the id and secret.
    Basic,
    /// `client_secret_post`: both in the form.
    Post,
    /// `none`: a public client; the id in the form.
    None,
}

impl AuthMethod {
    pub fn name(self) -> &'static str {
        match self {
            AuthMethod::Basic => "client_secret_basic",
            AuthMethod::Post => "client_secret_post",
            AuthMethod::None => "none",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [AuthMethod::Basic, AuthMethod::Post, AuthMethod::None]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// The client chatd is to one authorization server.
#[derive(Clone, Debug)]
pub struct Identity {
    pub client_id: String,
    pub client_secret: Option<Secret>,
    pub method: AuthMethod,
    /// The redirect URI it was registered with, when chatd registered it: another one needs
    /// another registration.
    pub registered_for: Option<String>,
}

impl Identity {
    /// The client's part of a token request: an `Authorization` value, or form fields.
    pub fn credentials(&self) -> (Option<String>, Vec<(&'static str, String)>) {
        let secret = self.client_secret.as_ref().map(|s| s.expose().to_string());
        match (self.method, secret) {
            (AuthMethod::Basic, Some(secret)) => {
                // RFC 6749 §2.3.1: each form-encoded before they are joined. The id goes in the
                // form too (§3.2.1 allows it), which some servers require, the MCP SDK's among them.
                let id = form_encode(&self.client_id);
                let pair = format!("{id}:{}", form_encode(&secret));
                let basic = base64::engine::general_purpose::STANDARD.encode(pair);
                let fields = vec![("client_id", self.client_id.clone())];
                (Some(format!("Basic {basic}")), fields)
            }
            (AuthMethod::Post, Some(secret)) => (
                None,
                vec![
                    ("client_id", self.client_id.clone()),
                    ("client_secret", secret),
                ],
            ),
            _ => (None, vec![("client_id", self.client_id.clone())]),
        }
    }
}

fn form_encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// Who chatd is to `issuer`: the configured client, a metadata document, or a registration.
pub async fn identify(
    http: &OAuthHttp,
    configured: &OAuthClient,
    issuer: &Issuer,
    redirect_uri: &str,
) -> Result<Identity, String> {
    if let Some(client_id) = &configured.client_id {
        let secret = configured.client_secret.clone();
        let method = match &secret {
            Some(_) => confidential_method(&issuer.auth_methods).ok_or_else(|| {
                format!(
                    "the authorization server {} takes no client secret (it lists {})",
                    issuer.issuer,
                    issuer.auth_methods.join(", ")
                )
            })?,
            None => AuthMethod::None,
        };
        return Ok(Identity {
            client_id: client_id.clone(),
            client_secret: secret,
            method,
            registered_for: None,
        });
    }
    if let Some(url) = &configured.client_metadata_url
        && issuer.client_metadata_documents
    {
        return Ok(Identity {
            client_id: url.clone(),
            client_secret: None,
            method: AuthMethod::None,
            registered_for: None,
        });
    }
    let Some(endpoint) = &issuer.registration_endpoint else {
        return Err(format!(
            "the authorization server {} has no dynamic registration{}: set client_id",
            issuer.issuer,
            if issuer.client_metadata_documents {
                " (it takes a client metadata document: set client_metadata_url)"
            } else {
                ""
            }
        ));
    };
    register(http, configured, issuer, endpoint, redirect_uri).await
}

/// A client registered at `endpoint` (RFC 7591) for redirects to `redirect_uri`, as a
/// confidential client where the server allows one.
async fn register(
    http: &OAuthHttp,
    configured: &OAuthClient,
    issuer: &Issuer,
    endpoint: &url::Url,
    redirect_uri: &str,
) -> Result<Identity, String> {
    let method = registered_method(&issuer.auth_methods);
    // A redirect to loopback is an app on the user's machine (`chatd mcp call`); any other is
    // chatd's server, a web client (OpenID Connect Dynamic Registration's `application_type`).
    let loopback = url::Url::parse(redirect_uri)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| h == "127.0.0.1" || h == "[::1]" || h == "localhost")
        })
        .unwrap_or(false);
    let mut body = json!({
        "client_name": "chatd",
        "application_type": if loopback { "native" } else { "web" },
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method.name(),
    });
    if let Some(scopes) = &configured.scopes {
        body["scope"] = Value::String(scopes.clone());
    }
    let answer = http.post_json(endpoint, &body).await?;
    let registered = answer.json().filter(|_| answer.ok()).ok_or_else(|| {
        format!(
            "dynamic registration at {} failed (HTTP {}){}",
            issuer.issuer,
            answer.status,
            answer.oauth_error()
        )
    })?;
    let client_id = registered
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or("dynamic registration gave no client_id")?;
    let client_secret = registered
        .get("client_secret")
        .and_then(Value::as_str)
        .map(|s| Secret::new(s.to_string()));
    let said = registered
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .and_then(AuthMethod::parse);
    let method = match (said.unwrap_or(method), &client_secret) {
        (AuthMethod::Basic | AuthMethod::Post, None) => AuthMethod::None,
        (method, _) => method,
    };
    Ok(Identity {
        client_id: client_id.to_string(),
        client_secret,
        method,
        registered_for: Some(redirect_uri.to_string()),
    })
}

/// How a client with a secret authenticates: Basic when the server lists it or lists nothing
/// (RFC 8414's default), else the form.
fn confidential_method(listed: &[String]) -> Option<AuthMethod> {
    if listed.is_empty() || listed.iter().any(|m| m == "client_secret_basic") {
        Some(AuthMethod::Basic)
    } else if listed.iter().any(|m| m == "client_secret_post") {
        Some(AuthMethod::Post)
    } else {
        None
    }
}

/// The method asked for at registration: a confidential client where the server allows one,
/// else a public one.
fn registered_method(listed: &[String]) -> AuthMethod {
    confidential_method(listed).unwrap_or(AuthMethod::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(methods: &[&str]) -> Vec<String> {
        methods.iter().map(|m| m.to_string()).collect()
    }

    #[test]
    fn the_method_follows_what_the_server_lists() {
        assert_eq!(registered_method(&listed(&[])), AuthMethod::Basic);
        assert_eq!(
            registered_method(&listed(&["client_secret_post", "none"])),
            AuthMethod::Post
        );
        assert_eq!(registered_method(&listed(&["none"])), AuthMethod::None);
        assert_eq!(confidential_method(&listed(&["none"])), None);
    }

    #[test]
    fn credentials_go_where_the_method_says() {
        let identity = |method| Identity {
            client_id: "id:1".into(),
            client_secret: Some(Secret::new("s&2")),
            method,
            registered_for: None,
        };
        let (basic, form) = identity(AuthMethod::Basic).credentials();
        // base64("id%3A1:s%262")
        assert_eq!(basic.as_deref(), Some("Basic aWQlM0ExOnMlMjYy"));
        assert_eq!(form, vec![("client_id", "id:1".to_string())]);
        let (header, form) = identity(AuthMethod::Post).credentials();
        assert!(header.is_none());
        assert_eq!(form[1], ("client_secret", "s&2".to_string()));
        let (header, form) = identity(AuthMethod::None).credentials();
        assert!(header.is_none());
        assert_eq!(form, vec![("client_id", "id:1".to_string())]);
    }
}
