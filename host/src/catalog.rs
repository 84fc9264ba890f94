//! The tool catalogue: the one place that answers "which tools exist". Chat defaults
//! (`enabledTools` when omitted) and the filtering of unknown names both ask it.
//!
//! The plugin host fills it: `PluginHost` replaces the list on every load and reload
//! (`plugins/registry.rs`), so a tool plugin added to or removed from PLUGINS_DIR is offered or
//! withdrawn without a restart.

use std::sync::{Arc, RwLock};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
}

#[derive(Debug, Default)]
pub struct ToolCatalog {
    // A std lock, not a tokio one: it is held only to clone an Arc, never across an await.
    tools: RwLock<Arc<[ToolInfo]>>,
}

impl ToolCatalog {
    pub fn new(tools: Vec<ToolInfo>) -> Self {
        Self {
            tools: RwLock::new(tools.into()),
        }
    }

    /// Replaces the whole list (a plugin was loaded, swapped or removed).
    pub fn replace(&self, tools: Vec<ToolInfo>) {
        *self.tools.write().unwrap_or_else(|e| e.into_inner()) = tools.into();
    }

    pub fn list(&self) -> Arc<[ToolInfo]> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every available tool name: the default `enabledTools`.
    pub fn names(&self) -> Vec<String> {
        self.list().iter().map(|t| t.name.clone()).collect()
    }

    /// `requested` without unknown names and repeats, in the order given.
    pub fn keep_known(&self, requested: &[String]) -> Vec<String> {
        let tools = self.list();
        let mut kept: Vec<String> = Vec::with_capacity(requested.len());
        for name in requested {
            if tools.iter().any(|t| &t.name == name) && !kept.contains(name) {
                kept.push(name.clone());
            }
        }
        kept
    }
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
        let catalog = ToolCatalog::new(vec![tool("web_search"), tool("fetch_url")]);
        let asked = ["fetch_url", "nope", "web_search", "fetch_url"].map(String::from);
        assert_eq!(catalog.keep_known(&asked), ["fetch_url", "web_search"]);
        catalog.replace(vec![tool("web_search")]);
        assert_eq!(catalog.names(), ["web_search"]);
    }
}
