//! The shared provider suite: every bundled provider plugin, compiled and loaded in the real host,
//! runs the same scenarios against a scripted upstream that answers with the recorded wire
//! bodies (`tests/fixtures/upstream/`) or small variations of them.
//!
//! * `suite.rs`: the scenarios and the macro that makes one test per scenario per provider;
//! * `wire.rs`: what a provider's wire description holds;
//! * `wire_a.rs`, `wire_b.rs`, `wire_c.rs`, `wire_agent.rs`: the four descriptions;
//! * `recorded.rs`: the recordings and the edits made to them;
//! * `support.rs`: loading a plugin, running a turn, reading its events.

mod recorded;
mod suite;
mod support;
mod wire;
mod wire_a;
mod wire_agent;
mod wire_b;
mod wire_c;

suite::every_scenario! {
    provider_a => crate::wire_a::WireA,
    provider_b => crate::wire_b::WireB,
    provider_c => crate::wire_c::WireC,
    provider_agent => crate::wire_agent::WireAgent,
}
