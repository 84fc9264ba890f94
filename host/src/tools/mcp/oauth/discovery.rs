//! Where a server's logins happen: its protected resource metadata (RFC 9728), then its
//! authorization server's metadata (RFC 8414, or OpenID Connect discovery), in the order the
//! MCP authorization spec (2025-11-25) gives, with the 2025-03-26 fallbacks for servers that
//! publish no resource metadata: the server's own origin as the authorization server, and its
//! default `/authorize`, `/token` and `/register` when that has no metadata either.

use serde_json::{Map, Value};
use url::Url;

use super::challenge::Challenge;
use super::http::{OAuthHttp, bare};

const JSON: &str = "application/json";

/// What the flow needs of a server's authorization server, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issuer {
    /// The issuer identifier (its metadata's `issuer`, checked against where it was found), or
    /// the server's origin when there was no metadata.
    pub issuer: String,
    pub authorization_endpoint: Url,
    pub token_endpoint: Url,
    pub registration_endpoint: Option<Url>,
    pub revocation_endpoint: Option<Url>,
    /// `token_endpoint_auth_methods_supported`; empty: not said (`client_secret_basic`, RFC 8414).
    pub auth_methods: Vec<String>,
    pub scopes_supported: Option<Vec<String>>,
    /// `client_id_metadata_document_supported`.
    pub client_metadata_documents: bool,
    /// `authorization_response_iss_parameter_supported` (RFC 9207): the redirect names it.
    pub iss_parameter: bool,
}

/// A server's login, found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovered {
    /// The resource the tokens are for (RFC 8707's `resource`): the metadata's, else the
    /// server's URL.
    pub resource: String,
    /// The protected resource metadata's `scopes_supported`.
    pub scopes_supported: Option<Vec<String>>,
    pub issuer: Issuer,
}

/// Finds the login of the server at `server`, which refused with `challenge`; `local`: the
/// server is on a local network, so plain http is accepted for its endpoints.
pub async fn discover(
    http: &OAuthHttp,
    server: &Url,
    challenge: &Challenge,
    local: bool,
) -> Result<Discovered, String> {
    let resource = protected_resource(http, server, challenge, local).await?;
    let Some(resource) = resource else {
        // A 2025-03-26 server: its own origin is the authorization server.
        let mut origin = server.clone();
        origin.set_path("/");
        origin.set_query(None);
        origin.set_fragment(None);
        let issuer = match authorization_server(http, &origin, local).await? {
            Some(issuer) => issuer,
            None => defaults(&origin)?,
        };
        return Ok(Discovered {
            resource: canonical(server),
            scopes_supported: None,
            issuer,
        });
    };
    let listed = resource
        .get("authorization_servers")
        .and_then(Value::as_array);
    let Some(first) = listed.and_then(|l| l.iter().find_map(Value::as_str)) else {
        return Err(format!(
            "the protected resource metadata of {} names no authorization server",
            bare(server)
        ));
    };
    let at = endpoint(first, "authorization_servers[0]", local)?;
    let issuer = authorization_server(http, &at, local)
        .await?
        .ok_or_else(|| format!("no authorization server metadata found for {}", bare(&at)))?;
    let resource_id = match resource.get("resource").and_then(Value::as_str) {
        Some(said) => checked_resource(said, server)?,
        None => canonical(server),
    };
    Ok(Discovered {
        resource: resource_id,
        scopes_supported: strings(&resource, "scopes_supported"),
        issuer,
    })
}

/// The protected resource metadata: at the challenge's `resource_metadata` (which must then be
/// there), else at the well-known URL with the server's path, else at the root one. `None`:
/// there is none (each said so with a 404), a 2025-03-26 server.
async fn protected_resource(
    http: &OAuthHttp,
    server: &Url,
    challenge: &Challenge,
    local: bool,
) -> Result<Option<Map<String, Value>>, String> {
    if let Some(said) = &challenge.resource_metadata {
        let url = server
            .join(said)
            .map_err(|e| format!("resource_metadata {said:?}: {e}"))?;
        let url = endpoint(url.as_str(), "resource_metadata", local)?;
        return match json_at(http, &url).await? {
            Some(found) => Ok(Some(found)),
            None => Err(format!(
                "the protected resource metadata the server names ({}) is not there",
                bare(&url)
            )),
        };
    }
    let path = server.path().trim_end_matches('/');
    let mut tries = Vec::new();
    if !path.is_empty() {
        tries.push(well_known(server, "oauth-protected-resource", path));
    }
    tries.push(well_known(server, "oauth-protected-resource", ""));
    for url in tries {
        if let Some(found) = json_at(http, &url).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// An authorization server's metadata, by the URLs RFC 8414 and OpenID Connect give for an
/// issuer `at` (with a path: inserted first, appended last); its `issuer` must be `at`.
async fn authorization_server(
    http: &OAuthHttp,
    at: &Url,
    local: bool,
) -> Result<Option<Issuer>, String> {
    let path = at.path().trim_end_matches('/');
    let tries = if path.is_empty() {
        vec![
            well_known(at, "oauth-authorization-server", ""),
            well_known(at, "openid-configuration", ""),
        ]
    } else {
        let mut appended = at.clone();
        appended.set_path(&format!("{path}/.well-known/openid-configuration"));
        vec![
            well_known(at, "oauth-authorization-server", path),
            well_known(at, "openid-configuration", path),
            appended,
        ]
    };
    for url in tries {
        if let Some(found) = json_at(http, &url).await? {
            return issuer(&found, at, local).map(Some);
        }
    }
    Ok(None)
}

/// The metadata's fields the flow needs, checked: the issuer is the one asked for, the
/// endpoints are URLs chatd may reach, PKCE's S256 is listed.
fn issuer(found: &Map<String, Value>, at: &Url, local: bool) -> Result<Issuer, String> {
    let said = found.get("issuer").and_then(Value::as_str).unwrap_or("");
    let expected = at.as_str().trim_end_matches('/');
    if said.trim_end_matches('/') != expected {
        return Err(format!(
            "the authorization server metadata for {expected} names another issuer ({:?}); \
             it is not used",
            said.chars().take(200).collect::<String>()
        ));
    }
    let methods = strings(found, "code_challenge_methods_supported").unwrap_or_default();
    if !methods.iter().any(|m| m == "S256") {
        return Err(format!(
            "the authorization server {expected} does not list PKCE's S256 method \
             (code_challenge_methods_supported), which the MCP authorization spec requires"
        ));
    }
    let url = |field: &str| -> Result<Option<Url>, String> {
        found
            .get(field)
            .and_then(Value::as_str)
            .map(|u| endpoint(u, field, local))
            .transpose()
    };
    let required = |field: &str| {
        url(field)?.ok_or_else(|| format!("the metadata of {expected} has no {field}"))
    };
    Ok(Issuer {
        issuer: said.to_string(),
        authorization_endpoint: required("authorization_endpoint")?,
        token_endpoint: required("token_endpoint")?,
        registration_endpoint: url("registration_endpoint")?,
        revocation_endpoint: url("revocation_endpoint")?,
        auth_methods: strings(found, "token_endpoint_auth_methods_supported").unwrap_or_default(),
        scopes_supported: strings(found, "scopes_supported"),
        client_metadata_documents: flag(found, "client_id_metadata_document_supported"),
        iss_parameter: flag(found, "authorization_response_iss_parameter_supported"),
    })
}

/// A 2025-03-26 server without metadata: the default endpoints at its origin.
fn defaults(origin: &Url) -> Result<Issuer, String> {
    let at = |path: &str| origin.join(path).map_err(|e| e.to_string());
    Ok(Issuer {
        issuer: origin.as_str().trim_end_matches('/').to_string(),
        authorization_endpoint: at("/authorize")?,
        token_endpoint: at("/token")?,
        registration_endpoint: Some(at("/register")?),
        revocation_endpoint: None,
        auth_methods: Vec::new(),
        scopes_supported: None,
        client_metadata_documents: false,
        iss_parameter: false,
    })
}

/// `/.well-known/NAME` then `path` at `url`'s origin.
fn well_known(url: &Url, name: &str, path: &str) -> Url {
    let mut at = url.clone();
    at.set_path(&format!("/.well-known/{name}{path}"));
    at.set_query(None);
    at.set_fragment(None);
    at
}

/// The JSON object at `url`, or `None` when the server says there is none (404, 405, 410).
/// Anything else that is not a JSON object (a 5xx, a timeout, a page) is an error: a server
/// that fails to answer is never taken for one without metadata, which would move the login
/// to the 2025-03-26 defaults at its own origin.
async fn json_at(http: &OAuthHttp, url: &Url) -> Result<Option<Map<String, Value>>, String> {
    let answer = http.get(url, JSON).await?;
    if matches!(answer.status, 404 | 405 | 410) {
        return Ok(None);
    }
    match answer.json() {
        Some(found) if answer.ok() => Ok(Some(found)),
        _ => Err(format!(
            "{} answered HTTP {} without JSON metadata",
            bare(url),
            answer.status
        )),
    }
}

/// An endpoint a server's metadata names: a URL, https unless the server is local (then http
/// too), without user information or a fragment.
fn endpoint(text: &str, field: &str, local: bool) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("{field} {text:?}: {e}"))?;
    let scheme_ok = url.scheme() == "https" || (local && url.scheme() == "http");
    if !scheme_ok || !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{field} {:?}: an https URL without user information is required",
            bare(&url)
        ));
    }
    if url.fragment().is_some() {
        return Err(format!("{field} {:?}: a URL with a fragment", bare(&url)));
    }
    Ok(url)
}

/// The resource the metadata says it is: it must be the server's URL, or an origin or path
/// above it (a token for another resource is never asked for).
fn checked_resource(said: &str, server: &Url) -> Result<String, String> {
    let parsed = Url::parse(said).map_err(|e| format!("resource {said:?}: {e}"))?;
    let path = parsed.path().trim_end_matches('/');
    let covers = crate::egress::Origin::of(&parsed) == crate::egress::Origin::of(server)
        && (server.path() == path
            || server.path().starts_with(&format!("{path}/"))
            || path.is_empty());
    if !covers {
        return Err(format!(
            "the protected resource metadata is for {:?}, not for {}",
            said.chars().take(200).collect::<String>(),
            bare(server)
        ));
    }
    Ok(said.to_string())
}

/// The server's URL as a resource identifier (RFC 8707): no fragment, no query.
fn canonical(server: &Url) -> String {
    let mut url = server.clone();
    url.set_fragment(None);
    url.set_query(None);
    url.to_string()
}

fn flag(map: &Map<String, Value>, field: &str) -> bool {
    map.get(field).and_then(Value::as_bool).unwrap_or(false)
}

fn strings(map: &Map<String, Value>, field: &str) -> Option<Vec<String>> {
    let list = map.get(field)?.as_array()?;
    Some(
        list.iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_urls_insert_the_path() {
        let server = Url::parse("https://mcp.example.com/tenant/mcp?x=1").unwrap();
        assert_eq!(
            well_known(&server, "oauth-protected-resource", "/tenant/mcp").as_str(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/tenant/mcp"
        );
        assert_eq!(
            well_known(&server, "oauth-authorization-server", "").as_str(),
            "https://mcp.example.com/.well-known/oauth-authorization-server"
        );
    }

    fn metadata(issuer: &str, methods: &[&str]) -> Map<String, Value> {
        serde_json::json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "code_challenge_methods_supported": methods,
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn the_issuer_must_be_the_one_asked_for_and_list_s256() {
        let at = Url::parse("https://auth.example.com/tenant").unwrap();
        let ok = issuer(
            &metadata("https://auth.example.com/tenant", &["S256"]),
            &at,
            false,
        );
        assert_eq!(
            ok.unwrap().token_endpoint.as_str(),
            "https://auth.example.com/tenant/token"
        );
        let other = issuer(&metadata("https://evil.example.com", &["S256"]), &at, false);
        assert!(other.unwrap_err().contains("another issuer"));
        let plain = issuer(
            &metadata("https://auth.example.com/tenant", &["plain"]),
            &at,
            false,
        );
        assert!(plain.unwrap_err().contains("S256"));
    }

    #[test]
    fn endpoints_are_https_unless_the_server_is_local() {
        assert!(endpoint("http://auth.example.com/token", "token_endpoint", false).is_err());
        assert!(endpoint("http://127.0.0.1:9/token", "token_endpoint", true).is_ok());
        assert!(endpoint("https://u:p@auth.example.com/t", "token_endpoint", false).is_err());
        assert!(endpoint("javascript:alert(1)", "token_endpoint", true).is_err());
    }

    #[test]
    fn a_resource_must_cover_the_server() {
        let server = Url::parse("https://mcp.example.com/v1/mcp").unwrap();
        for fine in [
            "https://mcp.example.com/v1/mcp",
            "https://mcp.example.com/v1",
            "https://mcp.example.com/",
            "https://mcp.example.com",
        ] {
            assert_eq!(checked_resource(fine, &server).unwrap(), fine);
        }
        for wrong in [
            "https://other.example.com/v1/mcp",
            "https://mcp.example.com/v2/mcp",
            "https://mcp.example.com/v1/mc",
        ] {
            assert!(checked_resource(wrong, &server).is_err(), "{wrong}");
        }
    }
}
