//! OAuth 2.1 for MCP servers that need a login, as the MCP authorization spec (2025-11-25)
//! lays it out, backward compatible with 2025-03-26 servers. Written over
//! [`crate::egress::send`] rather than on rmcp's `auth` feature, which brings a second reqwest,
//! registers every client as a public one and does not look at a token again after waiting
//! for a refresh (docs/mcp-tools.md, "Servers that need a login").
//!
//! - here: [`Authorizer`], one server's login: the token a request carries, and what a refusal
//!   leads to (a refresh, a login, a step-up to more scope, or an error);
//! - [`login`]: a login: approved at once ([`Consent`], `chatd mcp call`), or begun by Connect
//!   and finished by the callback its redirect reaches (served servers);
//! - [`challenge`]: a `WWW-Authenticate` header read;
//! - [`discovery`]: the protected resource and authorization server metadata;
//! - [`client`]: who chatd is to the authorization server, and how it proves it;
//! - [`token`]: the token endpoint, PKCE;
//! - [`saved`], [`sealed`]: a served server's login as the store keeps it, sealed;
//! - [`http`]: the flow's own requests, under a grant of their own.
//!
//! Where a token may go: the access token only to the MCP server's own origin (a credential of
//! the server's grant, `wire.rs`); a code only to the token endpoint of the issuer whose
//! metadata was checked ([`discovery::Issuer`]); a refresh token or a client secret there too,
//! or, at Disconnect, to that issuer's revocation endpoint.
//!
//! One refresh at a time: within an instance, [`Authorizer`]'s lock; across instances on
//! PostgreSQL, the login's row lock ([`crate::store::logins::LoginLock`]): the one that gets it
//! second reads the first one's tokens and asks the token endpoint nothing.

pub mod challenge;
pub mod client;
pub mod discovery;
pub mod http;
pub mod login;
pub mod saved;
pub mod sealed;
pub mod token;

use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use url::Url;

use crate::config::Secret;
use crate::config::mcp::OAuthClient;
use crate::egress::Clients;
use challenge::Challenge;
use client::Identity;
use discovery::Discovered;
use http::OAuthHttp;
use saved::{Keeper, Saved};
use token::Tokens;

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

/// Who approves a login at once: the command line (`chatd mcp call`).
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

/// A login's state, as the servers page shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Tokens are held.
    LoggedIn,
    /// None are: a person must log in (why, in words).
    NeedsLogin(String),
}

/// One MCP server's login.
pub struct Authorizer {
    server: Url,
    configured: OAuthClient,
    clients: Clients,
    /// The flow's HTTP, and whether the server is on a local network (then its login's
    /// endpoints may be too, and plain http is accepted for them): found when first needed.
    net: tokio::sync::OnceCell<Net>,
    /// Who approves a login at once; `None`: a served server, logged in by Connect.
    consent: Option<Arc<dyn Consent>>,
    /// Where a served server's login is kept.
    keeper: Option<Keeper>,
    /// A login made now replaces the kept one, which is not read (`chatd mcp login`).
    ignore_stored: bool,
    state: tokio::sync::Mutex<State>,
    /// The access token now, for the scrubber (read without waiting for a login).
    current: RwLock<Option<Secret>>,
    status: RwLock<Status>,
}

struct Net {
    http: OAuthHttp,
    local: bool,
}

#[derive(Default)]
struct State {
    /// The stored login was read (a served server reads it once, then on every refusal).
    loaded: bool,
    discovered: Option<Discovered>,
    identity: Option<Identity>,
    tokens: Option<Tokens>,
    /// The server's last refusal: where a login begun by Connect starts.
    challenge: Challenge,
    /// Logins for more scope since a request was last let in.
    step_ups: u32,
}

impl Authorizer {
    /// A login approved by `consent` and kept in memory (`chatd mcp call`).
    pub fn new(
        clients: Clients,
        server: Url,
        configured: OAuthClient,
        consent: Arc<dyn Consent>,
    ) -> Self {
        Self::with(clients, server, configured, Some(consent), None)
    }

    /// A served server's login, kept by `keeper` and begun by Connect.
    pub fn served(clients: Clients, server: Url, configured: OAuthClient, keeper: Keeper) -> Self {
        Self::with(clients, server, configured, None, Some(keeper))
    }

    /// A served server's login from the command line: the kept one (unless `fresh`), else one
    /// approved now by `consent`, kept by `keeper` (`chatd mcp login`, `chatd mcp call`).
    pub fn logging_in(
        clients: Clients,
        server: Url,
        configured: OAuthClient,
        consent: Arc<dyn Consent>,
        keeper: Keeper,
        fresh: bool,
    ) -> Self {
        let mut auth = Self::with(clients, server, configured, Some(consent), Some(keeper));
        auth.ignore_stored = fresh;
        auth
    }

    fn with(
        clients: Clients,
        server: Url,
        configured: OAuthClient,
        consent: Option<Arc<dyn Consent>>,
        keeper: Option<Keeper>,
    ) -> Self {
        Self {
            clients,
            net: tokio::sync::OnceCell::new(),
            server,
            configured,
            consent,
            keeper,
            ignore_stored: false,
            state: tokio::sync::Mutex::default(),
            current: RwLock::default(),
            status: RwLock::new(Status::NeedsLogin("not logged in".into())),
        }
    }

    async fn net(&self) -> &Net {
        self.net
            .get_or_init(|| async {
                let local = is_local(&self.server).await;
                let http = OAuthHttp::new(self.clients.clone(), &self.server, local);
                Net { http, local }
            })
            .await
    }

    async fn http(&self) -> &OAuthHttp {
        &self.net().await.http
    }

    /// The access token now, if any.
    pub fn current(&self) -> Option<Secret> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn status(&self) -> Status {
        self.status
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The access token to send, refreshed first when it is about to end.
    pub async fn bearer(&self) -> Option<Secret> {
        let mut state = self.state.lock().await;
        if !state.loaded {
            self.reload(&mut state).await;
        }
        if state
            .tokens
            .as_ref()
            .is_some_and(|t| t.refresh.is_some() && t.due())
            && let Err(failure) = self.refresh(&mut state).await
        {
            // The server's own refusal will tell whether a login is needed.
            tracing::warn!("{}: refreshing its token: {}", self.name(), failure.why);
        }
        state.tokens.as_ref().map(|t| t.access.clone())
    }

    /// A request was let in: the step-ups start again.
    pub async fn passed(&self) {
        self.state.lock().await.step_ups = 0;
    }

    /// The server refused a request carrying `sent` with `status` (401, or 403 for want of
    /// scope) and `challenge`: a new token is got (a refresh, a login, a login for more
    /// scope), after which the request may be sent once more. A refusal that came while
    /// another request (or instance) replaced the token needs nothing.
    pub async fn refused(
        &self,
        status: u16,
        challenge: &Challenge,
        sent: Option<&Secret>,
    ) -> Result<(), String> {
        let mut state = self.state.lock().await;
        state.challenge = challenge.clone();
        self.reload(&mut state).await;
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
                // The token endpoint or the store could not be reached: the login may still
                // be good, so it is kept, and this request fails.
                Err(failure) if !failure.refused => {
                    return Err(format!("its token could not be refreshed: {}", failure.why));
                }
                Err(refusal) => {
                    tracing::info!("{}: refresh refused ({})", self.name(), refusal.why)
                }
            }
        }
        let Some(consent) = self.consent.clone() else {
            // Why a login is needed (a refused refresh, a changed key: set as it happened), and
            // how to give one.
            let why = match self.status() {
                _ if step_up => "it asks for more scope than its login gave".to_string(),
                Status::NeedsLogin(why) => why,
                Status::LoggedIn => "its token was refused".to_string(),
            };
            self.set_status(Status::NeedsLogin(why.clone()));
            if self.personal() {
                return Err(format!(
                    "{why}: it needs your own login: connect it from the web client's MCP \
                     servers page"
                ));
            }
            return Err(format!(
                "{why}: it needs a login: connect it from the web client's MCP servers page, or \
                 run `chatd mcp login NAME`"
            ));
        };
        let scope = self.scope(&mut state).await?;
        login::approved(self, &mut state, consent.as_ref(), scope).await
    }

    /// The scope to ask for: the last challenge's (with what the token has, for a step-up),
    /// else the resource's `scopes_supported`, else the configured `scopes`, else none.
    async fn scope(&self, state: &mut State) -> Result<Option<String>, String> {
        if let Some(scope) = &state.challenge.scope {
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
        let discovered = self.discovered(state).await?;
        if let Some(listed) = discovered
            .scopes_supported
            .as_ref()
            .filter(|l| !l.is_empty())
        {
            return Ok(Some(listed.join(" ")));
        }
        Ok(self.configured.scopes.clone())
    }

    async fn discovered<'s>(&self, state: &'s mut State) -> Result<&'s Discovered, String> {
        if state.discovered.is_none() {
            let net = self.net().await;
            let found =
                discovery::discover(&net.http, &self.server, &state.challenge, net.local).await?;
            state.discovered = Some(found);
        }
        Ok(state.discovered.as_ref().expect("set above"))
    }

    /// Whether chatd's client at this server's issuer was registered beforehand (a configured
    /// `client_id`), rather than by chatd (dynamic registration, a metadata document).
    pub fn pre_registered(&self) -> bool {
        self.configured.client_id.is_some()
    }

    /// Who chatd is to the server's issuer, for a redirect to `redirect_uri`.
    async fn identity(&self, state: &mut State, redirect_uri: &str) -> Result<Identity, String> {
        let registered_elsewhere = state
            .identity
            .as_ref()
            .and_then(|i| i.registered_for.as_deref())
            .is_some_and(|r| r != redirect_uri);
        if state.identity.is_none() || registered_elsewhere {
            let issuer = self.discovered(state).await?.issuer.clone();
            let http = self.http().await;
            let identity = client::identify(http, &self.configured, &issuer, redirect_uri).await?;
            state.identity = Some(identity);
        }
        Ok(state.identity.clone().expect("set above"))
    }

    /// A served server's stored login, read again: tokens another instance refreshed, or a
    /// login finished there, or none (disconnected).
    async fn reload(&self, state: &mut State) {
        let Some(keeper) = self.keeper.as_ref().filter(|_| !self.ignore_stored) else {
            state.loaded = true;
            return;
        };
        let row = match keeper.store.login(&keeper.login).await {
            Ok(row) => row,
            Err(e) => {
                tracing::warn!("{}: its login could not be read: {e}", self.name());
                return;
            }
        };
        state.loaded = true;
        match row.map(|row| keeper.open::<Saved>(&row)) {
            Some(Ok(saved)) if !self.same_client(&saved) => self.forget(
                state,
                "its client changed in the configuration since its login",
            ),
            Some(Ok(saved)) if saved.url == self.server.as_str() => self.adopt(state, &saved),
            Some(Ok(_)) => self.forget(state, "its URL changed since its login"),
            Some(Err(why)) => self.forget(state, &why),
            // None: a reason given when the login ended stays (a refused refresh, another
            // instance's); one that ended elsewhere was removed.
            None => {
                let why = match self.status() {
                    Status::NeedsLogin(why) => why,
                    Status::LoggedIn => "its login was removed".to_string(),
                };
                self.forget(state, &why)
            }
        }
    }

    /// Whether `saved` was made with the client configured now (none configured: any).
    fn same_client(&self, saved: &Saved) -> bool {
        let configured = &self.configured;
        let secret = configured.client_secret.as_ref().map(Secret::expose);
        configured.client_id.is_none()
            || (configured.client_id.as_deref() == Some(saved.client.client_id.as_str())
                && secret == saved.client.client_secret.as_deref())
    }

    fn adopt(&self, state: &mut State, saved: &Saved) {
        state.discovered = Some(saved.discovered.discovered());
        state.identity = Some(saved.client.identity());
        self.set(state, Some(saved.tokens()));
    }

    fn forget(&self, state: &mut State, why: &str) {
        if state.tokens.is_some() || self.status() == Status::LoggedIn {
            tracing::info!("{}: {why}", self.name());
        }
        self.set(state, None);
        self.set_status(Status::NeedsLogin(why.into()));
    }

    /// New tokens from the refresh token: on PostgreSQL under the login's row lock, where
    /// tokens another instance refreshed meanwhile are taken instead. A refusal by the token
    /// endpoint ends the login; a failure to reach it (or the store) leaves the login as it is.
    async fn refresh(&self, state: &mut State) -> Result<(), token::Refusal> {
        let failed = |why: String| token::Refusal {
            refused: false,
            why,
        };
        let lock = match &self.keeper {
            Some(keeper) if !self.ignore_stored => {
                let (lock, row) = keeper
                    .store
                    .lock_login(&keeper.login)
                    .await
                    .map_err(|e| failed(format!("its login could not be read: {e}")))?;
                let held = state.tokens.as_ref().map(|t| t.access.expose().to_string());
                match row.map(|row| keeper.open::<Saved>(&row)) {
                    Some(Ok(saved))
                        if saved.url == self.server.as_str()
                            && Some(&saved.access) != held.as_ref() =>
                    {
                        lock.release().await;
                        self.adopt(state, &saved);
                        return Ok(());
                    }
                    Some(Ok(saved)) if saved.url == self.server.as_str() => Some(lock),
                    _ => {
                        lock.release().await;
                        self.forget(state, "its login was removed");
                        return Err(token::Refusal {
                            refused: true,
                            why: "its login was removed".into(),
                        });
                    }
                }
            }
            _ => None,
        };
        let (Some(discovered), Some(identity), Some(current)) = (
            state.discovered.clone(),
            state.identity.clone(),
            state.tokens.clone(),
        ) else {
            return Err(failed("nothing to refresh".into()));
        };
        let refreshed = token::refresh(
            self.http().await,
            &discovered.issuer.token_endpoint,
            &identity,
            &current,
            &discovered.resource,
        )
        .await;
        match refreshed {
            Ok(tokens) => {
                // Held first: a rotated refresh token must not be lost with a failed write.
                self.set(state, Some(tokens.clone()));
                if let (Some(lock), Some(keeper)) = (lock, &self.keeper) {
                    let saved = Saved::new(self.server.as_str(), &discovered, &identity, &tokens);
                    if let Err(e) = lock.save(&keeper.seal(&saved)).await {
                        tracing::warn!(
                            "{}: its refreshed login could not be stored ({e}); this instance \
                             holds it",
                            self.name()
                        );
                    }
                }
                Ok(())
            }
            Err(refusal) => {
                match lock {
                    Some(lock) if refusal.refused => {
                        let _ = lock.delete().await;
                    }
                    Some(lock) => lock.release().await,
                    None => {}
                }
                if refusal.refused {
                    self.forget(state, &format!("its refresh was refused ({})", refusal.why));
                }
                Err(refusal)
            }
        }
    }

    fn set(&self, state: &mut State, tokens: Option<Tokens>) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) =
            tokens.as_ref().map(|t| t.access.clone());
        if tokens.is_some() {
            self.set_status(Status::LoggedIn);
        }
        state.tokens = tokens;
    }

    fn set_status(&self, status: Status) {
        *self.status.write().unwrap_or_else(|e| e.into_inner()) = status;
    }

    /// The server, for the log: its name when served (and the person, for a person's own
    /// login), else its URL.
    fn name(&self) -> String {
        match &self.keeper {
            Some(keeper) if keeper.login.owner != crate::store::logins::OPERATOR => format!(
                "MCP server {} (person {})",
                keeper.name(),
                keeper.login.owner
            ),
            Some(keeper) => format!("MCP server {}", keeper.name()),
            None => format!("MCP server {}", http::bare(&self.server)),
        }
    }

    /// Whether this is a person's own login (`per_user`), not the operator's.
    fn personal(&self) -> bool {
        self.keeper
            .as_ref()
            .is_some_and(|k| k.login.owner != crate::store::logins::OPERATOR)
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
