//! Remote MCP servers as a tool source: `[mcp.NAME]` of the configuration file, each a session
//! over streamable HTTP whose tools join the service-managed tools (`mcp__NAME__TOOL`).
//!
//! Why the client lives in the host, on rmcp (the MCP project's Rust SDK), and not in a Wasm
//! tool plugin: a session outlives a call (the `Mcp-Session-Id`, the server's stream that says
//! its list changed), which a fresh instance per call cannot hold, and the protocol is an open
//! standard with an official SDK, not a vendor's wire. What the sandbox gives a plugin holds
//! all the same, because every byte goes through the plugin HTTP stack ([`wire`]): only the
//! configured origin, the key added by the host and never handed to code that could leak it,
//! no redirect followed, size and time caps, the key scrubbed from what comes back. The tools
//! themselves run on the remote server; nothing is spawned here (no stdio servers: a command
//! from a file is a process, and a process is outside every sandbox chatd has).
//!
//! - here: [`McpServers`], the servers serving now, applied from the file on start and reload;
//! - [`connection`]: one server's session, tool list and calls;
//! - [`wire`]: rmcp's HTTP client trait on [`crate::egress::send`];
//! - [`oauth`]: a server's login; [`logins`]: the servers' states, Connect and Disconnect;
//! - [`people`]: servers declared `per_user = true`, a session and a login per person;
//! - [`result`]: tool names and results as chatd's text.

mod connection;
pub mod logins;
pub mod oauth;
mod people;
pub mod result;
mod wire;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::config::mcp::DeclaredMcp;
use crate::config::names::Auth;
use crate::egress::reach::Reach;
use crate::egress::services::{Owner, Service, SetBy};
use crate::egress::{Clients, HttpGrant, MAX_BODY_BYTES, scrub};
use crate::plugins::manifest::Kind;
use crate::plugins::worlds::tool::ToolSpec;
use crate::store::logins::LoginKey;
use connection::Server;
pub use people::Reachable;
pub use result::Outcome;

/// The longest a server's own stream (its list-changed notices) stays open before it is
/// opened again.
const STREAM_LIFETIME: std::time::Duration = std::time::Duration::from_secs(900);

/// A tool of a declared MCP server, as offered now.
#[derive(Clone)]
pub struct McpTool {
    pub spec: ToolSpec,
    remote: String,
    server: Arc<Server>,
}

impl McpTool {
    /// Calls it: the result as text (an error result is `is_error`), or why the call failed.
    pub async fn call(&self, arguments_json: &str) -> Result<Outcome, String> {
        self.server.call(&self.remote, arguments_json).await
    }

    /// The `[mcp.NAME]` it comes from.
    pub fn server(&self) -> &str {
        &self.server.declared.name
    }
}

/// Where served servers' logins are kept: the store, and the key they are sealed under (made
/// when a server first needs it: a key file is written only where a login may be kept).
#[derive(Clone)]
pub struct Logins {
    store: crate::store::Store,
    source: Arc<KeySource>,
    /// The key once made or read; a failure is not kept (a folder made writable is tried
    /// again at the next use, with no restart).
    key: Arc<std::sync::Mutex<Option<Arc<oauth::sealed::SealKey>>>>,
}

/// Where the sealing key comes from.
pub enum KeySource {
    /// CHATD_SECRET_KEY.
    Secret(crate::config::Secret),
    /// The data folder's key file (SQLite without CHATD_SECRET_KEY).
    Folder(std::path::PathBuf),
    /// None: why (PostgreSQL without CHATD_SECRET_KEY; no data folder).
    Missing(String),
}

impl Logins {
    pub fn new(store: crate::store::Store, source: KeySource) -> Self {
        Self {
            store,
            source: Arc::new(source),
            key: Arc::default(),
        }
    }

    fn key(&self) -> Result<Arc<oauth::sealed::SealKey>, String> {
        use oauth::sealed::SealKey;
        let mut kept = self.key.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(key) = kept.as_ref() {
            return Ok(key.clone());
        }
        let key = match self.source.as_ref() {
            KeySource::Secret(secret) => Ok(Arc::new(SealKey::from_secret(secret))),
            KeySource::Folder(dir) => std::fs::create_dir_all(dir)
                .and_then(|()| SealKey::from_folder(dir))
                .map(Arc::new)
                .map_err(|e| {
                    format!(
                        "the key for its login cannot be kept in {}: {e}",
                        dir.display()
                    )
                }),
            KeySource::Missing(why) => Err(why.clone()),
        }?;
        *kept = Some(key.clone());
        Ok(key)
    }
}

/// The declared MCP servers.
pub struct McpServers {
    clients: Clients,
    /// The servers every person shares, by name.
    servers: Mutex<BTreeMap<String, Arc<Server>>>,
    /// The servers declared `per_user = true`, by name, with each person's session.
    per_user: Mutex<BTreeMap<String, people::PerUser>>,
    /// When each person's sessions were last compared with the store ([`people`]).
    looked: Mutex<people::Looked>,
    /// When idle sessions were last looked for ([`people`]).
    swept: Mutex<std::time::Instant>,
    /// Servers that need a login but cannot keep one, with why: declared, not started.
    refused: Mutex<BTreeMap<String, (DeclaredMcp, String)>>,
    logins: Option<Logins>,
    changed: watch::Sender<u64>,
}

impl Default for McpServers {
    fn default() -> Self {
        Self::new(None)
    }
}

impl McpServers {
    /// The servers, their logins kept by `logins` (without: a server that needs a login is
    /// not served).
    pub fn new(logins: Option<Logins>) -> Self {
        Self {
            clients: Clients::new(),
            servers: Mutex::default(),
            per_user: Mutex::default(),
            looked: Mutex::default(),
            swept: Mutex::new(std::time::Instant::now()),
            refused: Mutex::default(),
            logins,
            changed: watch::Sender::new(0),
        }
    }

    /// Serves `declared`: a new server starts (listing in the background), one whose table
    /// changed starts again, one no longer declared stops; the rest keep their sessions. One
    /// refused before (its login could not be kept) is tried again: the operator may have
    /// fixed why (made the data folder writable, removed a damaged key file). The environment
    /// is the start's: a CHATD_SECRET_KEY set since needs a restart. A `per_user` server's
    /// sessions start as each person needs them ([`people`]).
    pub fn apply(&self, declared: &BTreeMap<String, DeclaredMcp>) {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        refused.clear();
        let mut changed = self.apply_per_user(declared, &mut refused);
        servers.retain(|name, server| {
            let kept = declared.get(name) == Some(&server.declared);
            if !kept {
                tracing::info!("MCP server {name}: stopped");
                server.stop();
                changed = true;
            }
            kept
        });
        for (name, table) in declared {
            if table.per_user || servers.contains_key(name) || refused.contains_key(name) {
                continue;
            }
            match self.authorized(table, LoginKey::operator(name)) {
                Ok(wire) => {
                    let server = Server::start(table.clone(), wire, self.changed.clone());
                    servers.insert(name.clone(), server);
                }
                Err(why) => {
                    tracing::warn!("MCP server {name}: not served: {why}");
                    refused.insert(name.clone(), (table.clone(), why));
                }
            }
        }
        drop((servers, refused));
        if changed {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// The wire of `table`'s requests, with the login `login` when it needs one; why not,
    /// when that login cannot be kept.
    fn authorized(&self, table: &DeclaredMcp, login: LoginKey) -> Result<wire::Wire, String> {
        let mut wire = wire(&self.clients, table);
        if let Some(client) = &table.oauth {
            let keeper = self.keeper(login)?;
            let url = table.url.clone();
            let clients = self.clients.clone();
            let auth = oauth::Authorizer::served(clients, url, client.clone(), keeper);
            wire.auth = Some(Arc::new(auth));
        }
        Ok(wire)
    }

    fn servers(&self) -> Vec<Arc<Server>> {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        servers.values().cloned().collect()
    }

    /// Bumped whenever the tools offered change (a server listed, failed, came or went).
    pub fn changed(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

impl McpServers {
    /// Where `login` is kept, or why it cannot be.
    fn keeper(&self, login: LoginKey) -> Result<oauth::saved::Keeper, String> {
        let logins = self
            .logins
            .as_ref()
            .ok_or("it needs a login, and this chatd keeps none")?;
        let key = logins.key()?;
        Ok(oauth::saved::Keeper {
            store: logins.store.clone(),
            key,
            login,
        })
    }
}

/// The grant a server's requests go under: its own origin only (reachable at any address,
/// as every operator-configured upstream), its key as `auth` says, the caps.
fn wire(clients: &Clients, table: &DeclaredMcp) -> wire::Wire {
    let id = format!("mcp.{}", table.name);
    let service = Service {
        name: id.clone(),
        base_url: Some(table.url.clone()),
        key: table.api_key.clone(),
        auth: table.auth.clone().unwrap_or(Auth::Bearer),
        headers: table.headers.clone(),
        owners: vec![Owner::any(&id)],
        base_url_key: String::new(),
        set_by: SetBy::File(format!("[mcp.{}]", table.name)),
    };
    let mut reach = Reach::default();
    // The owner is the server itself, and the URL was checked when the file was read.
    let _ = reach.add(&service, &id, Kind::Tool.as_str(), None);
    let keys = scrub::keys(
        reach
            .credentials
            .iter()
            .filter_map(|c| c.secret.as_ref())
            .map(|s| s.expose()),
    );
    let grant = HttpGrant {
        trusted: reach.trusted,
        credentials: reach.credentials,
        scrubbed: keys,
        max_body_bytes: MAX_BODY_BYTES,
        max_timeout: STREAM_LIFETIME.max(table.timeout),
        ..HttpGrant::none()
    };
    wire::Wire {
        clients: clients.clone(),
        grant: Arc::new(grant),
        call_timeout: table.timeout,
        last_failure: Arc::default(),
        auth: None,
    }
}

/// One server reached from the command line (`chatd mcp call`): the session, wire and login
/// code the served ones use, without listing in the background.
pub struct OneServer {
    server: Arc<Server>,
}

impl OneServer {
    /// The server at `url`, logged in by `auth` when it asks for a login.
    pub fn new(clients: &Clients, url: url::Url, auth: Option<Arc<oauth::Authorizer>>) -> Self {
        let declared = DeclaredMcp {
            name: "cli".into(),
            url,
            api_key: None,
            auth: Some(Auth::None),
            headers: Vec::new(),
            tools: None,
            timeout: crate::config::mcp::DEFAULT_TIMEOUT,
            max_tool_text: usize::MAX,
            insecure_key: false,
            oauth: None,
            per_user: false,
        };
        let wire = wire::Wire {
            auth,
            ..wire(clients, &declared)
        };
        Self {
            server: Server::new(declared, wire, watch::Sender::new(0)),
        }
    }

    /// Its tools: each one's own name and description.
    pub async fn tools(&self) -> Result<Vec<(String, String)>, String> {
        let listed = self.server.list().await?;
        let prefix = "(MCP server cli) ";
        Ok(listed
            .into_iter()
            .map(|t| {
                let about = t.spec.description.trim_start_matches(prefix).to_string();
                (t.remote, about)
            })
            .collect())
    }

    /// Calls its tool `tool` with `arguments_json`.
    pub async fn call(&self, tool: &str, arguments_json: &str) -> Result<Outcome, String> {
        self.server.call(tool, arguments_json).await
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        for server in self
            .servers
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            server.stop();
        }
        for servers in self
            .per_user
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            servers.stop();
        }
    }
}
