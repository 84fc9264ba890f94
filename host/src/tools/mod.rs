//! The tools: which exist, and what runs each. A tool is a tool plugin's (of the serving
//! snapshot), chatd's own `file_search` ([`file_search`], on the person's library), or a
//! declared MCP server's ([`mcp`], its client); a name a plugin provides is the plugin's
//! ([`enabled::EnabledTool::find`]). [`Offer`] answers "which tools exist" for one
//! person (a `per_user` MCP server's tools are only for those logged in to it) for chat
//! defaults, the filtering of unknown names, `GET /v1/chat-tools` and `/mcp`, from what serves
//! now: a tool plugin added to PLUGINS_DIR, or an MCP server coming up, is offered at once.
//!
//! This layer sits above the plugin host and below the chat loop: it reads the host's snapshot
//! and configuration file, and applies the file's `[mcp.NAME]` tables to the MCP servers.

pub mod enabled;
pub mod file_search;
pub mod mcp;
pub mod python;

use std::sync::{Arc, OnceLock};

use tokio::sync::watch;

use crate::library::Library;
use crate::plugins::loading::plugin_host::PluginHost;
use crate::plugins::loading::snapshot::Snapshot;
use enabled::EnabledTool;
use mcp::McpServers;

/// A tool as listed: its name and what it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
}

/// The tools of one server: its plugin host's and its MCP servers'.
pub struct Tools {
    plugins: Arc<PluginHost>,
    mcp: Arc<McpServers>,
    /// The bundled interpreter's sessions.
    interpreter: Arc<python::Interpreter>,
    /// The library `file_search` searches; `None`: no such tool (a server without one).
    library: Option<Arc<Library>>,
    /// Bumped whenever the tools offered may have changed (a scan, a reload, an MCP server's
    /// list).
    changed: watch::Sender<u64>,
}

impl Tools {
    /// The tools of `plugins`, with the MCP servers its configuration file declares (applied
    /// now, and again at every reload of the file), their logins kept by `logins`, and
    /// `file_search` on `library`.
    pub fn start(
        plugins: Arc<PluginHost>,
        logins: Option<mcp::Logins>,
        library: Option<Arc<Library>>,
    ) -> Arc<Self> {
        let tools = Arc::new(Self {
            interpreter: python::Interpreter::start(plugins.clone()),
            library,
            plugins,
            mcp: Arc::new(McpServers::new(logins)),
            changed: watch::Sender::new(0),
        });
        let mut file = tools.plugins.config_file();
        if let Some(file) = file.borrow_and_update().as_ref() {
            tools.mcp.apply(&file.mcp);
        }
        let (mut scans, mut lists) = (tools.plugins.scans(), tools.mcp.changed());
        let weak = Arc::downgrade(&tools);
        tokio::spawn(async move {
            loop {
                // `None`: the plugin host is gone. `Some(true)`: the file was applied again.
                let event = tokio::select! {
                    seen = file.changed() => seen.ok().map(|()| true),
                    seen = scans.changed() => seen.ok().map(|()| false),
                    seen = lists.changed() => seen.ok().map(|()| false),
                };
                let Some(reloaded) = event else { return };
                let Some(tools) = weak.upgrade() else { return };
                if reloaded && let Some(file) = file.borrow_and_update().as_ref() {
                    tools.mcp.apply(&file.mcp);
                }
                tools.changed.send_modify(|n| *n += 1);
            }
        });
        tools
    }

    /// The tools offered to `person` now: every tool plugin's and shared MCP server's,
    /// `file_search` on their library, and those of the `per_user` servers they are logged in
    /// to (their sessions started first when another instance holds the login).
    pub async fn offered(&self, person: &str) -> Offer<'_> {
        self.offered_in(self.plugins.snapshot(), person).await
    }

    /// [`Tools::offered`], read from `snapshot`: the one a request took (`http::completions`),
    /// so its tools and its provider come from the same plugins.
    pub async fn offered_in(&self, snapshot: Arc<Snapshot>, person: &str) -> Offer<'_> {
        Offer {
            tools: self,
            mcp: self.mcp.reachable(person).await,
            person: person.to_string(),
            snapshot,
            list: OnceLock::new(),
        }
    }

    /// The bundled interpreter's sessions.
    pub fn interpreter(&self) -> &Arc<python::Interpreter> {
        &self.interpreter
    }

    /// The declared MCP servers.
    pub fn mcp(&self) -> &Arc<McpServers> {
        &self.mcp
    }

    /// Bumped whenever the tools offered may have changed (tests and tools await it).
    pub fn changed(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// The tools one person is offered ([`Tools::offered`]).
pub struct Offer<'a> {
    tools: &'a Tools,
    mcp: mcp::Reachable,
    person: String,
    /// The plugins every answer of this offer reads.
    snapshot: Arc<Snapshot>,
    /// [`Offer::list`], made on first use.
    list: OnceLock<Vec<ToolInfo>>,
}

impl Offer<'_> {
    /// The plugins this offer reads.
    pub fn snapshot(&self) -> &Arc<Snapshot> {
        &self.snapshot
    }

    /// Every tool offered: the snapshot's, then `file_search` unless a plugin took its name,
    /// then the MCP servers' whose names no plugin took.
    pub fn list(&self) -> &[ToolInfo] {
        self.list.get_or_init(|| self.make_list())
    }

    fn make_list(&self) -> Vec<ToolInfo> {
        let snapshot = &self.snapshot;
        let mut tools: Vec<ToolInfo> = snapshot
            .tool_specs()
            .into_iter()
            .map(|spec| ToolInfo {
                name: spec.name.clone(),
                description: spec.description.clone(),
            })
            .collect();
        if self.tools.library.is_some() && snapshot.tool(file_search::NAME).is_none() {
            tools.push(ToolInfo {
                name: file_search::NAME.to_string(),
                description: file_search::DESCRIPTION.to_string(),
            });
        }
        for tool in self.mcp.tools() {
            let name = &tool.spec.name;
            if self.find(name).is_some_and(|found| found.is_mcp()) {
                tools.push(ToolInfo {
                    name: tool.spec.name,
                    description: tool.spec.description,
                });
            }
        }
        tools
    }

    /// Every tool name offered: the default `enabledTools`.
    pub fn names(&self) -> Vec<String> {
        self.list().iter().map(|t| t.name.clone()).collect()
    }

    /// `requested` without unknown names and repeats, in the order given.
    pub fn keep_known(&self, requested: &[String]) -> Vec<String> {
        keep_known(self.list(), requested)
    }

    /// The tool serving as `name` in the offer's snapshot, or an MCP server's (the person's own
    /// session of a `per_user` one).
    pub fn find(&self, name: &str) -> Option<EnabledTool> {
        let own = self
            .tools
            .library
            .as_ref()
            .filter(|_| name == file_search::NAME)
            .map(|library| file_search::FileSearch::new(library.clone(), &self.person));
        EnabledTool::find(
            &self.snapshot,
            &self.mcp,
            &self.tools.interpreter,
            own,
            name,
        )
    }
}

/// `requested` without names `tools` lacks, and without repeats, in the order given.
fn keep_known(tools: &[ToolInfo], requested: &[String]) -> Vec<String> {
    let mut kept: Vec<String> = Vec::with_capacity(requested.len());
    for name in requested {
        if tools.iter().any(|t| &t.name == name) && !kept.contains(name) {
            kept.push(name.clone());
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: String::new(),
        }
    }

    #[test]
    fn keeps_known_names_once_in_order() {
        let tools = [tool("web_search"), tool("fetch_url")];
        let asked = ["fetch_url", "nope", "web_search", "fetch_url"].map(String::from);
        assert_eq!(keep_known(&tools, &asked), ["fetch_url", "web_search"]);
        assert!(keep_known(&tools[..1], &asked[..1]).is_empty());
    }
}
