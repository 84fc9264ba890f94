//! `turn-tuning` (WIT 0.1.3), beside `turn-options`: the tuning of the turn a provider is
//! building (strict tools, one call per turn, reasoning effort, a seed, penalties, a logit
//! bias), through
//! [`TurnTuningView`]; and which kinds a provider honours ([`kinds`], checked against its
//! declared `turn-tuning-support`).

use wasmtime::component::HasData;

pub use crate::plugins::bindings::tuned_codec_provider::chatd::plugin::turn_tuning::{
    ReasoningEffort, Tuning,
};
pub use crate::plugins::bindings::tuned_codec_provider::exports::chatd::plugin::turn_tuning_support::TuningKind;
use crate::plugins::bindings::tuned_codec_provider::chatd::plugin::turn_tuning;
use crate::plugins::runtime::state::PluginState;

/// No tuning: every kind left to the upstream's default.
pub fn none() -> Tuning {
    Tuning {
        strict_tools: Vec::new(),
        one_call_per_turn: false,
        reasoning_effort: None,
        seed: None,
        presence_penalty: None,
        frequency_penalty: None,
        logit_bias: Vec::new(),
    }
}

/// The kinds of tuning `tuning` sets, each once, in the WIT's order.
pub fn kinds(tuning: &Tuning) -> Vec<TuningKind> {
    let mut kinds = Vec::new();
    if !tuning.strict_tools.is_empty() {
        kinds.push(TuningKind::StrictTools);
    }
    if tuning.one_call_per_turn {
        kinds.push(TuningKind::OneCallPerTurn);
    }
    if tuning.reasoning_effort.is_some() {
        kinds.push(TuningKind::ReasoningEffort);
    }
    if tuning.seed.is_some() {
        kinds.push(TuningKind::Seed);
    }
    if tuning.presence_penalty.is_some() || tuning.frequency_penalty.is_some() {
        kinds.push(TuningKind::Penalties);
    }
    if !tuning.logit_bias.is_empty() {
        kinds.push(TuningKind::LogitBias);
    }
    kinds
}

/// The kinds a provider must honour to take a turn that sets them, since they change what the
/// client gets: one call per turn (the client said it cannot take several), the penalties, a
/// logit bias. The others are kept by the host (strict tools) or are hints left to the
/// upstream (a reasoning effort, a seed).
pub const BINDING: [TuningKind; 3] = [
    TuningKind::OneCallPerTurn,
    TuningKind::Penalties,
    TuningKind::LogitBias,
];

/// The [`BINDING`] kinds `tuning` sets that `honoured` lacks.
pub fn unhonoured(tuning: &Tuning, honoured: &[TuningKind]) -> Vec<TuningKind> {
    kinds(tuning)
        .into_iter()
        .filter(|k| BINDING.contains(k) && !honoured.contains(k))
        .collect()
}

/// `tuning` with only the kinds in `honoured` (the rest are the host's to keep, or left to the
/// upstream's defaults: `turn-tuning`'s documentation).
pub fn only(tuning: &Tuning, honoured: &[TuningKind]) -> Tuning {
    let has = |kind| honoured.contains(&kind);
    Tuning {
        strict_tools: match has(TuningKind::StrictTools) {
            true => tuning.strict_tools.clone(),
            false => Vec::new(),
        },
        one_call_per_turn: tuning.one_call_per_turn && has(TuningKind::OneCallPerTurn),
        reasoning_effort: tuning
            .reasoning_effort
            .filter(|_| has(TuningKind::ReasoningEffort)),
        seed: tuning.seed.filter(|_| has(TuningKind::Seed)),
        presence_penalty: tuning
            .presence_penalty
            .filter(|_| has(TuningKind::Penalties)),
        frequency_penalty: tuning
            .frequency_penalty
            .filter(|_| has(TuningKind::Penalties)),
        logit_bias: match has(TuningKind::LogitBias) {
            true => tuning.logit_bias.clone(),
            false => Vec::new(),
        },
    }
}

/// What `turn-tuning` sees of one call's state: the tuning of the turn being built, if one is.
pub struct TurnTuningView<'a> {
    pub tuning: Option<&'a Tuning>,
}

/// Links `turn-tuning` through [`TurnTuningView`].
pub struct TurnTuningHost;

impl HasData for TurnTuningHost {
    type Data<'a> = TurnTuningView<'a>;
}

impl turn_tuning::Host for TurnTuningView<'_> {
    async fn current(&mut self) -> Tuning {
        self.tuning.cloned().unwrap_or_else(none)
    }
}

/// The view `turn-tuning` is linked through: this call's turn tuning, and nothing else.
pub fn view(state: &mut PluginState) -> TurnTuningView<'_> {
    TurnTuningView {
        tuning: state.turn_asks.as_deref().map(|asks| &asks.tuning),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_kind_set_and_keeps_only_those_honoured() {
        assert!(kinds(&none()).is_empty());
        let all = Tuning {
            strict_tools: vec!["get_weather".into()],
            one_call_per_turn: true,
            reasoning_effort: Some(ReasoningEffort::Low),
            seed: Some(7),
            presence_penalty: Some(0.5),
            frequency_penalty: None,
            logit_bias: vec![("50256".into(), -100.0)],
        };
        assert_eq!(
            kinds(&all),
            [
                TuningKind::StrictTools,
                TuningKind::OneCallPerTurn,
                TuningKind::ReasoningEffort,
                TuningKind::Seed,
                TuningKind::Penalties,
                TuningKind::LogitBias
            ]
        );
        let kept = only(&all, &[TuningKind::OneCallPerTurn, TuningKind::Seed]);
        assert_eq!(kinds(&kept), [TuningKind::OneCallPerTurn, TuningKind::Seed]);
        assert_eq!(kept.seed, Some(7));
    }
}
