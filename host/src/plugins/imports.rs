//! The host's side of the plugin imports that are not capabilities: the record-only interfaces,
//! and `turn-events`, where a running provider turn hands its events to the run. Each capability
//! has its own `host.rs`: [`super::http::host`], [`super::ssh::host`],
//! [`super::settings::host`] (the `config` interface), [`super::log::host`].

use super::bindings::imports::chatd::plugin::types;
use super::bindings::provider::chatd::plugin::{provider_types, turn_events};
use super::bindings::search::chatd::plugin::search_types;
use super::bindings::tool::chatd::plugin::tool_types;
use super::state::PluginState;

impl types::Host for PluginState {}
impl tool_types::Host for PluginState {}
impl provider_types::Host for PluginState {}
impl search_types::Host for PluginState {}

impl turn_events::Host for PluginState {
    /// Waits while the run is behind (the channel is bounded: backpressure reaches the guest),
    /// and answers `false` once the run has stopped listening, so the plugin stops too.
    async fn emit(&mut self, event: provider_types::TurnEvent) -> bool {
        match &self.events {
            Some(events) => events.send(event).await.is_ok(),
            None => false,
        }
    }
}
