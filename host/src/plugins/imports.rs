//! The host's side of the plugin imports that are not capabilities: the record-only interfaces,
//! and `turn-events`, where a running provider turn hands its events to the run. Each capability
//! has its own `host.rs` and view type: [`super::http::host`], [`super::ssh::host`],
//! [`super::settings::host`] (the `config` interface), [`super::log::host`].

use tokio::sync::mpsc::Sender;
use wasmtime::component::HasData;

use super::bindings::imports::chatd::plugin::types;
use super::bindings::provider::chatd::plugin::{provider_types, turn_events};
use super::bindings::search::chatd::plugin::search_types;
use super::bindings::tool::chatd::plugin::tool_types;

/// The record-only interfaces have no functions; they are linked through this empty view.
pub struct Records;

impl HasData for Records {
    type Data<'a> = Records;
}

impl types::Host for Records {}
impl tool_types::Host for Records {}
impl provider_types::Host for Records {}
impl search_types::Host for Records {}

/// What `turn-events` sees of one call's state: where the turn's events go, if a turn is
/// running.
pub struct TurnEventsView<'a> {
    pub events: Option<&'a Sender<provider_types::TurnEvent>>,
}

/// Links `turn-events` through [`TurnEventsView`].
pub struct TurnEventsHost;

impl HasData for TurnEventsHost {
    type Data<'a> = TurnEventsView<'a>;
}

impl turn_events::Host for TurnEventsView<'_> {
    /// Waits while the run is behind (the channel is bounded: backpressure reaches the guest),
    /// and answers `false` once the run has stopped listening, so the plugin stops too.
    async fn emit(&mut self, event: provider_types::TurnEvent) -> bool {
        match self.events {
            Some(events) => events.send(event).await.is_ok(),
            None => false,
        }
    }
}
