//! Providers declared in the configuration file (`[providers.ID]`), no code: each bundled wire
//! format as an adapter under a new id, with its own base URL and key, against scripted
//! upstreams replaying the recordings; and the file's hot reload.

use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Options, TestServer, models_with, write_config};

const OPENAI_MODELS: &str =
    include_str!("../fixtures/upstream/models_list/openai_list_models.response.json");

/// One adapter's wire: where it posts, what answers, how the key must arrive.
struct Adapter {
    adapter: &'static str,
    /// The completion route under the declared base path.
    route: &'static str,
    key: &'static str,
    /// The header the key must arrive in, and its value.
    key_header: (&'static str, String),
    text_body: &'static str,
    text_stream: &'static str,
    /// A streamed turn that calls `web_search` with a `query`, then the answer after its result.
    tool_stream: String,
    after_tool: &'static str,
    /// The model list: fetched from `GET {base}/models`, or fixed in the file.
    fixed_models: Option<&'static str>,
}

fn chat_completions() -> Adapter {
    Adapter {
        adapter: "chat_completions",
        route: "/chat/completions",
        key: "gsk-declared-key-1",
        key_header: ("authorization", "Bearer gsk-declared-key-1".into()),
        text_body: include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json"),
        text_stream: include_str!(
            "../fixtures/upstream/openai_chat/02_stream_text_include_usage.response.sse"
        ),
        tool_stream: include_str!(
            "../fixtures/upstream/openai_chat/01_stream_tool_call_include_usage.response.sse"
        )
        .replace("get_capital", "web_search")
        .replace(r#""arguments":"country""#, r#""arguments":"query""#),
        after_tool: include_str!(
            "../fixtures/upstream/openai_chat/02_stream_text_include_usage.response.sse"
        ),
        fixed_models: None,
    }
}

fn messages() -> Adapter {
    Adapter {
        adapter: "messages",
        route: "/messages",
        key: "ant-declared-key-2",
        key_header: ("x-api-key", "ant-declared-key-2".into()),
        text_body: include_str!(
            "../fixtures/upstream/anthropic_messages/01_nonstream_text.response.json"
        ),
        text_stream: include_str!(
            "../fixtures/upstream/anthropic_messages/04_stream_text.response.sse"
        ),
        tool_stream: include_str!(
            "../fixtures/upstream/anthropic_messages/05a_stream_tool_use.response.sse"
        )
        .replace(r#""name":"weather""#, r#""name":"web_search""#)
        .replace(r#"{\"latitude\""#, r#"{\"query\""#),
        after_tool: include_str!(
            "../fixtures/upstream/anthropic_messages/05b_stream_after_tool_result.response.sse"
        ),
        fixed_models: Some("claude-sonnet-4-5"),
    }
}

fn responses() -> Adapter {
    Adapter {
        adapter: "responses",
        route: "/responses",
        key: "sk-declared-key-3",
        key_header: ("authorization", "Bearer sk-declared-key-3".into()),
        text_body: include_str!(
            "../fixtures/upstream/openai_responses/01_nonstream_text.response.json"
        ),
        text_stream: include_str!(
            "../fixtures/upstream/openai_responses/02_stream_text.response.sse"
        ),
        tool_stream: include_str!(
            "../fixtures/upstream/openai_responses/03_stream_function_call.response.sse"
        )
        .replace("get_weather_at_location", "web_search")
        .replace(r#"\"location\""#, r#"\"query\""#),
        after_tool: include_str!(
            "../fixtures/upstream/openai_responses/02_stream_text.response.sse"
        ),
        fixed_models: None,
    }
}

/// A server with the configuration file `text`, engine_a on `upstream` (for web_search), and
/// provider_c keyed with a key no declared provider may carry.
async fn server(upstream: &ScriptedUpstream, text: &str) -> (TestServer, tempfile::TempDir) {
    let files = tempfile::tempdir().unwrap();
    let config = write_config(files.path(), text);
    let url = upstream.url();
    let server = TestServer::start_with(Options {
        args: [
            "--engine-a-base-url",
            &url,
            "--engine-a-api-key",
            "engine-key-1234",
            "--provider-c-api-key",
            "provider-c-key-never-sent",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        config: Some(config),
        ..Options::default()
    })
    .await;
    (server, files)
}

fn search_results() -> Value {
    json!({"requestId": "r1", "results": [
        {"url": "https://www.gov.uk/", "title": "UK government", "summary": "London is the capital."}
    ]})
}

#[tokio::test]
async fn each_wire_format_serves_under_a_declared_id_with_its_own_key() {
    for adapter in [chat_completions(), messages(), responses()] {
        declared_provider_round_trips(adapter).await;
    }
}

async fn declared_provider_round_trips(wire: Adapter) {
    let base_path = "/proxy/v1";
    let route = format!("POST {base_path}{}", wire.route);
    let models_route = format!("GET {base_path}/models");
    let upstream = ScriptedUpstream::start([
        (
            models_route.as_str(),
            Reply::text(200, "application/json", OPENAI_MODELS),
        ),
        (
            route.as_str(),
            Reply::text(200, "application/json", wire.text_body),
        ),
        (route.as_str(), Reply::sse(wire.text_stream)),
        (route.as_str(), Reply::sse(&wire.tool_stream)),
        (route.as_str(), Reply::sse(wire.after_tool)),
        ("POST /search", Reply::json(200, search_results())),
    ])
    .await;
    let id = format!("my-{}", wire.adapter.replace('_', "-"));
    let models = match wire.fixed_models {
        Some(model) => format!("models = [\"{model}\"]\n"),
        None => String::new(),
    };
    let text = format!(
        "[providers.{id}]\nadapter = \"{}\"\nbase_url = \"{}{base_path}\"\napi_key = \"{}\"\n{models}\
         display_name = \"Mine ({})\"\nfeatured_models = [\"m1\"]\n",
        wire.adapter,
        upstream.url(),
        wire.key,
        wire.adapter
    );
    let (server, _files) = server(&upstream, &text).await;

    // Listed beside the contract's providers, its list from its own upstream (or the file).
    let listed = models_with(&server, &id, true).await;
    let entry = &listed["providers"][&id];
    assert!(entry["error"].is_null(), "{entry}");
    let models: Vec<&str> = entry["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    match wire.fixed_models {
        Some(model) => assert_eq!(models, [model]),
        None => assert!(models.contains(&"gpt-4o-mini"), "{models:?}"),
    }
    // The file's label and featured models, for the pickers; none on the contract's own.
    assert_eq!(entry["displayName"], format!("Mine ({})", wire.adapter));
    assert_eq!(entry["featuredModels"], json!(["m1"]));
    for default in ["provider_a", "provider_b", "provider_c"] {
        assert!(listed["providers"].get(default).is_some(), "{listed}");
        assert!(
            listed["providers"][default].get("displayName").is_none(),
            "{listed}"
        );
    }

    // Non-streaming.
    let chat_id = server.new_chat(json!({})).await;
    let (status, reply) = server
        .post(
            "/v1/chat-completions",
            json!({"chatId": chat_id, "provider": id, "model": "m1", "enabledTools": [],
                   "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{}: {reply}", wire.adapter);
    assert_eq!(reply["provider"], json!(id));
    assert!(!reply["message"]["content"].as_str().unwrap().is_empty());

    // Streaming.
    let events = server
        .stream(
            json!({"chatId": chat_id, "provider": id, "model": "m1", "enabledTools": [],
                       "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .await
        .rest()
        .await;
    assert_eq!(events[0].data["provider"], json!(id));
    let done = events.last().unwrap();
    assert_eq!(done.name, "done", "{}: {events:?}", wire.adapter);
    assert!(events.iter().any(|e| e.name == "delta"));

    // A tool loop: the model calls web_search, chatd runs it, the model answers.
    let events: Vec<_> = server
        .stream(
            json!({"chatId": chat_id, "provider": id, "model": "m1", "enabledTools": ["web_search"],
                       "messages": [{"role": "user", "content": "Capital of the UK?"}]}),
        )
        .await
        .rest()
        .await;
    let calls: Vec<&str> = events
        .iter()
        .filter(|e| e.name == "tool_call")
        .map(|e| e.data["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        calls,
        ["initiated", "completed"],
        "{}: {events:?}",
        wire.adapter
    );
    assert_eq!(events.last().unwrap().name, "done");

    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(chat["chat"]["lastUsedProvider"], json!(id));
    assert_eq!(chat["chat"]["initiatedProvider"], json!(id));

    // Every request to the upstream carried this provider's key, the way its API takes it, and
    // none carried another's.
    let sent: Vec<_> = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with(base_path))
        .collect();
    assert_eq!(sent.len(), if wire.fixed_models.is_some() { 4 } else { 5 });
    for request in &sent {
        let (header, value) = &wire.key_header;
        assert_eq!(
            request.header(header),
            Some(value.as_str()),
            "{} {}",
            wire.adapter,
            request.path
        );
    }
    if wire.adapter == "messages" {
        assert!(sent.iter().all(|r| r.header("authorization").is_none()));
        assert!(sent.iter().all(|r| r.header("anthropic-version").is_some()));
    }
    for request in upstream.requests() {
        let headers = format!("{:?}", request.headers);
        assert!(!headers.contains("provider-c-key-never-sent"), "{headers}");
    }
    // The tool loop's second turn carried the tool's result back.
    let last = sent.last().unwrap();
    assert!(
        String::from_utf8_lossy(&last.body).contains("gov.uk"),
        "{}: the result went back",
        wire.adapter
    );
    server.stop().await;
}

#[tokio::test]
async fn the_file_is_reloaded_without_a_restart_and_a_broken_edit_changes_nothing() {
    let gate = Gate::new();
    let upstream = ScriptedUpstream::start([
        (
            "GET /alpha/models",
            Reply::text(200, "application/json", OPENAI_MODELS),
        ),
        (
            "GET /beta/models",
            Reply::text(200, "application/json", OPENAI_MODELS),
        ),
        (
            "POST /alpha/chat/completions",
            Reply::sse(chat_completions().text_stream).after(&gate),
        ),
        (
            "POST /beta/chat/completions",
            Reply::sse(chat_completions().text_stream),
        ),
    ])
    .await;
    let url = upstream.url();
    let declare = |id: &str| {
        format!("[providers.{id}]\nadapter = \"chat_completions\"\nbase_url = \"{url}/{id}\"\n")
    };
    let (server, files) = server(&upstream, &declare("alpha")).await;
    models_with(&server, "alpha", true).await;

    // A stream on alpha, held by the upstream.
    let mut running = server
        .stream(
            json!({"provider": "alpha", "model": "m", "enabledTools": [],
                       "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .await;
    running.expect("meta").await;
    // alpha's model list, then the completion the gate holds.
    upstream.received(2).await;
    assert_eq!(upstream.requests()[1].path, "/alpha/chat/completions");

    // alpha goes, beta comes: no restart.
    write_config(files.path(), &declare("beta"));
    let listed = models_with(&server, "beta", true).await;
    assert!(listed["providers"].get("alpha").is_none(), "{listed}");
    let (status, refused) = server
        .post(
            "/v1/chat-completions",
            json!({"provider": "alpha", "model": "m", "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.starts_with("provider: \"alpha\" is not a provider of this server")
            && message.contains("beta"),
        "{message}"
    );

    // The stream already running on alpha finishes on what it started with.
    gate.open();
    let rest = running.rest().await;
    assert_eq!(rest.last().unwrap().name, "done", "{rest:?}");

    // A broken edit is refused; beta keeps serving.
    let mut scans = server.state.plugins.scans();
    scans.mark_unchanged();
    write_config(files.path(), "[providers.beta\nadapter = ");
    scans.changed().await.unwrap();
    let events = server
        .stream(json!({"provider": "beta", "model": "m", "enabledTools": [],
                       "messages": [{"role": "user", "content": "Hi"}]}))
        .await
        .rest()
        .await;
    assert_eq!(events.last().unwrap().name, "done");
    // So is one that names an adapter nobody offers.
    scans.mark_unchanged();
    write_config(
        files.path(),
        &format!("[providers.gamma]\nadapter = \"carrier_pigeon\"\nbase_url = \"{url}\"\n"),
    );
    scans.changed().await.unwrap();
    let (_, listed) = server.get("/v1/models").await;
    assert!(listed["providers"].get("beta").is_some(), "{listed}");
    assert!(listed["providers"].get("gamma").is_none(), "{listed}");
    server.stop().await;
}

#[tokio::test]
async fn an_unknown_provider_names_the_ones_this_server_has() {
    let upstream = ScriptedUpstream::start([]).await;
    let (server, _files) = server(&upstream, "").await;
    let (status, error) = server
        .post(
            "/v1/chat-completions",
            json!({"provider": "groq", "model": "m", "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error["message"],
        "provider: \"groq\" is not a provider of this server; it has: provider_a, provider_b, \
         provider_c (provider_agent is not served: AGENT_API_KEY is not set)"
    );
    server.stop().await;
}
