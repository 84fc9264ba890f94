//! OAuth 2.1 for MCP servers that need a login, as the MCP authorization spec (2025-11-25)
//! lays it out, backward compatible with 2025-03-26 servers. Written over
//! [`crate::egress::send`] rather than on rmcp's `auth` feature, which brings a second reqwest,
//! registers every client as a public one and does not look at a token again after waiting
//! for a refresh (docs/mcp-tools.md, "Servers that need a login").
//!
//! - here: [`Authorizer`], one server's login: the token a request carries, and what a refusal
//!   leads to (a refresh, a login, a step-up to more scope, or an error);
//! - [`challenge`]: a `WWW-Authenticate` header read;
//! - [`discovery`]: the protected resource and authorization server metadata;
//! - [`client`]: who chatd is to the authorization server, and how it proves it;
//! - [`token`]: the token endpoint, PKCE;
//! - [`http`]: the flow's own requests, under a grant of their own.
//!
//! Where a token may go: the access token only to the MCP server's own origin (a credential of
//! the server's grant, `wire.rs`); a code, a refresh token or a client secret only to the token
//! endpoint of the issuer whose metadata was checked ([`discovery::Issuer`]).

pub mod challenge;
pub mod client;
pub mod discovery;
pub mod http;
pub mod token;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use url::Url;

use crate::config::Secret;
use crate::egress::Clients;
use challenge::Challenge;
use client::{Configured, Identity};
use discovery::Discovered;
use http::OAuthHttp;
use token::Tokens;

/// A token is refreshed when it ends within this.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// Logins in a row for more scope, with no request let in between, before chatd gives up.
pub const MAX_STEP_UPS: u32 = 2;

/// Where an authorization's redirect comes back with its code.
pub struct Callback {
    pub code: Option<String>,
    pub state: Option<String>,
    pub error: Option<String>,
    /// RFC 9207's `iss`: the authorization server that answered.
    pub iss: Option<String>,
}

impl Callback {
    /// The redirect's query: `code` and `state`, or an `error`.
    pub fn from_url(url: &Url) -> Self {
        let mut callback = Callback {
            code: None,
            state: None,
            error: None,
            iss: None,
        };
        for (name, value) in url.query_pairs() {
            let slot = match name.as_ref() {
                "code" => &mut callback.code,
                "state" => &mut callback.state,
                "error" => &mut callback.error,
                "iss" => &mut callback.iss,
                _ => continue,
            };
            slot.get_or_insert(value.into_owned());
        }
        callback
    }
}

/// Who approves a login: a person at a browser, or the command line (`chatd mcp call`).
pub trait Consent: Send + Sync {
    /// The redirect URI registered and sent.
    fn redirect_uri(&self) -> String;
    /// The redirect that came back for the authorization at `url`.
    fn approve<'a>(
        &'a self,
        http: &'a OAuthHttp,
        url: Url,
    ) -> BoxFuture<'a, Result<Callback, String>>;
}

/// One MCP server's login.
pub struct Authorizer {
    server: Url,
    configured: Configured,
    http: OAuthHttp,
    /// The server is on a local network: plain http is accepted for its endpoints.
    local: bool,
    consent: Arc<dyn Consent>,
    state: tokio::sync::Mutex<State>,
    /// The access token now, for the scrubber (read without waiting for a login).
    current: RwLock<Option<Secret>>,
}

#[derive(Default)]
struct State {
    discovered: Option<Discovered>,
    identity: Option<Identity>,
    tokens: Option<Tokens>,
    /// Logins for more scope since a request was last let in.
    step_ups: u32,
}

impl Authorizer {
    pub fn new(
        clients: Clients,
        server: Url,
        configured: Configured,
        local: bool,
        consent: Arc<dyn Consent>,
    ) -> Self {
        Self {
            http: OAuthHttp::new(clients, &server, local),
            server,
            configured,
            local,
            consent,
            state: tokio::sync::Mutex::default(),
            current: RwLock::default(),
        }
    }

    /// The access token now, if any.
    pub fn current(&self) -> Option<Secret> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The access token to send, refreshed first when it is about to end.
    pub async fn bearer(&self) -> Option<Secret> {
        let mut state = self.state.lock().await;
        if state
            .tokens
            .as_ref()
            .is_some_and(|t| t.refresh.is_some() && t.expiring(REFRESH_MARGIN))
            && let Err(why) = self.refresh(&mut state).await
        {
            // The server's own refusal will tell whether a login is needed.
            tracing::warn!(
                "MCP server {}: refreshing its token: {why}",
                http::bare(&self.server)
            );
        }
        state.tokens.as_ref().map(|t| t.access.clone())
    }

    /// A request carrying `sent` was let in: the step-ups start again.
    pub async fn passed(&self) {
        self.state.lock().await.step_ups = 0;
    }

    /// The server refused a request carrying `sent` with `status` (401, or 403 for want of
    /// scope) and `challenge`: a new token is got (a refresh, a login, a login for more
    /// scope), after which the request may be sent once more. A refusal that came while
    /// another request replaced the token needs nothing.
    pub async fn refused(
        &self,
        status: u16,
        challenge: &Challenge,
        sent: Option<&Secret>,
    ) -> Result<(), String> {
        let mut state = self.state.lock().await;
        let now = state.tokens.as_ref().map(|t| t.access.expose());
        if now.is_some() && now != sent.map(Secret::expose) {
            return Ok(());
        }
        let step_up = status == 403 && challenge.insufficient_scope();
        if step_up {
            let granted = state.tokens.as_ref().and_then(|t| t.scope.as_deref());
            if let (Some(asked), Some(granted)) = (&challenge.scope, granted)
                && scopes(asked).all(|s| scopes(granted).any(|g| g == s))
            {
                return Err(format!(
                    "the server refuses for want of scope {asked:?}, which its token already \
                     has; logging in again would not help"
                ));
            }
            state.step_ups += 1;
            if state.step_ups > MAX_STEP_UPS {
                return Err(format!(
                    "the server still refuses for want of scope after {MAX_STEP_UPS} logins \
                     asking for more"
                ));
            }
        } else if state.tokens.as_ref().is_some_and(|t| t.refresh.is_some()) {
            match self.refresh(&mut state).await {
                Ok(()) => return Ok(()),
                Err(why) => tracing::info!(
                    "MCP server {}: refresh refused ({why}); logging in again",
                    http::bare(&self.server)
                ),
            }
        }
        let scope = self.scope(&mut state, challenge).await?;
        self.login(&mut state, challenge, scope).await
    }

    /// The scope to ask for: the challenge's, else the resource's `scopes_supported`, else the
    /// configured `scopes`, else none (the parameter left out).
    async fn scope(
        &self,
        state: &mut State,
        challenge: &Challenge,
    ) -> Result<Option<String>, String> {
        if let Some(scope) = &challenge.scope {
            // A step-up keeps what the token has: the server asks for what this request needs.
            let granted = state.tokens.as_ref().and_then(|t| t.scope.clone());
            let mut all: Vec<&str> = granted
                .as_deref()
                .map(scopes)
                .into_iter()
                .flatten()
                .collect();
            for s in scopes(scope) {
                if !all.contains(&s) {
                    all.push(s);
                }
            }
            return Ok(Some(all.join(" ")));
        }
        let discovered = self.discovered(state, challenge).await?;
        if let Some(listed) = discovered
            .scopes_supported
            .as_ref()
            .filter(|l| !l.is_empty())
        {
            return Ok(Some(listed.join(" ")));
        }
        Ok(self.configured.scopes.clone())
    }

    async fn discovered<'s>(
        &self,
        state: &'s mut State,
        challenge: &Challenge,
    ) -> Result<&'s Discovered, String> {
        if state.discovered.is_none() {
            let found =
                discovery::discover(&self.http, &self.server, challenge, self.local).await?;
            state.discovered = Some(found);
        }
        Ok(state.discovered.as_ref().expect("set above"))
    }

    /// An authorization code with PKCE and `state`, approved by the consent, exchanged.
    async fn login(
        &self,
        state: &mut State,
        challenge: &Challenge,
        scope: Option<String>,
    ) -> Result<(), String> {
        let discovered = self.discovered(state, challenge).await?.clone();
        let redirect_uri = self.consent.redirect_uri();
        if state.identity.is_none() {
            let identity = client::identify(
                &self.http,
                &self.configured,
                &discovered.issuer,
                &redirect_uri,
            )
            .await?;
            state.identity = Some(identity);
        }
        let identity = state.identity.clone().expect("set above");
        let verifier = token::random(32);
        let expected_state = token::random(32);
        let mut url = discovered.issuer.authorization_endpoint.clone();
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &identity.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &token::challenge(&verifier))
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &expected_state)
                .append_pair("resource", &discovered.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
        }
        let callback = self.consent.approve(&self.http, url).await?;
        // RFC 9207: an answer naming another issuer is a mix-up; one that should name it must.
        // The comparison is of the strings as they are (§2.4: no normalisation).
        let issuer = &discovered.issuer;
        match &callback.iss {
            Some(iss) if *iss != issuer.issuer => {
                return Err(format!(
                    "the login came back from another issuer ({:?}, not {}); it is not used",
                    iss.chars().take(200).collect::<String>(),
                    issuer.issuer
                ));
            }
            None if issuer.iss_parameter => {
                return Err(format!(
                    "the login came back without the iss parameter {} promises; it is not used",
                    issuer.issuer
                ));
            }
            _ => {}
        }
        if let Some(error) = callback.error {
            let error: String = error.chars().take(200).collect();
            return Err(format!(
                "the authorization server refused the login: {error}"
            ));
        }
        let same_state = callback.state.as_deref().is_some_and(|s| {
            subtle::ConstantTimeEq::ct_eq(s.as_bytes(), expected_state.as_bytes()).into()
        });
        if !same_state {
            return Err("the login came back with another state; it is not used".into());
        }
        let code = callback.code.ok_or("the login came back without a code")?;
        let tokens = token::exchange(
            &self.http,
            &discovered.issuer.token_endpoint,
            &identity,
            token::Code {
                code: &code,
                verifier: &verifier,
                redirect_uri: &redirect_uri,
            },
            &discovered.resource,
            scope.as_deref(),
        )
        .await?;
        self.set(state, Some(tokens));
        Ok(())
    }

    async fn refresh(&self, state: &mut State) -> Result<(), String> {
        let (Some(discovered), Some(identity), Some(current)) = (
            state.discovered.clone(),
            state.identity.clone(),
            state.tokens.clone(),
        ) else {
            return Err("nothing to refresh".into());
        };
        let tokens = token::refresh(
            &self.http,
            &discovered.issuer.token_endpoint,
            &identity,
            &current,
            &discovered.resource,
        )
        .await?;
        self.set(state, Some(tokens));
        Ok(())
    }

    fn set(&self, state: &mut State, tokens: Option<Tokens>) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) =
            tokens.as_ref().map(|t| t.access.clone());
        state.tokens = tokens;
    }
}

/// The scopes of a space-separated list.
fn scopes(list: &str) -> impl Iterator<Item = &str> {
    list.split_ascii_whitespace()
}

/// Whether the server at `url` is on a local network ([`crate::egress::address::is_local`]):
/// its host is such an address, or every address its name resolves to is. Then its login's
/// endpoints may be on a local network too.
pub async fn is_local(url: &Url) -> bool {
    use crate::egress::address;
    match url.host() {
        Some(url::Host::Ipv4(ip)) => address::is_local(ip.into()),
        Some(url::Host::Ipv6(ip)) => address::is_local(ip.into()),
        Some(url::Host::Domain(name)) => {
            let port = url.port_or_known_default().unwrap_or(443);
            match tokio::net::lookup_host((name, port)).await {
                Ok(addrs) => {
                    let addrs: Vec<_> = addrs.collect();
                    !addrs.is_empty() && addrs.iter().all(|a| address::is_local(a.ip()))
                }
                Err(_) => false,
            }
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callback_reads_its_code_state_and_error() {
        let url = Url::parse("http://127.0.0.1:9/callback?code=c%201&state=s&x=y").unwrap();
        let callback = Callback::from_url(&url);
        assert_eq!(callback.code.as_deref(), Some("c 1"));
        assert_eq!(callback.state.as_deref(), Some("s"));
        assert!(callback.error.is_none());
        let refused = Callback::from_url(&Url::parse("http://h/cb?error=access_denied").unwrap());
        assert_eq!(refused.error.as_deref(), Some("access_denied"));
    }
}
