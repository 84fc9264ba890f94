//! The OpenAI-compatible front door, `/openai/v1` (`http/openai/`), with the official OpenAI
//! Python SDK as the client (`tests/openai/sdk.py`): the models of every serving provider,
//! declared ones too, as `PROVIDER/MODEL`; a model retrieved by that id; chat completions on
//! every kind of provider, with chatd's own tools run on the server and an image part; and every
//! refusal on the prefix, the shared layers' included, in OpenAI's error shape, which the SDK
//! turns into its own exception classes with their codes.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::cross_origin::send;
use crate::openai_sdk::{python, python_sdk};
use crate::support::{Options, TestServer, write_config};

pub(crate) const TOKEN: &str = "openai-door-token";

/// provider_b listing two models from `upstream`, and a declared provider whose fixed model
/// has a `/` of its own.
async fn server(upstream: &ScriptedUpstream) -> (TestServer, tempfile::TempDir) {
    let files = tempfile::tempdir().unwrap();
    let config = write_config(
        files.path(),
        &format!(
            "[providers.mine]\nadapter = \"chat_completions\"\nbase_url = \"{}/mine\"\n\
             api_key = \"mine-key\"\nmodels = [\"meta-llama/llama-3.3-70b-instruct\"]\n",
            upstream.url()
        ),
    );
    let args = [
        "--provider-b-base-url",
        &upstream.url(),
        "--provider-b-api-key",
        "kb",
    ];
    let server = TestServer::start_with(Options {
        token: Some(TOKEN.into()),
        args: args.iter().map(|s| s.to_string()).collect(),
        config: Some(config),
        ..Options::default()
    })
    .await;
    (server, files)
}

async fn anthropic_models() -> ScriptedUpstream {
    ScriptedUpstream::start([(
        "GET /models",
        Reply::json(
            200,
            json!({"data": [
                {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5", "created_at": "2025-09-29T00:00:00Z"},
                {"type": "model", "id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5", "created_at": "2025-10-01T00:00:00Z"}
            ], "has_more": false}),
        ),
    )])
    .await
}

#[tokio::test]
async fn the_python_sdk_lists_and_retrieves_models_and_reads_refusals() {
    let Some(python) = python() else { return };
    let upstream = anthropic_models().await;
    let (server, _files) = server(&upstream).await;
    let base = format!("{}/openai/v1", server.base);

    let listed = python_sdk(&python, &base, TOKEN, &["models"]).await;
    let ids = listed["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"));
    for id in [
        "provider_b/claude-sonnet-4-5",
        "provider_b/claude-haiku-4-5",
        "mine/meta-llama/llama-3.3-70b-instruct",
    ] {
        assert!(ids.contains(&json!(id)), "{id} listed: {ids:?}");
    }

    let one = python_sdk(
        &python,
        &base,
        TOKEN,
        &["retrieve", "mine/meta-llama/llama-3.3-70b-instruct"],
    )
    .await;
    assert_eq!(
        one,
        json!({"id": "mine/meta-llama/llama-3.3-70b-instruct", "object": "model", "owned_by": "mine"})
    );

    let missing = python_sdk(&python, &base, TOKEN, &["retrieve", "provider_b/gpt-7"]).await;
    assert_eq!(missing["raised"], "NotFoundError", "{missing}");
    assert_eq!(missing["code"], "model_not_found");
    assert_eq!(missing["param"], "model");
    assert!(
        missing["message"]
            .as_str()
            .unwrap()
            .contains("provider_b/gpt-7"),
        "{missing}"
    );

    let refused = python_sdk(&python, &base, "not-the-token", &["models"]).await;
    assert_eq!(refused["raised"], "AuthenticationError", "{refused}");
    assert_eq!(refused["status"], 401);
    assert_eq!(refused["code"], "invalid_api_key");
    assert_eq!(refused["type"], "authentication_error");

    // The same routes under `/api`.
    let aliased = python_sdk(
        &python,
        &format!("{}/api/openai/v1", server.base),
        TOKEN,
        &["models"],
    )
    .await;
    assert_eq!(aliased, listed);
}

/// The refusals of the layers every route shares (token, origin, Host in token and open mode,
/// the fallback's 404 and 405) come back in OpenAI's shape on the prefix, and as `{message}`
/// everywhere else.
#[tokio::test]
async fn the_shared_layers_refuse_in_openais_shape_on_the_prefix_only() {
    let upstream = anthropic_models().await;
    let (server, _files) = server(&upstream).await;
    let error = |body: &Value| body["error"].clone();

    let (status, headers, body) =
        send(&server, Method::GET, "/openai/v1/models", &[], None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(headers["www-authenticate"], "Bearer");
    let refused = error(&body);
    assert_eq!(refused["type"], "authentication_error", "{body}");
    assert_eq!(refused["code"], "invalid_api_key");
    assert_eq!(refused["param"], Value::Null);
    assert!(
        refused["message"].as_str().unwrap().contains("Bearer"),
        "{body}"
    );
    assert_eq!(body.as_object().unwrap().len(), 1, "only `error`: {body}");

    let completion =
        r#"{"model":"provider_b/claude-haiku-4-5","messages":[{"role":"user","content":"hi"}]}"#;
    let cross_site = [
        ("origin", "https://evil.example"),
        ("content-type", "application/json"),
    ];
    let (status, _, body) = send(
        &server,
        Method::POST,
        "/openai/v1/chat/completions",
        &cross_site,
        Some(completion),
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error(&body)["type"], "permission_error", "{body}");
    // The body extractor's refusal: a body not declared JSON.
    let (status, _, body) = send(
        &server,
        Method::POST,
        "/openai/v1/chat/completions",
        &[("content-type", "text/plain")],
        Some(completion),
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(error(&body)["code"], "unsupported_media_type", "{body}");
    // And its refusal of a body that is not the request: the rule named, in OpenAI's shape.
    let (status, _, body) = send(
        &server,
        Method::POST,
        "/openai/v1/chat/completions",
        &[("content-type", "application/json")],
        Some(r#"{"model":"provider_b/claude-haiku-4-5"}"#),
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        error(&body)["message"]
            .as_str()
            .unwrap()
            .contains("messages"),
        "{body}"
    );

    let (status, _, body) = send(
        &server,
        Method::GET,
        "/openai/v1/engines",
        &[],
        None,
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error(&body)["code"], "not_found", "{body}");
    assert!(
        error(&body)["message"]
            .as_str()
            .unwrap()
            .contains("/openai/v1/engines"),
        "{body}"
    );

    let (status, _, body) = send(
        &server,
        Method::DELETE,
        "/openai/v1/models",
        &[],
        None,
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(error(&body)["type"], "invalid_request_error", "{body}");

    let (status, _, body) = send(
        &server,
        Method::GET,
        "/openai/v1/models",
        &[("host", "bad!host")],
        None,
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error(&body)["code"], "invalid_request", "{body}");
    assert!(
        error(&body)["message"]
            .as_str()
            .unwrap()
            .contains("bad!host"),
        "{body}"
    );

    // Elsewhere the contract's shape stays.
    let (status, _, body) = send(&server, Method::GET, "/v1/models", &[], None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body["message"].is_string() && body.get("error").is_none(),
        "{body}"
    );
    let (status, _, body) = send(
        &server,
        Method::GET,
        "/openai/v10/models",
        &[],
        None,
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["message"].is_string(), "{body}");

    // In open mode the Host check stands in for the token: another name is refused.
    let open = TestServer::start().await;
    let (status, _, body) = send(
        &open,
        Method::GET,
        "/openai/v1/models",
        &[("host", "rebound.example")],
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error(&body)["type"], "permission_error", "{body}");
}

const CHAT_TEXT: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");
const RESPONSES_TEXT: &str =
    include_str!("../fixtures/upstream/openai_responses/01_nonstream_text.response.json");
const MESSAGES_TEXT: &str =
    include_str!("../fixtures/upstream/anthropic_messages/01_nonstream_text.response.json");
const PARALLEL_CALLS: &str =
    include_str!("../fixtures/upstream/openai_chat/06_nonstream_parallel_tool_calls.response.json");

/// Every built-in provider (a, b, c) and a declared one (`mine`, chat completions' wire) on
/// `upstream`, with engine_a for `web_search`.
pub(crate) async fn all_providers(upstream: &ScriptedUpstream) -> (TestServer, tempfile::TempDir) {
    all_providers_with(upstream, &[]).await
}

/// [`all_providers`], with more arguments.
pub(crate) async fn all_providers_with(
    upstream: &ScriptedUpstream,
    more: &[&str],
) -> (TestServer, tempfile::TempDir) {
    let url = upstream.url();
    let files = tempfile::tempdir().unwrap();
    let config = write_config(
        files.path(),
        &format!(
            "[providers.mine]\nadapter = \"chat_completions\"\nbase_url = \"{url}/mine\"\n\
             api_key = \"mine-key\"\nmodels = [\"meta-llama/llama-3.3-70b-instruct\"]\n"
        ),
    );
    let mut args = Vec::new();
    for (flag, value) in [
        ("--provider-a-base-url", url.as_str()),
        ("--provider-a-api-key", "a-key"),
        ("--provider-b-base-url", &url),
        ("--provider-b-api-key", "b-key"),
        ("--provider-c-base-url", &url),
        ("--provider-c-api-key", "c-key"),
        ("--engine-a-base-url", &url),
        ("--engine-a-api-key", "engine-key-never-shown"),
    ] {
        args.extend([flag.to_string(), value.to_string()]);
    }
    args.extend(more.iter().map(|a| a.to_string()));
    let server = TestServer::start_with(Options {
        token: Some(TOKEN.into()),
        args,
        config: Some(config),
        allow_private_networks: true,
        ..Options::default()
    })
    .await;
    (server, files)
}

pub(crate) fn hello() -> String {
    json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello"}
    ])
    .to_string()
}

/// A non-streaming chat completion on each built-in provider and a declared one, through the
/// SDK: the reply's text, OpenAI's object, the usage; each upstream got the system prompt.
#[tokio::test]
async fn the_python_sdk_completes_on_every_provider() {
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
        (
            "POST /mine/chat/completions",
            Reply::text(200, "application/json", CHAT_TEXT),
        ),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let cases = [
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
        (
            "mine/meta-llama/llama-3.3-70b-instruct",
            "Hello! How can I assist you today?",
            "/mine/chat/completions",
        ),
    ];
    for (model, text, path) in cases {
        let answer = python_sdk(&python, &base, TOKEN, &["chat", model, &hello()]).await;
        assert_eq!(answer["content"], text, "{model}: {answer}");
        assert_eq!(answer["object"], "chat.completion", "{answer}");
        assert_eq!(answer["model"], model);
        assert_eq!(answer["finish_reason"], "stop");
        assert!(answer["id"].as_str().unwrap().starts_with("chatcmpl-"));
        let usage = &answer["usage"];
        assert!(
            usage["total_tokens"].as_u64().unwrap() > 0,
            "{model}: {usage}"
        );
        let sent = upstream
            .requests()
            .into_iter()
            .find(|r| r.path == path)
            .unwrap_or_else(|| panic!("{model}: nothing reached {path}"));
        assert!(
            String::from_utf8_lossy(&sent.body).contains("Be brief."),
            "{model}: {}",
            String::from_utf8_lossy(&sent.body)
        );
    }
    // The declared model's own `/` went upstream whole.
    let mine = upstream
        .requests()
        .into_iter()
        .find(|r| r.path == "/mine/chat/completions")
        .unwrap();
    assert_eq!(mine.json()["model"], "meta-llama/llama-3.3-70b-instruct");
    // No chat was made.
    let (_, chats) = server.get("/v1/chats").await;
    assert_eq!(chats["chats"], json!([]), "{chats}");
}

/// `chatd_tools: ["web_search"]` runs the search on the server: the engine gets its key from
/// chatd, the model gets the results, the client gets the answer and never the key. An image
/// part reaches the upstream as an image.
#[tokio::test]
async fn chatd_tools_run_on_the_server_and_images_reach_the_upstream() {
    let Some(python) = python() else { return };
    let mut calls: Value = serde_json::from_str(PARALLEL_CALLS).unwrap();
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
        (
            "POST /chat/completions",
            Reply::text(200, "application/json", CHAT_TEXT),
        ),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let question = json!([{"role": "user", "content": "What is the UK's capital?"}]).to_string();
    let answer = python_sdk(
        &python,
        &base,
        TOKEN,
        &[
            "chat",
            "provider_c/grok-4",
            &question,
            r#"{"chatd_tools": ["web_search"]}"#,
        ],
    )
    .await;
    assert_eq!(
        answer["content"], "Hello! How can I assist you today?",
        "{answer}"
    );
    let search = upstream
        .requests()
        .into_iter()
        .find(|r| r.path == "/search")
        .expect("the engine was asked");
    assert!(String::from_utf8_lossy(&search.body).contains("UK capital"));
    // The engine got its key from the host; neither the model nor the client ever did.
    assert_eq!(search.header("x-api-key"), Some("engine-key-never-shown"));
    assert!(
        !answer.to_string().contains("engine-key-never-shown"),
        "{answer}"
    );
    let turns: Vec<Value> = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == "/chat/completions")
        .map(|r| r.json())
        .collect();
    assert_eq!(
        turns.len(),
        2,
        "a turn with the call, a turn with its result"
    );
    assert!(turns[1].to_string().contains("About A."), "{}", turns[1]);
    assert!(!turns[1].to_string().contains("engine-key-never-shown"));

    let png = crate::support::data_url("image/png", &crate::support::png_bytes(64));
    let with_image = json!([{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": png}}
    ]}])
    .to_string();
    let answer = python_sdk(
        &python,
        &base,
        TOKEN,
        &["chat", "provider_c/grok-4", &with_image],
    )
    .await;
    assert_eq!(
        answer["content"], "Hello! How can I assist you today?",
        "{answer}"
    );
    let last = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == "/chat/completions")
        .last()
        .unwrap()
        .json();
    let sent = last["messages"].to_string();
    assert!(
        sent.contains("image_url") && sent.contains(&png[..60]),
        "{sent}"
    );
}

/// What the front door refuses, as the SDK reads it: each a `BadRequestError` or
/// `NotFoundError` with its `code` and `param`.
#[tokio::test]
async fn refusals_name_the_parameter() {
    let Some(python) = python() else { return };
    let upstream = ScriptedUpstream::start(Vec::<(&str, Reply)>::new()).await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let cases = [
        (
            "provider_b/claude-haiku-4-5",
            r#"{"response_format": {"type": "json_object"}}"#,
            "BadRequestError",
            "unsupported_parameter",
            "response_format",
        ),
        (
            "provider_c/grok-4",
            r#"{"chatd_tools": ["nope"]}"#,
            "BadRequestError",
            "invalid_request",
            "chatd_tools",
        ),
        (
            "nowhere/m",
            "{}",
            "NotFoundError",
            "model_not_found",
            "model",
        ),
        ("grok-4", "{}", "NotFoundError", "model_not_found", "model"),
        (
            "provider_c/grok-4",
            r#"{"temperature": 3}"#,
            "BadRequestError",
            "invalid_request",
            "temperature",
        ),
        (
            "provider_c/grok-4",
            r#"{"max_tokens": 5, "max_completion_tokens": 5}"#,
            "BadRequestError",
            "invalid_request",
            "max_tokens",
        ),
        (
            "provider_c/grok-4",
            r#"{"max_completion_tokens": 0}"#,
            "BadRequestError",
            "invalid_request",
            "max_completion_tokens",
        ),
        (
            "provider_c/grok-4",
            r#"{"stream_options": {"include_usage": true}}"#,
            "BadRequestError",
            "invalid_request",
            "stream_options",
        ),
    ];
    for (model, extra, raised, code, param) in cases {
        let answer = python_sdk(&python, &base, TOKEN, &["chat", model, &hello(), extra]).await;
        assert_eq!(answer["raised"], raised, "{model} {extra}: {answer}");
        assert_eq!(answer["code"], code, "{answer}");
        assert_eq!(answer["param"], param, "{answer}");
    }
    let remote = json!([{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    ]}]);
    let tool_result = json!([
        {"role": "user", "content": "What is 6 × 7?"},
        {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    ]);
    let named = json!([{"role": "user", "content": "hi", "name": 7}]);
    // The shared checks' refusals carry their field too, as on `/responses`.
    let gif = json!([{"role": "user", "content": [{"type": "image_url", "image_url":
        {"url": "data:image/gif;base64,R0lGODlhAQABAAAAACw="}}]}]);
    for (messages, param) in [
        (remote, "messages[0].content[0].image_url.url"),
        (tool_result, "messages[1].tool_call_id"),
        (named, "messages[0].name"),
        (gif, "messages[0].attachments[0].dataUrl"),
        (json!([]), "messages"),
    ] {
        let answer = python_sdk(
            &python,
            &base,
            TOKEN,
            &["chat", "provider_c/grok-4", &messages.to_string()],
        )
        .await;
        assert_eq!(answer["raised"], "BadRequestError", "{answer}");
        assert_eq!(answer["param"], param, "{answer}");
    }
    // Under `/api` too.
    let aliased = format!("{}/api/openai/v1", server.base);
    let answer = python_sdk(&python, &aliased, TOKEN, &["chat", "nowhere/m", &hello()]).await;
    assert_eq!(answer["raised"], "NotFoundError", "{answer}");
    assert_eq!(answer["code"], "model_not_found", "{answer}");
    // Only the model lists were asked for.
    let asked: Vec<String> = upstream.requests().into_iter().map(|r| r.method).collect();
    assert!(
        asked.iter().all(|m| m == "GET"),
        "no completion went upstream: {asked:?}"
    );
}

/// The upstream's own reason reaches `finish_reason`: the Responses API's `incomplete` at
/// `max_output_tokens` is OpenAI's `length`.
#[tokio::test]
async fn a_reply_cut_at_its_token_limit_finishes_with_length() {
    let Some(python) = python() else { return };
    let upstream = ScriptedUpstream::start([(
        "POST /responses",
        Reply::text(
            200,
            "application/json",
            include_str!(
                "../fixtures/upstream/openai_responses/10_nonstream_incomplete_max_output_tokens.response.json"
            ),
        ),
    )])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let extra = json!({"max_completion_tokens": 20}).to_string();
    let answer = python_sdk(
        &python,
        &base,
        TOKEN,
        &["chat", "provider_a/gpt-4o-mini", &hello(), &extra],
    )
    .await;
    assert_eq!(answer["finish_reason"], "length", "{answer}");
    assert!(
        answer["content"]
            .as_str()
            .unwrap()
            .starts_with("Mango sun-kissed sweet"),
        "{answer}"
    );
}

/// A model the upstream does not have is OpenAI's `404 model_not_found` naming `model`, as a
/// provider chatd does not serve is, whatever status each vendor answers it with (a 404 from
/// chat completions and Anthropic, a 400 with `code: model_not_found` from the Responses
/// API), streamed or not; the SDK raises `NotFoundError`.
#[tokio::test]
async fn a_model_the_upstream_does_not_have_is_a_404_model_not_found() {
    let anthropic: Value = serde_json::from_str(include_str!(
        "../fixtures/upstream/anthropic_messages/11_error_404_not_found_model.response.json"
    ))
    .unwrap();
    let openai: Value = serde_json::from_str(include_str!(
        "../fixtures/upstream/models_list/openai_retrieve_model_404.response.json"
    ))
    .unwrap();
    let responses = json!({"error": {"message": "The requested model 'nope' does not exist.",
        "type": "invalid_request_error", "param": "model", "code": "model_not_found"}});
    let cases = [
        (
            "provider_a/nope",
            "POST /responses",
            Reply::json(400, responses),
        ),
        (
            "provider_b/nope",
            "POST /messages",
            Reply::json(404, anthropic),
        ),
        (
            "provider_c/nope",
            "POST /chat/completions",
            Reply::json(404, openai),
        ),
    ];
    // Asked three times each: unstreamed, streamed, through the SDK (twice where it is missing).
    let sdk = python();
    let asked = if sdk.is_some() { 3 } else { 2 };
    let mut script = Vec::new();
    for (_, route, reply) in &cases {
        for _ in 0..asked {
            script.push((*route, reply.clone()));
        }
    }
    // A 404 about something else (a base URL with a wrong path) is not the model's.
    script.push((
        "POST /chat/completions",
        Reply::text(404, "text/html", "<html><h1>Not Found</h1></html>"),
    ));
    let upstream = ScriptedUpstream::start(script).await;
    let (server, _files) = all_providers(&upstream).await;
    for (model, _, _) in &cases {
        for stream in [false, true] {
            let response = reqwest::Client::new()
                .post(format!("{}/openai/v1/chat/completions", server.base))
                .bearer_auth(TOKEN)
                .json(&json!({"model": model, "stream": stream,
                    "messages": [{"role": "user", "content": "Hi"}]}))
                .send()
                .await
                .unwrap();
            assert_eq!(
                response.status(),
                StatusCode::NOT_FOUND,
                "{model} stream {stream}"
            );
            let body: Value = response.json().await.unwrap();
            let error = &body["error"];
            assert_eq!(error["code"], "model_not_found", "{model}: {body}");
            assert_eq!(error["param"], "model", "{model}: {body}");
            assert_eq!(error["type"], "invalid_request_error", "{model}: {body}");
            assert!(
                error["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("model: the provider does not have it"),
                "{body}"
            );
        }
        let Some(python) = &sdk else {
            continue;
        };
        let base = format!("{}/openai/v1", server.base);
        let answer = python_sdk(python, &base, TOKEN, &["chat", model, &hello()]).await;
        assert_eq!(answer["raised"], "NotFoundError", "{model}: {answer}");
        assert_eq!(answer["code"], "model_not_found", "{model}: {answer}");
    }
    let response = reqwest::Client::new()
        .post(format!("{}/openai/v1/chat/completions", server.base))
        .bearer_auth(TOKEN)
        .json(&json!({"model": "provider_c/grok-4",
            "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_ne!(status, StatusCode::NOT_FOUND, "{body}");
    assert_ne!(body["error"]["code"], "model_not_found", "{body}");
}
