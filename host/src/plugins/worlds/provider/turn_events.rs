//! `turn-events`, the provider worlds' own import: where a running provider turn hands its
//! events to the run, through [`TurnEventsView`] (only that part of the call's state).

use tokio::sync::mpsc::Sender;
use wasmtime::component::HasData;

use crate::plugins::bindings::provider::chatd::plugin::{provider_types, turn_events};
use crate::plugins::runtime::state::PluginState;

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

/// The view `turn-events` is linked through: this call's events channel, and nothing else.
pub fn view(state: &mut PluginState) -> TurnEventsView<'_> {
    TurnEventsView {
        events: state.events.as_ref(),
    }
}
