//! Small helpers for the JSON plugins handle: tool arguments and upstream bodies.

use serde_json::{Map, Value};

use crate::host::PluginError;

/// Parses tool arguments, which must be a JSON object.
pub fn parse_object(text: &str) -> Result<Map<String, Value>, PluginError> {
    match serde_json::from_str::<Value>(if text.trim().is_empty() { "{}" } else { text }) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(PluginError::InvalidInput(
            "arguments must be a JSON object".into(),
        )),
        Err(e) => Err(PluginError::InvalidInput(format!(
            "arguments are not valid JSON: {e}"
        ))),
    }
}

/// A required string argument.
pub fn required_str<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, PluginError> {
    match args.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(PluginError::InvalidInput(format!(
            "{key}: must be a string"
        ))),
        None => Err(PluginError::InvalidInput(format!("{key}: is required"))),
    }
}

/// An optional unsigned integer argument.
pub fn optional_u64(args: &Map<String, Value>, key: &str) -> Result<Option<u64>, PluginError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            PluginError::InvalidInput(format!("{key}: must be a non-negative integer"))
        }),
    }
}

/// The string at a JSON pointer (`/error/message`), if there is one.
pub fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// A JSON object of `fields`, each value moved in. `serde_json::json!` serializes each value it
/// interpolates into a new one: a parsed schema, a message's parts or an image's data URL copied
/// whole, once for each `json!` it passes through. With tools on, that was half of building a
/// turn's body (issue 59, BENCHMARKS.md); upstream bodies are built with this wherever a field
/// takes a value made for it (built, parsed or formatted), not one borrowed from the request.
pub fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_holds_its_fields_as_given() {
        let schema = serde_json::json!({"type": "object", "required": ["q"]});
        let built = object([("name", "search".into()), ("parameters", schema.clone())]);
        assert_eq!(
            built,
            serde_json::json!({"name": "search", "parameters": schema})
        );
        assert_eq!(object([]), serde_json::json!({}));
    }
}
