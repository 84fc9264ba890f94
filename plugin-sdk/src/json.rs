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

/// `object` written as JSON with one more entry, `name: value`, whose value is not a `Value`:
/// typically holding raw JSON (`serde_json::value::RawValue`), which is written as it is. A
/// tool's schema, parsed into a `Value` only to be written out again, was most of the time a
/// provider took to build a turn's body with tools on (issue 59, BENCHMARKS.md). The entries
/// are written in `object`'s order, `name` before the first key greater than it: key order, as
/// a `Value` writes an object without serde_json's `preserve_order` (with it, `name` still goes
/// where sorting puts it). An entry of `object` named `name` is left out.
pub struct WithEntry<'a, T: ?Sized> {
    pub object: &'a Map<String, Value>,
    pub name: &'a str,
    pub value: &'a T,
}

impl<T: serde::Serialize + ?Sized> serde::Serialize for WithEntry<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let others = self.object.iter().filter(|(key, _)| *key != self.name);
        let len = others.clone().count() + 1;
        let mut map = serializer.serialize_map(Some(len))?;
        let mut ours = Some(self.value);
        for (key, value) in others {
            if key.as_str() > self.name
                && let Some(ours) = ours.take()
            {
                map.serialize_entry(self.name, ours)?;
            }
            map.serialize_entry(key, value)?;
        }
        if let Some(ours) = ours {
            map.serialize_entry(self.name, ours)?;
        }
        map.end()
    }
}

/// An upstream body with tools: its `fields`, and its `tools` (a provider's own type, each
/// schema raw from [`crate::provider::raw_tool_schema`]), written as `tools` among the fields in
/// key order ([`WithEntry`]); without tools, just the fields.
pub struct ToolsBody<T> {
    pub fields: Map<String, Value>,
    pub tools: Vec<T>,
}

impl<T: serde::Serialize> serde::Serialize for ToolsBody<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.tools.is_empty() {
            return self.fields.serialize(serializer);
        }
        WithEntry {
            object: &self.fields,
            name: "tools",
            value: &self.tools,
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_written_in_key_order_and_raw_json_as_it_is() {
        let raw = serde_json::value::RawValue::from_string(r#"{"b": 1,"a":[ 2 ]}"#.into()).unwrap();
        let object = serde_json::json!({"a": 1, "z": 2, "m": "replaced"});
        let object = object.as_object().unwrap();
        for (name, written) in [
            ("m", r#"{"a":1,"m":{"b": 1,"a":[ 2 ]},"z":2}"#),
            (
                "0",
                r#"{"0":{"b": 1,"a":[ 2 ]},"a":1,"m":"replaced","z":2}"#,
            ),
            (
                "zz",
                r#"{"a":1,"m":"replaced","z":2,"zz":{"b": 1,"a":[ 2 ]}}"#,
            ),
        ] {
            let with = WithEntry {
                object,
                name,
                value: &*raw,
            };
            assert_eq!(serde_json::to_string(&with).unwrap(), written);
        }
        let empty = Map::new();
        let with = WithEntry {
            object: &empty,
            name: "n",
            value: &[1, 2],
        };
        assert_eq!(serde_json::to_string(&with).unwrap(), r#"{"n":[1,2]}"#);
    }

    #[test]
    fn a_body_writes_its_tools_only_when_it_has_some() {
        let fields = serde_json::json!({"model": "m", "stream": true});
        let fields = fields.as_object().unwrap().clone();
        let body = ToolsBody {
            fields: fields.clone(),
            tools: vec!["t"],
        };
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"model":"m","stream":true,"tools":["t"]}"#
        );
        let none: ToolsBody<&str> = ToolsBody {
            fields,
            tools: Vec::new(),
        };
        assert_eq!(
            serde_json::to_string(&none).unwrap(),
            r#"{"model":"m","stream":true}"#
        );
    }

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
