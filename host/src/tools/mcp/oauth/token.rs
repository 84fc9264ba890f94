//! The token endpoint: a code exchanged with its PKCE verifier, a refresh, both with RFC
//! 8707's `resource`; and the random values the flow makes (the verifier, `state`).

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::Value;
use sha2::Digest as _;
use url::Url;

use super::client::Identity;
use super::http::OAuthHttp;
use crate::config::Secret;

/// How long before its end an access token is refreshed (at most half its life).
pub const REFRESH_BEFORE: Duration = Duration::from_secs(60);

/// Tokens for one server.
#[derive(Clone, Debug)]
pub struct Tokens {
    pub access: Secret,
    pub refresh: Option<Secret>,
    /// When the access token stops working, as the server said (`expires_in`).
    pub expires: Option<SystemTime>,
    /// When to refresh it: a minute before it ends, or halfway through a shorter life.
    pub refresh_at: Option<SystemTime>,
    /// The scope granted (the server's `scope`, else the one asked for).
    pub scope: Option<String>,
}

impl Tokens {
    /// Whether it is time to refresh the access token.
    pub fn due(&self) -> bool {
        self.refresh_at.is_some_and(|at| SystemTime::now() >= at)
    }

    /// When a token given for `life` is refreshed: [`REFRESH_BEFORE`] before its end, or
    /// halfway through a shorter life.
    pub fn refresh_at(expires: SystemTime, life: Duration) -> SystemTime {
        expires - REFRESH_BEFORE.min(life / 2)
    }
}

/// `n` random bytes from the operating system, as base64url without padding.
pub fn random(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).expect("the operating system gives random bytes");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// PKCE's S256 challenge of `verifier` (RFC 7636 §4.2).
pub fn challenge(verifier: &str) -> String {
    let digest = sha2::Sha256::digest(verifier.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
}

/// What came back from an authorization, and what it was asked with.
pub struct Code<'a> {
    pub code: &'a str,
    pub verifier: &'a str,
    pub redirect_uri: &'a str,
}

/// The code of an authorization exchanged for tokens.
pub async fn exchange(
    http: &OAuthHttp,
    endpoint: &Url,
    identity: &Identity,
    code: Code<'_>,
    resource: &str,
    asked: Option<&str>,
) -> Result<Tokens, Refusal> {
    let form = vec![
        ("grant_type", "authorization_code".to_string()),
        ("code", code.code.to_string()),
        ("code_verifier", code.verifier.to_string()),
        ("redirect_uri", code.redirect_uri.to_string()),
        ("resource", resource.to_string()),
    ];
    request(http, endpoint, identity, form, asked, None).await
}

/// Why the token endpoint gave no tokens.
#[derive(Debug)]
pub struct Refusal {
    /// The endpoint answered and refused (the grant is dead: a login is needed); otherwise it
    /// could not be asked, and the tokens held may still work.
    pub refused: bool,
    pub why: String,
}

impl From<Refusal> for String {
    fn from(refusal: Refusal) -> String {
        refusal.why
    }
}

/// New tokens from a refresh token; a server that rotates it gives a new one, else the old one
/// is kept.
pub async fn refresh(
    http: &OAuthHttp,
    endpoint: &Url,
    identity: &Identity,
    current: &Tokens,
    resource: &str,
) -> Result<Tokens, Refusal> {
    let Some(token) = current.refresh.as_ref() else {
        return Err(Refusal {
            refused: true,
            why: "no refresh token".into(),
        });
    };
    let form = vec![
        ("grant_type", "refresh_token".to_string()),
        ("refresh_token", token.expose().to_string()),
        ("resource", resource.to_string()),
    ];
    let asked = current.scope.as_deref();
    request(
        http,
        endpoint,
        identity,
        form,
        asked,
        current.refresh.clone(),
    )
    .await
}

async fn request(
    http: &OAuthHttp,
    endpoint: &Url,
    identity: &Identity,
    mut form: Vec<(&'static str, String)>,
    asked: Option<&str>,
    kept_refresh: Option<Secret>,
) -> Result<Tokens, Refusal> {
    let (authorization, fields) = identity.credentials();
    form.extend(fields);
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let failed = |why: String| Refusal {
        refused: false,
        why,
    };
    let answer = http
        .post_form(endpoint, &pairs, authorization)
        .await
        .map_err(failed)?;
    let body = answer
        .json()
        .filter(|_| answer.ok())
        .ok_or_else(|| Refusal {
            // RFC 6749 §5.2: a refused grant or client is a 400 (401 for the client); anything else
            // (a 5xx, a proxy's page) says nothing of the grant.
            refused: matches!(answer.status, 400 | 401),
            why: format!(
                "the token endpoint refused (HTTP {}){}",
                answer.status,
                answer.oauth_error()
            ),
        })?;
    tokens(&body, asked, kept_refresh).map_err(failed)
}

/// A token answer's tokens.
fn tokens(
    body: &serde_json::Map<String, Value>,
    asked: Option<&str>,
    kept_refresh: Option<Secret>,
) -> Result<Tokens, String> {
    let access = body
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or("the token endpoint gave no access_token")?;
    let kind = body.get("token_type").and_then(Value::as_str).unwrap_or("");
    if !kind.eq_ignore_ascii_case("bearer") {
        return Err(format!(
            "the token endpoint gave a {:?} token; only bearer tokens are used",
            kind.chars().take(40).collect::<String>()
        ));
    }
    let life = body
        .get("expires_in")
        .and_then(Value::as_u64)
        .map(|secs| Duration::from_secs(secs.min(10 * 365 * 86_400)));
    let expires = life.map(|life| SystemTime::now() + life);
    let refresh_at = expires
        .zip(life)
        .map(|(at, life)| Tokens::refresh_at(at, life));
    let refresh = body
        .get("refresh_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(|t| Secret::new(t.to_string()))
        .or(kept_refresh);
    let scope = body
        .get("scope")
        .and_then(Value::as_str)
        .or(asked)
        .map(str::to_string);
    Ok(Tokens {
        access: Secret::new(access.to_string()),
        refresh,
        expires,
        refresh_at,
        scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_s256_challenge_is_rfc_7636s() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn random_values_are_long_and_differ() {
        let (a, b) = (random(32), random(32));
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
    }

    #[test]
    fn a_token_is_refreshed_a_minute_before_its_end_or_halfway_through_a_short_life() {
        let now = SystemTime::now();
        let hour = Duration::from_secs(3600);
        assert_eq!(
            Tokens::refresh_at(now + hour, hour),
            now + hour - Duration::from_secs(60)
        );
        let short = Duration::from_secs(10);
        assert_eq!(
            Tokens::refresh_at(now + short, short),
            now + Duration::from_secs(5)
        );
        let tokens = |refresh_at| Tokens {
            access: Secret::new("a"),
            refresh: None,
            expires: None,
            refresh_at,
            scope: None,
        };
        assert!(tokens(Some(now - short)).due());
        assert!(!tokens(Some(now + hour)).due());
        assert!(!tokens(None).due());
    }
}
