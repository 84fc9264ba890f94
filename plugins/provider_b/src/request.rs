//! The body of `POST {base}/messages`, built from a [`TurnRequest`].
//!
//! * System messages become `system` (their texts joined by a blank line; omitted when none).
//! * User messages become `text` and base64 `image` blocks (a text file is a `text` block
//!   rendered by [`text_file_prompt`]); assistant messages their text and one `tool_use` block per
//!   call (`input` is the parsed arguments object); tool results `tool_result` blocks of a user
//!   message.
//! * The API wants user and assistant turns to alternate, so consecutive messages of the same API
//!   role are merged into one: the results of parallel calls become one user message, and a user
//!   message right after tool results joins them (the results first, as the API requires).
//! * Empty text blocks are dropped (the API refuses them), and so are messages left empty.
//! * `max_tokens` is required by the API: [`DEFAULT_MAX_TOKENS`] when the client set none.
//! * Of the turn options ([`HONOURED`]): `top_p` (refused beside a `temperature`, as the API's
//!   current models refuse the two together), `stop_sequences` and `tool_choice` (`none`, `any`
//!   for required, `{"type": "tool", "name"}`). The API has no JSON response format, so this
//!   provider does not honour one and the host refuses it for it.
//! * `temperature` is 0 to 1 here (chatd takes 0 to 2, the other APIs' range): a higher one is
//!   sent as 1 ([`MAX_TEMPERATURE`]), the API's most random, rather than refused upstream.
//! * Of the turn's tuning ([`TUNED`]): one call per turn is `disable_parallel_tool_use` in
//!   `tool_choice` (`{"type": "auto"}` when the client chose none), and a reasoning effort is
//!   `output_config.effort` (`low`, `medium`, `high`, `xhigh`; `minimal` as `low`; `none`
//!   sets nothing, the API's default being no extended thinking). Models older than the
//!   effort setting refuse it upstream. The API has no strict tools (the host checks their
//!   arguments itself) and no seed.

use chatd_plugin_sdk::codec::{
    OptionKind, ReasoningEffort, ToolChoice, Tuning, TuningKind, TurnOptions,
};
use chatd_plugin_sdk::host::{ContentPart, Message, PluginError, Role, ToolResult, ToolSpec};
use chatd_plugin_sdk::json::{ToolsBody, object};
use chatd_plugin_sdk::provider::{TurnRequest, text_file_prompt};
use chatd_plugin_sdk::provider::{json_number, raw_tool_schema};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

/// The output limit when the client sets none. The API requires one, and refuses a value above
/// the model's own limit; 8192 is within the limit of every model from Claude 3.5 on (4.x models
/// allow 32k to 128k; only the old Claude 3 Haiku stops at 4096, and needs the client's limit).
/// It is room for a long answer, and keeps a non-streaming call well inside the time the API
/// allows one (it refuses non-streaming requests it expects to run over ten minutes). It is a
/// cap, not a reservation: only the tokens produced are billed.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The highest `temperature` the Messages API takes.
pub const MAX_TEMPERATURE: f32 = 1.0;

/// The turn options the Messages API carries (no JSON response format).
pub const HONOURED: [OptionKind; 3] = [OptionKind::TopP, OptionKind::Stop, OptionKind::ToolChoice];

/// The tuning the Messages API carries: one call per turn and a reasoning effort.
pub const TUNED: [TuningKind; 2] = [TuningKind::OneCallPerTurn, TuningKind::ReasoningEffort];

/// The JSON body for `request`, its `options` and its `tuning`.
pub fn body<'a>(
    request: &'a TurnRequest,
    options: &TurnOptions,
    tuning: &Tuning,
) -> Result<ToolsBody<Tool<'a>>, PluginError> {
    if request.temperature.is_some() && options.top_p.is_some() {
        return Err(PluginError::InvalidInput(
            "top_p: send temperature or top_p, not both (the Messages API's current models \
             refuse the two together)"
                .into(),
        ));
    }
    let mut body = Map::new();
    body.insert("model".into(), request.model.clone().into());
    body.insert(
        "max_tokens".into(),
        request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).into(),
    );
    if let Some(system) = system_prompt(&request.messages) {
        body.insert("system".into(), system.into());
    }
    body.insert("messages".into(), messages(&request.messages)?.into());
    let tools = tools(&request.tools)?;
    if let Some(temperature) = request
        .temperature
        .map(|t| t.min(MAX_TEMPERATURE))
        .and_then(json_number)
    {
        body.insert("temperature".into(), temperature);
    }
    if let Some(top_p) = options.top_p.and_then(json_number) {
        body.insert("top_p".into(), top_p);
    }
    if !options.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(options.stop));
    }
    let mut choice = match &options.tool_choice {
        None => None,
        Some(ToolChoice::None) => Some(json!({"type": "none"})),
        Some(ToolChoice::Required) => Some(json!({"type": "any"})),
        Some(ToolChoice::Named(name)) => Some(json!({"type": "tool", "name": name})),
    };
    // One call per turn: the API's flag lives in tool_choice (not with `none`, which calls none).
    if tuning.one_call_per_turn
        && !request.tools.is_empty()
        && !matches!(options.tool_choice, Some(ToolChoice::None))
    {
        let choice = choice.get_or_insert_with(|| json!({"type": "auto"}));
        choice["disable_parallel_tool_use"] = Value::Bool(true);
    }
    if let Some(choice) = choice {
        body.insert("tool_choice".into(), choice);
    }
    if let Some(effort) = tuning.reasoning_effort.and_then(effort_name) {
        body.insert("output_config".into(), json!({ "effort": effort }));
    }
    body.insert("stream".into(), request.streaming.into());
    Ok(ToolsBody {
        fields: body,
        tools,
    })
}

/// A reasoning effort as the API's `output_config.effort` names it; `None` for `none`, the
/// API's default.
fn effort_name(effort: ReasoningEffort) -> Option<&'static str> {
    match effort {
        ReasoningEffort::None => None,
        ReasoningEffort::Minimal | ReasoningEffort::Low => Some("low"),
        ReasoningEffort::Medium => Some("medium"),
        ReasoningEffort::High => Some("high"),
        ReasoningEffort::Xhigh => Some("xhigh"),
    }
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

/// The `messages` array: alternating user and assistant turns.
fn messages(messages: &[Message]) -> Result<Vec<Value>, PluginError> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role {
            Role::System => continue,
            Role::User => (
                "user",
                message.content.iter().filter_map(user_block).collect(),
            ),
            Role::Assistant => ("assistant", assistant_blocks(message)?),
            Role::Tool => (
                "user",
                message.tool_result.iter().map(tool_result).collect(),
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    Ok(turns
        .into_iter()
        .map(|(role, content)| object([("role", role.into()), ("content", content.into())]))
        .collect())
}

/// One part of a user message as a block; empty text is dropped.
fn user_block(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::Text(text) if text.is_empty() => None,
        ContentPart::Text(text) => Some(json!({"type": "text", "text": text})),
        ContentPart::Image(image) => Some(json!({
            "type": "image",
            "source": {"type": "base64", "media_type": image.mime_type, "data": image.data_base64},
        })),
        ContentPart::TextFile(file) => Some(object([
            ("type", "text".into()),
            ("text", text_file_prompt(file).into()),
        ])),
    }
}

/// An assistant message: its text, then its calls as `tool_use` blocks.
fn assistant_blocks(message: &Message) -> Result<Vec<Value>, PluginError> {
    let mut blocks: Vec<Value> = message
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) if !text.is_empty() => {
                Some(json!({"type": "text", "text": text}))
            }
            _ => None,
        })
        .collect();
    for call in &message.tool_calls {
        let input = chatd_plugin_sdk::json::parse_object(&call.arguments_json).map_err(|e| {
            let why = match e {
                PluginError::InvalidInput(why) => why,
                other => format!("{other:?}"),
            };
            PluginError::InvalidInput(format!("tool call {} ({}): {why}", call.id, call.name))
        })?;
        blocks.push(object([
            ("type", "tool_use".into()),
            ("id", call.id.as_str().into()),
            ("name", call.name.as_str().into()),
            ("input", input.into()),
        ]));
    }
    Ok(blocks)
}

/// A tool's result as a `tool_result` block. An empty output is left out (the API refuses an
/// empty error result, and an empty string says nothing anyway).
fn tool_result(result: &ToolResult) -> Value {
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": result.call_id,
        "is_error": result.is_error,
    });
    if !result.output.is_empty() {
        block["content"] = result.output.clone().into();
    } else if result.is_error {
        block["content"] = "The tool failed without saying why.".into();
    }
    block
}

/// The `tools` array: name, description and input schema.
fn tools(tools: &[ToolSpec]) -> Result<Vec<Tool<'_>>, PluginError> {
    tools
        .iter()
        .map(|tool| {
            Ok(Tool {
                description: &tool.description,
                input_schema: raw_tool_schema(tool)?,
                name: &tool.name,
            })
        })
        .collect()
}

/// A tool as the wire takes it, its schema as the host gave it (checked, not parsed and written
/// again); fields in key order, as a `Value` writes an object.
#[derive(Serialize)]
pub struct Tool<'a> {
    description: &'a str,
    input_schema: &'a RawValue,
    name: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chatd_plugin_sdk::codec::{no_turn_options, no_turn_tuning};
    use chatd_plugin_sdk::host::{Image, TextFile, ToolCall};
    use chatd_plugin_sdk::testing::as_sent;

    /// The body of a turn with no options.
    fn body(request: &TurnRequest) -> Result<Value, PluginError> {
        as_sent(super::body(request, &no_turn_options(), &no_turn_tuning()))
    }

    #[test]
    fn each_option_is_sent_as_the_wire_spells_it() {
        let request = turn("claude-sonnet-4-5", vec![text(Role::User, "hi")]);
        let options = TurnOptions {
            top_p: Some(0.5),
            stop: vec!["END".into(), "STOP".into()],
            tool_choice: Some(ToolChoice::Named("get_weather".into())),
            response_format: None,
        };
        let sent = as_sent(super::body(&request, &options, &no_turn_tuning())).unwrap();
        assert_eq!(sent["top_p"], json!(0.5));
        assert_eq!(sent["stop_sequences"], json!(["END", "STOP"]));
        assert_eq!(
            sent["tool_choice"],
            json!({"type": "tool", "name": "get_weather"})
        );
        for (choice, wire) in [
            (ToolChoice::None, json!({"type": "none"})),
            (ToolChoice::Required, json!({"type": "any"})),
        ] {
            let options = TurnOptions {
                tool_choice: Some(choice),
                ..no_turn_options()
            };
            assert_eq!(
                as_sent(super::body(&request, &options, &no_turn_tuning())).unwrap()["tool_choice"],
                wire
            );
        }
        let mut both = request.clone();
        both.temperature = Some(0.5);
        match as_sent(super::body(&both, &options, &no_turn_tuning())) {
            Err(PluginError::InvalidInput(why)) => assert!(why.starts_with("top_p: "), "{why}"),
            other => panic!("{other:?}"),
        }
        let plain = body(&request).unwrap();
        for absent in ["top_p", "stop_sequences", "tool_choice"] {
            assert!(plain.get(absent).is_none(), "{absent}");
        }
    }

    #[test]
    fn each_tuning_is_sent_as_the_wire_spells_it() {
        let mut request = turn("claude-opus-4-7", vec![text(Role::User, "Weather?")]);
        request.tools = vec![ToolSpec {
            name: "weather".into(),
            description: "Gets current weather for a location".into(),
            parameters_schema_json: r#"{"type":"object"}"#.into(),
        }];
        let tuning = Tuning {
            strict_tools: vec!["weather".into()],
            one_call_per_turn: true,
            reasoning_effort: Some(ReasoningEffort::Xhigh),
            seed: Some(1),
            ..no_turn_tuning()
        };
        let sent = as_sent(super::body(&request, &no_turn_options(), &tuning)).unwrap();
        assert_eq!(
            sent["tool_choice"],
            json!({"type": "auto", "disable_parallel_tool_use": true})
        );
        assert_eq!(sent["output_config"], json!({"effort": "xhigh"}));
        assert!(sent.get("seed").is_none() && sent["tools"][0].get("strict").is_none());
        let any = TurnOptions {
            tool_choice: Some(ToolChoice::Required),
            ..no_turn_options()
        };
        let sent = as_sent(super::body(&request, &any, &tuning)).unwrap();
        assert_eq!(
            sent["tool_choice"],
            json!({"type": "any", "disable_parallel_tool_use": true})
        );
        let quiet = Tuning {
            reasoning_effort: Some(ReasoningEffort::None),
            ..no_turn_tuning()
        };
        let sent = as_sent(super::body(&request, &no_turn_options(), &quiet)).unwrap();
        assert!(sent.get("output_config").is_none() && sent.get("tool_choice").is_none());
    }

    const FIXTURES: &str = "../../tests/fixtures/upstream/anthropic_messages";

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

    fn calls(text: &str, calls: &[(&str, &str, &str)]) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentPart::Text(text.into())],
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

    fn result(call_id: &str, output: &str, is_error: bool) -> Message {
        Message {
            role: Role::Tool,
            content: vec![],
            tool_calls: vec![],
            tool_result: Some(ToolResult {
                call_id: call_id.into(),
                name: "weather".into(),
                output: output.into(),
                is_error,
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

    /// The tools of a recorded request, as chatd tool specs.
    fn specs(sent: &Value) -> Vec<ToolSpec> {
        sent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t.get("input_schema").is_some())
            .map(|t| ToolSpec {
                name: t["name"].as_str().unwrap().into(),
                description: t["description"].as_str().unwrap().into(),
                parameters_schema_json: t["input_schema"].to_string(),
            })
            .collect()
    }

    const BERLIN: &str = "What's the weather in Berlin? (52.5200, 13.4050)";
    const WEATHER: &str = "Current weather at 52.5200, 13.4050: 15°C, Wind: 10 km/h";

    #[test]
    fn plain_turns_match_the_recorded_requests() {
        for (name, question, streaming) in [
            ("01_nonstream_text.request.json", "What's 2 + 2?", false),
            ("04_stream_text.request.json", "Count from 1 to 3", true),
        ] {
            let sent = recorded(name);
            let mut request = turn(
                "claude-haiku-4-5-20251001",
                vec![text(Role::User, question)],
            );
            request.streaming = streaming;
            request.max_tokens = Some(64000);
            let body = body(&request).unwrap();
            assert_eq!(body, sent, "{name}");
        }
        // Recorded with keys sorted; the same fields.
        let sent = recorded("08_stream_text_short.request.json");
        let mut request = turn(
            "claude-sonnet-4-5",
            vec![text(
                Role::User,
                "What is 1+1? Answer with just the number.",
            )],
        );
        request.streaming = true;
        request.max_tokens = Some(32000);
        assert_eq!(body(&request).unwrap(), sent);
    }

    #[test]
    fn max_tokens_has_a_default_and_system_is_optional() {
        let sent = recorded("06_stream_thinking.request.json");
        let question = sent["messages"][0]["content"][0]["text"].as_str().unwrap();
        let mut request = turn(
            "claude-haiku-4-5-20251001",
            vec![text(Role::User, question)],
        );
        request.streaming = true;
        let body = body(&request).unwrap();
        assert_eq!(body["messages"], sent["messages"]);
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        for absent in ["system", "tools", "temperature"] {
            assert!(body.get(absent).is_none(), "{absent}");
        }

        request.messages.insert(0, text(Role::System, "Be terse."));
        request
            .messages
            .push(text(Role::System, "Use metric units."));
        request.temperature = Some(0.3);
        let body = self::body(&request).unwrap();
        assert_eq!(body["system"], "Be terse.\n\nUse metric units.");
        assert_eq!(body["messages"], sent["messages"]);
        assert_eq!(body["temperature"].as_f64(), Some(0.3));

        request.temperature = Some(MAX_TEMPERATURE);
        assert_eq!(
            self::body(&request).unwrap()["temperature"].as_f64(),
            Some(1.0)
        );
        request.temperature = Some(1.5);
        assert_eq!(
            self::body(&request).unwrap()["temperature"].as_f64(),
            Some(1.0)
        );
    }

    #[test]
    fn tools_as_recorded() {
        for (name, question, streaming) in [
            ("02a_nonstream_tool_use.request.json", BERLIN, false),
            ("05a_stream_tool_use.request.json", BERLIN, true),
            (
                "03_nonstream_parallel_tool_use.request.json",
                "What's the weather in Berlin (52.5200, 13.4050) and what's the best language to learn?",
                false,
            ),
        ] {
            let sent = recorded(name);
            let mut request = turn(
                "claude-haiku-4-5-20251001",
                vec![text(Role::User, question)],
            );
            request.tools = specs(&sent);
            request.streaming = streaming;
            request.max_tokens = Some(64000);
            assert_eq!(body(&request).unwrap(), sent, "{name}");
        }
        // 07 mixes client tools (with a beta flag) and a server tool chatd does not use.
        let sent = recorded("07_stream_text_server_tool_and_tool_use.request.json");
        let mut request = turn(
            "claude-sonnet-4-6",
            vec![text(
                Role::User,
                "What is the current USD to EUR exchange rate?",
            )],
        );
        request.tools = specs(&sent);
        let body = body(&request).unwrap();
        assert_eq!(body["messages"], sent["messages"]);
        assert_eq!(body["tools"].as_array().unwrap().len(), 2);
        assert_eq!(
            body["tools"][0]["input_schema"],
            sent["tools"][0]["input_schema"]
        );
        assert_eq!(body["tools"][1]["name"], "stock_lookup");
    }

    #[test]
    fn a_tool_loop_as_recorded() {
        for (name, id, streaming) in [
            (
                "02b_nonstream_after_tool_result.request.json",
                "toolu_01Ay5KzhmQYMK53svGLaAxfc",
                false,
            ),
            (
                "05b_stream_after_tool_result.request.json",
                "toolu_01MKSN7NHsBVKr7Jvw5pqCQq",
                true,
            ),
        ] {
            let sent = recorded(name);
            let mut request = turn(
                "claude-haiku-4-5-20251001",
                vec![
                    text(Role::User, BERLIN),
                    calls(
                        "",
                        &[(
                            id,
                            "weather",
                            r#"{"latitude":"52.5200","longitude":"13.4050"}"#,
                        )],
                    ),
                    result(id, WEATHER, false),
                ],
            );
            request.tools = specs(&sent);
            request.streaming = streaming;
            request.max_tokens = Some(64000);
            let body = body(&request).unwrap();
            // The client sent the result as a list of text blocks and no is_error; chatd sends
            // the string form with is_error.
            let mut expected = sent.clone();
            expected["messages"][2]["content"][0]["content"] = WEATHER.into();
            expected["messages"][2]["content"][0]["is_error"] = false.into();
            assert_eq!(body, expected, "{name}");
        }
    }

    #[test]
    fn consecutive_roles_are_merged() {
        let request = turn(
            "m",
            vec![
                text(Role::System, "sys"),
                text(Role::User, "first"),
                text(Role::User, "second"),
                calls(
                    "Let me check both.",
                    &[("t1", "a", "{}"), ("t2", "b", r#"{"x":1}"#)],
                ),
                result("t1", "one", false),
                result("t2", "", true),
                text(Role::User, "and then?"),
                text(Role::Assistant, "Done."),
                text(Role::Assistant, ""),
                text(Role::Assistant, "More."),
            ],
        );
        let body = body(&request).unwrap();
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [
                    {"type": "text", "text": "first"},
                    {"type": "text", "text": "second"},
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me check both."},
                    {"type": "tool_use", "id": "t1", "name": "a", "input": {}},
                    {"type": "tool_use", "id": "t2", "name": "b", "input": {"x": 1}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "one", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "The tool failed without saying why.", "is_error": true},
                    {"type": "text", "text": "and then?"},
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Done."},
                    {"type": "text", "text": "More."},
                ]},
            ])
        );
        assert_eq!(body["system"], "sys");
    }

    #[test]
    fn attachments_are_blocks() {
        let file = TextFile {
            filename: "data.csv".into(),
            mime_type: "text/csv".into(),
            text: "a,b\n1,2".into(),
            truncated: false,
        };
        let request = turn(
            "m",
            vec![Message {
                role: Role::User,
                content: vec![
                    ContentPart::Text("Compare".into()),
                    ContentPart::Image(Image {
                        mime_type: "image/jpeg".into(),
                        data_base64: "/9j/4AAQ".into(),
                    }),
                    ContentPart::TextFile(file.clone()),
                ],
                tool_calls: vec![],
                tool_result: None,
            }],
        );
        assert_eq!(
            body(&request).unwrap()["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "Compare"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
                {"type": "text", "text": "Attached file: data.csv (text/csv)\n\na,b\n1,2"},
            ]}])
        );
    }

    #[test]
    fn bad_arguments_or_schemas_are_refused() {
        let request = turn(
            "m",
            vec![text(Role::User, "q"), calls("", &[("t1", "a", "[1]")])],
        );
        match body(&request) {
            Err(PluginError::InvalidInput(why)) => assert!(why.contains("t1"), "{why}"),
            other => panic!("{other:?}"),
        }
        let mut request = turn(
            "m",
            vec![text(Role::User, "q"), calls("", &[("t1", "a", "")])],
        );
        assert_eq!(
            body(&request).unwrap()["messages"][1]["content"][0]["input"],
            json!({})
        );
        request.tools = vec![ToolSpec {
            name: "broken".into(),
            description: "d".into(),
            parameters_schema_json: "{".into(),
        }];
        assert!(matches!(body(&request), Err(PluginError::InvalidInput(_))));
        request.tools[0].parameters_schema_json = " ".into();
        assert_eq!(
            body(&request).unwrap()["tools"][0]["input_schema"],
            json!({"type": "object", "properties": {}})
        );
    }
}
