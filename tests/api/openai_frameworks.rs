//! The agent frameworks of OpenAI's ecosystem as chatd's clients, with their default settings
//! (`tests/openai/frameworks.py`, pinned by `.ci/run`): the OpenAI Agents SDK's `@function_tool`
//! on the Responses API and on chat completions, `openai.pydantic_function_tool`, LangChain's
//! `bind_tools(strict=True)` and `with_structured_output` (both methods). Each runs its whole
//! loop against each provider's recorded wire: the model's call, the framework's own tool, its
//! result back, the answer; what the frameworks send by default (`strict: true`,
//! `parallel_tool_calls: false` with a named `tool_choice`) reaches each wire as it spells it.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use serde_json::{Value, json};

use crate::openai::{TOKEN, all_providers};
use crate::openai_sdk::{framework, python};

const RESPONSES_CALL: &str =
    include_str!("../fixtures/upstream/openai_responses/08a_nonstream_function_call.response.json");
const RESPONSES_TEXT: &str =
    include_str!("../fixtures/upstream/openai_responses/01_nonstream_text.response.json");
const MESSAGES_CALL: &str =
    include_str!("../fixtures/upstream/anthropic_messages/02a_nonstream_tool_use.response.json");
const MESSAGES_TEXT: &str =
    include_str!("../fixtures/upstream/anthropic_messages/01_nonstream_text.response.json");
const CHAT_CALLS: &str =
    include_str!("../fixtures/upstream/openai_chat/06_nonstream_parallel_tool_calls.response.json");
const CHAT_TEXT: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");

/// The recorded call of `route`'s wire, calling `name` with `arguments`.
fn recorded_call(route: &str, name: &str, arguments: Value) -> Reply {
    let call = match route {
        "POST /responses" => {
            let mut reply: Value = serde_json::from_str(RESPONSES_CALL).unwrap();
            reply["output"][0]["name"] = json!(name);
            reply["output"][0]["arguments"] = json!(arguments.to_string());
            reply
        }
        "POST /messages" => {
            let mut reply: Value = serde_json::from_str(MESSAGES_CALL).unwrap();
            reply["content"][0]["name"] = json!(name);
            reply["content"][0]["input"] = arguments;
            reply
        }
        _ => {
            let mut reply: Value = serde_json::from_str(CHAT_CALLS).unwrap();
            let calls = reply["choices"][0]["message"]["tool_calls"]
                .as_array_mut()
                .unwrap();
            calls.truncate(1);
            calls[0]["function"]["name"] = json!(name);
            calls[0]["function"]["arguments"] = json!(arguments.to_string());
            reply
        }
    };
    Reply::json(200, call)
}

/// The recorded text answer of `route`'s wire.
fn recorded_text(route: &str) -> Reply {
    let text = match route {
        "POST /responses" => RESPONSES_TEXT,
        "POST /messages" => MESSAGES_TEXT,
        _ => CHAT_TEXT,
    };
    Reply::text(200, "application/json", text)
}

/// The JSON bodies that reached `path`, in order.
fn sent(upstream: &ScriptedUpstream, path: &str) -> Vec<Value> {
    upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == path)
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

/// The tool `name` among those a request offered, in its wire's spelling.
fn offered<'a>(request: &'a Value, name: &str) -> &'a Value {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name || t["function"]["name"] == name)
        .unwrap_or_else(|| panic!("{name} offered in {request}"))
}

const PARIS: &str = r#"{"city":"Paris"}"#;

/// The Agents SDK's `@function_tool` (strict) runs its loop on each API: the call comes to the
/// SDK, which runs the tool and sends its result back; the upstream answers. On the Responses
/// wire the tool goes up strict; on the Messages wire, which has no strict mode, chatd checked
/// the arguments against the schema itself.
#[tokio::test]
async fn the_agents_sdk_runs_its_function_tools_on_both_apis() {
    let Some(python) = python() else { return };
    let paris: Value = serde_json::from_str(PARIS).unwrap();
    let upstream = ScriptedUpstream::start([
        (
            "POST /responses",
            recorded_call("POST /responses", "get_weather", paris.clone()),
        ),
        ("POST /responses", recorded_text("POST /responses")),
        (
            "POST /messages",
            recorded_call("POST /messages", "get_weather", paris),
        ),
        ("POST /messages", recorded_text("POST /messages")),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    for (case, model, path) in [
        ("agents_responses", "provider_a/gpt-4o-mini", "/responses"),
        ("agents_chat", "provider_b/claude-haiku-4-5", "/messages"),
    ] {
        let out = framework(&python, &base, TOKEN, case, model).await;
        assert!(out.get("raised").is_none(), "{case}: {out}");
        assert_eq!(out["calls"], json!([{"city": "Paris"}]), "{case}: {out}");
        assert!(!out["final"].as_str().unwrap().is_empty(), "{case}: {out}");
        let requests = sent(&upstream, path);
        assert_eq!(requests.len(), 2, "{case}");
        let tool = offered(&requests[0], "get_weather");
        let result = requests[1].to_string();
        assert!(result.contains("Sunny, 22 C in Paris"), "{case}: {result}");
        if path == "/responses" {
            assert_eq!(tool["strict"], true, "{tool}");
        } else {
            assert!(
                tool.get("strict").is_none(),
                "the Messages wire has none: {tool}"
            );
        }
    }
}

/// `openai.pydantic_function_tool` and `chat.completions.parse`: the strict tool goes up as
/// strict on the chat completions wire, and the SDK parses the call's arguments into its model.
#[tokio::test]
async fn a_pydantic_function_tool_is_parsed_by_the_sdk() {
    let Some(python) = python() else { return };
    let route = "POST /chat/completions";
    let paris: Value = serde_json::from_str(PARIS).unwrap();
    let upstream =
        ScriptedUpstream::start([(route, recorded_call(route, "getweather", paris))]).await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let out = framework(&python, &base, TOKEN, "pydantic_tool", "provider_c/grok-4").await;
    assert!(out.get("raised").is_none(), "{out}");
    assert_eq!(out["name"], "GetWeather", "the client's name back: {out}");
    assert_eq!(out["parsed"], json!({"city": "Paris"}));
    let request = &sent(&upstream, "/chat/completions")[0];
    assert_eq!(offered(request, "getweather")["function"]["strict"], true);
}

/// LangChain's `bind_tools(strict=True)`: its tool runs and its result reaches the upstream;
/// `with_structured_output(method="function_calling")` sends `parallel_tool_calls: false` with
/// a named `tool_choice`, which reaches the Messages wire as `disable_parallel_tool_use`; the
/// default method (a strict JSON schema) parses the answer's text.
#[tokio::test]
async fn langchain_binds_tools_and_structures_output_by_either_method() {
    let Some(python) = python() else { return };
    let chat = "POST /chat/completions";
    let messages = "POST /messages";
    let forecast = json!({"city": "Paris", "temperature_c": 22.5});
    let mut json_answer: Value = serde_json::from_str(CHAT_TEXT).unwrap();
    json_answer["choices"][0]["message"]["content"] = json!(forecast.to_string());
    let paris: Value = serde_json::from_str(PARIS).unwrap();
    let upstream = ScriptedUpstream::start([
        (chat, recorded_call(chat, "get_weather", paris)),
        (chat, recorded_text(chat)),
        (
            messages,
            recorded_call(messages, "forecast", forecast.clone()),
        ),
        (chat, Reply::json(200, json_answer)),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);

    let out = framework(&python, &base, TOKEN, "lc_bind_tools", "provider_c/grok-4").await;
    assert!(out.get("raised").is_none(), "{out}");
    assert_eq!(out["calls"], json!([{"city": "Paris"}]));
    let requests = sent(&upstream, "/chat/completions");
    assert_eq!(
        offered(&requests[0], "get_weather")["function"]["strict"],
        true
    );
    assert!(requests[1].to_string().contains("Sunny, 22 C in Paris"));

    let out = framework(
        &python,
        &base,
        TOKEN,
        "lc_structured_function_calling",
        "provider_b/claude-haiku-4-5",
    )
    .await;
    assert!(out.get("raised").is_none(), "{out}");
    assert_eq!(out["parsed"], forecast);
    let request = &sent(&upstream, "/messages")[0];
    assert_eq!(request["tool_choice"]["type"], "tool", "{request}");
    assert_eq!(request["tool_choice"]["name"], "forecast", "{request}");
    assert_eq!(
        request["tool_choice"]["disable_parallel_tool_use"], true,
        "{request}"
    );

    let out = framework(&python, &base, TOKEN, "lc_structured", "provider_c/grok-4").await;
    assert!(out.get("raised").is_none(), "{out}");
    assert_eq!(out["parsed"], forecast);
    let request = &sent(&upstream, "/chat/completions")[2];
    assert_eq!(
        request["response_format"]["type"], "json_schema",
        "{request}"
    );
    assert_eq!(
        request["response_format"]["json_schema"]["strict"], true,
        "{request}"
    );
}
