//! The OpenAI-compatible front door, `/openai/v1` (`http/openai/`), with the official OpenAI
//! Python SDK as the client (`tests/openai/sdk.py`): the models of every serving provider,
//! declared ones too, as `PROVIDER/MODEL`; a model retrieved by that id; and every refusal on the
//! prefix, the shared layers' included, in OpenAI's error shape, which the SDK turns into its
//! own exception classes with their codes.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::cross_origin::send;
use crate::openai_sdk::{python, python_sdk};
use crate::support::{Options, TestServer, write_config};

const TOKEN: &str = "openai-door-token";

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

    let cross_site = [("origin", "https://evil.example")];
    let (status, _, body) = send(
        &server,
        Method::POST,
        "/openai/v1/models",
        &cross_site,
        None,
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error(&body)["type"], "permission_error", "{body}");

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
