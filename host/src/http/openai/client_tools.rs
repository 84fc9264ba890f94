//! The client's own tools on `/openai/v1/chat/completions` and `/openai/v1/responses`: `tools`
//! (function tools the client runs, each where its API has its fields, [`Wire`]; `strict` ones
//! checked by chatd: `chat/strict.rs`), an assistant message's `tool_calls`
//! and the `tool` messages answering them, and the names both ways. (`tool_choice` is a turn
//! option, `options.rs`; `parallel_tool_calls` part of the turn's tuning, `tuning.rs`.)
//!
//! OpenAI's names are `[A-Za-z0-9_-]{1,64}`; the WIT's are `[a-z0-9_]+` (`wit/types.wit`,
//! `tool-spec.name`). [`ToolNames`] maps one request's names: a name the WIT allows stays
//! itself, any other is lowercased with `-` as `_` and, should that be taken (by another of the
//! client's names or one of chatd's tools), numbered. The table is the request's, so the way
//! back is exact: a call of `get_weather_2` reaches the client as the `Get-Weather` it offered.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Value, json};

use super::errors::OpenAiError;
use super::wire::Wire;
use crate::plugins::worlds::provider as wit;

/// One function tool as the client offered it.
#[derive(Debug)]
pub struct ClientTool {
    pub name: String,
    pub description: String,
    /// The parameters' JSON Schema, as text.
    pub parameters: String,
    /// Its calls' arguments must match its schema exactly (`strict: true`).
    pub strict: bool,
}

/// An assistant message's call as the client sent it back.
#[derive(Debug)]
pub struct SentCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// `tools`: function tools only, each named as OpenAI allows, once; each tool's own fields where
/// `wire` has them (under `function`, or beside `type`).
pub fn parse_tools(tools: Option<&Value>, wire: Wire) -> Result<Vec<ClientTool>, OpenAiError> {
    let tools = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(tools)) => tools,
        Some(_) => return Err(invalid("tools", "must be an array of tools")),
    };
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        let at = format!("tools[{i}]");
        let Some(fields) = tool.as_object() else {
            return Err(invalid(&at, "must be an object"));
        };
        match fields.get("type").and_then(Value::as_str) {
            Some("function") => {}
            Some(_) => return Err(OpenAiError::unsupported(&format!("{at}.type"))),
            None => return Err(invalid(&format!("{at}.type"), "must be \"function\"")),
        }
        let function_at = wire.function_at(&at);
        let tool = match wire {
            Wire::ChatCompletions => {
                if let Some((name, _)) = fields
                    .iter()
                    .find(|(n, _)| !matches!(n.as_str(), "type" | "function"))
                {
                    return Err(OpenAiError::unsupported(&format!("{at}.{name}")));
                }
                function(&function_at, fields.get("function"), &[])?
            }
            Wire::Responses => function(&function_at, Some(tool), &["type"])?,
        };
        if !seen.insert(tool.name.clone()) {
            return Err(invalid(
                &format!("{function_at}.name"),
                "is offered twice: each tool's name must be unique",
            ));
        }
        out.push(tool);
    }
    Ok(out)
}

/// A function tool's own fields, at `at`; `beside` are fields read already.
fn function(
    at: &str,
    function: Option<&Value>,
    beside: &[&str],
) -> Result<ClientTool, OpenAiError> {
    let Some(fields) = function.and_then(Value::as_object) else {
        return Err(invalid(at, "must be an object with a name"));
    };
    let name = checked_name(&format!("{at}.name"), fields.get("name"))?;
    let description = match fields.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(d)) => d.clone(),
        Some(_) => return Err(invalid(&format!("{at}.description"), "must be a string")),
    };
    let parameters = match fields.get("parameters") {
        None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => {
            return Err(invalid(
                &format!("{at}.parameters"),
                "must be a JSON Schema object",
            ));
        }
    };
    let strict = match fields.get("strict") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err(invalid(&format!("{at}.strict"), "must be true or false")),
    };
    if let Some((field, _)) = fields.iter().find(|(field, value)| {
        !matches!(
            field.as_str(),
            "name" | "description" | "parameters" | "strict"
        ) && !beside.contains(&field.as_str())
            && !value.is_null()
    }) {
        return Err(OpenAiError::unsupported(&format!("{at}.{field}")));
    }
    // A strict tool's arguments are checked against its schema (`chat/strict.rs`), so the
    // schema must be one chatd can check.
    if strict && let Err(why) = crate::chat::strict::compile(&parameters) {
        return Err(invalid(&format!("{at}.parameters"), &why));
    }
    Ok(ClientTool {
        name,
        description,
        parameters: parameters.to_string(),
        strict,
    })
}

/// A tool's name as OpenAI allows it: `[A-Za-z0-9_-]{1,64}`.
pub(super) fn checked_name(at: &str, name: Option<&Value>) -> Result<String, OpenAiError> {
    let Some(name) = name.and_then(Value::as_str) else {
        return Err(invalid(at, "must be a string"));
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || name.len() > 64 || !name.chars().all(allowed) {
        return Err(invalid(
            at,
            &format!(
                "must be 1 to 64 letters, digits, _ or -, not {}",
                crate::http::error::quoted(name)
            ),
        ));
    }
    Ok(name.to_string())
}

/// An assistant message's `tool_calls`: each `{id, type: "function", function: {name,
/// arguments}}`.
pub fn parse_calls(at: &str, calls: &[Value]) -> Result<Vec<SentCall>, OpenAiError> {
    calls
        .iter()
        .enumerate()
        .map(|(j, call)| {
            let at = format!("{at}[{j}]");
            let text = |pointer: &str, what: &str| {
                call.pointer(pointer)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| invalid(&format!("{at}{}", pointer.replace('/', ".")), what))
            };
            if call.get("type").and_then(Value::as_str) != Some("function") {
                return Err(invalid(&format!("{at}.type"), "must be \"function\""));
            }
            let id = text("/id", "must be a string")?;
            if id.is_empty() {
                return Err(invalid(&format!("{at}.id"), "must not be empty"));
            }
            let name = checked_name(
                &format!("{at}.function.name"),
                call.pointer("/function/name"),
            )?;
            let arguments = text(
                "/function/arguments",
                "must be a string (the arguments' JSON)",
            )?;
            Ok(SentCall {
                id,
                name,
                arguments,
            })
        })
        .collect()
}

/// One request's tool names, the client's to the WIT's and back.
#[derive(Debug, Default)]
pub struct ToolNames {
    to_wit: HashMap<String, String>,
    to_client: HashMap<String, String>,
}

impl ToolNames {
    /// The table for `names` (the client's, from its tools and its messages' calls), none of
    /// whose WIT names is one of `reserved` (chatd's tools).
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>, reserved: &HashSet<String>) -> Self {
        let names: BTreeSet<&str> = names.into_iter().collect();
        let wit_name = |n: &str| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        let mut table = Self::default();
        let mut taken: HashSet<String> = reserved.clone();
        // Names the WIT allows first, so each keeps itself unless chatd's tools have it.
        let (kept, renamed): (Vec<&str>, Vec<&str>) = names.into_iter().partition(|n| wit_name(n));
        for name in kept.into_iter().chain(renamed) {
            let base: String = name
                .chars()
                .map(|c| {
                    if c == '-' {
                        '_'
                    } else {
                        c.to_ascii_lowercase()
                    }
                })
                .collect();
            let mapped = std::iter::once(base.clone())
                .chain((2..).map(|n| format!("{base}_{n}")))
                .find(|candidate| !taken.contains(candidate))
                .expect("an unbounded sequence has a free name");
            taken.insert(mapped.clone());
            table.to_client.insert(mapped.clone(), name.to_string());
            table.to_wit.insert(name.to_string(), mapped);
        }
        table
    }

    /// The WIT's name for a client's (one of the names the table was made of).
    pub fn wit(&self, client: &str) -> String {
        self.to_wit
            .get(client)
            .cloned()
            .unwrap_or_else(|| client.to_string())
    }

    /// The client's name for a WIT name; a name it did not offer, as the model said it.
    pub fn client<'a>(&'a self, wit: &'a str) -> &'a str {
        self.to_client.get(wit).map_or(wit, String::as_str)
    }

    /// The WIT names of the client's strict tools.
    pub fn strict(&self, tools: &[ClientTool]) -> Vec<String> {
        tools
            .iter()
            .filter(|t| t.strict)
            .map(|t| self.wit(&t.name))
            .collect()
    }

    /// The client's tools as the model is offered them.
    pub fn specs(&self, tools: &[ClientTool]) -> Vec<wit::ToolSpec> {
        tools
            .iter()
            .map(|t| wit::ToolSpec {
                name: self.wit(&t.name),
                description: t.description.clone(),
                parameters_schema_json: t.parameters.clone(),
            })
            .collect()
    }

    /// A finished turn's calls in OpenAI's shape, under the client's names.
    pub fn calls_json(&self, calls: &[wit::ToolCall]) -> Vec<Value> {
        calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": self.client(&call.name), "arguments": call.arguments_json},
                })
            })
            .collect()
    }
}

fn invalid(param: &str, rule: &str) -> OpenAiError {
    OpenAiError::invalid(param, rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_losslessly_and_keep_the_wit_ones() {
        let reserved: HashSet<String> = ["web_search".to_string()].into();
        let names = [
            "get_weather",
            "Get-Weather",
            "get_weather_2x",
            "web_search",
            "GET_WEATHER",
            "a-b",
        ];
        let table = ToolNames::new(names, &reserved);
        assert_eq!(table.wit("get_weather"), "get_weather");
        assert_eq!(table.wit("get_weather_2x"), "get_weather_2x");
        assert_eq!(table.wit("a-b"), "a_b");
        // chatd's own tool keeps its name; the client's is numbered.
        assert_eq!(table.wit("web_search"), "web_search_2");
        let mut seen = HashSet::new();
        for name in names {
            let wit = table.wit(name);
            assert!(
                wit.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{wit}"
            );
            assert!(seen.insert(wit.clone()), "{name} → {wit} twice");
            assert_eq!(table.client(&wit), name);
        }
        assert_eq!(table.client("unknown"), "unknown");
    }

    #[test]
    fn tools_are_checked_by_path() {
        let err = |v: Value| {
            parse_tools(Some(&v), Wire::ChatCompletions)
                .unwrap_err()
                .param_name()
                .to_string()
        };
        assert_eq!(err(json!([{"type": "custom"}])), "tools[0].type");
        assert_eq!(
            err(json!([{"type": "function", "function": {"name": "a b"}}])),
            "tools[0].function.name"
        );
        assert_eq!(
            err(json!([{"type": "function", "function": {"name": "a", "strict": "yes"}}])),
            "tools[0].function.strict"
        );
        // A strict tool's schema must compile, or nothing could check its calls.
        assert_eq!(
            err(
                json!([{"type": "function", "function": {"name": "a", "strict": true,
                "parameters": {"type": "object", "properties": {"n": {"type": 7}}}}}])
            ),
            "tools[0].function.parameters"
        );
        assert_eq!(
            err(
                json!([{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "a"}}])
            ),
            "tools[1].function.name"
        );
        let ok = parse_tools(
            Some(&json!([{"type": "function", "function": {"name": "a", "strict": false}}])),
            Wire::ChatCompletions,
        )
        .unwrap();
        assert_eq!(ok[0].parameters, r#"{"properties":{},"type":"object"}"#);
    }

    #[test]
    fn the_responses_apis_flat_tools_are_read_where_they_are() {
        let flat = |v: Value| parse_tools(Some(&v), Wire::Responses);
        let err = |v: Value| flat(v).unwrap_err().param_name().to_string();
        assert_eq!(
            err(json!([{"type": "function", "name": "a b"}])),
            "tools[0].name"
        );
        assert_eq!(
            err(json!([{"type": "function", "name": "a", "strict": "yes"}])),
            "tools[0].strict"
        );
        assert_eq!(
            err(json!([{"type": "function", "name": "a", "function": {}}])),
            "tools[0].function"
        );
        assert_eq!(
            err(json!([{"type": "function", "name": "a"}, {"type": "function", "name": "a"}])),
            "tools[1].name"
        );
        let ok = flat(json!([{"type": "function", "name": "a", "description": "d",
            "parameters": {"type": "object"}, "strict": true}]))
        .unwrap();
        assert_eq!((ok[0].name.as_str(), ok[0].strict), ("a", true));
        assert_eq!(ok[0].description, "d");
    }
}
