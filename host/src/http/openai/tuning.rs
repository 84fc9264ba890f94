//! What OpenAI's clients ask of a turn beyond its options (`options.rs`): `parallel_tool_calls`,
//! `reasoning_effort` (the Responses API's `reasoning.effort`), `seed`, `presence_penalty`,
//! `frequency_penalty`, `logit_bias`, and the client's strict tools (`strict`, read by
//! `client_tools.rs`), read into the WIT's turn tuning (`turn-tuning`, 0.1.3), of which each
//! provider gets the kinds it honours. Checked here ([`honoured_by`]): one call per turn
//! (`parallel_tool_calls: false` with tools offered), penalties and a logit bias, which change
//! the answer, are refused, naming them, for a provider that cannot carry them. The rest are
//! hints a provider without them leaves to its upstream's defaults, strict tools being checked
//! by chatd itself whatever the provider (`chat/strict.rs`). A value that asks for the default
//! (a penalty of 0, an empty bias) sets nothing. `verbosity` (the Responses API's
//! `text.verbosity`) is checked and sent nowhere: no provider here takes it (docs/openai.md).

use serde_json::Value;

use super::errors::OpenAiError;
use super::wire::Wire;
use crate::plugins::worlds::provider::Profile;
use crate::plugins::worlds::provider::turn_tuning::{
    ReasoningEffort, Tuning, TuningKind, unhonoured,
};

/// The tuning as the client sent it, through `wire`.
#[derive(Default)]
pub struct Asked<'a> {
    pub wire: Wire,
    pub parallel_tool_calls: Option<&'a Value>,
    pub reasoning_effort: Option<&'a Value>,
    pub seed: Option<&'a Value>,
    pub verbosity: Option<&'a Value>,
    pub presence_penalty: Option<&'a Value>,
    pub frequency_penalty: Option<&'a Value>,
    pub logit_bias: Option<&'a Value>,
}

/// The most token biases a request may set (OpenAI's own limit is about this).
const MAX_LOGIT_BIAS: usize = 1024;

/// The turn tuning `asked` sets, `offered` saying whether any tool is offered (without one,
/// calls in parallel or not are nothing to ask), `strict_tools` the WIT names of the client's
/// strict tools.
pub fn read(
    asked: &Asked,
    offered: bool,
    strict_tools: Vec<String>,
) -> Result<Tuning, OpenAiError> {
    let one_call_per_turn = match asked.parallel_tool_calls {
        None | Some(Value::Null) | Some(Value::Bool(true)) => false,
        Some(Value::Bool(false)) => offered,
        Some(_) => {
            return Err(OpenAiError::invalid(
                "parallel_tool_calls",
                "must be true or false",
            ));
        }
    };
    verbosity(asked.wire, asked.verbosity)?;
    Ok(Tuning {
        strict_tools,
        one_call_per_turn,
        reasoning_effort: reasoning_effort(asked.wire, asked.reasoning_effort)?,
        seed: seed(asked.seed)?,
        presence_penalty: penalty("presence_penalty", asked.presence_penalty)?,
        frequency_penalty: penalty("frequency_penalty", asked.frequency_penalty)?,
        logit_bias: logit_bias(asked.logit_bias)?,
    })
}

/// Refuses what `tuning` sets that `provider` cannot carry and that would change its answer
/// (`turn_tuning::BINDING`, which also decides whether a fallback may take the turn). The other
/// kinds are hints (the module's documentation).
pub fn honoured_by(tuning: &Tuning, provider: &str, profile: &Profile) -> Result<(), OpenAiError> {
    let Some(kind) = unhonoured(tuning, &profile.tuning).first().copied() else {
        return Ok(());
    };
    let refused = match kind {
        TuningKind::OneCallPerTurn => ("parallel_tool_calls", "keep a turn to one tool call"),
        TuningKind::Penalties if tuning.presence_penalty.is_some() => {
            ("presence_penalty", "take a presence penalty")
        }
        TuningKind::Penalties => ("frequency_penalty", "take a frequency penalty"),
        _ => ("logit_bias", "take a logit bias"),
    };
    let (param, what) = refused;
    Err(OpenAiError::bad_request(
        param,
        format!(
            "{param}: {provider} cannot {what} (its upstream's wire has no such setting; \
             docs/openai.md)"
        ),
    )
    .code("unsupported_parameter"))
}

/// A penalty, -2 to 2; 0 (the default) sets nothing.
fn penalty(name: &str, value: Option<&Value>) -> Result<Option<f32>, OpenAiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(0.0) => Ok(None),
            Some(p) if (-2.0..=2.0).contains(&p) => Ok(Some(p as f32)),
            _ => Err(OpenAiError::invalid(name, "must be a number from -2 to 2")),
        },
    }
}

/// `logit_bias`: token ids (decimal) to biases from -100 to 100; empty sets nothing.
fn logit_bias(value: Option<&Value>) -> Result<Vec<(String, f32)>, OpenAiError> {
    let entries = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(entries)) => entries,
        Some(_) => return Err(OpenAiError::invalid("logit_bias", "must be an object")),
    };
    if entries.len() > MAX_LOGIT_BIAS {
        return Err(OpenAiError::invalid(
            "logit_bias",
            &format!("at most {MAX_LOGIT_BIAS} tokens"),
        ));
    }
    entries
        .iter()
        .map(|(token, bias)| {
            let at = format!("logit_bias.{token}");
            if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
                return Err(OpenAiError::invalid(&at, "must name a token id (digits)"));
            }
            match bias.as_f64() {
                Some(b) if (-100.0..=100.0).contains(&b) => Ok((token.clone(), b as f32)),
                _ => Err(OpenAiError::invalid(
                    &at,
                    "must be a number from -100 to 100",
                )),
            }
        })
        .collect()
}

fn reasoning_effort(
    wire: Wire,
    value: Option<&Value>,
) -> Result<Option<ReasoningEffort>, OpenAiError> {
    let effort = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(effort)) => effort.as_str(),
        Some(_) => "",
    };
    Ok(Some(match effort {
        "none" => ReasoningEffort::None,
        "minimal" => ReasoningEffort::Minimal,
        "low" => ReasoningEffort::Low,
        "medium" => ReasoningEffort::Medium,
        "high" => ReasoningEffort::High,
        "xhigh" => ReasoningEffort::Xhigh,
        _ => {
            return Err(OpenAiError::invalid(
                wire.reasoning_effort(),
                "must be one of none, minimal, low, medium, high, xhigh",
            ));
        }
    }))
}

fn seed(value: Option<&Value>) -> Result<Option<i64>, OpenAiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| OpenAiError::invalid("seed", "must be an integer")),
    }
}

fn verbosity(wire: Wire, value: Option<&Value>) -> Result<(), OpenAiError> {
    match value {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(v)) if matches!(v.as_str(), "low" | "medium" | "high") => Ok(()),
        Some(_) => Err(OpenAiError::invalid(
            wire.verbosity(),
            "must be one of low, medium, high",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asked<'a>(
        parallel: &'a Value,
        effort: &'a Value,
        seed: &'a Value,
        verbosity: &'a Value,
    ) -> Asked<'a> {
        Asked {
            parallel_tool_calls: Some(parallel),
            reasoning_effort: Some(effort),
            seed: Some(seed),
            verbosity: Some(verbosity),
            ..Asked::default()
        }
    }

    #[test]
    fn reads_each_kind_and_refuses_a_bad_value_naming_it() {
        let (f, low, seven, v) = (json!(false), json!("low"), json!(7), json!("low"));
        let tuning = read(&asked(&f, &low, &seven, &v), true, vec!["w".into()]).unwrap();
        assert!(tuning.one_call_per_turn);
        assert_eq!(tuning.reasoning_effort, Some(ReasoningEffort::Low));
        assert_eq!(tuning.seed, Some(7));
        assert_eq!(tuning.strict_tools, ["w"]);
        let untooled = read(&asked(&f, &low, &seven, &v), false, Vec::new()).unwrap();
        assert!(!untooled.one_call_per_turn, "nothing to call in parallel");
        let null = Value::Null;
        for (bad, param) in [
            (
                asked(&json!("no"), &null, &null, &null),
                "parallel_tool_calls",
            ),
            (
                asked(&null, &json!("huge"), &null, &null),
                "reasoning_effort",
            ),
            (asked(&null, &null, &json!(1.5), &null), "seed"),
            (asked(&null, &null, &null, &json!("loud")), "verbosity"),
        ] {
            let refused = read(&bad, true, Vec::new()).unwrap_err();
            assert_eq!(refused.param_name(), param);
        }
    }

    #[test]
    fn penalties_and_a_bias_at_their_defaults_set_nothing_and_bad_ones_are_named() {
        let (zero, half, bias, empty) = (json!(0), json!(0.5), json!({"50256": -100}), json!({}));
        let defaults = Asked {
            presence_penalty: Some(&zero),
            logit_bias: Some(&empty),
            ..Asked::default()
        };
        let read_defaults = read(&defaults, true, Vec::new()).unwrap();
        assert!(crate::plugins::worlds::provider::turn_tuning::kinds(&read_defaults).is_empty());
        let set = Asked {
            frequency_penalty: Some(&half),
            logit_bias: Some(&bias),
            ..Asked::default()
        };
        let tuning = read(&set, true, Vec::new()).unwrap();
        assert_eq!(tuning.frequency_penalty, Some(0.5));
        assert_eq!(tuning.logit_bias, [("50256".to_string(), -100.0)]);
        let (far, odd) = (json!(3), json!({"x": 1}));
        let (huge, loud) = (json!("huge"), json!("loud"));
        for (bad, param) in [
            (
                Asked {
                    presence_penalty: Some(&far),
                    ..Asked::default()
                },
                "presence_penalty",
            ),
            (
                Asked {
                    logit_bias: Some(&odd),
                    ..Asked::default()
                },
                "logit_bias.x",
            ),
            // The Responses API's names for them.
            (
                Asked {
                    reasoning_effort: Some(&huge),
                    wire: Wire::Responses,
                    ..Asked::default()
                },
                "reasoning.effort",
            ),
            (
                Asked {
                    verbosity: Some(&loud),
                    wire: Wire::Responses,
                    ..Asked::default()
                },
                "text.verbosity",
            ),
        ] {
            assert_eq!(
                read(&bad, true, Vec::new()).unwrap_err().param_name(),
                param
            );
        }
    }
}
