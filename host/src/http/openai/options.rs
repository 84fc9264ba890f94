//! OpenAI's options beyond temperature and max tokens (`top_p`, `stop`, `tool_choice`,
//! `response_format`), read into the WIT's turn options (`turn-options`, 0.1.2), and checked
//! against what the provider honours ([`honoured_by`]): an option its wire does not carry is a
//! 400 naming it, never dropped. A value that asks for the upstream's default (`top_p: 1`,
//! `stop: []`, `tool_choice: "auto"`, `response_format: {"type": "text"}`) sets nothing, so
//! every provider takes it. The Responses API's `tool_choice` and `text.format` are read here
//! too, flat as it sends them, and named as it does ([`Wire`]).

use serde_json::{Map, Value};

use super::client_tools::{ToolNames, checked_name};
use super::errors::OpenAiError;
use super::wire::Wire;
use crate::plugins::worlds::provider::Profile;
use crate::plugins::worlds::provider::turn_options::{
    self, JsonSchema, OptionKind, Options, ResponseFormat, ToolChoice,
};

/// OpenAI's limit on stop sequences.
const MAX_STOP: usize = 4;

/// The options as the client sent them, through `wire`.
#[derive(Default)]
pub struct Asked<'a> {
    pub wire: Wire,
    pub top_p: Option<&'a Value>,
    pub stop: Option<&'a Value>,
    pub tool_choice: Option<&'a Value>,
    pub response_format: Option<&'a Value>,
}

/// The tools a tool choice may name: the client's (under their WIT names) and chatd's.
pub struct Offered<'a> {
    pub client: &'a [String],
    pub chatd: &'a [String],
    pub names: &'a ToolNames,
}

/// The turn options `asked` sets.
pub fn read(asked: &Asked, offered: &Offered) -> Result<Options, OpenAiError> {
    Ok(Options {
        top_p: top_p(asked.top_p)?,
        stop: stop(asked.stop)?,
        tool_choice: tool_choice(asked.wire, asked.tool_choice, offered)?,
        response_format: response_format(asked.wire, asked.response_format)?,
    })
}

/// Refuses the first option `options` sets that `provider`'s profile does not honour, naming
/// it as `wire` does.
pub fn honoured_by(
    wire: Wire,
    options: &Options,
    provider: &str,
    profile: &Profile,
) -> Result<(), OpenAiError> {
    let Some(kind) = turn_options::kinds(options)
        .into_iter()
        .find(|k| !profile.options.contains(k))
    else {
        return Ok(());
    };
    let (param, what) = match kind {
        OptionKind::TopP => ("top_p", "top_p"),
        OptionKind::Stop => ("stop", "stop sequences"),
        OptionKind::ToolChoice => ("tool_choice", "a tool choice other than auto"),
        OptionKind::JsonObject => (wire.response_format(), "JSON-object output (json_object)"),
        OptionKind::JsonSchema => (wire.response_format(), "JSON-schema output (json_schema)"),
    };
    Err(OpenAiError::bad_request(
        param,
        format!("{param}: {provider} does not take {what} (its upstream's wire has no such option; docs/openai.md)"),
    )
    .code("unsupported_parameter"))
}

fn top_p(value: Option<&Value>) -> Result<Option<f32>, OpenAiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(1.0) => Ok(None),
            Some(p) if (0.0..=1.0).contains(&p) => Ok(Some(p as f32)),
            _ => Err(OpenAiError::invalid(
                "top_p",
                "must be a number from 0 to 1",
            )),
        },
    }
}

fn stop(value: Option<&Value>) -> Result<Vec<String>, OpenAiError> {
    let sequences: Vec<(String, &Value)> = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(v @ Value::String(_)) => vec![("stop".into(), v)],
        Some(Value::Array(items)) if items.len() <= MAX_STOP => items
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("stop[{i}]"), v))
            .collect(),
        Some(Value::Array(_)) => {
            return Err(OpenAiError::invalid(
                "stop",
                &format!("must hold at most {MAX_STOP} sequences"),
            ));
        }
        Some(_) => {
            return Err(OpenAiError::invalid(
                "stop",
                "must be a string or an array of strings",
            ));
        }
    };
    sequences
        .into_iter()
        .map(|(param, v)| match v.as_str() {
            Some(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err(OpenAiError::invalid(&param, "must be a non-empty string")),
        })
        .collect()
}

fn tool_choice(
    wire: Wire,
    value: Option<&Value>,
    offered: &Offered,
) -> Result<Option<ToolChoice>, OpenAiError> {
    let any = !offered.client.is_empty() || !offered.chatd.is_empty();
    let choice = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(v) if v == "auto" => return Ok(None),
        // With nothing offered the model can call nothing either way.
        Some(v) if v == "none" && !any => return Ok(None),
        Some(v) if v == "none" => ToolChoice::None,
        Some(v) if v == "required" => ToolChoice::Required,
        Some(Value::Object(fields)) => ToolChoice::Named(named(wire, fields, offered)?),
        Some(_) => {
            return Err(OpenAiError::invalid(
                "tool_choice",
                &format!("must be auto, none, required or {}", wire.choice_shape()),
            ));
        }
    };
    if !any {
        return Err(OpenAiError::invalid(
            "tool_choice",
            "needs tools (or chatd_tools) to choose from",
        ));
    }
    Ok(Some(choice))
}

/// The WIT name of the tool a named choice (`wire`'s [`Wire::choice_shape`]) names.
fn named(
    wire: Wire,
    fields: &Map<String, Value>,
    offered: &Offered,
) -> Result<String, OpenAiError> {
    match fields.get("type").and_then(Value::as_str) {
        Some("function") => {}
        Some(_) => return Err(OpenAiError::unsupported("tool_choice.type")),
        None => return Err(OpenAiError::invalid("tool_choice.type", "must be function")),
    }
    let (at, name) = wire.choice_name(fields);
    let name = name.ok_or_else(|| OpenAiError::invalid(at, "must be given"))?;
    let name = checked_name(at, Some(name))?;
    // The client's own tool first, as OpenAI's `tool_choice` names one of `tools`; one of
    // chatd's by the same name was renamed apart (`ToolNames`).
    let wit = offered.names.wit(&name);
    if offered.client.contains(&wit) {
        return Ok(wit);
    }
    if offered.chatd.contains(&name) {
        return Ok(name);
    }
    Err(OpenAiError::invalid(
        at,
        "must name one of the request's tools or chatd_tools",
    ))
}

/// The output format, at `wire`'s [`Wire::response_format`]; a `json_schema` format's own
/// fields where `wire` has them ([`Wire::json_schema_at`]).
fn response_format(
    wire: Wire,
    value: Option<&Value>,
) -> Result<Option<ResponseFormat>, OpenAiError> {
    let at = wire.response_format();
    let fields = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(fields)) => fields,
        Some(_) => return Err(OpenAiError::invalid(at, "must be an object")),
    };
    let kind = fields.get("type").and_then(Value::as_str);
    let allowed: &[&str] = match (kind, wire) {
        (Some("text" | "json_object"), _) => &["type"],
        (Some("json_schema"), Wire::ChatCompletions) => &["type", "json_schema"],
        // Its fields beside `type`, each checked by `json_schema`.
        (Some("json_schema"), Wire::Responses) => {
            let schema = json_schema(wire, value, &["type"])?;
            return Ok(Some(ResponseFormat::JsonSchema(schema)));
        }
        _ => {
            return Err(OpenAiError::invalid(
                &format!("{at}.type"),
                "must be text, json_object or json_schema",
            ));
        }
    };
    if let Some(name) = fields.keys().find(|n| !allowed.contains(&n.as_str())) {
        return Err(OpenAiError::unsupported(&format!("{at}.{name}")));
    }
    Ok(match kind {
        Some("json_object") => Some(ResponseFormat::JsonObject),
        Some("json_schema") => Some(ResponseFormat::JsonSchema(json_schema(
            wire,
            fields.get("json_schema"),
            &[],
        )?)),
        _ => None,
    })
}

/// A `json_schema` format's fields (`name`, `description`, `schema`, `strict`); `beside` are
/// fields read already.
fn json_schema(
    wire: Wire,
    value: Option<&Value>,
    beside: &[&str],
) -> Result<JsonSchema, OpenAiError> {
    let at = wire.json_schema_at();
    let Some(Value::Object(fields)) = value else {
        return Err(OpenAiError::invalid(at, "must be an object"));
    };
    let field = |name: &str| fields.get(name).filter(|v| !v.is_null());
    if let Some(name) = fields.keys().find(|n| {
        !matches!(n.as_str(), "name" | "description" | "schema" | "strict")
            && !beside.contains(&n.as_str())
    }) {
        return Err(OpenAiError::unsupported(&format!("{at}.{name}")));
    }
    let name = checked_name(&format!("{at}.name"), fields.get("name"))?;
    let description = match field("description") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(OpenAiError::invalid(
                &format!("{at}.description"),
                "must be a string",
            ));
        }
    };
    let schema = match field("schema") {
        None => "{}".to_string(),
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(_) => {
            return Err(OpenAiError::invalid(
                &format!("{at}.schema"),
                "must be an object",
            ));
        }
    };
    let strict = match field("strict") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            return Err(OpenAiError::invalid(
                &format!("{at}.strict"),
                "must be true or false",
            ));
        }
    };
    Ok(JsonSchema {
        name,
        description,
        schema_json: schema,
        strict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offered<'a>(client: &'a [String], names: &'a ToolNames) -> Offered<'a> {
        Offered {
            client,
            chatd: &[],
            names,
        }
    }

    #[test]
    fn defaults_set_nothing() {
        let names = ToolNames::default();
        let asked = Asked {
            top_p: Some(&json!(1)),
            stop: Some(&json!([])),
            tool_choice: Some(&json!("auto")),
            response_format: Some(&json!({"type": "text"})),
            ..Asked::default()
        };
        let options = read(&asked, &offered(&[], &names)).unwrap();
        assert!(turn_options::kinds(&options).is_empty());
    }

    #[test]
    fn reads_each_option() {
        let names = ToolNames::new(["get_weather"], &Default::default());
        let client = vec!["get_weather".to_string()];
        let schema = json!({"type": "json_schema", "json_schema":
            {"name": "w", "schema": {"type": "object"}, "strict": true}});
        let asked = Asked {
            top_p: Some(&json!(0.5)),
            stop: Some(&json!("END")),
            tool_choice: Some(&json!({"type": "function", "function": {"name": "get_weather"}})),
            response_format: Some(&schema),
            ..Asked::default()
        };
        let options = read(&asked, &offered(&client, &names)).unwrap();
        assert_eq!(options.top_p, Some(0.5));
        assert_eq!(options.stop, ["END"]);
        assert!(
            matches!(options.tool_choice, Some(ToolChoice::Named(ref n)) if n == "get_weather")
        );
        let Some(ResponseFormat::JsonSchema(s)) = options.response_format else {
            panic!("a schema");
        };
        assert_eq!(
            (s.name.as_str(), s.schema_json.as_str(), s.strict),
            ("w", r#"{"type":"object"}"#, Some(true))
        );
    }

    #[test]
    fn refuses_bad_values_naming_the_field() {
        let names = ToolNames::default();
        let param = |asked: Asked| {
            read(&asked, &offered(&[], &names))
                .unwrap_err()
                .param_name()
                .to_string()
        };
        let none = Asked::default;
        assert_eq!(
            param(Asked {
                top_p: Some(&json!(2)),
                ..none()
            }),
            "top_p"
        );
        assert_eq!(
            param(Asked {
                stop: Some(&json!(["a", ""])),
                ..none()
            }),
            "stop[1]"
        );
        assert_eq!(
            param(Asked {
                stop: Some(&json!(["a", "b", "c", "d", "e"])),
                ..none()
            }),
            "stop"
        );
        assert_eq!(
            param(Asked {
                tool_choice: Some(&json!("required")),
                ..none()
            }),
            "tool_choice"
        );
        let unknown = json!({"type": "function", "function": {"name": "nope"}});
        let client = vec!["x".to_string()];
        let err = read(
            &Asked {
                tool_choice: Some(&unknown),
                ..none()
            },
            &offered(&client, &names),
        );
        assert_eq!(err.unwrap_err().param_name(), "tool_choice.function.name");
        let format = json!({"type": "json_schema", "json_schema": {"name": "w", "extra": 1}});
        assert_eq!(
            param(Asked {
                response_format: Some(&format),
                ..none()
            }),
            "response_format.json_schema.extra"
        );
        assert_eq!(
            param(Asked {
                response_format: Some(&json!({"type": "xml"})),
                ..none()
            }),
            "response_format.type"
        );
    }

    #[test]
    fn reads_the_responses_apis_flat_forms_and_names_their_fields() {
        let names = ToolNames::new(["get_weather"], &Default::default());
        let client = vec!["get_weather".to_string()];
        let read = |asked: Asked| read(&asked, &offered(&client, &names));
        let responses = || Asked {
            wire: Wire::Responses,
            ..Asked::default()
        };
        let choice = json!({"type": "function", "name": "get_weather"});
        let schema = json!({"type": "json_schema", "name": "w", "schema": {"type": "object"},
            "strict": true});
        let options = read(Asked {
            tool_choice: Some(&choice),
            response_format: Some(&schema),
            ..responses()
        })
        .unwrap();
        assert!(
            matches!(options.tool_choice, Some(ToolChoice::Named(ref n)) if n == "get_weather")
        );
        let Some(ResponseFormat::JsonSchema(schema)) = options.response_format else {
            panic!("a schema");
        };
        assert_eq!(schema.name, "w");
        let param = |asked: Asked| read(asked).unwrap_err().param_name().to_string();
        let (nameless, unknown) = (
            json!({"type": "function"}),
            json!({"type": "function", "name": "nope"}),
        );
        for (choice, at) in [
            (&nameless, "tool_choice.name"),
            (&unknown, "tool_choice.name"),
        ] {
            let asked = Asked {
                tool_choice: Some(choice),
                ..responses()
            };
            assert_eq!(param(asked), at);
        }
        let refused = |format: Value| {
            param(Asked {
                response_format: Some(&format),
                ..responses()
            })
        };
        assert_eq!(
            refused(json!({"type": "json_schema", "name": "a b"})),
            "text.format.name"
        );
        assert_eq!(
            refused(json!({"type": "json_schema", "name": "w", "extra": 1})),
            "text.format.extra"
        );
        assert_eq!(refused(json!({"type": "xml"})), "text.format.type");
        let wrong = json!(7);
        let err = read(Asked {
            tool_choice: Some(&wrong),
            ..responses()
        })
        .unwrap_err();
        assert!(
            err.body()["error"]["message"]
                .as_str()
                .unwrap()
                .ends_with(r#"{"type": "function", "name": ...}"#),
            "{err:?}"
        );
    }

    #[test]
    fn names_an_option_the_provider_does_not_honour() {
        let options = Options {
            stop: vec!["END".into()],
            ..turn_options::none()
        };
        let profile = Profile {
            options: vec![OptionKind::TopP],
            ..Profile::default()
        };
        let err = honoured_by(Wire::ChatCompletions, &options, "provider_a", &profile).unwrap_err();
        assert_eq!(err.param_name(), "stop");
        let all = Profile {
            options: vec![OptionKind::Stop],
            ..Profile::default()
        };
        assert!(honoured_by(Wire::ChatCompletions, &options, "provider_c", &all).is_ok());
    }
}
