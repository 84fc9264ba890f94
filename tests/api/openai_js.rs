//! `/openai/v1` with the official OpenAI JavaScript SDK as the client (`tests/openai/sdk.mjs`):
//! the models, a completion and refusals as its error classes; a stream whose tool calls the
//! SDK's own runner joins by their `index`, and the Responses API's stream rebuilt by its helper.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use serde_json::json;

use crate::live_replies::{A, C, call, paced, text};
use crate::openai::{TOKEN, all_providers, hello};
use crate::openai_sdk::{js_sdk, node};

const CHAT_TEXT: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");

/// The models, a completion, and refusals as the SDK's error classes with code and param.
#[tokio::test]
async fn the_javascript_sdk_reads_models_completions_and_refusals() {
    let Some(node) = node() else { return };
    let upstream =
        ScriptedUpstream::start([(C.route, Reply::text(200, "application/json", CHAT_TEXT))]).await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);

    let models = js_sdk(&node, &base, TOKEN, &["models"]).await;
    let ids = models["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("{models}"));
    assert!(
        ids.iter()
            .any(|id| id == "mine/meta-llama/llama-3.3-70b-instruct"),
        "{models}"
    );

    let answer = js_sdk(
        &node,
        &base,
        TOKEN,
        &["chat", "provider_c/grok-4", &hello()],
    )
    .await;
    let choice = &answer["raw"]["choices"][0];
    assert_eq!(
        choice["message"]["content"], "Hello! How can I assist you today?",
        "{answer}"
    );
    assert_eq!(choice["finish_reason"], "stop");

    // Refusals as the SDK's classes, with code and param.
    let missing = js_sdk(&node, &base, TOKEN, &["chat", "nowhere/m", &hello()]).await;
    assert_eq!(missing["raised"], "NotFoundError", "{missing}");
    assert_eq!(missing["code"], "model_not_found");
    let refused = js_sdk(
        &node,
        &base,
        TOKEN,
        &[
            "chat",
            "provider_a/gpt-4o-mini",
            &hello(),
            r#"{"stop": ["END"]}"#,
        ],
    )
    .await;
    assert_eq!(refused["raised"], "BadRequestError", "{refused}");
    assert_eq!(refused["param"], "stop");
    assert_eq!(refused["code"], "unsupported_parameter");
    let unauthorized = js_sdk(&node, &base, "wrong-token", &["models"]).await;
    assert_eq!(
        unauthorized["raised"], "AuthenticationError",
        "{unauthorized}"
    );
    assert_eq!(unauthorized["status"], 401);
}

/// A stream of two tool calls that the SDK's own runner joins by their `index`, and the
/// Responses API's stream rebuilt by its helper.
#[tokio::test]
async fn the_javascript_sdk_joins_streams() {
    let Some(node) = node() else { return };
    let calls = [
        text(&["Checking. "]),
        call("call_1", "get_weather", r#"{"city":"Paris"}"#),
        call("call_2", "get_weather", r#"{"city":"Lyon"}"#),
    ];
    let upstream = ScriptedUpstream::start([
        (C.route, paced(C, &calls)),
        (A.route, paced(A, &[text(&["Fair ", "winds."])])),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    // The SDK's runner joins the streamed calls by their index into one message.
    let tools = json!({"tools": [{"type": "function", "function": {"name": "Get-Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]});
    let asked = json!([{"role": "user", "content": "Paris and Lyon?"}]).to_string();
    let joined = js_sdk(
        &node,
        &base,
        TOKEN,
        &[
            "stream_helper",
            "provider_c/grok-4",
            &asked,
            &tools.to_string(),
        ],
    )
    .await;
    let choice = &joined["raw"]["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{joined}");
    assert_eq!(choice["message"]["content"], "Checking. ");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{joined}");
    for (call, (id, city)) in calls.iter().zip([("call_1", "Paris"), ("call_2", "Lyon")]) {
        assert_eq!(call["id"], id);
        assert_eq!(call["function"]["name"], "Get-Weather");
        assert_eq!(
            call["function"]["arguments"],
            format!(r#"{{"city":"{city}"}}"#)
        );
    }

    // The Responses API's stream, rebuilt by the SDK's helper.
    let response = js_sdk(
        &node,
        &base,
        TOKEN,
        &[
            "respond_stream",
            "provider_a/gpt-4o-mini",
            &json!("Hi").to_string(),
        ],
    )
    .await;
    assert_eq!(response["output_text"], "Fair winds.", "{response}");
    assert_eq!(response["types"][0], "response.created");
    assert_eq!(response["raw"]["status"], "completed");
}
