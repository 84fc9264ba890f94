//! A provider plugin outside the bundled set, dropped into PLUGINS_DIR while the server runs:
//! `examples/ollama` (Ollama's native API, newline-delimited JSON) under a new id, its upstream
//! an operator's `[services.ollama]` with no key. Listed by `GET /v1/models`, serving a
//! completion streamed and not, a tool loop, refused images it does not take, and offered as an
//! adapter to providers declared in the file.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::json;

use crate::support::{
    Options, TestServer, data_url, deploy, models_with, png_bytes, test_component, write_config,
};

const TAGS: &str = include_str!("../../examples/ollama/fixtures/tags.json");
const TEXT: &str = include_str!("../../examples/ollama/fixtures/chat_stream_text.ndjson");
const TOOL_CALL: &str = include_str!("../../examples/ollama/fixtures/chat_stream_tool_call.ndjson");
const WHOLE: &str = include_str!("../../examples/ollama/fixtures/chat_nonstream.json");
const MANIFEST: &str = include_str!("../../examples/ollama/ollama.json");

fn ndjson(body: &str) -> Reply {
    Reply::text(200, "application/x-ndjson", body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_plugin_with_a_new_id_serves_without_a_restart() {
    let upstream = ScriptedUpstream::start([
        (
            "GET /ollama/api/tags",
            Reply::text(200, "application/json", TAGS),
        ),
        (
            "POST /ollama/api/chat",
            Reply::text(200, "application/json", WHOLE),
        ),
        ("POST /ollama/api/chat", ndjson(TEXT)),
        ("POST /ollama/api/chat", ndjson(TOOL_CALL)),
        ("POST /ollama/api/chat", ndjson(TEXT)),
        (
            "GET /gpu2/api/tags",
            Reply::text(200, "application/json", TAGS),
        ),
        ("POST /gpu2/api/chat", ndjson(TEXT)),
        (
            "POST /search",
            Reply::json(
                200,
                json!({"requestId": "r1", "results": [
                    {"url": "https://www.gov.uk/", "title": "UK", "summary": "London."}]}),
            ),
        ),
    ])
    .await;
    let url = upstream.url();
    let service = format!(
        "[services.ollama]\nbase_url = \"{url}/ollama\"\nauth = \"none\"\nplugins = [\"ollama\"]\n"
    );
    let plugins_dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let config = write_config(files.path(), &service);
    let server = TestServer::start_with(Options {
        plugins_dir: Some(plugins_dir.path().to_path_buf()),
        config: Some(config),
        args: [
            "--engine-a-base-url",
            &url,
            "--engine-a-api-key",
            "engine-key-1234",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        ..Options::default()
    })
    .await;
    let (_, before) = server.get("/v1/models").await;
    assert!(before["providers"].get("ollama").is_none(), "{before}");

    // Dropped in while the server runs: listed, with the server's models.
    let component = test_component("example-ollama");
    deploy(plugins_dir.path(), "ollama", &component, MANIFEST);
    let listed = models_with(&server, "ollama", true).await;
    let entry = &listed["providers"]["ollama"];
    assert_eq!(
        entry["models"],
        json!(["qwen3:8b", "llama3.2:latest"]),
        "{listed}"
    );
    assert!(
        entry["error"].is_null() && entry["loadedAt"].is_string(),
        "{entry}"
    );

    // Non-streaming, then streaming.
    let chat_id = server.new_chat(json!({})).await;
    let ask = |text: &str| {
        json!({"chatId": chat_id, "provider": "ollama", "model": "llama3.2", "enabledTools": [],
               "messages": [{"role": "user", "content": text}]})
    };
    let (status, reply) = server.post("/v1/chat-completions", ask("Hi")).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["message"]["content"], "The capital is London.");
    let events = server.stream(ask("Hi again")).await.rest().await;
    let deltas: String = events
        .iter()
        .filter(|e| e.name == "delta")
        .map(|e| e.data["text"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(deltas, "The capital is London.", "{events:?}");
    assert_eq!(events.last().unwrap().name, "done");
    let sent = upstream.requests();
    let streamed = sent[2].json();
    assert_eq!(streamed["stream"], true);
    assert_eq!(streamed["model"], "llama3.2");
    assert!(sent[2].header("authorization").is_none(), "auth = \"none\"");

    // A tool loop through web_search.
    let events = server
        .stream(
            json!({"chatId": chat_id, "provider": "ollama", "model": "llama3.2",
                       "enabledTools": ["web_search"],
                       "messages": [{"role": "user", "content": "Capital of the UK?"}]}),
        )
        .await
        .rest()
        .await;
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    assert!(names.contains(&"tool_call"), "{names:?}");
    assert_eq!(*names.last().unwrap(), "done", "{events:?}");
    let after_tool = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == "/ollama/api/chat")
        .last()
        .unwrap()
        .json();
    let last = after_tool["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_name"], "web_search");
    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(chat["chat"]["lastUsedProvider"], "ollama", "{chat}");

    // It declares that it takes no images: refused before any call.
    let calls = upstream.requests().len();
    let png = png_bytes(100);
    let (status, refused) = server
        .post(
            "/v1/chat-completions",
            json!({"provider": "ollama", "model": "llama3.2",
                   "messages": [{"role": "user", "content": "What is this?", "attachments": [
                       {"kind": "image", "filename": "a.png", "mimeType": "image/png",
                        "sizeBytes": png.len(), "dataUrl": data_url("image/png", &png)}]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(
        refused["message"],
        "messages[0].attachments[0]: provider ollama does not take images"
    );
    assert_eq!(upstream.requests().len(), calls);

    // Its wire format is an adapter for providers declared in the file.
    write_config(
        files.path(),
        &format!("{service}\n[providers.gpu2]\nadapter = \"ollama\"\nbase_url = \"{url}/gpu2\"\n"),
    );
    models_with(&server, "gpu2", true).await;
    let events = server
        .stream(
            json!({"provider": "gpu2", "model": "qwen3:8b", "enabledTools": [],
                       "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .await
        .rest()
        .await;
    assert_eq!(events.last().unwrap().name, "done", "{events:?}");
    assert!(
        upstream
            .requests()
            .iter()
            .any(|r| r.path == "/gpu2/api/chat"),
        "gpu2 ran on its own base URL"
    );
    server.stop().await;
}

/// The same provider from PLUGINS_DIR behind OpenAI's wire (`/openai/v1`): listed as
/// `ollama/MODEL`, answering a completion streamed and not, and refusing the turn options it
/// does not declare (a plugin built with the SDK honours none unless it says so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_front_door_serves_a_plugins_dir_provider() {
    let upstream = ScriptedUpstream::start([
        (
            "GET /ollama/api/tags",
            Reply::text(200, "application/json", TAGS),
        ),
        (
            "POST /ollama/api/chat",
            Reply::text(200, "application/json", WHOLE),
        ),
        ("POST /ollama/api/chat", ndjson(TEXT)),
    ])
    .await;
    let url = upstream.url();
    let plugins_dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let config = write_config(
        files.path(),
        &format!(
            "[services.ollama]\nbase_url = \"{url}/ollama\"\nauth = \"none\"\nplugins = [\"ollama\"]\n"
        ),
    );
    let server = TestServer::start_with(Options {
        plugins_dir: Some(plugins_dir.path().to_path_buf()),
        config: Some(config),
        ..Options::default()
    })
    .await;
    deploy(
        plugins_dir.path(),
        "ollama",
        &test_component("example-ollama"),
        MANIFEST,
    );
    models_with(&server, "ollama", true).await;
    let http = reqwest::Client::new();
    let route = |path: &str| format!("{}/openai/v1/{path}", server.base);
    let models: serde_json::Value = http
        .get(route("models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(ids.contains(&"ollama/llama3.2:latest"), "{ids:?}");

    let ask = |stream: bool, extra: serde_json::Value| {
        let mut body = json!({"model": "ollama/llama3.2", "stream": stream,
            "messages": [{"role": "user", "content": "Hi"}]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        http.post(route("chat/completions")).json(&body).send()
    };
    let whole = ask(false, json!({})).await.unwrap();
    assert_eq!(whole.status(), StatusCode::OK);
    let whole: serde_json::Value = whole.json().await.unwrap();
    assert_eq!(
        whole["choices"][0]["message"]["content"],
        "The capital is London."
    );
    assert_eq!(whole["model"], "ollama/llama3.2");
    let streamed = ask(true, json!({})).await.unwrap();
    assert_eq!(streamed.status(), StatusCode::OK);
    let text = streamed.text().await.unwrap();
    assert!(
        text.contains("London.") && text.trim_end().ends_with("data: [DONE]"),
        "{text}"
    );

    let refused = ask(false, json!({"top_p": 0.5})).await.unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let refused: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["param"], "top_p", "{refused}");
    assert_eq!(refused["error"]["code"], "unsupported_parameter");
    let chats = upstream
        .requests()
        .iter()
        .filter(|r| r.path == "/ollama/api/chat")
        .count();
    assert_eq!(chats, 2, "the refused request went nowhere");
    server.stop().await;
}
