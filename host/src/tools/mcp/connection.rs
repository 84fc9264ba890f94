//! One declared MCP server: its session (opened when first needed, opened again after it
//! failed), its tool list (listed in the background: at start, every [`REFRESH_EVERY`], when
//! the server says the list changed, after a call found the session gone), and its calls.
//!
//! Nothing here can fail startup or hold a run: listing runs in a task of its own, retried with
//! a growing pause while the server is down; a call waits at most the server's `timeout_secs`.

use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject,
    ProtocolVersion,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, ServiceExt};
use tokio::sync::{Notify, watch};

use crate::config::mcp::DeclaredMcp;
use crate::egress::scrub;
use crate::plugins::worlds::tool::ToolSpec;
use crate::tools::mcp::result::{self, Outcome};
use crate::tools::mcp::wire::Wire;

/// How often a reachable server's tools are listed again without being asked.
pub const REFRESH_EVERY: Duration = Duration::from_secs(600);
/// The longest pause between two tries of a server that is down.
const MAX_PAUSE: Duration = Duration::from_secs(60);
/// The most tools one server may offer; the rest are left out, said in the log.
const MAX_TOOLS: usize = 256;
/// The largest input schema taken, in bytes of JSON.
const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// The longest description kept, in characters (the rest is cut).
const MAX_DESCRIPTION_CHARS: usize = 4096;
/// The most pages of a tool list read.
const MAX_PAGES: usize = 32;

/// A tool as the server listed it: the spec models see, and the server's own name.
#[derive(Clone, Debug)]
pub struct Listed {
    pub spec: ToolSpec,
    pub remote: String,
}

/// What chatd tells a server about itself, and the list-changed notice it listens for.
#[derive(Clone)]
struct Handler {
    refresh: Arc<Notify>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("chatd", env!("CARGO_PKG_VERSION")),
        );
        // The newest version with an `initialize` handshake; a server on 2025-06-18 answers
        // with that one, and rmcp speaks it.
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info
    }
}

type Session = RunningService<RoleClient, Handler>;

pub struct Server {
    pub declared: DeclaredMcp,
    /// Who it is in the log: its name, and the person for a person's session.
    label: String,
    wire: Wire,
    tools: RwLock<Arc<[Listed]>>,
    session: tokio::sync::Mutex<Option<Session>>,
    refresh: Arc<Notify>,
    changed: watch::Sender<u64>,
    task: std::sync::Mutex<Option<tokio::task::AbortHandle>>,
    /// Removed from the configuration: no session is opened again.
    stopped: std::sync::atomic::AtomicBool,
    /// Why the last listing failed; `None` after one succeeded (or before the first).
    failure: RwLock<Option<String>>,
    /// A listing has succeeded since the server started.
    listed: std::sync::atomic::AtomicBool,
    /// Bumped by [`Server::relist`]: a listing begun before it failed for the login before.
    relisted: std::sync::atomic::AtomicU64,
    /// Listings finished (passed or failed), for [`Server::listed_after`].
    listings: watch::Sender<u64>,
}

impl Server {
    /// Starts listing the server's tools in the background; `changed` is bumped whenever the
    /// list it offers changes.
    pub fn start(declared: DeclaredMcp, wire: Wire, changed: watch::Sender<u64>) -> Arc<Self> {
        let server = Self::new(declared, wire, changed);
        server.listen();
        server
    }

    /// Starts listing its tools in the background, unless that began already or it stopped.
    pub fn listen(self: &Arc<Self>) {
        let mut task = self.task.lock().unwrap_or_else(|e| e.into_inner());
        if task.is_none() && !self.stopped.load(std::sync::atomic::Ordering::Relaxed) {
            *task = Some(tokio::spawn(keep_listing(Arc::downgrade(self))).abort_handle());
        }
    }

    /// Whether it lists its tools in the background ([`Self::listen`]), until stopped.
    pub fn listening(&self) -> bool {
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner());
        task.is_some() && !self.stopped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Listings finished so far.
    pub fn listings(&self) -> u64 {
        *self.listings.borrow()
    }

    /// Waits until a listing after the `seen`th has finished, at most `bound` (or the
    /// server's `timeout_secs`, if shorter: a listing waits no longer for its answer).
    pub async fn listed_after(&self, seen: u64, bound: Duration) {
        let mut listings = self.listings.subscribe();
        let bound = bound.min(self.declared.timeout);
        let _ = tokio::time::timeout(bound, listings.wait_for(|n| *n > seen)).await;
    }

    /// The server, not listed in the background: reached once (`chatd mcp call`).
    pub fn new(declared: DeclaredMcp, wire: Wire, changed: watch::Sender<u64>) -> Arc<Self> {
        let label = declared.name.clone();
        Self::labelled(declared, label, wire, changed)
    }

    /// [`Self::new`], called `label` in the log (a person's session of a `per_user` server).
    pub fn labelled(
        declared: DeclaredMcp,
        label: String,
        wire: Wire,
        changed: watch::Sender<u64>,
    ) -> Arc<Self> {
        Arc::new(Self {
            declared,
            label,
            wire,
            tools: RwLock::new(Arc::new([])),
            session: tokio::sync::Mutex::new(None),
            refresh: Arc::new(Notify::new()),
            changed,
            task: std::sync::Mutex::new(None),
            stopped: std::sync::atomic::AtomicBool::new(false),
            failure: RwLock::new(None),
            listed: std::sync::atomic::AtomicBool::new(false),
            relisted: std::sync::atomic::AtomicU64::new(0),
            listings: watch::Sender::new(0),
        })
    }

    /// Whether a listing has succeeded, and why the last one failed (if it did).
    pub fn health(&self) -> (bool, Option<String>) {
        let failure = self
            .failure
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let listed = self.listed.load(std::sync::atomic::Ordering::Relaxed);
        (listed && failure.is_none(), failure)
    }

    /// Its login, when it needs one.
    pub fn auth(&self) -> Option<&Arc<crate::tools::mcp::oauth::Authorizer>> {
        self.wire.auth.as_ref()
    }

    /// Lists its tools again now (its login changed). The last listing's failure is forgotten
    /// at once, and so is that of a listing begun before: it was about the login before, and a
    /// page asking meanwhile is told the server is connecting (and looks again), not the old
    /// reason (and stops looking).
    pub fn relist(&self) {
        self.relisted
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        *self.failure.write().unwrap_or_else(|e| e.into_inner()) = None;
        self.refresh.notify_one();
    }

    /// Closes its session and offers none of its tools until it is listed again (a login
    /// ended).
    pub async fn forget_session(&self) {
        self.session.lock().await.take();
        self.listed
            .store(false, std::sync::atomic::Ordering::Relaxed);
        self.set_tools(Vec::new());
        self.relist();
    }

    /// Stops listing and closes the session (removed or replaced by a reload); no session is
    /// opened again. A call in flight holding the session (or connecting) ends on its own.
    pub fn stop(&self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(task) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
        if let Ok(mut session) = self.session.try_lock() {
            session.take();
        }
    }

    /// Its tools offered now: none while its login is needed (a refused refresh, a
    /// disconnection), whatever the last listing found.
    pub fn tools(&self) -> Arc<[Listed]> {
        if self.needs_login() {
            return Arc::new([]);
        }
        self.tools.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether its login is needed now: none held, or the last one ended.
    pub fn needs_login(&self) -> bool {
        use crate::tools::mcp::oauth::Status;
        self.auth()
            .is_some_and(|auth| matches!(auth.status(), Status::NeedsLogin(_)))
    }

    fn set_tools(&self, tools: Vec<Listed>) {
        let tools: Arc<[Listed]> = tools.into();
        let mut current = self.tools.write().unwrap_or_else(|e| e.into_inner());
        let same = current.len() == tools.len()
            && current
                .iter()
                .zip(tools.iter())
                .all(|(a, b)| same_spec(&a.spec, &b.spec));
        *current = tools;
        drop(current);
        if !same {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// `what` failed: the reason, scrubbed, naming the server.
    fn failure(&self, what: &str, why: impl std::fmt::Display) -> String {
        scrub::text(
            &self.wire.keys(),
            format!("MCP server {}: {what}: {why}", self.declared.name),
        )
    }

    /// Why rmcp failed: the HTTP failure under it when there is one (rmcp's own words wrap it
    /// in its type names), else rmcp's.
    fn reason(&self, error: impl std::fmt::Display) -> String {
        self.wire
            .take_failure()
            .unwrap_or_else(|| error.to_string())
    }

    /// The open session's peer, opening one when there is none or it ended.
    async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut session = self.session.lock().await;
        if self.stopped.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(self.failure(
                "calling",
                "stopped (removed from the configuration, or its login was disconnected)",
            ));
        }
        let open = |s: &&Session| !s.is_closed() && !s.peer().is_transport_closed();
        if let Some(open) = session.as_ref().filter(open) {
            return Ok(open.peer().clone());
        }
        session.take();
        let config = StreamableHttpClientTransportConfig::with_uri(self.declared.url.as_str())
            .max_json_response_size(self.wire.grant.max_body_bytes as usize);
        let transport = StreamableHttpClientTransport::with_client(self.wire.clone(), config);
        let handler = Handler {
            refresh: self.refresh.clone(),
        };
        let opened = tokio::time::timeout(self.declared.timeout, handler.serve(transport))
            .await
            .map_err(|_| self.failure("connecting", "no answer in time"))?
            .map_err(|e| self.failure("connecting", self.reason(e)))?;
        let peer = opened.peer().clone();
        *session = Some(opened);
        Ok(peer)
    }

    /// Lists the server's tools (page by page, at most [`MAX_PAGES`] and [`MAX_TOOLS`]), named
    /// for chatd and cut to the allow-list.
    pub async fn list(&self) -> Result<Vec<Listed>, String> {
        // A failure noted earlier (the server's own stream ending) is not this one's.
        self.wire.take_failure();
        let listed = tokio::time::timeout(self.declared.timeout, self.pages())
            .await
            .map_err(|_| self.failure("listing tools", "no answer in time"))??;
        let mut tools: Vec<Listed> = Vec::new();
        let mut names = std::collections::HashSet::new();
        // What the tools add to every prompt, within `max_tool_text_kib`.
        let (mut text, mut over) = (0, 0);
        for tool in listed {
            if tools.len() == MAX_TOOLS {
                tracing::warn!(
                    "MCP server {}: over {MAX_TOOLS} tools; the first {MAX_TOOLS} are offered",
                    self.declared.name
                );
                break;
            }
            let Some(listed) = self.take(tool) else {
                continue;
            };
            let spec = &listed.spec;
            let size = spec.name.len() + spec.description.len() + spec.parameters_schema_json.len();
            if text + size > self.declared.max_tool_text {
                over += 1;
                continue;
            }
            if names.insert(spec.name.clone()) {
                text += size;
                tools.push(listed);
            }
        }
        if over > 0 {
            tracing::warn!(
                "MCP server {}: {over} tools left out: with them its tools' names, descriptions \
                 and schemas would pass {} KiB (max_tool_text_kib)",
                self.declared.name,
                self.declared.max_tool_text / 1024
            );
        }
        Ok(tools)
    }

    /// The tool list's pages, until the last or the caps.
    async fn pages(&self) -> Result<Vec<rmcp::model::Tool>, String> {
        let peer = self.peer().await?;
        let (mut tools, mut cursor) = (Vec::new(), None);
        for _ in 0..MAX_PAGES {
            let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
            let page = peer
                .list_tools(Some(params))
                .await
                .map_err(|e| self.failure("listing tools", self.reason(e)))?;
            tools.extend(page.tools);
            cursor = page.next_cursor;
            if cursor.is_none() || tools.len() > MAX_TOOLS {
                break;
            }
        }
        Ok(tools)
    }

    /// `tool` as chatd offers it, or `None` when it is not (not allowed, a schema too large, or
    /// a name or schema holding the key, which the log does not quote).
    fn take(&self, tool: rmcp::model::Tool) -> Option<Listed> {
        let name = &self.declared.name;
        let remote = tool.name.to_string();
        if let Some(allowed) = &self.declared.tools
            && !allowed.contains(&remote)
        {
            return None;
        }
        let schema = serde_json::to_string(&tool.input_schema).unwrap_or_default();
        // Decoded, an escaped key is plain again: the name and the schema must not hold it.
        let keys = self.wire.keys();
        if scrub::text(&keys, remote.clone()) != remote
            || scrub::text(&keys, schema.clone()) != schema
        {
            tracing::warn!("MCP server {name}: a tool left out: its name or schema holds the key");
            return None;
        }
        if schema.len() > MAX_SCHEMA_BYTES {
            tracing::warn!(
                "MCP server {name}: tool {remote:?} left out: its schema is over {MAX_SCHEMA_BYTES} bytes"
            );
            return None;
        }
        let about = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or(&remote);
        let about: String = about.chars().take(MAX_DESCRIPTION_CHARS).collect();
        Some(Listed {
            spec: ToolSpec {
                name: result::tool_name(name, &remote),
                description: scrub::text(&keys, format!("(MCP server {name}) {about}")),
                parameters_schema_json: schema,
            },
            remote,
        })
    }

    /// Calls the server's tool `remote` with `arguments_json`: its result, or why it failed.
    pub async fn call(&self, remote: &str, arguments_json: &str) -> Result<Outcome, String> {
        let arguments = match serde_json::from_str::<serde_json::Value>(arguments_json) {
            _ if arguments_json.trim().is_empty() => JsonObject::new(),
            Ok(serde_json::Value::Object(map)) => map,
            _ => return Err("invalid arguments: not a JSON object".into()),
        };
        self.wire.take_failure();
        let params = CallToolRequestParams::new(remote.to_string()).with_arguments(arguments);
        // One deadline for all of it: waiting for the session, opening it, the call.
        let called = tokio::time::timeout(self.declared.timeout, async {
            let peer = self.peer().await?;
            Ok::<_, String>((peer.call_tool(params).await, peer))
        });
        match called.await {
            Err(_) => Err(self.failure(
                &format!("tool {remote}"),
                format!("no answer within {} s", self.declared.timeout.as_secs()),
            )),
            Ok(Err(why)) => Err(why),
            Ok(Ok((Err(e), peer))) => {
                // The session may be gone (the server restarted), or the login ended: list
                // again, which reopens it, or withdraws the tools and says so.
                if peer.is_transport_closed() || self.needs_login() {
                    self.refresh.notify_one();
                }
                Err(self.failure(&format!("tool {remote}"), self.reason(e)))
            }
            Ok(Ok((Ok(answer), _))) => {
                let value = serde_json::to_value(&answer).unwrap_or_default();
                Ok(result::outcome(&value, &self.wire.keys()))
            }
        }
    }
}

fn same_spec(a: &ToolSpec, b: &ToolSpec) -> bool {
    a.name == b.name
        && a.description == b.description
        && a.parameters_schema_json == b.parameters_schema_json
}

/// Lists the server's tools until the server is dropped: again after [`REFRESH_EVERY`], at
/// once when it says its list changed, and after a pause growing to [`MAX_PAUSE`] while it
/// cannot be listed (its tools are then not offered).
async fn keep_listing(server: Weak<Server>) {
    let mut pause = Duration::from_secs(1);
    let mut last_error: Option<String> = None;
    loop {
        let Some(strong) = server.upgrade() else {
            return;
        };
        let refresh = strong.refresh.clone();
        let asked = strong.relisted.load(std::sync::atomic::Ordering::SeqCst);
        let wait = match strong.list().await {
            Ok(tools) => {
                let count = tools.len();
                // Offered first, then said: a reader of the log may act on the line at once.
                strong.set_tools(tools);
                *strong.failure.write().unwrap_or_else(|e| e.into_inner()) = None;
                strong
                    .listed
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                tracing::info!("MCP server {}: {count} tools offered", strong.label);
                pause = Duration::from_secs(1);
                last_error = None;
                REFRESH_EVERY
            }
            // Relisted meanwhile (a login finished): this failure is the old login's; the
            // next listing starts at once, woken by the relist.
            Err(_) if strong.relisted.load(std::sync::atomic::Ordering::SeqCst) != asked => {
                REFRESH_EVERY
            }
            Err(why) => {
                strong.set_tools(Vec::new());
                *strong.failure.write().unwrap_or_else(|e| e.into_inner()) = Some(why.clone());
                if last_error.as_ref() != Some(&why) {
                    match strong.label == strong.declared.name {
                        true => tracing::warn!("{why}; its tools are not offered until it answers"),
                        false => tracing::warn!(
                            "{why} ({}); its tools are not offered to them until it answers",
                            strong.label
                        ),
                    }
                }
                last_error = Some(why);
                let this = pause;
                pause = (pause * 2).min(MAX_PAUSE);
                this
            }
        };
        strong.listings.send_modify(|n| *n += 1);
        drop(strong);
        tokio::select! {
            () = refresh.notified() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}
