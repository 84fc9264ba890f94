//! Servers declared `per_user = true`: each person logs in with their own account, and each
//! person's calls go through a session of their own ([`Server`], its own [`Authorizer`] and
//! login row, keyed by [`LoginKey::person`]), so one person's token is never sent for
//! another's call, and a person without a login is offered none of the server's tools.
//!
//! A person's session starts when their login is finished here (the callback), or when a
//! request of theirs finds a login another instance made: [`McpServers::reachable`] looks in
//! the store for the logins of a person who lacks a session, at most once per [`LOOK_AGAIN`]
//! (one indexed read), and waits for a session it starts to list its tools (at most
//! [`FIRST_LISTING_WAIT`]). A session whose login is gone from the store (Disconnect elsewhere, a
//! refused refresh) is stopped there.
//!
//! [`Authorizer`]: super::oauth::Authorizer

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::connection::Server;
use super::{McpServers, McpTool};
use crate::config::mcp::DeclaredMcp;
use crate::store::logins::LoginKey;

/// How long a person found without a login (or with a session that needs one) is not looked
/// for again: a login made on another instance is used within this.
pub const LOOK_AGAIN: Duration = Duration::from_millis(500);
/// The longest a request waits for a session it started to list its tools: a server slow to
/// answer holds no request longer (its tools join that person's next requests).
const FIRST_LISTING_WAIT: Duration = Duration::from_secs(5);

/// A server declared `per_user = true`, and the sessions of the people using it.
pub(super) struct PerUser {
    pub declared: DeclaredMcp,
    /// Each person's session, by the person's id.
    pub people: BTreeMap<String, Arc<Server>>,
}

impl PerUser {
    /// Stops every person's session (the server was removed or its table changed).
    pub fn stop(&self) {
        for server in self.people.values() {
            server.stop();
        }
    }
}

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
    /// The servers `person` reaches, their own sessions started first where the store holds
    /// a login of theirs that this instance has no session for.
    pub async fn reachable(&self, person: &str) -> Reachable {
        let waits: Vec<_> = self
            .start_logins_of(person)
            .await
            .into_iter()
            .map(
                |(server, seen)| async move { server.listed_after(seen, FIRST_LISTING_WAIT).await },
            )
            .collect();
        futures::future::join_all(waits).await;
        self.reachable_now(person)
    }

    /// The servers `person` reaches, from the sessions this instance holds now.
    pub fn reachable_now(&self, person: &str) -> Reachable {
        let mut servers = self.servers();
        let per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
        servers.extend(
            per_user
                .values()
                .filter_map(|p| p.people.get(person).cloned()),
        );
        servers.sort_by(|a, b| a.declared.name.cmp(&b.declared.name));
        Reachable(servers)
    }

    /// Starts `person`'s sessions of the `per_user` servers whose login the store holds and
    /// this instance has no working session for, and stops those whose login is gone: each
    /// session started or listed again, with the listings it had finished before.
    async fn start_logins_of(&self, person: &str) -> Vec<(Arc<Server>, u64)> {
        let lacking: Vec<String> = {
            let per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
            per_user
                .iter()
                .filter(|(_, p)| p.people.get(person).is_none_or(|s| s.needs_login()))
                .map(|(name, _)| name.clone())
                .collect()
        };
        let Some(logins) = self.logins.as_ref().filter(|_| !lacking.is_empty()) else {
            return Vec::new();
        };
        {
            let mut looked = self.looked.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            if looked
                .get(person)
                .is_some_and(|at| now.duration_since(*at) < LOOK_AGAIN)
            {
                return Vec::new();
            }
            looked.insert(person.to_string(), now);
        }
        let held = match logins.store.logins_of(person).await {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!("person {person}'s MCP logins could not be read: {e}");
                return Vec::new();
            }
        };
        let mut started = Vec::new();
        let mut per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
        for name in lacking {
            let Some(servers) = per_user.get_mut(&name) else {
                continue;
            };
            let session = servers.people.get(person).cloned();
            match (held.contains(&name), session) {
                (true, Some(server)) => {
                    let seen = server.listings();
                    server.relist();
                    server.listen();
                    started.push((server, seen));
                }
                (true, None) => match self.session(servers, person) {
                    Ok(server) => {
                        server.listen();
                        started.push((server, 0));
                    }
                    Err(why) => tracing::warn!("MCP server {name} (person {person}): {why}"),
                },
                (false, Some(server)) => {
                    server.stop();
                    servers.people.remove(person);
                    self.changed.send_modify(|n| *n += 1);
                }
                (false, None) => {}
            }
        }
        started
    }

    /// `person`'s session of `servers`, made (not yet listing) when there is none.
    pub(super) fn session(
        &self,
        servers: &mut PerUser,
        person: &str,
    ) -> Result<Arc<Server>, String> {
        if let Some(server) = servers.people.get(person) {
            return Ok(server.clone());
        }
        let table = &servers.declared;
        let wire = self.authorized(table, LoginKey::person(&table.name, person))?;
        let server = Server::new(table.clone(), wire, self.changed.clone());
        servers.people.insert(person.to_string(), server.clone());
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
        changed
    }

    /// Stops `person`'s session of `name` (their login ended here).
    pub(super) fn end_session(&self, name: &str, person: &str) {
        let mut per_user = self.per_user.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(server) = per_user
            .get_mut(name)
            .and_then(|servers| servers.people.remove(person))
        {
            server.stop();
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// `person` is looked for in the store at their next request (a login finished here).
    pub(super) fn look_again(&self, person: &str) {
        let mut looked = self.looked.lock().unwrap_or_else(|e| e.into_inner());
        looked.remove(person);
    }
}
