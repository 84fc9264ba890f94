//! The body of `POST {base}/responses`, built from a [`TurnRequest`].
//!
//! * System messages become `instructions` (their texts joined by a blank line). They are sent on
//!   every turn: the API does not carry `instructions` over from a `previous_response_id`.
//! * User messages become `message` items of `input_text` / `input_image` parts (a text file is
//!   an `input_text` part rendered by [`text_file_prompt`]).
//! * Assistant messages become an `output_text` message (when they have text) followed by one
//!   `function_call` item per call; tool results become `function_call_output` items.
//! * `store` is `may_continue`: a response is kept upstream only when a later turn continues from
//!   it. With a `continuation` (the id of the response this run's previous turn stored), the body
//!   names it as `previous_response_id` and `input` holds only what came after the last assistant
//!   message (the tool results): the earlier items, reasoning included, are upstream already.
//! * `temperature` and `top_p` are refused before sending for the reasoning models, which the API
//!   answers with 400 "Unsupported parameter" ([`takes_temperature`]).
//! * Of the turn options ([`HONOURED`]): `top_p`, `tool_choice` (`none`, `required`, or
//!   `{"type": "function", "name"}`), and `text.format` for a JSON answer. The API has no stop
//!   sequences, so this provider does not honour them and the host refuses them for it.
//! * Tools are `function` tools with `strict: false` (chatd's schemas are not written for strict
//!   mode, which requires every property and `additionalProperties: false`), but for those the
//!   client asked to be strict ([`TUNED`]: `strict: true`). One call per turn is
//!   `parallel_tool_calls: false`; a reasoning effort is `reasoning.effort`, for the reasoning
//!   models only (the others have none to set: the effort changes nothing there, and is left
//!   out). The API has no seed.

use chatd_plugin_sdk::codec::{
    OptionKind, ResponseFormat, ToolChoice, Tuning, TuningKind, TurnOptions, effort_name,
    schema_value,
};
use chatd_plugin_sdk::host::{ContentPart, Message, PluginError, Role, ToolSpec};
use chatd_plugin_sdk::json::{ToolsBody, object};
use chatd_plugin_sdk::provider::{TurnRequest, image_data_url, text_file_prompt};
use chatd_plugin_sdk::provider::{json_number, raw_tool_schema};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

/// Whether `model` takes a `temperature`: not the reasoning models (the o-series and the gpt-5
/// family, but for its chat models), whose sampling the API fixes.
pub fn takes_temperature(model: &str) -> bool {
    let o_series = ["o1", "o3", "o4"]
        .iter()
        .any(|family| model == *family || model.starts_with(&format!("{family}-")));
    let gpt_5 = model.starts_with("gpt-5") && !model.contains("-chat");
    !(o_series || gpt_5)
}

/// The turn options the Responses API carries (all but stop sequences).
pub const HONOURED: [OptionKind; 4] = [
    OptionKind::TopP,
    OptionKind::ToolChoice,
    OptionKind::JsonObject,
    OptionKind::JsonSchema,
];

/// The tuning the Responses API carries (no seed).
pub const TUNED: [TuningKind; 3] = [
    TuningKind::StrictTools,
    TuningKind::OneCallPerTurn,
    TuningKind::ReasoningEffort,
];

/// The JSON body for `request`, its `options` and its `tuning`.
pub fn body<'a>(
    request: &'a TurnRequest,
    options: &TurnOptions,
    tuning: &Tuning,
) -> Result<ToolsBody<Tool<'a>>, PluginError> {
    // The reasoning models' sampling is fixed.
    for (set, name, what) in [
        (
            request.temperature.is_some(),
            "temperature",
            "a temperature",
        ),
        (options.top_p.is_some(), "top_p", "top_p"),
    ] {
        if set && !takes_temperature(&request.model) {
            return Err(PluginError::InvalidInput(format!(
                "{name}: {} does not take {what}; leave it out",
                request.model
            )));
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), request.model.clone().into());
    if let Some(previous) = &request.continuation {
        body.insert("previous_response_id".into(), previous.clone().into());
    }
    if let Some(instructions) = system_prompt(&request.messages) {
        body.insert("instructions".into(), instructions.into());
    }
    let unsent = unsent(&request.messages, request.continuation.is_some());
    body.insert("input".into(), Value::Array(input(unsent)));
    let tools = tools(&request.tools, &tuning.strict_tools)?;
    if !tools.is_empty() && tuning.one_call_per_turn {
        body.insert("parallel_tool_calls".into(), Value::Bool(false));
    }
    if let Some(effort) = tuning.reasoning_effort
        && !takes_temperature(&request.model)
    {
        body.insert("reasoning".into(), json!({ "effort": effort_name(effort) }));
    }
    if let Some(temperature) = request.temperature.and_then(json_number) {
        body.insert("temperature".into(), temperature);
    }
    if let Some(max) = request.max_tokens {
        body.insert("max_output_tokens".into(), max.into());
    }
    add_options(&mut body, options)?;
    body.insert("stream".into(), request.streaming.into());
    body.insert("store".into(), request.may_continue.into());
    Ok(ToolsBody {
        fields: body,
        tools,
    })
}

/// `top_p`, `tool_choice` and `text.format`, as this wire spells them.
fn add_options(body: &mut Map<String, Value>, options: &TurnOptions) -> Result<(), PluginError> {
    if let Some(top_p) = options.top_p.and_then(json_number) {
        body.insert("top_p".into(), top_p);
    }
    if let Some(choice) = &options.tool_choice {
        let choice = match choice {
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Named(name) => json!({"type": "function", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    let format = match &options.response_format {
        None => return Ok(()),
        Some(ResponseFormat::JsonObject) => json!({"type": "json_object"}),
        Some(ResponseFormat::JsonSchema(schema)) => {
            let mut format = Map::new();
            format.insert("type".into(), json!("json_schema"));
            format.insert("name".into(), json!(schema.name));
            if let Some(description) = &schema.description {
                format.insert("description".into(), json!(description));
            }
            format.insert("schema".into(), schema_value(schema)?);
            if let Some(strict) = schema.strict {
                format.insert("strict".into(), json!(strict));
            }
            Value::Object(format)
        }
    };
    body.insert("text".into(), object([("format", format)]));
    Ok(())
}

/// The system messages' text, joined by a blank line; `None` when there is none.
fn system_prompt(messages: &[Message]) -> Option<String> {
    let texts: Vec<String> = messages
        .iter()
        .filter(|m| m.role == Role::System)
        .flat_map(|m| &m.content)
        .filter_map(|part| match part {
            ContentPart::Text(text) => Some(text.clone()),
            ContentPart::TextFile(file) => Some(text_file_prompt(file)),
            ContentPart::Image(_) => None,
        })
        .filter(|text| !text.trim().is_empty())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// The messages to send: all of them, or, when continuing a stored response, those after the last
/// assistant message (the upstream has everything before).
fn unsent(messages: &[Message], continuing: bool) -> &[Message] {
    if !continuing {
        return messages;
    }
    match messages.iter().rposition(|m| m.role == Role::Assistant) {
        Some(last) => &messages[last + 1..],
        None => messages,
    }
}

/// The `input` items of `messages` (system messages are `instructions`, not items).
fn input(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::new();
    for message in messages {
        match message.role {
            Role::System => {}
            Role::User => {
                let content: Vec<Value> = message.content.iter().filter_map(user_part).collect();
                if !content.is_empty() {
                    items.push(object([
                        ("type", "message".into()),
                        ("role", "user".into()),
                        ("content", content.into()),
                    ]));
                }
            }
            Role::Assistant => {
                let content: Vec<Value> = message
                    .content
                    .iter()
                    .filter_map(|part| match part {
                        ContentPart::Text(text) if !text.is_empty() => {
                            Some(json!({"type": "output_text", "text": text}))
                        }
                        _ => None,
                    })
                    .collect();
                if !content.is_empty() {
                    items.push(object([
                        ("type", "message".into()),
                        ("role", "assistant".into()),
                        ("content", content.into()),
                    ]));
                }
                for call in &message.tool_calls {
                    items.push(json!({
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.arguments_json,
                    }));
                }
            }
            Role::Tool => {
                if let Some(result) = &message.tool_result {
                    items.push(json!({
                        "type": "function_call_output",
                        "call_id": result.call_id,
                        "output": result.output,
                    }));
                }
            }
        }
    }
    items
}

/// One part of a user message; empty text is dropped.
fn user_part(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::Text(text) if text.is_empty() => None,
        ContentPart::Text(text) => Some(json!({"type": "input_text", "text": text})),
        ContentPart::Image(image) => Some(object([
            ("type", "input_image".into()),
            ("image_url", image_data_url(image).into()),
        ])),
        ContentPart::TextFile(file) => Some(object([
            ("type", "input_text".into()),
            ("text", text_file_prompt(file).into()),
        ])),
    }
}

/// The `tools` array: function tools with their JSON Schema, strict when named in `strict`.
fn tools<'a>(tools: &'a [ToolSpec], strict: &[String]) -> Result<Vec<Tool<'a>>, PluginError> {
    tools
        .iter()
        .map(|tool| {
            Ok(Tool {
                description: &tool.description,
                name: &tool.name,
                parameters: raw_tool_schema(tool)?,
                strict: strict.contains(&tool.name),
                kind: "function",
            })
        })
        .collect()
}

/// A function tool as the wire takes it, its schema as the host gave it (checked, not parsed
/// and written again); fields in key order, as a `Value` writes an object.
#[derive(Serialize)]
pub struct Tool<'a> {
    description: &'a str,
    name: &'a str,
    parameters: &'a RawValue,
    strict: bool,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chatd_plugin_sdk::codec::{JsonSchema, ReasoningEffort, no_turn_options, no_turn_tuning};
    use chatd_plugin_sdk::host::{Image, TextFile, ToolCall, ToolResult};
    use chatd_plugin_sdk::testing::as_sent;

    /// The body of a turn with no options.
    fn body(request: &TurnRequest) -> Result<Value, PluginError> {
        as_sent(super::body(request, &no_turn_options(), &no_turn_tuning()))
    }

    #[test]
    fn each_option_is_sent_as_the_wire_spells_it() {
        let request = turn("gpt-4.1-mini", vec![text(Role::User, "hi")]);
        let options = TurnOptions {
            top_p: Some(0.5),
            stop: Vec::new(),
            tool_choice: Some(ToolChoice::Named("get_weather".into())),
            response_format: Some(ResponseFormat::JsonSchema(JsonSchema {
                name: "w".into(),
                description: Some("the weather".into()),
                schema_json: r#"{"type":"object"}"#.into(),
                strict: None,
            })),
        };
        let sent = as_sent(super::body(&request, &options, &no_turn_tuning())).unwrap();
        assert_eq!(sent["top_p"], json!(0.5));
        assert_eq!(
            sent["tool_choice"],
            json!({"type": "function", "name": "get_weather"})
        );
        assert_eq!(
            sent["text"],
            json!({"format": {"type": "json_schema", "name": "w",
                "description": "the weather", "schema": {"type": "object"}}})
        );
        let object = TurnOptions {
            tool_choice: Some(ToolChoice::None),
            response_format: Some(ResponseFormat::JsonObject),
            ..no_turn_options()
        };
        let sent = as_sent(super::body(&request, &object, &no_turn_tuning())).unwrap();
        assert_eq!(sent["tool_choice"], "none");
        assert_eq!(sent["text"], json!({"format": {"type": "json_object"}}));
        // A reasoning model's sampling is fixed: its top_p is refused as its temperature is.
        let top_p = TurnOptions {
            top_p: Some(0.5),
            ..no_turn_options()
        };
        let reasoning = turn("gpt-5", vec![text(Role::User, "hi")]);
        match as_sent(super::body(&reasoning, &top_p, &no_turn_tuning())) {
            Err(PluginError::InvalidInput(why)) => assert!(why.starts_with("top_p: "), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// The recorded request with a strict tool and a reasoning effort (fixture 05) is what the
    /// tuning makes of it: `strict: true` on the tool, `reasoning.effort`, and one call per
    /// turn as `parallel_tool_calls: false`; a model that does not reason gets no effort.
    #[test]
    fn each_tuning_is_sent_as_the_wire_spells_it() {
        let mut request = turn("gpt-5", vec![text(Role::User, "Calculate 100 * 200 / 3")]);
        request.tools = vec![ToolSpec {
            name: "final_result".into(),
            description: "The final response which ends this conversation".into(),
            parameters_schema_json: r#"{"additionalProperties":false,"properties":{"result":{"type":"integer"}},"required":["result"],"type":"object"}"#.into(),
        }];
        let tuning = Tuning {
            strict_tools: vec!["final_result".into()],
            one_call_per_turn: true,
            reasoning_effort: Some(ReasoningEffort::Low),
            ..no_turn_tuning()
        };
        let sent = as_sent(super::body(&request, &no_turn_options(), &tuning)).unwrap();
        let recorded = recorded("05_stream_reasoning_encrypted_then_function_call.request.json");
        assert_eq!(sent["tools"][0]["strict"], recorded["tools"][0]["strict"]);
        assert_eq!(sent["reasoning"]["effort"], recorded["reasoning"]["effort"]);
        assert_eq!(sent["parallel_tool_calls"], false);
        let chat_model = turn("gpt-4.1-mini", request.messages.clone());
        let sent = as_sent(super::body(&chat_model, &no_turn_options(), &tuning)).unwrap();
        assert!(sent.get("reasoning").is_none(), "{sent}");
    }

    const FIXTURES: &str = "../../tests/fixtures/upstream/openai_responses";

    fn recorded(name: &str) -> Value {
        let path = format!("{}/{FIXTURES}/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    fn text(role: Role, text: &str) -> Message {
        Message {
            role,
            content: vec![ContentPart::Text(text.into())],
            tool_calls: vec![],
            tool_result: None,
        }
    }

    fn calls(calls: &[(&str, &str, &str)]) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![],
            tool_calls: calls
                .iter()
                .map(|(id, name, args)| ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments_json: args.to_string(),
                })
                .collect(),
            tool_result: None,
        }
    }

    fn result(call_id: &str, name: &str, output: &str) -> Message {
        Message {
            role: Role::Tool,
            content: vec![],
            tool_calls: vec![],
            tool_result: Some(ToolResult {
                call_id: call_id.into(),
                name: name.into(),
                output: output.into(),
                is_error: false,
            }),
        }
    }

    fn turn(model: &str, messages: Vec<Message>) -> TurnRequest {
        TurnRequest {
            model: model.into(),
            messages,
            tools: vec![],
            temperature: None,
            max_tokens: None,
            streaming: false,
            may_continue: false,
            continuation: None,
        }
    }

    fn weather_tool() -> ToolSpec {
        ToolSpec {
            name: "get_weather_at_location".into(),
            description: "Gets the weather at a specified location, optionally specifying units \
                          for temperature"
                .into(),
            parameters_schema_json: r#"{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["C","F","K"]}},"required":["location"]}"#.into(),
        }
    }

    const WEAR: &str = "What should I wear for the weather in San Francisco, CA?";

    #[test]
    fn a_plain_turn_matches_the_recorded_minimal_request() {
        let body = body(&turn(
            "gpt-4o-mini",
            vec![text(Role::User, "This is a test.")],
        ))
        .unwrap();
        let sent = recorded("01b_nonstream_text_gpt4o_mini.request.json");
        assert_eq!(body["model"], sent["model"]);
        assert_eq!(body["input"], sent["input"]);
        assert_eq!(body["stream"], false);
        assert_eq!(body["store"], false);
        for absent in ["instructions", "tools", "temperature", "max_output_tokens"] {
            assert!(body.get(absent).is_none(), "{absent}");
        }
        assert!(body.get("previous_response_id").is_none());
    }

    #[test]
    fn system_messages_become_the_instructions() {
        let sent = recorded("01_nonstream_text.request.json");
        let request = turn(
            "gpt-5",
            vec![
                text(Role::System, "Always begin your replies with 'Ahoy'"),
                text(Role::User, "Hello, model!"),
            ],
        );
        let body = body(&request).unwrap();
        assert_eq!(body["instructions"], sent["instructions"]);
        assert_eq!(body["input"], sent["input"]);

        let sent = recorded("09c_nonstream_reasoning_summary_detailed_2026_compact.request.json");
        let request = turn(
            "gpt-5.6",
            vec![
                text(Role::System, sent["instructions"].as_str().unwrap()),
                text(Role::User, "What's the best way to fold a burrito?"),
            ],
        );
        let body = self::body(&request).unwrap();
        assert_eq!(body["instructions"], sent["instructions"]);
        assert_eq!(body["input"], sent["input"]);

        // 09b sent its user message in the string shorthand; the instructions are the same.
        let sent = recorded("09b_nonstream_reasoning_summary_auto.request.json");
        let request = turn(
            "gpt-5.2",
            vec![
                text(Role::System, "You are a helpful coding assistant."),
                text(Role::User, sent["input"][0]["content"].as_str().unwrap()),
            ],
        );
        let body = self::body(&request).unwrap();
        assert_eq!(body["instructions"], sent["instructions"]);
        assert_eq!(body["stream"], sent["stream"]);
        assert_eq!(
            body["input"][0]["content"][0]["text"],
            sent["input"][0]["content"]
        );
    }

    #[test]
    fn several_system_messages_are_joined_by_a_blank_line() {
        let request = turn(
            "m",
            vec![
                text(Role::System, "One."),
                text(Role::User, "hi"),
                text(Role::System, "Two."),
            ],
        );
        let body = body(&request).unwrap();
        assert_eq!(body["instructions"], "One.\n\nTwo.");
        assert_eq!(body["input"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn streaming_and_store_follow_the_request() {
        let sent = recorded("02_stream_text.request.json");
        let mut request = turn("gpt-4o-mini", vec![text(Role::User, "Hello, world!")]);
        request.streaming = true;
        let body = body(&request).unwrap();
        assert_eq!(body["stream"], sent["stream"]);
        assert_eq!(body["input"], sent["input"]);
        assert_eq!(body["store"], false);

        let sent = recorded("09a_nonstream_reasoning_encrypted_store_false.request.json");
        let request = turn("gpt-5-mini", vec![text(Role::User, "Hello, world!")]);
        let body = self::body(&request).unwrap();
        assert_eq!(body["store"], sent["store"]);
        assert_eq!(body["input"], sent["input"]);

        let mut request = turn("gpt-5-mini", vec![text(Role::User, "Hello, world!")]);
        request.may_continue = true;
        assert_eq!(self::body(&request).unwrap()["store"], true);
    }

    #[test]
    fn limits_and_temperature() {
        let sent = recorded("10_nonstream_incomplete_max_output_tokens.request.json");
        let mut request = turn(
            "gpt-4o-mini",
            vec![text(Role::User, "Write three haikus about tropical fruit")],
        );
        request.max_tokens = Some(20);
        let body = body(&request).unwrap();
        assert_eq!(body["max_output_tokens"], sent["max_output_tokens"]);
        assert_eq!(body["input"], sent["input"]);

        let sent = recorded("11_error_400_invalid_temperature.request.json");
        let mut request = turn(
            "gpt-4o",
            vec![text(Role::User, "What is the capital of France?")],
        );
        request.temperature = Some(-1.0);
        request.streaming = true;
        let body = self::body(&request).unwrap();
        assert_eq!(body["temperature"].as_f64(), sent["temperature"].as_f64());
        assert_eq!(body["stream"], sent["stream"]);

        request.temperature = Some(0.7);
        assert_eq!(
            self::body(&request).unwrap()["temperature"].as_f64(),
            Some(0.7)
        );
        request.temperature = Some(f32::NAN);
        assert!(self::body(&request).unwrap().get("temperature").is_none());
    }

    #[test]
    fn reasoning_models_refuse_a_temperature_before_it_is_sent() {
        for model in [
            "gpt-5",
            "gpt-5-mini",
            "gpt-5.1",
            "o3",
            "o4-mini",
            "o1-2024-12-17",
        ] {
            let mut request = turn(model, vec![text(Role::User, "hi")]);
            request.temperature = Some(0.2);
            match self::body(&request) {
                Err(PluginError::InvalidInput(why)) => {
                    assert!(why.starts_with("temperature: "), "{why}")
                }
                other => panic!("{model}: {other:?}"),
            }
            request.temperature = None;
            assert!(self::body(&request).is_ok(), "{model} without one");
        }
        for model in ["gpt-4o", "gpt-4.1-mini", "gpt-5-chat-latest", "o1x"] {
            assert!(takes_temperature(model), "{model}");
        }
    }

    #[test]
    fn tools_are_function_tools_as_recorded() {
        let sent = recorded("03_stream_function_call.request.json");
        let mut request = turn("gpt-4o-mini", vec![text(Role::User, WEAR)]);
        request.tools = vec![weather_tool()];
        request.streaming = true;
        let body = body(&request).unwrap();
        assert_eq!(body["tools"], sent["tools"]);
        assert_eq!(body["input"], sent["input"]);
        assert_eq!(body["stream"], true);

        let sent = recorded("08a_nonstream_function_call.request.json");
        request.streaming = false;
        let body = self::body(&request).unwrap();
        assert_eq!(body["tools"], sent["tools"]);
        assert_eq!(body["input"], sent["input"]);
    }

    #[test]
    fn recorded_strict_tools_differ_only_in_strictness() {
        for (name, tool, question) in [
            (
                "04a_stream_function_call_legacy_2025_03.request.json",
                "get_capital",
                "What is the capital of France?",
            ),
            (
                "05_stream_reasoning_encrypted_then_function_call.request.json",
                "final_result",
                "Calculate 100 * 200 / 3",
            ),
        ] {
            let sent = recorded(name);
            let spec = &sent["tools"][0];
            let mut request = turn("gpt-4o", vec![text(Role::User, question)]);
            request.tools = vec![ToolSpec {
                name: tool.into(),
                description: spec["description"].as_str().unwrap().into(),
                parameters_schema_json: spec["parameters"].to_string(),
            }];
            request.streaming = true;
            let body = body(&request).unwrap();
            let mut expected = spec.clone();
            expected["strict"] = false.into();
            assert_eq!(body["tools"][0], expected, "{name}");
            assert_eq!(body["stream"], sent["stream"], "{name}");
            assert_eq!(
                body["input"][0]["content"][0]["text"], sent["input"][0]["content"],
                "{name}"
            );
        }
    }

    #[test]
    fn no_tools_no_tools_field_and_a_bad_schema_is_refused() {
        let mut request = turn("m", vec![text(Role::User, "hi")]);
        assert!(body(&request).unwrap().get("tools").is_none());
        request.tools = vec![ToolSpec {
            name: "broken".into(),
            description: String::new(),
            parameters_schema_json: "{not json".into(),
        }];
        match body(&request) {
            Err(PluginError::InvalidInput(why)) => assert!(why.contains("broken"), "{why}"),
            other => panic!("{other:?}"),
        }
        request.tools[0].parameters_schema_json = String::new();
        assert_eq!(
            body(&request).unwrap()["tools"][0]["parameters"],
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn attachments_are_input_parts() {
        let file = TextFile {
            filename: "notes.md".into(),
            mime_type: "text/markdown".into(),
            text: "# Notes".into(),
            truncated: true,
        };
        let image = Image {
            mime_type: "image/png".into(),
            data_base64: "iVBORw0KGgo=".into(),
        };
        let request = turn(
            "m",
            vec![Message {
                role: Role::User,
                content: vec![
                    ContentPart::Text("Look".into()),
                    ContentPart::Image(image.clone()),
                    ContentPart::TextFile(file.clone()),
                    ContentPart::Text(String::new()),
                ],
                tool_calls: vec![],
                tool_result: None,
            }],
        );
        let body = body(&request).unwrap();
        assert_eq!(
            body["input"],
            json!([{"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Look"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                {"type": "input_text", "text": text_file_prompt(&file)},
            ]}])
        );
        assert!(
            body["input"][0]["content"][2]["text"]
                .as_str()
                .unwrap()
                .starts_with("Attached file: notes.md (text/markdown, truncated)")
        );
    }

    #[test]
    fn a_tool_loop_without_continuation_sends_the_whole_exchange() {
        // 04b: the client replayed the call and its output itself (no previous_response_id).
        let sent = recorded("04b_stream_after_function_call_output_legacy_2025_03.request.json");
        let id = "fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2";
        let mut request = turn(
            "gpt-4o",
            vec![
                text(Role::User, "What is the capital of France?"),
                calls(&[(id, "get_capital", r#"{"country":"France"}"#)]),
                result(id, "get_capital", "Paris"),
            ],
        );
        request.streaming = true;
        let body = body(&request).unwrap();
        assert!(body.get("previous_response_id").is_none());
        let input = body["input"].as_array().unwrap();
        assert_eq!(input.len(), 3);
        assert_eq!(input[1], sent["input"][1]);
        assert_eq!(input[2], sent["input"][2]);
    }

    #[test]
    fn assistant_text_and_calls_are_separate_items() {
        let mut answered = calls(&[("call_1", "a", "{}"), ("call_2", "b", r#"{"x":1}"#)]);
        answered.content = vec![ContentPart::Text("Checking.".into())];
        let request = turn(
            "m",
            vec![
                text(Role::User, "q"),
                answered,
                result("call_1", "a", "one"),
                result("call_2", "b", "two"),
                text(Role::Assistant, ""),
            ],
        );
        let body = body(&request).unwrap();
        assert_eq!(
            body["input"],
            json!([
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
                {"type": "function_call", "call_id": "call_1", "name": "a", "arguments": "{}"},
                {"type": "function_call", "call_id": "call_2", "name": "b", "arguments": "{\"x\":1}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "one"},
                {"type": "function_call_output", "call_id": "call_2", "output": "two"},
            ])
        );
    }

    #[test]
    fn a_continuation_sends_previous_response_id_and_only_the_results() {
        let sent = recorded("08b_nonstream_after_function_call_output.request.json");
        let mut request = turn(
            "gpt-4o-mini",
            vec![
                text(Role::System, "Be brief."),
                text(Role::User, WEAR),
                calls(&[(
                    "call_S2X9KuEJpYvFcF4hgv1XwM0j",
                    "get_weather_at_location",
                    r#"{"location":"San Francisco, CA"}"#,
                )]),
                result(
                    "call_S2X9KuEJpYvFcF4hgv1XwM0j",
                    "get_weather_at_location",
                    "22 celcius and windy",
                ),
            ],
        );
        request.tools = vec![weather_tool()];
        request.continuation =
            Some("resp_0df7c3d8927b3a940068c9ef43dce481949ab7ac4c9f676d61".into());
        let body = body(&request).unwrap();
        assert_eq!(body["previous_response_id"], sent["previous_response_id"]);
        assert_eq!(body["input"], sent["input"]);
        assert_eq!(body["tools"], sent["tools"]);
        assert_eq!(body["model"], sent["model"]);
        // Instructions are not carried over by previous_response_id: sent again.
        assert_eq!(body["instructions"], "Be brief.");
        // The last turn of a loop (nothing to continue) is not stored.
        assert_eq!(body["store"], false);
    }

    #[test]
    fn a_continuation_without_an_assistant_message_sends_everything() {
        let mut request = turn("m", vec![text(Role::User, "q")]);
        request.continuation = Some("resp_1".into());
        request.may_continue = true;
        let body = body(&request).unwrap();
        assert_eq!(body["previous_response_id"], "resp_1");
        assert_eq!(body["input"].as_array().unwrap().len(), 1);
        assert_eq!(body["store"], true);
    }
}
