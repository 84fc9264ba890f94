//! What a login keeps in the store, sealed ([`super::sealed`]): a [`Saved`] login (its tokens,
//! its client, where its issuer is), and a [`Pending`] one begun by Connect until its callback.
//! Plain JSON inside the seal; nothing here is ever logged or exported. The one place outside
//! the wire's files that derives `Serialize`: a format chatd writes and reads back, as the
//! plugin lock file is (`tests/api/structure.rs`).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use url::Url;

use super::client::{AuthMethod, Identity};
use super::discovery::{Discovered, Issuer};
use super::sealed::SealKey;
use super::token::Tokens;
use crate::config::Secret;
use crate::store::Store;
use crate::store::logins::{LoginKey, SealedLogin};

/// Where a served server's login is kept: the store, the key, whose login to which server.
#[derive(Clone)]
pub struct Keeper {
    pub store: Store,
    pub key: Arc<SealKey>,
    pub login: LoginKey,
}

impl Keeper {
    pub fn seal<T: Serialize>(&self, value: &T) -> SealedLogin {
        let json = serde_json::to_vec(value).expect("a login serialises");
        SealedLogin {
            sealed: self.key.seal(&sealed_for(&self.login), &json),
            key_id: self.key.id.clone(),
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.login.server
    }

    /// What `row` holds; why not, in words, when it cannot be opened.
    pub fn open<T: for<'de> Deserialize<'de>>(&self, row: &SealedLogin) -> Result<T, String> {
        if row.key_id != self.key.id {
            return Err("its login was sealed under another key (CHATD_SECRET_KEY changed)".into());
        }
        let plain = self
            .key
            .open(&sealed_for(&self.login), &row.sealed)
            .ok_or("its stored login does not open (damaged)")?;
        serde_json::from_slice(&plain).map_err(|_| "its stored login is not readable".into())
    }
}

/// What `login` is sealed for: its server's name (as every login was before logins had owners),
/// and its owner's id for a person's (a server's name has no `/`): a row moved to another
/// server or person does not open.
fn sealed_for(login: &LoginKey) -> String {
    let LoginKey { server, owner } = login;
    match owner.as_str() {
        crate::store::logins::OPERATOR => server.clone(),
        owner => format!("{server}/{owner}"),
    }
}

/// The client of a login, as kept.
#[derive(Clone, Serialize, Deserialize)]
pub struct SavedClient {
    pub client_id: String,
    pub client_secret: Option<String>,
    /// RFC 8414's name of the method.
    pub method: String,
    pub registered_for: Option<String>,
}

impl From<&Identity> for SavedClient {
    fn from(identity: &Identity) -> Self {
        Self {
            client_id: identity.client_id.clone(),
            client_secret: identity.client_secret.as_ref().map(|s| s.expose().into()),
            method: identity.method.name().to_string(),
            registered_for: identity.registered_for.clone(),
        }
    }
}

impl SavedClient {
    pub fn identity(&self) -> Identity {
        Identity {
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone().map(Secret::new),
            method: AuthMethod::parse(&self.method).unwrap_or(AuthMethod::None),
            registered_for: self.registered_for.clone(),
        }
    }
}

/// Where a login's issuer is, as kept.
#[derive(Clone, Serialize, Deserialize)]
pub struct SavedDiscovered {
    pub resource: String,
    pub scopes_supported: Option<Vec<String>>,
    pub issuer: String,
    pub authorization_endpoint: Url,
    pub token_endpoint: Url,
    pub registration_endpoint: Option<Url>,
    pub revocation_endpoint: Option<Url>,
    pub auth_methods: Vec<String>,
    pub issuer_scopes: Option<Vec<String>>,
    pub client_metadata_documents: bool,
    pub iss_parameter: bool,
}

impl From<&Discovered> for SavedDiscovered {
    fn from(d: &Discovered) -> Self {
        let i = &d.issuer;
        Self {
            resource: d.resource.clone(),
            scopes_supported: d.scopes_supported.clone(),
            issuer: i.issuer.clone(),
            authorization_endpoint: i.authorization_endpoint.clone(),
            token_endpoint: i.token_endpoint.clone(),
            registration_endpoint: i.registration_endpoint.clone(),
            revocation_endpoint: i.revocation_endpoint.clone(),
            auth_methods: i.auth_methods.clone(),
            issuer_scopes: i.scopes_supported.clone(),
            client_metadata_documents: i.client_metadata_documents,
            iss_parameter: i.iss_parameter,
        }
    }
}

impl SavedDiscovered {
    pub fn discovered(&self) -> Discovered {
        Discovered {
            resource: self.resource.clone(),
            scopes_supported: self.scopes_supported.clone(),
            issuer: Issuer {
                issuer: self.issuer.clone(),
                authorization_endpoint: self.authorization_endpoint.clone(),
                token_endpoint: self.token_endpoint.clone(),
                registration_endpoint: self.registration_endpoint.clone(),
                revocation_endpoint: self.revocation_endpoint.clone(),
                auth_methods: self.auth_methods.clone(),
                scopes_supported: self.issuer_scopes.clone(),
                client_metadata_documents: self.client_metadata_documents,
                iss_parameter: self.iss_parameter,
            },
        }
    }
}

/// A login: everything a request, a refresh, a revocation and the next login need.
#[derive(Clone, Serialize, Deserialize)]
pub struct Saved {
    /// The server's URL it is for: a changed URL needs a new login.
    pub url: String,
    pub discovered: SavedDiscovered,
    pub client: SavedClient,
    pub access: String,
    pub refresh: Option<String>,
    /// Seconds since the Unix epoch.
    pub expires_at: Option<u64>,
    /// When to refresh, in seconds since the Unix epoch.
    #[serde(default)]
    pub refresh_at: Option<u64>,
    pub scope: Option<String>,
}

impl Saved {
    pub fn new(url: &str, discovered: &Discovered, identity: &Identity, tokens: &Tokens) -> Self {
        Self {
            url: url.to_string(),
            discovered: discovered.into(),
            client: identity.into(),
            access: tokens.access.expose().to_string(),
            refresh: tokens.refresh.as_ref().map(|s| s.expose().to_string()),
            expires_at: tokens.expires.and_then(epoch_secs),
            refresh_at: tokens.refresh_at.and_then(epoch_secs),
            scope: tokens.scope.clone(),
        }
    }

    pub fn tokens(&self) -> Tokens {
        Tokens {
            access: Secret::new(self.access.clone()),
            refresh: self.refresh.clone().map(Secret::new),
            expires: self
                .expires_at
                .map(|secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs)),
            refresh_at: self
                .refresh_at
                .map(|secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs)),
            scope: self.scope.clone(),
        }
    }
}

fn epoch_secs(at: SystemTime) -> Option<u64> {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

/// A login begun by Connect: what its callback needs to finish it.
#[derive(Serialize, Deserialize)]
pub struct Pending {
    pub url: String,
    pub discovered: SavedDiscovered,
    pub client: SavedClient,
    pub redirect_uri: String,
    pub verifier: String,
    pub scope: Option<String>,
    /// The SHA-256 (hex) of the browser's cookie: the callback must come from that browser.
    pub browser: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_opens_only_for_its_own_server_and_person() {
        let key = SealKey::from_secret(&Secret::new("k".repeat(40)));
        let ann = LoginKey::person("t", "ann");
        let sealed = key.seal(&sealed_for(&ann), b"tokens");
        assert_eq!(key.open(&sealed_for(&ann), &sealed).unwrap(), b"tokens");
        for other in [
            LoginKey::person("t", "bob"),
            LoginKey::person("u", "ann"),
            LoginKey::operator("t"),
        ] {
            assert!(
                key.open(&sealed_for(&other), &sealed).is_none(),
                "{other:?}"
            );
        }
        // The operator's is sealed as logins were before they had owners: those still open.
        let before = key.seal("t", b"tokens");
        let operator = sealed_for(&LoginKey::operator("t"));
        assert_eq!(key.open(&operator, &before).unwrap(), b"tokens");
    }
}
