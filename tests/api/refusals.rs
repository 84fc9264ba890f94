//! Client mistakes answered as such: what is known to be invalid is refused before any upstream
//! call (400 naming the field), and an upstream that refuses a request for what the client sent
//! gives a 400 with its reason, not a 502.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::{ROUTE, TEXT_STREAM, body, server_for};
use crate::support::TestServer;

const RESPONSES_400: &str = include_str!(
    "../fixtures/upstream/openai_responses/11_error_400_invalid_temperature.response.json"
);
const MESSAGES_404: &str = include_str!(
    "../fixtures/upstream/anthropic_messages/11_error_404_not_found_model.response.json"
);
const MESSAGES_400: &str = include_str!(
    "../fixtures/upstream/anthropic_messages/10_error_400_prompt_too_long.response.json"
);

/// The model calls `upstream` received (the model lists' `GET /models` left out).
fn model_calls(upstream: &ScriptedUpstream) -> usize {
    upstream
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count()
}

/// A server whose four providers all point at `upstream`.
pub(crate) async fn every_provider(upstream: &ScriptedUpstream) -> TestServer {
    let url = upstream.url();
    server_for(
        upstream,
        &[
            "--provider-a-base-url",
            &url,
            "--provider-a-api-key",
            "a-key",
            "--provider-b-base-url",
            &url,
            "--provider-b-api-key",
            "b-key",
            "--agent-api-base-url",
            &url,
            "--agent-api-key",
            "agent-key",
        ],
    )
    .await
}

#[tokio::test]
async fn a_history_with_nothing_to_answer_is_400_before_any_upstream_call() {
    let upstream = ScriptedUpstream::start([(ROUTE, Reply::sse(TEXT_STREAM))]).await;
    let server = every_provider(&upstream).await;
    let chat_id = server.new_chat(json!({"enabledTools": []})).await;
    let histories = [
        json!([{"role": "user", "content": ""}]),
        json!([{"role": "user", "content": " \n\t"}]),
        json!([{"role": "system", "content": "Be terse."}]),
        json!([{"role": "tool", "content": "a tool's log"}]),
        json!([{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": ""}]),
    ];
    let before = server.row_counts().await;
    for provider in ["provider_a", "provider_b", "provider_c"] {
        for history in &histories {
            for (path, chat) in [
                ("/v1/chat-completions", None),
                ("/v1/chat-completions/stream", Some(chat_id.as_str())),
                ("/v1/chat-completions/stream", None),
            ] {
                let mut request = body(chat, history.clone());
                request["provider"] = json!(provider);
                let (status, error) = server.post(path, request).await;
                assert_eq!(
                    status,
                    StatusCode::BAD_REQUEST,
                    "{provider} {path} {history}"
                );
                let message = error["message"].as_str().unwrap();
                assert!(
                    message.starts_with("messages: must hold a user message"),
                    "{message}"
                );
            }
        }
    }
    assert_eq!(model_calls(&upstream), 0, "no upstream call");
    assert_eq!(server.row_counts().await, before, "nothing written");
}

#[tokio::test]
async fn a_temperature_the_model_does_not_take_is_400_before_any_upstream_call() {
    let upstream = ScriptedUpstream::start([]).await;
    let server = every_provider(&upstream).await;
    let history = json!([{"role": "user", "content": "hi"}]);
    for (provider, model, temperature, why) in [
        (
            "provider_a",
            "gpt-5",
            0.7,
            "provider_a: invalid request: temperature: gpt-5 does not take a temperature; leave it out",
        ),
        (
            "provider_a",
            "o4-mini",
            0.0,
            "provider_a: invalid request: temperature: o4-mini does not take a temperature; leave it out",
        ),
    ] {
        let request = json!({"provider": provider, "model": model, "temperature": temperature,
            "messages": history});
        let before = server.row_counts().await;
        for path in ["/v1/chat-completions", "/v1/chat-completions/stream"] {
            let (status, error) = server.post(path, request.clone()).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {error}");
            assert_eq!(error["message"], why, "{path}");
        }
        // The same refusal on both OpenAI routes, its words unchanged. The plugin's refusal
        // names no field of the request's, so no `param`: not the provider's id, which a
        // message read back as `field: rule` once put there.
        let openai = [
            ("/openai/v1/chat/completions", json!({"messages": history})),
            ("/openai/v1/responses", json!({"input": "hi"})),
        ];
        for (path, mut request) in openai {
            request["model"] = json!(format!("{provider}/{model}"));
            request["temperature"] = json!(temperature);
            let (status, body) = server.post(path, request).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
            assert_eq!(body["error"]["message"], why, "{path}");
            assert_eq!(body["error"]["param"], Value::Null, "{path}: {body}");
        }
        assert_eq!(server.row_counts().await, before, "nothing written");
    }
    assert_eq!(model_calls(&upstream), 0, "no upstream call");
}

#[tokio::test]
async fn an_upstream_refusing_the_request_is_a_400_with_its_reason() {
    let upstream = ScriptedUpstream::start([
        (
            "POST /responses",
            Reply::text(400, "application/json", RESPONSES_400),
        ),
        (
            "POST /messages",
            Reply::text(404, "application/json", MESSAGES_404),
        ),
        (
            "POST /messages",
            Reply::text(400, "application/json", MESSAGES_400),
        ),
    ])
    .await;
    let server = every_provider(&upstream).await;
    let history = json!([{"role": "user", "content": "hi"}]);
    let cases = [
        (
            "provider_a",
            "gpt-4o",
            "provider_a: upstream answered 400: Invalid 'temperature'",
        ),
        (
            "provider_b",
            "claude-x",
            "provider_b: upstream answered 404: ",
        ),
        (
            "provider_b",
            "claude-sonnet-4-5",
            "provider_b: upstream answered 400: ",
        ),
    ];
    for (provider, model, starts) in cases {
        let request: Value = json!({"provider": provider, "model": model, "messages": history});
        let (status, error) = server.post("/v1/chat-completions", request).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.starts_with(starts), "{message}");
    }
    assert_eq!(model_calls(&upstream), 3);
}
