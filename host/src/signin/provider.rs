//! The identity provider as chatd knows it: its discovery document
//! (`{issuer}/.well-known/openid-configuration`) and its signing keys (`jwks_uri`), fetched
//! through the egress checks (`tools/mcp/oauth/http.rs`'s client: no redirect followed, bodies
//! capped, a local address only when the issuer is local) and kept for [`KEPT_FOR`]. A token
//! signed by a key not kept makes the keys be fetched again (rotation). Only the provider's
//! own token endpoint hands chatd a token, in answer to a code, so no one else can make chatd
//! fetch them.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use serde_json::Value;
use url::Url;

use super::SignInError;
use crate::config::oidc::Oidc;
use crate::egress::Clients;
use crate::tools::mcp::oauth::http::OAuthHttp;

/// How long the discovery document and the keys are used before they are fetched again.
pub const KEPT_FOR: Duration = Duration::from_secs(60 * 60);

/// What a sign-in needs of the provider's discovery document.
#[derive(Clone, Debug)]
pub struct Metadata {
    pub authorization_endpoint: Url,
    pub token_endpoint: Url,
    pub jwks_uri: Url,
    /// `client_secret_post` only when the provider does not take `client_secret_basic`.
    pub secret_in_body: bool,
}

/// The provider of one `[auth.oidc]`, as fetched.
struct Known {
    /// The issuer it was fetched for: another issuer is fetched anew.
    issuer: String,
    metadata: Metadata,
    keys: JwkSet,
    fetched: Instant,
}

/// The provider's documents, kept.
pub struct Provider {
    clients: Clients,
    known: Mutex<Option<Known>>,
}

impl Provider {
    pub fn new(clients: Clients) -> Self {
        Self {
            clients,
            known: Mutex::new(None),
        }
    }

    /// The client every request to the provider goes through.
    pub async fn http(&self, oidc: &Oidc) -> OAuthHttp {
        let local = crate::tools::mcp::oauth::is_local(&oidc.issuer_url).await;
        OAuthHttp::new(self.clients.clone(), &oidc.issuer_url, local)
    }

    /// The discovery document and the keys, fetched when not kept (or kept too long).
    pub async fn current(&self, oidc: &Oidc) -> Result<(Metadata, JwkSet), SignInError> {
        {
            let known = self.lock();
            if let Some(k) = known.as_ref()
                && k.issuer == oidc.issuer
                && k.fetched.elapsed() < KEPT_FOR
            {
                return Ok((k.metadata.clone(), k.keys.clone()));
            }
        }
        let http = self.http(oidc).await;
        let metadata = discover(&http, oidc).await?;
        let keys = fetch_keys(&http, &metadata.jwks_uri).await?;
        *self.lock() = Some(Known {
            issuer: oidc.issuer.clone(),
            metadata: metadata.clone(),
            keys: keys.clone(),
            fetched: Instant::now(),
        });
        Ok((metadata, keys))
    }

    /// The keys fetched again (a token named one not kept); `None` when the provider is not
    /// the one kept (the configuration changed meanwhile).
    pub async fn refetch_keys(&self, oidc: &Oidc) -> Result<Option<JwkSet>, SignInError> {
        let uri = match self.lock().as_ref() {
            Some(k) if k.issuer == oidc.issuer => k.metadata.jwks_uri.clone(),
            _ => return Ok(None),
        };
        let keys = fetch_keys(&self.http(oidc).await, &uri).await?;
        if let Some(k) = self.lock().as_mut() {
            k.keys = keys.clone();
        }
        Ok(Some(keys))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Known>> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The discovery document, checked: it names the configured issuer exactly, and its endpoints
/// are https (or http when the issuer is).
async fn discover(http: &OAuthHttp, oidc: &Oidc) -> Result<Metadata, SignInError> {
    let url = Url::parse(&format!(
        "{}/.well-known/openid-configuration",
        oidc.issuer.trim_end_matches('/')
    ))
    .map_err(|_| SignInError::Unavailable("the issuer makes no discovery URL".into()))?;
    let answer = http.get(&url, "application/json").await.map_err(|why| {
        unavailable(&format!(
            "its discovery document could not be fetched: {why}"
        ))
    })?;
    let doc = match (answer.ok(), answer.json()) {
        (true, Some(doc)) => doc,
        _ => {
            return Err(unavailable(&format!(
                "{url} answered {} without a discovery document",
                answer.status
            )));
        }
    };
    let named = doc
        .get("issuer")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if named != oidc.issuer {
        return Err(unavailable(&format!(
            "its discovery document names the issuer {named:?}, not the configured {:?} (they \
             must be equal, character for character)",
            oidc.issuer
        )));
    }
    let plain_ok = oidc.issuer_url.scheme() == "http";
    let endpoint = |name: &str| -> Result<Url, SignInError> {
        doc.get(name)
            .and_then(Value::as_str)
            .and_then(|s| Url::parse(s).ok())
            .filter(|u| u.scheme() == "https" || (plain_ok && u.scheme() == "http"))
            .ok_or_else(|| unavailable(&format!("its discovery document has no usable {name}")))
    };
    let methods: Vec<&str> = doc
        .get("token_endpoint_auth_methods_supported")
        .and_then(Value::as_array)
        .map(|m| m.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Ok(Metadata {
        authorization_endpoint: endpoint("authorization_endpoint")?,
        token_endpoint: endpoint("token_endpoint")?,
        jwks_uri: endpoint("jwks_uri")?,
        // Absent, the default is client_secret_basic (Discovery §3).
        secret_in_body: !methods.is_empty()
            && !methods.contains(&"client_secret_basic")
            && methods.contains(&"client_secret_post"),
    })
}

async fn fetch_keys(http: &OAuthHttp, uri: &Url) -> Result<JwkSet, SignInError> {
    let answer = http
        .get(uri, "application/json")
        .await
        .map_err(|why| unavailable(&format!("its keys could not be fetched: {why}")))?;
    if !answer.ok() {
        return Err(unavailable(&format!(
            "its keys: {uri} answered {}",
            answer.status
        )));
    }
    // Keys of kinds jsonwebtoken does not know are left out, not fatal: the set is read key by
    // key.
    let doc: Value = serde_json::from_slice(&answer.body)
        .map_err(|_| unavailable("its keys are not a JSON Web Key Set"))?;
    let keys = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(|| unavailable("its keys are not a JSON Web Key Set"))?
        .iter()
        .filter_map(|k| serde_json::from_value(k.clone()).ok())
        .collect();
    Ok(JwkSet { keys })
}

fn unavailable(why: &str) -> SignInError {
    SignInError::Unavailable(format!("the identity provider: {why}"))
}
