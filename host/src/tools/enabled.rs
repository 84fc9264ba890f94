//! A tool that may be called, and what runs it: a tool plugin of the serving snapshot (the
//! interpreter in its sessions), chatd's own `file_search`, or a declared MCP server's tool.
//! [`EnabledTool::find`] is where a name is resolved, a plugin's tool first.

use std::sync::Arc;

use crate::plugins::failure::{describe_call_error, describe_plugin_error};
use crate::plugins::loading::load::Plugin;
use crate::plugins::loading::snapshot::Snapshot;
use crate::plugins::worlds::provider::{PluginError, ToolSpec};
use crate::tools::file_search::{self, FileSearch};
use crate::tools::mcp::{McpTool, Reachable};
use crate::tools::python::{self, CallContext, Ran};

/// A tool the model may call in this completion, and what runs it.
#[derive(Clone)]
pub struct EnabledTool {
    pub spec: ToolSpec,
    pub runner: Runner,
}

impl EnabledTool {
    /// The tool serving as `name`: a tool plugin's of `snapshot`, else `file_search` on the
    /// caller's library (`own`, when the server has one), else one of the MCP servers `mcp`
    /// the caller reaches. A name a plugin provides is the plugin's: the one place that rule is
    /// written ([`super::Offer::list`] asks it too).
    pub fn find(
        snapshot: &Snapshot,
        mcp: &Reachable,
        interpreter: &Arc<python::Interpreter>,
        own: Option<FileSearch>,
        name: &str,
    ) -> Option<Self> {
        let Some(plugin) = snapshot.tool(name) else {
            if name == file_search::NAME
                && let Some(search) = own
            {
                return Some(Self {
                    spec: file_search::spec(),
                    runner: Runner::FileSearch(search),
                });
            }
            let tool = mcp.tool(name)?;
            return Some(Self {
                spec: tool.spec.clone(),
                runner: Runner::Mcp(tool),
            });
        };
        let spec = plugin.tools.iter().find(|t| t.name == name)?.clone();
        let holds_folder = plugin.as_tool().is_some_and(|t| t.files_grant().is_some());
        let runner = match holds_folder {
            true => Runner::Interpreter(plugin.clone(), interpreter.clone()),
            false => Runner::Plugin(plugin.clone()),
        };
        Some(Self { spec, runner })
    }

    /// Whether a declared MCP server runs it.
    pub fn is_mcp(&self) -> bool {
        matches!(self.runner, Runner::Mcp(_))
    }

    /// Runs it with `arguments_json` in `context` (the interpreter's session and inputs): the
    /// output, the tool's summary and the files it wrote, or why it failed (an MCP server's
    /// error result is a failure whose reason is the server's text).
    pub async fn run(&self, arguments_json: &str, context: &CallContext) -> Result<Ran, String> {
        let plain = |content, summary| Ran {
            content,
            summary,
            files: Vec::new(),
        };
        match &self.runner {
            Runner::Plugin(plugin) => {
                let plugin = plugin.as_tool().expect("tool plugins are tools");
                match plugin.invoke(&self.spec.name, arguments_json).await {
                    Ok(Ok(output)) => Ok(plain(output.content, output.summary)),
                    Ok(Err(error)) => Err(tool_error(&error)),
                    Err(error) => Err(describe_call_error(&error)),
                }
            }
            Runner::Interpreter(plugin, interpreter) => {
                interpreter.run(plugin, context, arguments_json).await
            }
            Runner::FileSearch(search) => {
                let (content, summary) = search.run(arguments_json).await?;
                Ok(plain(content, Some(summary)))
            }
            Runner::Mcp(tool) => match tool.call(arguments_json).await? {
                outcome if outcome.is_error => Err(outcome.text),
                outcome => Ok(plain(outcome.text, None)),
            },
        }
    }
}

/// What runs a tool: a tool plugin, chatd's own `file_search`, or a declared MCP server.
#[derive(Clone)]
pub enum Runner {
    Plugin(Arc<Plugin>),
    /// The bundled interpreter, run in its sessions.
    Interpreter(Arc<Plugin>, Arc<python::Interpreter>),
    /// The caller's library.
    FileSearch(FileSearch),
    Mcp(McpTool),
}

/// A tool's own error, as the model and the UI see it.
fn tool_error(error: &PluginError) -> String {
    match error {
        PluginError::InvalidInput(m) => format!("invalid arguments: {m}"),
        other => describe_plugin_error(other),
    }
}
