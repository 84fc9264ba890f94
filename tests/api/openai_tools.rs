//! The client's own tools on `/openai/v1/chat/completions` (`http/openai/client_tools.rs`), with
//! the official OpenAI Python SDK: the model's call of a client tool ends the turn with
//! `finish_reason: "tool_calls"` under the client's name (OpenAI's `Get-Weather` is the WIT's
//! `get_weather` upstream, and back); the next request's assistant `tool_calls` and `tool`
//! message reach each provider's upstream as its own call and result; a streamed call comes as
//! a `tool_calls` delta with its `index`; and what chatd cannot honour is refused by name.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::live_replies::{C, call, paced, text};
use crate::openai::{TOKEN, all_providers};
use crate::openai_sdk::{python, python_sdk};

const CHAT_CALLS: &str =
    include_str!("../fixtures/upstream/openai_chat/06_nonstream_parallel_tool_calls.response.json");
const MESSAGES_CALL: &str =
    include_str!("../fixtures/upstream/anthropic_messages/02a_nonstream_tool_use.response.json");
const RESPONSES_CALL: &str =
    include_str!("../fixtures/upstream/openai_responses/08a_nonstream_function_call.response.json");
const CHAT_TEXT: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");
const MESSAGES_TEXT: &str =
    include_str!("../fixtures/upstream/anthropic_messages/01_nonstream_text.response.json");
const RESPONSES_TEXT: &str =
    include_str!("../fixtures/upstream/openai_responses/01_nonstream_text.response.json");

/// The tool as the client offers it: a name OpenAI allows and the WIT does not.
fn tools() -> Value {
    json!([{"type": "function", "function": {
        "name": "Get-Weather",
        "description": "The weather in a city, now.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}
    }}])
}

/// Each wire's recorded call, renamed to the WIT's `get_weather`: its JSON and its call id.
fn recorded_calls() -> [(Value, String); 3] {
    let mut chat: Value = serde_json::from_str(CHAT_CALLS).unwrap();
    let calls = chat["choices"][0]["message"]["tool_calls"]
        .as_array_mut()
        .unwrap();
    calls.truncate(1);
    calls[0]["function"]["name"] = json!("get_weather");
    let chat_id = calls[0]["id"].as_str().unwrap().to_string();
    let mut messages: Value = serde_json::from_str(MESSAGES_CALL).unwrap();
    messages["content"][0]["name"] = json!("get_weather");
    let messages_id = messages["content"][0]["id"].as_str().unwrap().to_string();
    let mut responses: Value = serde_json::from_str(RESPONSES_CALL).unwrap();
    responses["output"][0]["name"] = json!("get_weather");
    let responses_id = responses["output"][0]["call_id"]
        .as_str()
        .unwrap()
        .to_string();
    [
        (responses, responses_id),
        (messages, messages_id),
        (chat, chat_id),
    ]
}

/// On provider_a, _b and _c: the model's call reaches the client under its name, the turn ends
/// with `tool_calls`; sent back with the result, the upstream gets both in its own wire and
/// answers.
#[tokio::test]
async fn a_client_tool_call_ends_the_turn_and_its_result_reaches_every_provider() {
    let Some(python) = python() else { return };
    let [(responses, a_id), (messages, b_id), (chat, c_id)] = recorded_calls();
    let upstream = ScriptedUpstream::start([
        ("POST /responses", Reply::json(200, responses)),
        (
            "POST /responses",
            Reply::text(200, "application/json", RESPONSES_TEXT),
        ),
        ("POST /messages", Reply::json(200, messages)),
        (
            "POST /messages",
            Reply::text(200, "application/json", MESSAGES_TEXT),
        ),
        ("POST /chat/completions", Reply::json(200, chat)),
        (
            "POST /chat/completions",
            Reply::text(200, "application/json", CHAT_TEXT),
        ),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let extra = json!({"tools": tools(), "tool_choice": "auto"}).to_string();
    let asked = json!([{"role": "user", "content": "Weather in Paris?"}]);
    for (model, path, id) in [
        ("provider_a/gpt-4o-mini", "/responses", a_id),
        ("provider_b/claude-haiku-4-5", "/messages", b_id),
        ("provider_c/grok-4", "/chat/completions", c_id),
    ] {
        let answer = python_sdk(
            &python,
            &base,
            TOKEN,
            &["chat", model, &asked.to_string(), &extra],
        )
        .await;
        assert_eq!(answer["finish_reason"], "tool_calls", "{model}: {answer}");
        let message = &answer["raw"]["choices"][0]["message"];
        let calls = message["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "{message}");
        assert_eq!(calls[0]["id"], id.as_str());
        assert_eq!(calls[0]["type"], "function");
        assert_eq!(calls[0]["function"]["name"], "Get-Weather", "{model}");
        let arguments = calls[0]["function"]["arguments"].as_str().unwrap();
        assert!(
            serde_json::from_str::<Value>(arguments).is_ok(),
            "{arguments}"
        );
        // The upstream was offered the tool under the WIT's name.
        let first = last_request(&upstream, path);
        assert!(first.contains("\"get_weather\""), "{model}: {first}");
        assert!(first.contains("The weather in a city, now."), "{first}");
        assert!(!first.contains("Get-Weather"), "{first}");

        // The result sent back reaches the upstream as its own call and result.
        let mut next = asked.as_array().unwrap().clone();
        next.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
        next.push(json!({"role": "tool", "tool_call_id": id, "content": "Sunny, 24 °C"}));
        let answer = python_sdk(
            &python,
            &base,
            TOKEN,
            &["chat", model, &Value::Array(next).to_string(), &extra],
        )
        .await;
        assert_eq!(answer["finish_reason"], "stop", "{model}: {answer}");
        assert!(!answer["content"].as_str().unwrap().is_empty(), "{answer}");
        let second = last_request(&upstream, path);
        assert!(second.contains(&id), "{model}: {second}");
        assert!(second.contains("Sunny, 24 °C"), "{model}: {second}");
        assert!(second.contains("\"get_weather\""), "{model}: {second}");
    }
    // On chat completions' wire, as the recordings have it: the call on the assistant
    // message, the result as a `tool` message naming it.
    let sent: Value = serde_json::from_str(&last_request(&upstream, "/chat/completions")).unwrap();
    let messages = sent["messages"].as_array().unwrap();
    let tool = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool message");
    let assistant = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the assistant's call");
    assert_eq!(tool["tool_call_id"], assistant["tool_calls"][0]["id"]);
}

/// The body of the last request that reached `path`.
fn last_request(upstream: &ScriptedUpstream, path: &str) -> String {
    let sent = upstream
        .requests()
        .into_iter()
        .rfind(|r| r.path == path)
        .unwrap_or_else(|| panic!("nothing reached {path}"));
    String::from_utf8_lossy(&sent.body).into_owned()
}

/// Streamed: the text before the call as it came, then the call in a `tool_calls` delta with
/// its `index`, id and the client's name, and `finish_reason: "tool_calls"`.
#[tokio::test]
async fn a_streamed_client_tool_call_comes_with_its_index() {
    let Some(python) = python() else { return };
    let items = [
        text(&["Let me check. "]),
        call("call_1", "get_weather", r#"{"city":"Paris"}"#),
        call("call_2", "get_weather", r#"{"city":"Lyon"}"#),
    ];
    let upstream = ScriptedUpstream::start([(C.route, paced(C, &items))]).await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let extra = json!({"tools": tools()}).to_string();
    let asked = json!([{"role": "user", "content": "Paris and Lyon?"}]).to_string();
    let out = python_sdk(
        &python,
        &base,
        TOKEN,
        &["stream", "provider_c/grok-4", &asked, &extra],
    )
    .await;
    assert!(out.get("raised").is_none(), "{out}");
    let chunks = out["chunks"].as_array().unwrap();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Let me check. ");
    let deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].as_array())
        .flatten()
        .collect();
    assert_eq!(deltas.len(), 2, "{out}");
    for (index, (delta, (id, city))) in deltas
        .iter()
        .zip([("call_1", "Paris"), ("call_2", "Lyon")])
        .enumerate()
    {
        assert_eq!(delta["index"], index);
        assert_eq!(delta["id"], id);
        assert_eq!(delta["type"], "function");
        assert_eq!(delta["function"]["name"], "Get-Weather");
        let arguments: Value =
            serde_json::from_str(delta["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments["city"], city);
    }
    let finishes: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(finishes, ["tool_calls"]);
}

/// What chatd cannot honour with a client's tools is refused by name, before anything goes
/// upstream.
#[tokio::test]
async fn what_cannot_be_honoured_with_client_tools_is_refused_by_name() {
    let upstream = ScriptedUpstream::start([]).await;
    let (server, _files) = all_providers(&upstream).await;
    let user = json!({"role": "user", "content": "Hi"});
    let cases = [
        (
            json!({"tools": [{"type": "function", "function": {"name": "get weather"}}]}),
            "tools[0].function.name",
            "invalid_request",
        ),
        (
            json!({"tools": [{"type": "function", "function": {"name": "f", "strict": "yes"}}]}),
            "tools[0].function.strict",
            "invalid_request",
        ),
        (
            json!({"messages": [user, {"role": "tool", "tool_call_id": "nope", "content": "x"}]}),
            "messages[1].tool_call_id",
            "invalid_request",
        ),
    ];
    for (extra, param, code) in cases {
        let mut body = json!({"model": "provider_c/grok-4", "messages": [user]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let response = reqwest::Client::new()
            .post(format!("{}/openai/v1/chat/completions", server.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{extra}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["param"], param, "{error}");
        assert_eq!(error["error"]["code"], code, "{error}");
    }
    let posted: Vec<String> = upstream
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.path)
        .collect();
    assert!(posted.is_empty(), "no completion went upstream: {posted:?}");
}

/// A server of provider_c on `c` with provider_agent (which runs its own tools) on `agent`,
/// provider_c falling back to it after one try.
pub(crate) async fn with_agent(
    c: &ScriptedUpstream,
    agent: &ScriptedUpstream,
) -> crate::support::TestServer {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let config = crate::support::write_config(
        dir.path(),
        "[retry.providers.provider_c]\nattempts = 1\n\
         fallback = { provider = \"provider_agent\", model = \"hermes-custom\" }\n",
    );
    let args = [
        ("--provider-c-base-url", c.url()),
        ("--provider-c-api-key", "kc".into()),
        ("--agent-api-base-url", agent.url()),
        ("--agent-api-key", "kg".into()),
        ("--agent-model", "hermes-custom".into()),
    ];
    crate::support::TestServer::start_with(crate::support::Options {
        token: Some(TOKEN.into()),
        args: args
            .into_iter()
            .flat_map(|(flag, value)| [flag.to_string(), value])
            .collect(),
        config: Some(config),
        dir: Some(dir),
        ..crate::support::Options::default()
    })
    .await
}

async fn post(server: &crate::support::TestServer, body: Value) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/openai/v1/chat/completions", server.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

/// provider_agent takes no client tools, nor their exchange; and the operator's fallback does
/// not answer a request with client tools when it takes none (the tools would be dropped): the
/// named provider's failure is the answer, while the same request without tools falls back.
#[tokio::test]
async fn a_provider_without_tools_refuses_them_and_is_no_fallback_for_them() {
    let overloaded = || {
        Reply::json(
            529,
            json!({"error": {"message": "overloaded", "type": "overloaded"}}),
        )
    };
    let c = ScriptedUpstream::start([(C.route, overloaded()), (C.route, overloaded())]).await;
    let agent = ScriptedUpstream::start([(
        "POST /chat/completions",
        Reply::text(200, "application/json", CHAT_TEXT),
    )])
    .await;
    let server = with_agent(&c, &agent).await;
    let user = json!({"role": "user", "content": "Weather?"});
    let asked = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
        "type": "function", "function": {"name": "w", "arguments": "{}"}}]});
    let answered = json!({"role": "tool", "tool_call_id": "c1", "content": "Sunny"});
    for (extra, param) in [
        (json!({"tools": tools()}), "tools"),
        (
            json!({"messages": [user, asked, answered]}),
            "messages[1].tool_calls",
        ),
        (
            json!({"messages": [user, answered]}),
            "messages[1].tool_call_id",
        ),
    ] {
        let mut body = json!({"model": "provider_agent/hermes-custom", "messages": [user]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let (status, error) = post(&server, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
        assert_eq!(error["error"]["param"], param, "{error}");
    }

    // provider_c fails; with client tools its failure is the answer, without them the fallback's.
    let (status, error) = post(
        &server,
        json!({"model": "provider_c/grok-4", "messages": [user], "tools": tools()}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("provider_c"),
        "{error}"
    );
    let posted = |u: &ScriptedUpstream| u.requests().iter().filter(|r| r.method == "POST").count();
    assert_eq!(posted(&agent), 0, "the fallback was not asked");
    let (status, answer) = post(
        &server,
        json!({"model": "provider_c/grok-4", "messages": [user]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["model"], "provider_agent/hermes-custom");
    assert_eq!(posted(&agent), 1);
}
