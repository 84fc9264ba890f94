//! `POST /openai/v1/responses` (`http/openai/responses.rs`), stateless, with the official OpenAI
//! Python SDK: a string input with `instructions` on every provider; items with a client's
//! `function_call` and its `function_call_output` reaching the upstream; a call of the client's
//! tool answered as a `function_call` item under its name; the stream's events in OpenAI's
//! order, as the SDK's own classes; and what a stateless server cannot do refused by name.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::live_replies::{A, B, C, call, paced, text};
use crate::openai::{TOKEN, all_providers};
use crate::openai_sdk::{python, python_sdk};

const CHAT_TEXT: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");
const MESSAGES_TEXT: &str =
    include_str!("../fixtures/upstream/anthropic_messages/01_nonstream_text.response.json");
const RESPONSES_TEXT: &str =
    include_str!("../fixtures/upstream/openai_responses/01_nonstream_text.response.json");

/// A string input and `instructions` on provider_a, _b and _c: the SDK's `output_text`, one
/// completed message item, the usage; each upstream got the instructions.
#[tokio::test]
async fn the_python_sdk_gets_responses_from_every_provider() {
    let Some(python) = python() else { return };
    let upstream = ScriptedUpstream::start([
        (
            "POST /responses",
            Reply::text(200, "application/json", RESPONSES_TEXT),
        ),
        (
            "POST /messages",
            Reply::text(200, "application/json", MESSAGES_TEXT),
        ),
        (
            "POST /chat/completions",
            Reply::text(200, "application/json", CHAT_TEXT),
        ),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let extra = json!({"instructions": "Answer as a pirate.", "store": false}).to_string();
    for (model, expected, path) in [
        (
            "provider_a/gpt-4o-mini",
            "Ahoy! How can I help you today?",
            "/responses",
        ),
        ("provider_b/claude-haiku-4-5", "2 + 2 = 4", "/messages"),
        (
            "provider_c/grok-4",
            "Hello! How can I assist you today?",
            "/chat/completions",
        ),
    ] {
        let out = python_sdk(
            &python,
            &base,
            TOKEN,
            &["respond", model, &json!("Hello").to_string(), &extra],
        )
        .await;
        assert_eq!(out["output_text"], expected, "{model}: {out}");
        let raw = &out["raw"];
        assert_eq!(raw["object"], "response");
        assert_eq!(raw["status"], "completed");
        assert_eq!(raw["model"], model);
        assert!(raw["id"].as_str().unwrap().starts_with("resp_"));
        let output = raw["output"].as_array().unwrap();
        assert_eq!(output.len(), 1, "{raw}");
        assert_eq!(output[0]["type"], "message");
        assert_eq!(output[0]["content"][0]["type"], "output_text");
        assert!(raw["usage"]["total_tokens"].as_u64().unwrap() > 0, "{raw}");
        let sent = upstream
            .requests()
            .into_iter()
            .rfind(|r| r.path == path)
            .unwrap();
        assert!(
            String::from_utf8_lossy(&sent.body).contains("Answer as a pirate."),
            "{model}"
        );
    }
}

/// The client's tool: the model's call comes back as a `function_call` item under the client's
/// name; the next request's `function_call` and `function_call_output` items reach the upstream
/// as its own call and result.
#[tokio::test]
async fn a_client_function_call_round_trips_as_items() {
    let Some(python) = python() else { return };
    let upstream = ScriptedUpstream::start([
        (
            C.route,
            paced(C, &[call("call_9", "get_weather", r#"{"city":"Oslo"}"#)]),
        ),
        (C.route, paced(C, &[text(&["It is ", "snowing."])])),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let tools = json!([{"type": "function", "name": "Get-Weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    let extra = json!({"tools": tools}).to_string();
    let input = json!([{"role": "user", "content": "Oslo?"}]);
    let out = python_sdk(
        &python,
        &base,
        TOKEN,
        &[
            "respond_stream",
            "provider_c/grok-4",
            &input.to_string(),
            &extra,
        ],
    )
    .await;
    let events = out["events"].as_array().unwrap_or_else(|| panic!("{out}"));
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed"
        ],
        "{out}"
    );
    let sequence: Vec<u64> = events
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(sequence, (0..7).collect::<Vec<u64>>());
    let completed = &events[6]["response"];
    let item = &completed["output"][0];
    assert_eq!(item["type"], "function_call", "{completed}");
    assert_eq!(item["name"], "Get-Weather");
    assert_eq!(item["call_id"], "call_9");
    assert_eq!(events[2]["class"], "ResponseOutputItemAddedEvent");

    // The call and its output sent back as items.
    let mut next = input.as_array().unwrap().clone();
    next.push(item.clone());
    sent_back(&python, &base, &extra, next, &upstream).await;
}
/// `next` (the conversation with the model's `function_call` item) sent back with the call's
/// output: the model's answer streams, and the upstream got the call and its result as its own.
async fn sent_back(
    python: &std::path::Path,
    base: &str,
    extra: &str,
    mut next: Vec<Value>,
    upstream: &ScriptedUpstream,
) {
    next.push(
        json!({"type": "function_call_output", "call_id": "call_9", "output": "Snow, -3 °C"}),
    );
    let out = python_sdk(
        python,
        base,
        TOKEN,
        &[
            "respond_stream",
            "provider_c/grok-4",
            &Value::Array(next).to_string(),
            extra,
        ],
    )
    .await;
    let events = out["events"].as_array().unwrap();
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "It is snowing.", "{out}");
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"response.created"));
    assert_eq!(kinds.last(), Some(&"response.completed"));
    assert_eq!(
        kinds[2..4],
        ["response.output_item.added", "response.content_part.added"]
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_text.done")
        .unwrap();
    assert_eq!(done["text"], "It is snowing.");
    let sent = upstream
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/chat/completions")
        .unwrap()
        .json();
    let messages = sent["messages"].as_array().unwrap();
    let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["tool_call_id"], "call_9");
    assert_eq!(result["content"], "Snow, -3 °C");
    let asked = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(asked["tool_calls"][0]["function"]["name"], "get_weather");
}

/// Streams on provider_a and _b too: the text's events, then `response.completed` with the
/// whole text.
#[tokio::test]
async fn responses_stream_on_every_provider() {
    let Some(python) = python() else { return };
    let items = [text(&["Fair ", "winds."])];
    let upstream =
        ScriptedUpstream::start([(A.route, paced(A, &items)), (B.route, paced(B, &items))]).await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    for model in ["provider_a/gpt-4o-mini", "provider_b/claude-haiku-4-5"] {
        let out = python_sdk(
            &python,
            &base,
            TOKEN,
            &["respond_stream", model, &json!("Hi").to_string()],
        )
        .await;
        let events = out["events"].as_array().unwrap_or_else(|| panic!("{out}"));
        let last = events.last().unwrap();
        assert_eq!(last["type"], "response.completed", "{model}: {out}");
        assert_eq!(
            last["response"]["output"][0]["content"][0]["text"],
            "Fair winds."
        );
        assert!(last["response"]["usage"]["total_tokens"].as_u64().unwrap() > 0);
    }
    // The SDK's own helper rebuilds the response from the events (their order and ids).
    let upstream = ScriptedUpstream::start([(A.route, paced(A, &items))]).await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let out = python_sdk(
        &python,
        &base,
        TOKEN,
        &[
            "respond_helper",
            "provider_a/gpt-4o-mini",
            &json!("Hi").to_string(),
        ],
    )
    .await;
    assert_eq!(out["output_text"], "Fair winds.", "{out}");
    assert_eq!(out["status"], "completed");
}

/// What a stateless server cannot do is refused naming the Responses field.
#[tokio::test]
async fn what_a_stateless_server_cannot_do_is_refused_by_name() {
    let upstream = ScriptedUpstream::start([]).await;
    let (server, _files) = all_providers(&upstream).await;
    let cases = [
        (
            json!({"input": "hi", "previous_response_id": "resp_1"}),
            "previous_response_id",
        ),
        (json!({"input": "hi", "store": true}), "store"),
        (
            json!({"input": [{"type": "reasoning", "summary": []}]}),
            "input[0].type",
        ),
        (
            json!({"input": [{"role": "user", "content": [{"type": "input_image",
                "image_url": "https://example.com/a.png"}]}]}),
            "input[0].content[0].image_url",
        ),
        (
            json!({"input": "hi", "tools": [{"type": "function", "name": "a b"}]}),
            "tools[0].name",
        ),
        (
            json!({"input": [{"type": "function_call_output", "call_id": "nope",
                "output": "x"}]}),
            "input[0].call_id",
        ),
        (
            json!({"input": "hi", "max_output_tokens": 0}),
            "max_output_tokens",
        ),
        // The fields chat completions has too, read where the Responses API has them and
        // named so.
        (
            json!({"input": "hi", "tools": [{"type": "function", "name": "f", "strict": "yes"}]}),
            "tools[0].strict",
        ),
        (
            json!({"input": "hi", "tools": [{"type": "function", "name": "f"}],
                "tool_choice": {"type": "function", "name": "g"}}),
            "tool_choice.name",
        ),
        (
            json!({"input": "hi", "text": {"format": {"type": "json_schema", "name": "a b",
                "schema": {}}}}),
            "text.format.name",
        ),
        (
            json!({"input": "hi", "reasoning": {"effort": "huge"}}),
            "reasoning.effort",
        ),
        (
            json!({"input": "hi", "text": {"verbosity": "loud"}}),
            "text.verbosity",
        ),
        // The checks every front shares, naming each message by its item: no user message;
        // an image they refuse, counted past the instructions.
        (json!({"input": []}), "input"),
        (
            json!({"instructions": "Be brief.", "input": [{"role": "user", "content": [
                {"type": "input_image", "image_url": "data:image/gif;base64,R0lGODlhAQABAAAAACw="}
            ]}]}),
            "input[0].attachments[0]",
        ),
        // A call joined to the message before it is still named by its own item.
        (
            json!({"input": [{"role": "user", "content": "hi"},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "bad name", "arguments": "{}"}]}),
            "input[2].name",
        ),
    ];
    for (mut body, param) in cases {
        body["model"] = json!("provider_c/grok-4");
        let response = reqwest::Client::new()
            .post(format!("{}/openai/v1/responses", server.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        let error: Value = response.json().await.unwrap();
        let named = error["error"]["param"].as_str().unwrap_or_default();
        assert!(named.starts_with(param), "{param}: {error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(named), "{message}");
    }
    let posted = upstream
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(posted, 0, "nothing went upstream");
}
