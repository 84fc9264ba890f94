//! `turn-options` (WIT 0.1.2), the provider worlds' other import: the options of the turn a
//! provider is building, beyond `turn-request`'s, through [`TurnOptionsView`]; and which of
//! them a provider honours ([`kinds`], checked against its declared `turn-options-support`).

use wasmtime::component::HasData;

pub use crate::plugins::bindings::optioned_codec_provider::chatd::plugin::turn_options::{
    JsonSchema, Options, ResponseFormat, ToolChoice,
};
pub use crate::plugins::bindings::optioned_codec_provider::exports::chatd::plugin::turn_options_support::OptionKind;
use crate::plugins::bindings::optioned_codec_provider::chatd::plugin::turn_options;
use crate::plugins::runtime::state::PluginState;

/// No options: every one left to the upstream's default.
pub fn none() -> Options {
    Options {
        top_p: None,
        stop: Vec::new(),
        tool_choice: None,
        response_format: None,
    }
}

/// The kinds of option `options` sets, each once, in the WIT's order.
pub fn kinds(options: &Options) -> Vec<OptionKind> {
    let mut kinds = Vec::new();
    if options.top_p.is_some() {
        kinds.push(OptionKind::TopP);
    }
    if !options.stop.is_empty() {
        kinds.push(OptionKind::Stop);
    }
    if options.tool_choice.is_some() {
        kinds.push(OptionKind::ToolChoice);
    }
    match options.response_format {
        Some(ResponseFormat::JsonObject) => kinds.push(OptionKind::JsonObject),
        Some(ResponseFormat::JsonSchema(_)) => kinds.push(OptionKind::JsonSchema),
        None => {}
    }
    kinds
}

/// What `turn-options` sees of one call's state: the options of the turn being built, if one is.
pub struct TurnOptionsView<'a> {
    pub options: Option<&'a Options>,
}

/// Links `turn-options` through [`TurnOptionsView`].
pub struct TurnOptionsHost;

impl HasData for TurnOptionsHost {
    type Data<'a> = TurnOptionsView<'a>;
}

impl turn_options::Host for TurnOptionsView<'_> {
    async fn current(&mut self) -> Options {
        self.options.cloned().unwrap_or_else(none)
    }
}

/// The view `turn-options` is linked through: this call's turn options, and nothing else.
pub fn view(state: &mut PluginState) -> TurnOptionsView<'_> {
    TurnOptionsView {
        options: state.turn_asks.as_deref().map(|asks| &asks.options),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_kind_an_option_sets() {
        assert!(kinds(&none()).is_empty());
        let all = Options {
            top_p: Some(0.5),
            stop: vec!["END".into()],
            tool_choice: Some(ToolChoice::Required),
            response_format: Some(ResponseFormat::JsonObject),
        };
        assert_eq!(
            kinds(&all),
            [
                OptionKind::TopP,
                OptionKind::Stop,
                OptionKind::ToolChoice,
                OptionKind::JsonObject
            ]
        );
    }
}
