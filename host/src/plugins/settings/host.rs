//! The host side of the WIT `config` interface: the grant's settings, nothing else.

use super::super::bindings::imports::chatd::plugin::config;
use super::super::state::PluginState;

impl config::Host for PluginState {
    async fn get(&mut self, key: String) -> Option<String> {
        self.caps.config.get(&key).cloned()
    }

    async fn all(&mut self) -> Vec<(String, String)> {
        self.caps
            .config
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}
