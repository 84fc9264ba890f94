//! OpenAI's options beyond temperature and max tokens on `/openai/v1` (`http/openai/options.rs`,
//! WIT 0.1.2's `turn-options`): `top_p`, `stop`, `tool_choice` and `response_format` reach each
//! provider's upstream as its own wire spells them, an option a provider's wire lacks is a 400
//! naming it before anything goes upstream, and a tool choice that forces a call holds for the
//! tool loop's first round only.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::openai::{TOKEN, all_providers};
use crate::openai_sdk::{python, python_sdk};

const CHAT_TEXT: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");
const CHAT_CALLS: &str =
    include_str!("../fixtures/upstream/openai_chat/06_nonstream_parallel_tool_calls.response.json");
const MESSAGES_TEXT: &str =
    include_str!("../fixtures/upstream/anthropic_messages/01_nonstream_text.response.json");
const RESPONSES_TEXT: &str =
    include_str!("../fixtures/upstream/openai_responses/01_nonstream_text.response.json");

/// The client's tool, under a name the WIT does not allow (`get_weather` upstream).
fn tools() -> Value {
    json!([{"type": "function", "function": {
        "name": "Get-Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}
    }}])
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]})
}

/// The JSON body of the last request that reached `path`.
fn sent(upstream: &ScriptedUpstream, path: &str) -> Value {
    let request = upstream
        .requests()
        .into_iter()
        .rfind(|r| r.path == path)
        .unwrap_or_else(|| panic!("nothing reached {path}"));
    serde_json::from_slice(&request.body).unwrap()
}

/// The paths of the completions that went upstream (model listings are GETs).
fn posted(upstream: &ScriptedUpstream) -> Vec<String> {
    upstream
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.path)
        .collect()
}

async fn post(
    server: &crate::support::TestServer,
    route: &str,
    body: Value,
) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/openai/v1/{route}", server.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

/// Through the official Python SDK: each provider's upstream gets the options as its wire has
/// them (chat completions', the Responses API's `text.format` and flat named choice, the
/// Messages API's `stop_sequences` and `any`), the client's tool under the WIT's name.
#[tokio::test]
async fn each_provider_gets_the_options_in_its_own_wire() {
    let Some(python) = python() else { return };
    let upstream = ScriptedUpstream::start([
        (
            "POST /chat/completions",
            Reply::text(200, "application/json", CHAT_TEXT),
        ),
        (
            "POST /mine/chat/completions",
            Reply::text(200, "application/json", CHAT_TEXT),
        ),
        (
            "POST /responses",
            Reply::text(200, "application/json", RESPONSES_TEXT),
        ),
        (
            "POST /messages",
            Reply::text(200, "application/json", MESSAGES_TEXT),
        ),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let asked = json!([{"role": "user", "content": "Weather in Paris?"}]).to_string();
    let named = json!({"type": "function", "function": {"name": "Get-Weather"}});
    let format = json!({"type": "json_schema",
        "json_schema": {"name": "weather", "schema": schema(), "strict": true}});
    let cases = [
        (
            "provider_c/grok-4",
            json!({"top_p": 0.5, "stop": ["END"], "tools": tools(), "tool_choice": named,
                   "response_format": format}),
            "/chat/completions",
        ),
        (
            "mine/meta-llama/llama-3.3-70b-instruct",
            json!({"stop": "END", "response_format": {"type": "json_object"}}),
            "/mine/chat/completions",
        ),
        (
            "provider_a/gpt-4o-mini",
            json!({"top_p": 0.5, "tools": tools(), "tool_choice": "required",
                   "response_format": format}),
            "/responses",
        ),
        (
            "provider_b/claude-haiku-4-5",
            json!({"top_p": 0.5, "stop": ["END", "STOP"], "tools": tools(),
                   "tool_choice": "required"}),
            "/messages",
        ),
    ];
    for (model, extra, _) in &cases {
        let answer = python_sdk(
            &python,
            &base,
            TOKEN,
            &["chat", model, &asked, &extra.to_string()],
        )
        .await;
        assert_eq!(answer["finish_reason"], "stop", "{model}: {answer}");
    }
    let c = sent(&upstream, "/chat/completions");
    assert_eq!(c["top_p"], json!(0.5));
    assert_eq!(c["stop"], json!(["END"]));
    assert_eq!(
        c["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    assert_eq!(
        c["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "weather", "schema": schema(), "strict": true}})
    );
    let mine = sent(&upstream, "/mine/chat/completions");
    assert_eq!(mine["stop"], json!(["END"]));
    assert_eq!(mine["response_format"], json!({"type": "json_object"}));
    assert!(
        mine.get("top_p").is_none() && mine.get("tool_choice").is_none(),
        "{mine}"
    );
    let a = sent(&upstream, "/responses");
    assert_eq!(a["top_p"], json!(0.5));
    assert_eq!(a["tool_choice"], "required");
    assert_eq!(
        a["text"],
        json!({"format": {"type": "json_schema", "name": "weather", "schema": schema(), "strict": true}})
    );
    let b = sent(&upstream, "/messages");
    assert_eq!(b["top_p"], json!(0.5));
    assert_eq!(b["stop_sequences"], json!(["END", "STOP"]));
    assert_eq!(b["tool_choice"], json!({"type": "any"}));
}

/// An option a provider's wire lacks is a 400 naming it, on chat completions and on
/// `/responses` (under the Responses API's own name), and nothing goes upstream.
#[tokio::test]
async fn an_option_a_provider_lacks_is_refused_by_name() {
    let upstream = ScriptedUpstream::start([]).await;
    let (server, _files) = all_providers(&upstream).await;
    let user = json!([{"role": "user", "content": "Hi"}]);
    let cases = [
        ("provider_a/gpt-4o-mini", json!({"stop": ["END"]}), "stop"),
        (
            "provider_b/claude-haiku-4-5",
            json!({"response_format": {"type": "json_object"}}),
            "response_format",
        ),
        (
            "provider_agent/hermes-custom",
            json!({"top_p": 0.5}),
            "top_p",
        ),
        ("provider_agent/hermes-custom", json!({"stop": "x"}), "stop"),
    ];
    let agent = crate::openai_tools::with_agent(&upstream, &upstream).await;
    for (model, extra, param) in cases {
        let mut body = json!({"model": model, "messages": user});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let on = if model.starts_with("provider_agent") {
            &agent
        } else {
            &server
        };
        let (status, error) = post(on, "chat/completions", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{model} {extra}: {error}");
        assert_eq!(error["error"]["param"], param, "{error}");
        assert_eq!(error["error"]["code"], "unsupported_parameter", "{error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(model.split('/').next().unwrap()),
            "{message}"
        );
    }
    let (status, error) = post(
        &server,
        "responses",
        json!({"model": "provider_b/claude-haiku-4-5", "input": "Hi",
               "text": {"format": {"type": "json_object"}}}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["error"]["param"], "text.format", "{error}");
    assert!(posted(&upstream).is_empty(), "nothing went upstream");
}

/// Bad values are refused naming the field, and a default value sets nothing.
#[tokio::test]
async fn bad_option_values_are_refused_naming_the_field() {
    let upstream = ScriptedUpstream::start([(
        "POST /chat/completions",
        Reply::text(200, "application/json", CHAT_TEXT),
    )])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let user = json!([{"role": "user", "content": "Hi"}]);
    let cases = [
        (json!({"top_p": 1.5}), "top_p"),
        (json!({"stop": ["a", "b", "c", "d", "e"]}), "stop"),
        (json!({"stop": ["a", ""]}), "stop[1]"),
        (json!({"tool_choice": "required"}), "tool_choice"),
        (
            json!({"tools": tools(), "tool_choice": {"type": "function", "function": {"name": "other"}}}),
            "tool_choice.function.name",
        ),
        (
            json!({"response_format": {"type": "xml"}}),
            "response_format.type",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {"schema": {}}}}),
            "response_format.json_schema.name",
        ),
    ];
    for (extra, param) in cases {
        let mut body = json!({"model": "provider_c/grok-4", "messages": user});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let (status, error) = post(&server, "chat/completions", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{extra}: {error}");
        assert_eq!(error["error"]["param"], param, "{error}");
    }
    assert!(posted(&upstream).is_empty(), "nothing went upstream");
    // The defaults: accepted by any provider, nothing added to the wire.
    let body = json!({"model": "provider_c/grok-4", "messages": user, "top_p": 1, "stop": [],
        "tool_choice": "auto", "response_format": {"type": "text"}});
    let (status, answer) = post(&server, "chat/completions", body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let c = sent(&upstream, "/chat/completions");
    for absent in ["top_p", "stop", "tool_choice", "response_format"] {
        assert!(c.get(absent).is_none(), "{absent}: {c}");
    }
}

/// `/responses` spells a named choice flat and the format under `text`: both reach
/// provider_a's wire.
#[tokio::test]
async fn responses_options_reach_the_upstream() {
    let upstream = ScriptedUpstream::start([(
        "POST /responses",
        Reply::text(200, "application/json", RESPONSES_TEXT),
    )])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let tools = json!([{"type": "function", "name": "Get-Weather",
        "parameters": {"type": "object", "properties": {}}}]);
    let (status, answer) = post(
        &server,
        "responses",
        json!({"model": "provider_a/gpt-4o-mini", "input": "Weather?", "tools": tools,
               "tool_choice": {"type": "function", "name": "Get-Weather"}, "top_p": 0.25,
               "text": {"format": {"type": "json_schema", "name": "w", "schema": schema()}}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    // The response repeats the options as the client set them.
    assert_eq!(
        answer["tool_choice"],
        json!({"type": "function", "name": "Get-Weather"})
    );
    assert_eq!(answer["top_p"], json!(0.25));
    assert_eq!(answer["text"]["format"]["type"], "json_schema");
    let a = sent(&upstream, "/responses");
    assert_eq!(
        a["tool_choice"],
        json!({"type": "function", "name": "get_weather"})
    );
    assert_eq!(a["top_p"], json!(0.25));
    assert_eq!(
        a["text"],
        json!({"format": {"type": "json_schema", "name": "w", "schema": schema()}})
    );
}

/// A choice that forces a call holds for the loop's first round only: with `chatd_tools`, the
/// model's search runs and the next round is free to answer.
#[tokio::test]
async fn a_forced_tool_choice_holds_for_the_first_round_only() {
    let mut calls: Value = serde_json::from_str(CHAT_CALLS).unwrap();
    let tool_calls = calls["choices"][0]["message"]["tool_calls"]
        .as_array_mut()
        .unwrap();
    tool_calls.truncate(1);
    tool_calls[0]["function"] =
        json!({"name": "web_search", "arguments": "{\"query\":\"UK capital\"}"});
    let upstream = ScriptedUpstream::start([
        ("POST /chat/completions", Reply::json(200, calls)),
        ("POST /search", crate::live_replies::exa()),
        (
            "POST /chat/completions",
            Reply::text(200, "application/json", CHAT_TEXT),
        ),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let body = json!({"model": "provider_c/grok-4", "chatd_tools": ["web_search"],
        "tool_choice": "required", "stop": ["END"],
        "messages": [{"role": "user", "content": "Capital of the UK?"}]});
    let (status, answer) = post(&server, "chat/completions", body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop", "{answer}");
    let rounds: Vec<Value> = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == "/chat/completions")
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(rounds.len(), 2);
    assert_eq!(rounds[0]["tool_choice"], "required");
    assert!(rounds[1].get("tool_choice").is_none(), "{}", rounds[1]);
    // The rest hold on every round.
    assert_eq!(rounds[1]["stop"], json!(["END"]));
}
