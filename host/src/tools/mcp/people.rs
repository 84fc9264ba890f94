//! Servers declared `per_user = true`: each person logs in with their own account, and each
//! person's calls go through a session of their own ([`Server`], its own [`Authorizer`] and
//! login row, keyed by [`LoginKey::person`]), so one person's token is never sent for
//! another's call, and a person without a login is offered none of the server's tools.
//!
//! A person's session starts when their login is finished here (the callback), or when a
//! request of theirs finds a login another instance made. [`McpServers::reachable`] compares a
//! person's sessions with their logins in the store at most once per [`LOOK_AGAIN`] (one
//! indexed read; one lookup per person at a time, the others wait for it):
//! - a login without a session here: the session starts;
//! - a session whose login is gone (Disconnect on another instance, a refused refresh): it
//!   stops, so no call carries that login's token any more;
//! - a session that needs a login, whose row changed since it last took it up (a login made
//!   again elsewhere): it lists again, which reads the new login.
//!
//! A request waits (at most [`FIRST_LISTING_WAIT`]) for its person's sessions that have not
//! listed their tools yet. A session no request of its person reached for [`IDLE_FOR`] stops
//! (a disabled person's among them); it starts again at their next request.
//!
//! [`Authorizer`]: super::oauth::Authorizer

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::connection::Server;
use super::{McpServers, McpTool};
use crate::config::mcp::DeclaredMcp;
use crate::store::logins::LoginKey;

/// How long a person's sessions are not compared with the store again: a login made, or
/// ended, on another instance is taken up here within this.
pub const LOOK_AGAIN: Duration = Duration::from_millis(500);
/// The longest a request waits for its person's sessions to list their tools: a server slow to
/// answer holds no request longer (its tools join that person's next requests).
const FIRST_LISTING_WAIT: Duration = Duration::from_secs(5);
/// A session none of its person's requests reached for this long stops.
pub const IDLE_FOR: Duration = Duration::from_secs(30 * 60);
/// How often idle sessions are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// A server declared `per_user = true`, and the sessions of the people using it.
pub(super) struct PerUser {
    pub declared: DeclaredMcp,
    /// Each person's session, by the person's id.
    pub people: BTreeMap<String, Session>,
}

impl PerUser {
    /// Stops every person's session (the server was removed or its table changed).
    pub fn stop(&self) {
        for session in self.people.values() {
            session.server.stop();
        }
    }
}

/// One person's session of a `per_user` server.
pub(super) struct Session {
    pub server: Arc<Server>,
    /// The stored login's `updated_at` when this session last took it up; `None`: not yet.
    seen: Option<String>,
    /// When a request of its person last reached it.
    used: Instant,
}

/// When each person's sessions were last compared with the store: one lookup per person at a
/// time (the lock is held across the store's read).
pub(super) type Looked =
    std::collections::HashMap<String, Arc<tokio::sync::Mutex<Option<Instant>>>>;

/// The MCP servers one person reaches now: the shared ones and their own sessions of the
/// `per_user` ones, in name order.
#[derive(Clone, Default)]
pub struct Reachable(Vec<Arc<Server>>);

impl Reachable {
    /// Every tool offered, servers in name order, each server's in its order; a name two
    /// servers give (`[mcp.a]`'s `b__c` and `[mcp.a__b]`'s `c`) is the first one's.
    pub fn tools(&self) -> Vec<McpTool> {
        let mut names = std::collections::HashSet::new();
        let mut tools = Vec::new();
        for server in &self.0 {
            for listed in server.tools().iter() {
                if names.insert(listed.spec.name.clone()) {
                    tools.push(McpTool {
                        spec: listed.spec.clone(),
                        remote: listed.remote.clone(),
                        server: server.clone(),
                    });
                }
            }
        }
        tools
    }

    /// The tool offered under `name`, if any (the first server's, as in [`Self::tools`]).
    pub fn tool(&self, name: &str) -> Option<McpTool> {
        self.0.iter().find_map(|server| {
            let tools = server.tools();
            let listed = tools.iter().find(|t| t.spec.name == name)?;
            Some(McpTool {
                spec: listed.spec.clone(),
                remote: listed.remote.clone(),
                server: server.clone(),
            })
        })
    }
}

impl McpServers {
    /// The servers `person` reaches: their sessions compared with the store first (started,
    /// stopped), and those not yet listed waited for.
    pub async fn reachable(&self, person: &str) -> Reachable {
        let started = self.look_up(person).await;
        self.sweep();
        let mut waits: Vec<(Arc<Server>, u64)> = started;
        {
            let mut per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            for session in per_user
                .values_mut()
                .filter_map(|p| p.people.get_mut(person))
            {
                session.used = now;
                let server = &session.server;
                let unlisted = server.listening() && server.listings() == 0;
                if unlisted && !waits.iter().any(|(s, _)| Arc::ptr_eq(s, server)) {
                    waits.push((server.clone(), 0));
                }
            }
        }
        let waits = waits.into_iter().map(|(server, seen)| async move {
            server.listed_after(seen, FIRST_LISTING_WAIT).await
        });
        futures::future::join_all(waits).await;
        self.reachable_now(person)
    }

    /// The servers `person` reaches, from the sessions this instance holds now.
    pub fn reachable_now(&self, person: &str) -> Reachable {
        let mut servers = self.servers();
        let per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
        let own = per_user.values().filter_map(|p| p.people.get(person));
        servers.extend(own.map(|session| session.server.clone()));
        servers.sort_by(|a, b| a.declared.name.cmp(&b.declared.name));
        Reachable(servers)
    }

    /// Compares `person`'s sessions with their logins in the store (module docs), unless that
    /// was done within [`LOOK_AGAIN`]: each session started or listed again, with the
    /// listings it had finished before.
    async fn look_up(&self, person: &str) -> Vec<(Arc<Server>, u64)> {
        let Some(logins) = self.logins.as_ref() else {
            return Vec::new();
        };
        if self
            .per_user
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
        {
            return Vec::new();
        }
        let gate = {
            let mut looked = self.looked.lock().unwrap_or_else(|e| e.into_inner());
            looked.entry(person.to_string()).or_default().clone()
        };
        let mut last = gate.lock().await;
        if last.is_some_and(|at| at.elapsed() < LOOK_AGAIN) {
            return Vec::new();
        }
        // Set before the read: a store that cannot answer is not asked at every request.
        *last = Some(Instant::now());
        let held = match logins.store.logins_of(person).await {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!("person {person}'s MCP logins could not be read: {e}");
                return Vec::new();
            }
        };
        let mut started = Vec::new();
        let mut per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
        for (name, servers) in per_user.iter_mut() {
            let row = held.iter().find(|(server, _)| server == name);
            let row = row.map(|(_, updated_at)| updated_at.clone());
            let session = servers.people.get_mut(person);
            match (row, session) {
                (Some(at), Some(session))
                    if session.server.needs_login() && session.seen.as_ref() != Some(&at) =>
                {
                    session.seen = Some(at);
                    let seen = session.server.listings();
                    session.server.relist();
                    session.server.listen();
                    started.push((session.server.clone(), seen));
                }
                (Some(_), Some(_)) | (None, None) => {}
                (Some(at), None) => match self.session(servers, person) {
                    Ok(server) => {
                        if let Some(session) = servers.people.get_mut(person) {
                            session.seen = Some(at);
                        }
                        server.listen();
                        started.push((server, 0));
                    }
                    Err(why) => tracing::warn!("MCP server {name} (person {person}): {why}"),
                },
                // A session not listening yet awaits its login's callback: it is kept.
                (None, Some(session)) if session.server.listening() => {
                    tracing::info!(
                        "MCP server {name}: person {person}'s login ended; their session stopped"
                    );
                    session.server.stop();
                    servers.people.remove(person);
                    self.changed.send_modify(|n| *n += 1);
                }
                (None, Some(_)) => {}
            }
        }
        started
    }

    /// Stops the sessions no request reached for [`IDLE_FOR`], and forgets lookups no longer
    /// needed; at most once per [`SWEEP_EVERY`].
    fn sweep(&self) {
        {
            let mut swept = self.swept.lock().unwrap_or_else(|e| e.into_inner());
            if swept.elapsed() < SWEEP_EVERY {
                return;
            }
            *swept = Instant::now();
        }
        let mut stopped = false;
        let mut per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
        for (name, servers) in per_user.iter_mut() {
            servers.people.retain(|person, session| {
                let idle = session.used.elapsed() >= IDLE_FOR;
                if idle {
                    tracing::info!("MCP server {name}: person {person}'s idle session stopped");
                    session.server.stop();
                    stopped = true;
                }
                !idle
            });
        }
        drop(per_user);
        let mut looked = self.looked.lock().unwrap_or_else(|e| e.into_inner());
        looked.retain(|_, gate| {
            gate.try_lock().map_or(true, |last| {
                last.is_some_and(|at| at.elapsed() < LOOK_AGAIN)
            })
        });
        drop(looked);
        if stopped {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// `person`'s session of `servers`, made (not yet listing) when there is none.
    pub(super) fn session(
        &self,
        servers: &mut PerUser,
        person: &str,
    ) -> Result<Arc<Server>, String> {
        if let Some(session) = servers.people.get_mut(person) {
            session.used = Instant::now();
            return Ok(session.server.clone());
        }
        let table = &servers.declared;
        let wire = self.authorized(table, LoginKey::person(&table.name, person))?;
        let label = format!("{} (person {person})", table.name);
        let server = Server::labelled(table.clone(), label, wire, self.changed.clone());
        let session = Session {
            server: server.clone(),
            seen: None,
            used: Instant::now(),
        };
        servers.people.insert(person.to_string(), session);
        Ok(server)
    }

    /// Applies the `per_user` tables of `declared`: one removed or changed stops every
    /// person's session (they start again as needed); one whose logins cannot be kept is
    /// `refused`. Whether the tools offered changed.
    pub(super) fn apply_per_user(
        &self,
        declared: &BTreeMap<String, DeclaredMcp>,
        refused: &mut BTreeMap<String, (DeclaredMcp, String)>,
    ) -> bool {
        let mut per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed = false;
        per_user.retain(|name, servers| {
            let kept = declared.get(name) == Some(&servers.declared);
            if !kept {
                tracing::info!("MCP server {name}: every person's session stopped");
                servers.stop();
                changed |= !servers.people.is_empty();
            }
            kept
        });
        for (name, table) in declared.iter().filter(|(_, t)| t.per_user) {
            if per_user.contains_key(name) {
                continue;
            }
            match self.keeper(LoginKey::operator(name)) {
                Ok(_) => {
                    let servers = PerUser {
                        declared: table.clone(),
                        people: BTreeMap::new(),
                    };
                    per_user.insert(name.clone(), servers);
                }
                Err(why) => {
                    tracing::warn!("MCP server {name}: not served: {why}");
                    refused.insert(name.clone(), (table.clone(), why));
                }
            }
        }
        drop(per_user);
        // Every person's sessions are compared with the store at their next request.
        self.looked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        changed
    }

    /// Stops `person`'s session of `name` (their login ended here).
    pub(super) fn end_session(&self, name: &str, person: &str) {
        let mut per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(session) = per_user
            .get_mut(name)
            .and_then(|servers| servers.people.remove(person))
        {
            session.server.stop();
            self.changed.send_modify(|n| *n += 1);
        }
    }
}
