//! The declared servers as the servers page shows them (connected, needs login, refused,
//! unreachable), and their logins: begun by Connect, finished by the callback (which finds its
//! server and owner by the login it took, not by anything the redirect says), ended by
//! Disconnect. A login is the operator's ([`OPERATOR`]) for a server every person shares, and
//! a person's own for a server declared `per_user = true` ([`super::people`]); each kind is
//! reached only as its own.

use std::sync::Arc;

use subtle::ConstantTimeEq as _;

use super::McpServers;
use super::connection::Server;
use super::oauth::login::{Finish, digest};
use super::oauth::saved::Pending;
use super::oauth::{Callback, Status};
use crate::store::logins::{LoginKey, OPERATOR};

/// A declared server's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerState {
    pub name: String,
    /// Its URL, without a query (which may hold a key).
    pub url: String,
    /// It needs a login (`auth = "oauth"`).
    pub login: bool,
    /// Each person logs in with their own account (`per_user = true`); the state is the
    /// asking person's.
    pub per_user: bool,
    /// `connected`, `needs_login`, `refused`, `unreachable` or `connecting`.
    pub state: &'static str,
    /// Why it is not connected, in words.
    pub reason: Option<String>,
    /// The tools it offers now.
    pub tools: usize,
}

/// Why a login could not be begun or finished.
#[derive(Debug, PartialEq, Eq)]
pub enum LoginError {
    /// No such server, or it needs no login (the name, the rule); no such login begun.
    NotFound(String),
    /// The request itself is wrong (a state unknown, used or expired; another browser; the
    /// wrong callback).
    Invalid(String),
    /// The server's configuration and its authorization server do not fit (a `client_id`
    /// registered beforehand with an issuer that does not name itself in its answers).
    Conflict(String),
    /// The authorization server, or the store, could not be reached.
    Unavailable(String),
}

/// Which callback a login's redirect arrived at: the one shared by clients registered
/// beforehand, or a server's own (every other client's, [`McpServers::shared_callback`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arrived {
    Shared,
    Server(String),
}

/// A login begun: where to send the browser, and the `state` it will come back with (what
/// the browser's cookie is named after).
pub struct Begun {
    pub url: url::Url,
    pub state: String,
}

impl McpServers {
    /// Every declared server, by name; a `per_user` one as `person`'s session of it is.
    pub fn states(&self, person: &str) -> Vec<ServerState> {
        let mut states: Vec<ServerState> =
            self.servers().iter().map(|server| state(server)).collect();
        let per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
        for (name, servers) in per_user.iter() {
            let state = match servers.people.get(person) {
                Some(session) => state(&session.server),
                None => ServerState {
                    name: name.clone(),
                    url: bare(&servers.declared.url),
                    login: true,
                    per_user: true,
                    state: "needs_login",
                    reason: Some("connect it with your own account".into()),
                    tools: 0,
                },
            };
            states.push(state);
        }
        drop(per_user);
        let refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        for (name, (table, why)) in refused.iter() {
            states.push(ServerState {
                name: name.clone(),
                url: bare(&table.url),
                login: table.oauth.is_some(),
                per_user: table.per_user,
                state: "refused",
                reason: Some(why.clone()),
                tools: 0,
            });
        }
        states.sort_by(|a, b| a.name.cmp(&b.name));
        states
    }

    /// The session whose login `login` is: the shared server's for the operator's, the
    /// person's own (made when there is none) for a `per_user` server's. A login of the other
    /// kind is not found: the routes of each say which is needed.
    fn served(&self, login: &LoginKey) -> Result<Arc<Server>, LoginError> {
        let LoginKey {
            server: name,
            owner,
        } = login;
        if let Some((_, why)) = self
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
        {
            return Err(LoginError::Unavailable(format!("mcp.{name}: {why}")));
        }
        let per_user = {
            let mut per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
            match per_user.get_mut(name) {
                Some(_) if owner == OPERATOR => {
                    return Err(LoginError::NotFound(format!(
                        "name: mcp.{name} says per_user = true: each person connects it with \
                         their own account (POST /v1/mcp-servers/{name}/login)"
                    )));
                }
                Some(servers) => Some(
                    self.session(servers, owner)
                        .map_err(|why| LoginError::Unavailable(format!("mcp.{name}: {why}")))?,
                ),
                None => None,
            }
        };
        let server = match per_user {
            Some(server) => server,
            None => {
                let server = self
                    .servers()
                    .into_iter()
                    .find(|s| s.declared.name == *name);
                let server = server.ok_or_else(|| {
                    LoginError::NotFound(format!("name: no MCP server {name:?} is declared"))
                })?;
                if owner != OPERATOR {
                    return Err(LoginError::NotFound(format!(
                        "name: mcp.{name} is shared: its login is the operator's, connected by \
                         an admin (POST /v1/mcp-servers/{name}/connect); only a server that \
                         says per_user = true takes each person's own"
                    )));
                }
                server
            }
        };
        if server.auth().is_none() {
            return Err(LoginError::NotFound(format!(
                "name: mcp.{name} needs no login (it does not say auth = \"oauth\")"
            )));
        }
        Ok(server)
    }

    /// Whether server `name`'s logins come back to the callback shared by clients registered
    /// beforehand (its configured `client_id` names one redirect URI for every server of that
    /// issuer), rather than to a callback of its own.
    pub fn shared_callback(&self, login: &LoginKey) -> Result<bool, LoginError> {
        let server = self.served(login)?;
        Ok(server.auth().expect("served() checked it").pre_registered())
    }

    /// Begins `login` for the browser holding the cookie `browser`, coming back to
    /// `redirect_uri`: the authorization URL to send that browser to, and the login's state.
    pub async fn begin_login(
        &self,
        login: &LoginKey,
        redirect_uri: &str,
        browser: &str,
    ) -> Result<Begun, LoginError> {
        let name = &login.server;
        let server = self.served(login)?;
        let auth = server.auth().expect("served() checked it");
        let (url, state) =
            auth.begin(redirect_uri, browser)
                .await
                .map_err(|finish| match finish {
                    Finish::Refused(why) => LoginError::Conflict(format!("mcp.{name}: {why}")),
                    Finish::Unavailable(why) => {
                        LoginError::Unavailable(format!("mcp.{name}: {why}"))
                    }
                })?;
        Ok(Begun { url, state })
    }

    /// Finishes the login whose `state` the redirect `callback` carries, which `arrived` at a
    /// callback, from the browser holding the cookie `browser`: the server it was for, its
    /// tools listed again. A login is finished only at the callback it was begun for (its
    /// server's own, or the shared one for a client registered beforehand, whose answer must
    /// then name its issuer): an authorization response meant for another server is never
    /// taken for this one's (RFC 9700 §4.4).
    pub async fn finish_login(
        &self,
        callback: Callback,
        browser: Option<&str>,
        arrived: Arrived,
    ) -> Result<String, LoginError> {
        let invalid = |why: &str| LoginError::Invalid(why.to_string());
        let state = callback
            .state
            .clone()
            .ok_or_else(|| invalid("state: missing"))?;
        let logins = self
            .logins
            .as_ref()
            .ok_or_else(|| LoginError::NotFound("state: no login was begun here".into()))?;
        let (login, row) = logins
            .store
            .take_login_start(&digest(&state))
            .await
            .map_err(|e| LoginError::Unavailable(format!("the login could not be read: {e}")))?
            .ok_or_else(|| {
                LoginError::NotFound(
                    "state: no such login (unknown, already used, or older than ten minutes)"
                        .into(),
                )
            })?;
        let name = login.server.clone();
        // The login is spent now, wherever it arrived: a response sent to another server's
        // callback cannot be tried again at its own.
        if let Arrived::Server(at) = &arrived
            && *at != name
        {
            return Err(invalid(&format!(
                "state: this login is mcp.{name}'s, and came back to mcp.{at}'s callback; it \
                 is not used"
            )));
        }
        let server = self.served(&login)?;
        let pre_registered = server.auth().expect("served() checked it").pre_registered();
        if pre_registered != (arrived == Arrived::Shared) {
            return Err(invalid(&format!(
                "state: this login of mcp.{name} came back to another callback than the one it \
                 was begun for; it is not used"
            )));
        }
        let keeper = self
            .keeper(login.clone())
            .map_err(|why| LoginError::Unavailable(format!("mcp.{name}: {why}")))?;
        let pending: Pending = keeper
            .open(&row)
            .map_err(|why| invalid(&format!("state: {why}")))?;
        let same_browser = browser.is_some_and(|cookie| {
            bool::from(digest(cookie).as_bytes().ct_eq(pending.browser.as_bytes()))
        });
        if !same_browser {
            return Err(invalid(
                "cookie: this login was begun in another browser (or its cookie was lost)",
            ));
        }
        let auth = server.auth().expect("served() checked it");
        auth.complete(pending, callback)
            .await
            .map_err(|finish| match finish {
                Finish::Refused(why) => LoginError::Invalid(format!("mcp.{name}: {why}")),
                Finish::Unavailable(why) => LoginError::Unavailable(format!("mcp.{name}: {why}")),
            })?;
        // A person's session may have been stopped meanwhile (their lookup found no login
        // while this one was being finished): the one serving now is listed.
        let server = match login.owner == OPERATOR {
            true => {
                tracing::info!("MCP server {name}: logged in");
                server
            }
            false => {
                tracing::info!("MCP server {name}: person {} logged in", login.owner);
                self.served(&login)?
            }
        };
        server.relist();
        server.listen();
        Ok(name)
    }

    /// Ends `login`: revoked where its issuer can, deleted, its tools withdrawn (a person's
    /// session of a `per_user` server stopped).
    pub async fn disconnect(&self, login: &LoginKey) -> Result<(), LoginError> {
        let name = &login.server;
        let server = match self.served(login) {
            Ok(server) => server,
            Err(LoginError::NotFound(why)) => return self.delete_left(login, why).await,
            Err(other) => return Err(other),
        };
        let auth = server.auth().expect("served() checked it");
        auth.disconnect()
            .await
            .map_err(|why| LoginError::Unavailable(format!("mcp.{name}: {why}")))?;
        if login.owner == OPERATOR {
            server.forget_session().await;
            tracing::info!("MCP server {name}: disconnected");
        } else {
            self.end_session(name, &login.owner);
            tracing::info!("MCP server {name}: person {} disconnected", login.owner);
        }
        Ok(())
    }
}

impl McpServers {
    /// Deletes `login` where no served server takes it any more (a server whose `per_user`
    /// changed, or that is no longer declared), so its owner can still end it; else the
    /// refusal `why`. Not revoked: its issuer is no longer a configured one.
    async fn delete_left(&self, login: &LoginKey, why: String) -> Result<(), LoginError> {
        let Some(logins) = self.logins.as_ref() else {
            return Err(LoginError::NotFound(why));
        };
        let deleted = logins.store.delete_login(login).await.map_err(|e| {
            LoginError::Unavailable(format!(
                "mcp.{}: the login could not be deleted: {e}",
                login.server
            ))
        })?;
        if !deleted {
            return Err(LoginError::NotFound(why));
        }
        tracing::info!(
            "MCP server {}: a login left from before its table changed was deleted",
            login.server
        );
        Ok(())
    }
}

fn state(server: &Server) -> ServerState {
    let (connected, failure) = server.health();
    let login = server.auth().map(|auth| auth.status());
    let (state, reason) = match (&login, connected, failure) {
        (Some(Status::NeedsLogin(why)), _, _) => ("needs_login", Some(why.clone())),
        (_, true, _) => ("connected", None),
        (_, false, Some(why)) if why.contains("refuse") => ("refused", Some(why)),
        (_, false, Some(why)) => ("unreachable", Some(why)),
        (_, false, None) => ("connecting", None),
    };
    ServerState {
        name: server.declared.name.clone(),
        url: bare(&server.declared.url),
        login: login.is_some(),
        per_user: server.declared.per_user,
        state,
        reason,
        tools: if connected { server.tools().len() } else { 0 },
    }
}

fn bare(url: &url::Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    let _ = url.set_password(None);
    let _ = url.set_username("");
    url.to_string()
}
