//! A client's strict tools (OpenAI's `strict: true`): the model's arguments for one are checked
//! against the tool's JSON Schema before its call goes back to the client, whatever the
//! provider (a provider whose wire has a strict mode is told as well, through `turn-tuning`). A
//! call that does not match fails the completion ([`mismatch`], a 502 naming the tool, the
//! place and the rule, which OpenAI's SDKs retry): the client never gets arguments its schema
//! refuses.

use serde_json::Value;

use crate::plugins::worlds::provider::{ToolCall, ToolSpec};

/// `schema` compiled, or why it cannot be (the client's 400, at the request).
pub fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema)
        .map_err(|e| format!("is not a JSON Schema chatd can check: {e}"))
}

/// The first of `calls` to a tool named in `strict` whose arguments do not match its schema
/// (among `tools`), said in words; `None` when every one matches.
pub fn mismatch(calls: &[ToolCall], tools: &[ToolSpec], strict: &[String]) -> Option<String> {
    calls
        .iter()
        .filter(|call| strict.contains(&call.name))
        .find_map(|call| {
            let spec = tools.iter().find(|t| t.name == call.name)?;
            let why = check(&spec.parameters_schema_json, &call.arguments_json).err()?;
            Some(format!(
                "the model called {} with arguments that do not match its schema (strict): {why}",
                call.name
            ))
        })
}

/// Whether `arguments` (JSON text) match `schema` (JSON text); the first mismatch, its place
/// first, when not.
fn check(schema: &str, arguments: &str) -> Result<(), String> {
    let schema: Value = serde_json::from_str(schema).map_err(|e| format!("its schema: {e}"))?;
    let validator = compile(&schema)?;
    let arguments: Value =
        serde_json::from_str(arguments).map_err(|e| format!("the arguments are not JSON: {e}"))?;
    match validator.iter_errors(&arguments).next() {
        None => Ok(()),
        Some(error) => {
            let place = error.instance_path().to_string();
            let place = if place.is_empty() {
                "(the arguments)".to_string()
            } else {
                place
            };
            let said: String = error.to_string().chars().take(300).collect();
            Err(format!("{place}: {said}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool() -> ToolSpec {
        ToolSpec {
            name: "get_weather".into(),
            description: String::new(),
            parameters_schema_json: r#"{"type":"object","properties":{"city":{"type":"string"},
                "unit":{"anyOf":[{"type":"string","enum":["c","f"]},{"type":"null"}]}},
                "required":["city","unit"],"additionalProperties":false}"#
                .into(),
        }
    }

    fn call(arguments: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "get_weather".into(),
            arguments_json: arguments.into(),
        }
    }

    #[test]
    fn arguments_of_strict_tools_are_held_to_their_schema() {
        let strict = ["get_weather".to_string()];
        let ok = call(r#"{"city":"Paris","unit":null}"#);
        assert_eq!(mismatch(&[ok], &[tool()], &strict), None);
        for (arguments, said) in [
            (
                r#"{"city":3,"unit":"c"}"#,
                "/city: 3 is not of type \"string\"",
            ),
            (r#"{"city":"Paris"}"#, "\"unit\" is a required property"),
            (r#"{"city":"Paris","unit":"k"}"#, "/unit:"),
            (
                r#"{"city":"Paris","unit":"c","x":1}"#,
                "Additional properties",
            ),
            ("{not json", "the arguments are not JSON"),
        ] {
            let why = mismatch(&[call(arguments)], &[tool()], &strict)
                .unwrap_or_else(|| panic!("{arguments} passed"));
            assert!(
                why.starts_with("the model called get_weather with arguments that do not match")
                    && why.contains(said),
                "{arguments}: {why}"
            );
        }
        // A tool not asked to be strict is not checked.
        assert_eq!(mismatch(&[call(r#"{"city":3}"#)], &[tool()], &[]), None);
    }
}
