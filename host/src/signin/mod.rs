//! Signing in to the web client with an OpenID Connect provider (`[auth.oidc]`,
//! docs/teams.md "Signing in with an identity provider"): the authorization code flow with
//! PKCE (S256), `state` and `nonce`.
//!
//! [`SignIn::begin`] makes the three values and a browser secret, keeps the sign-in in the
//! store under the `state`'s digest (the callback may reach any instance), and gives the
//! provider's authorization URL; the browser secret goes to a cookie that binds the sign-in to
//! the browser that began it (login CSRF). [`SignIn::finish`] takes the sign-in once and only with
//! the browser's cookie (a replayed `state`, or another browser, finds nothing), exchanges the
//! code, checks the
//! ID token (`verify.rs`), and finds or makes its person (`person.rs`). The session it starts is
//! `people/sessions.rs`'s, the routes `http/oidc.rs`'s.

pub mod person;
pub mod provider;
pub mod verify;

use std::time::Duration;

use serde_json::{Map, Value};
use url::Url;

use crate::config::oidc::Oidc;
use crate::people::keys::digest;
use crate::store::oidc::PendingLogin;
use crate::store::people::PersonRecord;
use crate::store::{Store, StoreError};
use crate::tools::mcp::oauth::client::{AuthMethod, Identity};
use crate::tools::mcp::oauth::token::{challenge, random};
use crate::vocabulary::format_micros;
use provider::Provider;
use verify::{Expected, Unverified};

/// How long a sign-in may take between its start and its callback.
pub const PENDING_FOR: Duration = Duration::from_secs(10 * 60);

/// Why a sign-in did not end with a person.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// The callback is not one chatd can take: missing, replayed or expired `state`, another
    /// browser, the provider's own error, an ID token that fails a check (401).
    #[error("{0}")]
    Refused(String),
    /// The provider vouched for someone chatd does not let in (403): a disabled person, or no
    /// person and `new_people = false`.
    #[error("{0}")]
    Forbidden(String),
    /// The provider could not be asked, or answered nonsense (503).
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A sign-in begun: where to send the browser, and the secret its cookie keeps.
pub struct Begun {
    pub url: Url,
    pub browser: String,
}

/// What the provider's redirect brought back.
pub struct Callback<'a> {
    pub code: Option<&'a str>,
    pub state: Option<&'a str>,
    pub error: Option<&'a str>,
    /// The browser's binding cookie, if it sent one.
    pub browser: Option<&'a str>,
}

/// The sign-in flow, with the provider's documents kept.
pub struct SignIn {
    provider: Provider,
}

impl SignIn {
    pub fn new(clients: crate::egress::Clients) -> Self {
        Self {
            provider: Provider::new(clients),
        }
    }

    /// Begins a sign-in whose callback is `redirect_uri`.
    pub async fn begin(
        &self,
        oidc: &Oidc,
        store: &Store,
        redirect_uri: &str,
    ) -> Result<Begun, SignInError> {
        let (metadata, _) = self.provider.current(oidc).await?;
        let (state, nonce, verifier, browser) = (random(32), random(32), random(32), random(32));
        let expires =
            chrono::Utc::now() + chrono::Duration::from_std(PENDING_FOR).expect("a short time");
        store
            .add_oidc_login(
                &digest(&state),
                &PendingLogin {
                    browser_sha256: digest(&browser),
                    nonce: nonce.clone(),
                    verifier: verifier.clone(),
                },
                &format_micros(expires.timestamp_micros()),
            )
            .await?;
        let mut url = metadata.authorization_endpoint;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &oidc.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", &oidc.scopes.join(" "))
            .append_pair("state", &state)
            .append_pair("nonce", &nonce)
            .append_pair("code_challenge", &challenge(&verifier))
            .append_pair("code_challenge_method", "S256");
        Ok(Begun { url, browser })
    }

    /// Finishes the sign-in `callback` answers: its person, found or made.
    pub async fn finish(
        &self,
        oidc: &Oidc,
        store: &Store,
        redirect_uri: &str,
        callback: Callback<'_>,
    ) -> Result<PersonRecord, SignInError> {
        let refused = |why: &str| SignInError::Refused(why.to_string());
        let state = callback
            .state
            .ok_or_else(|| refused("state: the callback carries none"))?;
        // Taken only with the cookie of the browser that began it: another browser's callback
        // (login CSRF) finds nothing, and spends nothing. Found by digests, as a key is: no
        // secret is compared.
        let waiting = "state: no sign-in is waiting for it from this browser (it was used \
                       already, took more than 10 minutes, or another browser began it): sign in \
                       again from this browser";
        let browser = callback.browser.ok_or_else(|| refused(waiting))?;
        let pending = store
            .take_oidc_login(&digest(state), &digest(browser))
            .await?
            .ok_or_else(|| refused(waiting))?;
        if let Some(error) = callback.error {
            let error: String = error.chars().take(100).collect();
            return Err(SignInError::Refused(format!(
                "the identity provider refused the sign-in: {error}"
            )));
        }
        let code = callback
            .code
            .ok_or_else(|| refused("code: the callback carries none"))?;
        let claims = self.exchange(oidc, redirect_uri, code, &pending).await?;
        person::signed_in(store, oidc, &claims).await
    }

    /// The code exchanged for an ID token, and the token's claims once checked.
    async fn exchange(
        &self,
        oidc: &Oidc,
        redirect_uri: &str,
        code: &str,
        pending: &PendingLogin,
    ) -> Result<Map<String, Value>, SignInError> {
        let (metadata, keys) = self.provider.current(oidc).await?;
        let identity = Identity {
            client_id: oidc.client_id.clone(),
            client_secret: oidc.client_secret.clone(),
            method: match (&oidc.client_secret, metadata.secret_in_body) {
                (None, _) => AuthMethod::None,
                (Some(_), false) => AuthMethod::Basic,
                (Some(_), true) => AuthMethod::Post,
            },
            registered_for: None,
        };
        let (authorization, fields) = identity.credentials();
        let mut form = vec![
            ("grant_type", "authorization_code".to_string()),
            ("code", code.to_string()),
            ("redirect_uri", redirect_uri.to_string()),
            ("code_verifier", pending.verifier.clone()),
        ];
        form.extend(fields);
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let http = self.provider.http(oidc).await;
        let answer = http
            .post_form(&metadata.token_endpoint, &pairs, authorization)
            .await
            .map_err(|why| SignInError::Unavailable(format!("the identity provider: {why}")))?;
        let body = answer.json().filter(|_| answer.ok()).ok_or_else(|| {
            // Its `error` only: an `error_description` may quote the code it was sent.
            let error = answer
                .json()
                .and_then(|b| b.get("error").and_then(Value::as_str).map(String::from))
                .map(|e| format!(": {}", e.chars().take(60).collect::<String>()))
                .unwrap_or_default();
            let why = format!(
                "the identity provider's token endpoint refused the code (HTTP {}){error}",
                answer.status
            );
            match answer.status {
                400 | 401 => SignInError::Refused(why),
                _ => SignInError::Unavailable(why),
            }
        })?;
        let token = body
            .get("id_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                SignInError::Unavailable("the identity provider gave no id_token".into())
            })?;
        let expected = Expected {
            issuer: &oidc.issuer,
            client_id: &oidc.client_id,
            nonce: &pending.nonce,
        };
        let taken = match verify::verify(token, &keys, &expected) {
            Err(Unverified::UnknownKey) => match self.provider.refetch_keys(oidc).await? {
                Some(keys) => verify::verify(token, &keys, &expected),
                None => Err(Unverified::UnknownKey),
            },
            other => other,
        };
        taken.map_err(|e| match e {
            Unverified::UnknownKey => SignInError::Refused(
                "the ID token is signed by a key the identity provider does not publish".into(),
            ),
            Unverified::Bad(why) => SignInError::Refused(why),
        })
    }
}
