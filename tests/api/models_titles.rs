//! `GET /v1/models` (load at startup, refresh keeping the last good list, provider_agent only
//! with AGENT_API_KEY) and `POST /v1/chats/title/suggest` (provider_a, TITLE_MODEL, a title set
//! meanwhile wins), against the bundled provider plugins and scripted upstreams.

use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Options, TestServer};

const OPENAI_MODELS: &str =
    include_str!("../fixtures/upstream/models_list/openai_list_models.response.json");
const RESPONSES_TEXT: &str =
    include_str!("../fixtures/upstream/openai_responses/01_nonstream_text.response.json");

/// An Anthropic `GET /v1/models` page, as its API reference documents it.
fn anthropic_models() -> Value {
    json!({"data": [
        {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5", "created_at": "2025-09-29T00:00:00Z"},
        {"type": "model", "id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5", "created_at": "2025-10-01T00:00:00Z"}
    ], "has_more": false, "first_id": "claude-sonnet-4-5", "last_id": "claude-haiku-4-5"})
}

async fn start(args: Vec<String>) -> TestServer {
    TestServer::start_with(Options {
        args,
        ..Options::default()
    })
    .await
}

fn flags(pairs: &[(&str, &str)]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|(k, v)| [k.to_string(), v.to_string()])
        .collect()
}

#[tokio::test]
async fn models_are_listed_per_provider_with_errors_and_the_agent_only_with_its_key() {
    let a = ScriptedUpstream::start([(
        "GET /models",
        Reply::text(200, "application/json", OPENAI_MODELS),
    )])
    .await;
    let b = ScriptedUpstream::start([("GET /models", Reply::json(200, anthropic_models()))]).await;
    let c = ScriptedUpstream::start([(
        "GET /models",
        Reply::json(500, json!({"error": {"message": "upstream is down"}})),
    )])
    .await;
    let agent = ScriptedUpstream::start([(
        "GET /models",
        Reply::json(
            200,
            json!({"object": "list", "data": [{"id": "hermes-agent", "object": "model"}]}),
        ),
    )])
    .await;
    let server = start(flags(&[
        ("--provider-a-base-url", &a.url()),
        ("--provider-a-api-key", "ka"),
        ("--provider-b-base-url", &b.url()),
        ("--provider-b-api-key", "kb"),
        ("--provider-c-base-url", &c.url()),
        ("--provider-c-api-key", "kc"),
        ("--agent-api-base-url", &agent.url()),
        ("--agent-api-key", "kg"),
        ("--agent-model", "hermes-custom"),
    ]))
    .await;
    let (status, body) = server.get("/v1/models").await;
    assert_eq!(status, StatusCode::OK);
    let providers = body["providers"].as_object().unwrap();
    assert_eq!(
        providers.keys().collect::<Vec<_>>(),
        ["provider_a", "provider_agent", "provider_b", "provider_c"]
    );
    let listed = |p: &str| -> Vec<String> {
        providers[p]["models"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().to_string())
            .collect()
    };
    let models_a = listed("provider_a");
    for kept in ["gpt-4o-mini", "gpt-4.1", "o3", "gpt-5"] {
        assert!(
            models_a.iter().any(|m| m == kept),
            "{kept} kept: {models_a:?}"
        );
    }
    for dropped in [
        "text-embedding-3-small",
        "whisper-1",
        "tts-1",
        "dall-e-3",
        "gpt-image-1",
        "omni-moderation-latest",
        "gpt-realtime",
        "gpt-4o-mini-transcribe",
        "gpt-audio",
    ] {
        assert!(
            !models_a.iter().any(|m| m == dropped),
            "{dropped} dropped: {models_a:?}"
        );
    }
    assert!(providers["provider_a"]["loadedAt"].is_string());
    assert_eq!(providers["provider_a"]["error"], Value::Null);
    assert_eq!(a.requests()[0].header("authorization"), Some("Bearer ka"));
    assert_eq!(
        listed("provider_b"),
        ["claude-sonnet-4-5", "claude-haiku-4-5"]
    );
    assert_eq!(b.requests()[0].header("x-api-key"), Some("kb"));
    assert_eq!(listed("provider_agent"), ["hermes-custom", "hermes-agent"]);
    assert_eq!(listed("provider_c"), Vec::<String>::new());
    assert_eq!(providers["provider_c"]["loadedAt"], Value::Null);
    let error = providers["provider_c"]["error"].as_str().unwrap();
    assert!(
        error.contains("500") && error.contains("upstream is down"),
        "{error}"
    );

    // Without AGENT_API_KEY there is no provider_agent; a provider without its key says so.
    let server = start(flags(&[
        ("--provider-a-base-url", &a.url()),
        ("--provider-a-api-key", "ka"),
    ]))
    .await;
    let (_, body) = server.get("/v1/models").await;
    let providers = body["providers"].as_object().unwrap();
    assert!(!providers.contains_key("provider_agent"));
    assert_eq!(
        providers["provider_b"]["error"],
        "PROVIDER_B_API_KEY is not set"
    );
}

#[tokio::test]
async fn a_failed_refresh_keeps_the_last_good_list_and_sets_error() {
    let a = ScriptedUpstream::start([
        (
            "GET /models",
            Reply::text(200, "application/json", OPENAI_MODELS),
        ),
        (
            "GET /models",
            Reply::json(503, json!({"error": {"message": "try later"}})),
        ),
        (
            "GET /models",
            Reply::text(200, "application/json", OPENAI_MODELS),
        ),
    ])
    .await;
    let server = start(flags(&[
        ("--provider-a-base-url", &a.url()),
        ("--provider-a-api-key", "ka"),
    ]))
    .await;
    let (_, first) = server.get("/v1/models").await;
    let first = first["providers"]["provider_a"].clone();
    assert!(!first["models"].as_array().unwrap().is_empty());

    server.state.models.refresh().await;
    let (_, second) = server.get("/v1/models").await;
    let second = &second["providers"]["provider_a"];
    assert_eq!(second["models"], first["models"]);
    assert_eq!(second["loadedAt"], first["loadedAt"]);
    assert!(second["error"].as_str().unwrap().contains("try later"));

    server.state.models.refresh().await;
    let (_, third) = server.get("/v1/models").await;
    assert_eq!(third["providers"]["provider_a"]["error"], Value::Null);
    assert_ne!(
        third["providers"]["provider_a"]["loadedAt"],
        first["loadedAt"]
    );
}

/// The recorded Responses body, answering `title` instead.
fn titled(title: &str) -> Value {
    let mut body: Value = serde_json::from_str(RESPONSES_TEXT).unwrap();
    for item in body["output"].as_array_mut().unwrap() {
        if item["type"] == "message" {
            item["content"][0]["text"] = json!(title);
        }
    }
    body
}

async fn title_server(upstream: &ScriptedUpstream) -> TestServer {
    start(flags(&[
        ("--provider-a-base-url", &upstream.url()),
        ("--provider-a-api-key", "ka"),
        ("--title-model", "small-model"),
    ]))
    .await
}

#[tokio::test]
async fn a_title_is_suggested_by_the_title_model_and_stored() {
    let upstream = ScriptedUpstream::start([(
        "POST /responses",
        Reply::json(200, titled("\"Rust Async Basics.\"")),
    )])
    .await;
    let server = title_server(&upstream).await;
    let chat_id = server.new_chat(json!({})).await;
    let (status, body) = server
        .post(
            "/v1/chats/title/suggest",
            json!({"chatId": chat_id, "content": "How does async work in Rust?"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["chat"]["title"], "Rust Async Basics");
    let sent = upstream
        .requests()
        .into_iter()
        .find(|r| r.path == "/responses")
        .unwrap()
        .json();
    assert_eq!(sent["model"], "small-model");
    assert!(sent.to_string().contains("How does async work in Rust?"));

    // Titled already: returned unchanged, no model call.
    let calls = upstream.requests().len();
    let (status, body) = server
        .post(
            "/v1/chats/title/suggest",
            json!({"chatId": chat_id, "content": "other"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["chat"]["title"], "Rust Async Basics");
    assert_eq!(upstream.requests().len(), calls);

    let (status, body) = server
        .post(
            "/v1/chats/title/suggest",
            json!({"chatId": "missing", "content": "x"}),
        )
        .await;
    assert_eq!(
        (status, body),
        (StatusCode::NOT_FOUND, json!({"message": "chat not found"}))
    );
    let (status, _) = server
        .post(
            "/v1/chats/title/suggest",
            json!({"chatId": chat_id, "content": "  "}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_title_set_while_the_suggestion_runs_is_not_overwritten() {
    let gate = Gate::new();
    let upstream = ScriptedUpstream::start([(
        "POST /responses",
        Reply::json(200, titled("Suggested Title")).after(&gate),
    )])
    .await;
    let server = title_server(&upstream).await;
    let chat_id = server.new_chat(json!({})).await;
    let suggest = {
        let (client, base, chat_id) = (server.client.clone(), server.base.clone(), chat_id.clone());
        tokio::spawn(async move {
            client
                .post(format!("{base}/v1/chats/title/suggest"))
                .json(&json!({"chatId": chat_id, "content": "hello"}))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    };
    // The suggestion is in flight once the upstream has its request.
    upstream.received(1).await;
    let (status, _) = server
        .patch(&format!("/v1/chats/{chat_id}"), json!({"title": "Mine"}))
        .await;
    assert_eq!(status, StatusCode::OK);
    gate.open();
    let body = suggest.await.unwrap();
    assert_eq!(body["chat"]["title"], "Mine");
    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(chat["chat"]["title"], "Mine");
}

#[tokio::test]
async fn a_failing_title_model_is_a_502_naming_provider_a() {
    let upstream = ScriptedUpstream::start([(
        "POST /responses",
        Reply::text(
            401,
            "application/json",
            include_str!(
                "../fixtures/upstream/openai_responses/12_error_401_invalid_api_key.response.json"
            ),
        ),
    )])
    .await;
    let server = title_server(&upstream).await;
    let chat_id = server.new_chat(json!({})).await;
    let (status, body) = server
        .post(
            "/v1/chats/title/suggest",
            json!({"chatId": chat_id, "content": "hello"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("provider_a: upstream answered 401"),
        "{body}"
    );
}
