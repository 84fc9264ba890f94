//! The host side of the WIT `config` interface: the grant's settings, nothing else.

use std::collections::BTreeMap;

use wasmtime::component::HasData;

use crate::plugins::bindings::imports::chatd::plugin::config;

/// What the `config` interface sees of one call's state: the settings granted to the plugin.
pub struct ConfigView<'a> {
    pub values: &'a BTreeMap<String, String>,
}

/// Links the `config` interface through [`ConfigView`].
pub struct ConfigHost;

impl HasData for ConfigHost {
    type Data<'a> = ConfigView<'a>;
}

impl config::Host for ConfigView<'_> {
    async fn get(&mut self, key: String) -> Option<String> {
        self.values.get(&key).cloned()
    }

    async fn all(&mut self) -> Vec<(String, String)> {
        self.values
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}
