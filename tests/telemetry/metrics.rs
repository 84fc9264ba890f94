//! `GET /metrics` after real work: a streamed completion with a tool call, an upstream failure,
//! requests with made-up ids, titles, models and methods; and who may read it.

use chatd::plugins::testing::Reply;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::binary::Chatd;
use crate::scrape::Scrape;
use crate::upstream::{COMPLETIONS, Upstreams, exa_results, text_reply, web_search_call};
use crate::{call, new_chat, stream};

/// A listed model of the recorded model list.
const MODEL: &str = "gpt-4";

#[tokio::test]
async fn metrics_count_a_tool_loop_and_a_failure_with_bounded_labels() {
    let upstreams = Upstreams::start([
        (COMPLETIONS, web_search_call()),
        (COMPLETIONS, text_reply(&["The capital ", "is London."])),
        (
            COMPLETIONS,
            Reply::json(500, json!({"error": {"message": "overloaded"}}))
                .header("retry-after-ms", "1"),
        ),
        ("POST /search", Reply::json(200, exa_results(2))),
    ])
    .await;
    let chatd = Chatd::start(upstreams.env());
    chatd.get("/v1/models").await;
    // Made-up words a label must never hold.
    let fuzz = format!("fuzz{}", uuid::Uuid::now_v7().simple());
    let title = format!("{fuzz} \"quoted\" {{braces}} \\ end");
    let made_up_model = format!("model-{fuzz}");

    let chat_id = new_chat(
        &chatd,
        json!({"title": title, "provider": "provider_c", "model": MODEL}),
    )
    .await;
    let events = stream(
        &chatd,
        json!({"chatId": chat_id, "provider": "provider_c", "model": MODEL,
               "messages": [{"role": "user", "content": "What is the capital of the UK?"}]}),
        &[],
    )
    .await;
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names.first(), Some(&"meta"));
    assert_eq!(names.last(), Some(&"done"), "{events:?}");
    assert!(names.contains(&"tool_call"), "{names:?}");

    // The upstream fails the next turn, on a chat whose model its provider does not list.
    let failing_id = new_chat(
        &chatd,
        json!({"title": title, "provider": "provider_c", "model": made_up_model}),
    )
    .await;
    let events = stream(
        &chatd,
        json!({"chatId": failing_id, "provider": "provider_c", "model": made_up_model,
               "messages": [{"role": "user", "content": "Again?"}]}),
        &[],
    )
    .await;
    assert_eq!(events.last().unwrap().0, "error", "{events:?}");

    // Ids, paths and a method of the client's making.
    let (status, _) = call(
        Method::GET,
        &format!("{}/v1/chats/{fuzz}", chatd.base),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let odd = Method::from_bytes(format!("X{}", &fuzz[..12].to_uppercase()).as_bytes()).unwrap();
    let (status, _) = call(odd, &format!("{}/v1/{fuzz}", chatd.base), None).await;
    assert!(status.is_client_error(), "{status}");
    let (status, _) = call(
        Method::POST,
        &format!("{}/v1/chats/{fuzz}/stream/attach", chatd.base),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let m = Scrape::of(&chatd.base).await;
    let stream_route = [
        ("method", "POST"),
        ("route", "/v1/chat-completions/stream"),
        ("status", "200"),
    ];
    assert_eq!(m.value("chatd_http_requests", &stream_route), 2.0);
    assert_eq!(
        m.value(
            "chatd_http_requests",
            &[("route", "/v1/chats/{chatId}"), ("status", "404")]
        ),
        1.0
    );
    assert_eq!(
        m.value(
            "chatd_http_requests",
            &[("method", "other"), ("route", "<unmatched>")]
        ),
        1.0
    );
    assert!(
        m.count(
            "chatd_http_request_duration_seconds",
            &[("route", "/v1/chats")]
        ) >= 2
    );

    // The tool loop: two turns of the listed model, tokens counted, one web_search call.
    let listed = [("provider", "provider_c"), ("model", MODEL)];
    assert_eq!(m.value("chatd_provider_turns", &listed), 2.0);
    assert_eq!(m.count("chatd_provider_turn_duration_seconds", &listed), 2);
    assert_eq!(
        m.count("chatd_provider_time_to_first_token_seconds", &listed),
        2
    );
    let input = [
        ("provider", "provider_c"),
        ("model", MODEL),
        ("direction", "input"),
    ];
    assert!(m.value("chatd_provider_tokens", &input) > 0.0);
    assert_eq!(m.value("chatd_provider_errors", &listed), 0.0);
    assert_eq!(
        m.value(
            "chatd_tool_calls",
            &[("tool", "web_search"), ("outcome", "ok")]
        ),
        1.0
    );
    assert_eq!(
        m.count(
            "chatd_tool_call_duration_seconds",
            &[("tool", "web_search")]
        ),
        1
    );
    assert!(
        m.value(
            "chatd_plugin_calls",
            &[("plugin", "web_search"), ("outcome", "ok")]
        ) >= 1.0
    );
    assert!(
        m.value(
            "chatd_plugin_calls",
            &[("plugin", "provider_c"), ("outcome", "ok")]
        ) >= 2.0
    );

    // The failure: an upstream 5xx of an unlisted model, tried three times (the default
    // attempts), its run ended by an error.
    let unlisted = [("provider", "provider_c"), ("model", "unlisted")];
    assert_eq!(m.value("chatd_provider_turns", &unlisted), 3.0);
    assert_eq!(
        m.value(
            "chatd_provider_errors",
            &[
                ("provider", "provider_c"),
                ("model", "unlisted"),
                ("kind", "upstream_5xx")
            ]
        ),
        3.0
    );
    assert_eq!(
        m.value(
            "chatd_provider_retries",
            &[("provider", "provider_c"), ("kind", "upstream_5xx")]
        ),
        2.0
    );
    assert_eq!(
        m.value("chatd_runs_ended", &[("kind", "chat"), ("outcome", "done")]),
        1.0
    );
    assert_eq!(
        m.value(
            "chatd_runs_ended",
            &[("kind", "chat"), ("outcome", "error")]
        ),
        1.0
    );
    assert_eq!(m.value("chatd_runs_live", &[("kind", "chat")]), 0.0);
    assert_eq!(m.value("chatd_run_client_disconnects", &[]), 0.0);

    // The plugin calls' freed instances keep the pages they touched, where the kernel can scan
    // for them (`plugins/runtime/engine.rs`), and nothing elsewhere.
    let kept = m.value("chatd_plugin_memory_kept_bytes", &[]);
    if chatd::plugins::runtime::engine::keep_resident() > 0 {
        assert!(kept > 0.0, "{kept}");
    } else {
        assert_eq!(kept, 0.0);
    }

    // The store: each completion began and finished its call in a timed operation.
    let begin = [("backend", "sqlite"), ("operation", "begin_call")];
    assert_eq!(m.count("chatd_store_query_duration_seconds", &begin), 2);
    assert!(
        m.value(
            "chatd_store_pool_connections",
            &[("backend", "sqlite"), ("state", "idle")]
        ) >= 0.0
    );

    // Nothing the client or the model chose is a label.
    for value in m.label_values() {
        for word in [&*fuzz, &chat_id, &failing_id, &made_up_model, "capital"] {
            assert!(!value.contains(word), "label {value:?} holds {word}");
        }
    }
    assert!(!m.text.contains(&fuzz), "{}", m.text);
}

/// A persisted stream of a chat made with `settings`, its upstream held after its first delta
/// until the gate opens, read as far as that delta.
struct HeldStream {
    gate: chatd::plugins::testing::Gate,
    _upstreams: Upstreams,
    chatd: Chatd,
    chat_id: String,
    bytes: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
}

async fn held_stream(settings: serde_json::Value) -> HeldStream {
    let gate = chatd::plugins::testing::Gate::new();
    let pieces = crate::upstream::text_pieces(&["One ", "two ", "three."]);
    let held = Reply::sse("")
        .paced(pieces, std::time::Duration::from_millis(5))
        .hold_before(2, &gate);
    let upstreams = Upstreams::start([(COMPLETIONS, held)]).await;
    let chatd = Chatd::start(upstreams.env());
    let chat_id = new_chat(&chatd, settings).await;
    let body = json!({"chatId": chat_id, "provider": "provider_c", "model": MODEL,
                      "messages": [{"role": "user", "content": "Count"}]});
    let response = reqwest::Client::new()
        .post(format!("{}/v1/chat-completions/stream", chatd.base))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut bytes = Box::pin(response.bytes_stream());
    let mut seen = String::new();
    while !seen.contains("event: delta") {
        use futures::StreamExt;
        let chunk = bytes.next().await.expect("the stream goes on").unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    HeldStream {
        gate,
        _upstreams: upstreams,
        chatd,
        chat_id,
        bytes,
    }
}

#[tokio::test]
async fn a_client_that_leaves_a_stream_and_one_that_attaches_are_counted() {
    // A chat without tools (deltas go out as they arrive with tools on too: `chat/round.rs`).
    let HeldStream {
        gate,
        _upstreams,
        chatd,
        chat_id,
        bytes,
    } = held_stream(json!({"enabledTools": []})).await;
    // The first delta arrived: the run is live. Then the client leaves.
    let live = Scrape::of(&chatd.base).await;
    assert_eq!(live.value("chatd_runs_live", &[("kind", "chat")]), 1.0);
    drop(bytes);
    // Another client attaches and reads the run to its end.
    let attach = reqwest::Client::new()
        .post(format!("{}/v1/chats/{chat_id}/stream/attach", chatd.base))
        .send()
        .await
        .unwrap();
    assert_eq!(attach.status(), 200);
    gate.open();
    let text = attach.text().await.unwrap();
    assert!(text.contains("event: done"), "{text}");
    // The departure is counted when the server notices the closed connection.
    let m = until(&chatd, |m| {
        m.value("chatd_run_client_disconnects", &[("kind", "chat")]) >= 1.0
    })
    .await;
    assert_eq!(
        m.value("chatd_run_client_disconnects", &[("kind", "chat")]),
        1.0
    );
    assert_eq!(m.value("chatd_run_attaches", &[("kind", "chat")]), 1.0);
    assert_eq!(m.value("chatd_runs_live", &[("kind", "chat")]), 0.0);
    assert_eq!(
        m.value("chatd_runs_ended", &[("kind", "chat"), ("outcome", "done")]),
        1.0
    );
}

#[tokio::test]
async fn a_stopped_run_is_counted_and_ends_done() {
    let held = held_stream(json!({})).await;
    let (chatd, chat_id, gate) = (&held.chatd, &held.chat_id, &held.gate);
    let (status, _) = call(
        Method::POST,
        &format!("{}/v1/chats/{chat_id}/stream/cancel", chatd.base),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let m = Scrape::of(&chatd.base).await;
    assert_eq!(m.value("chatd_runs_cancelled", &[("kind", "chat")]), 1.0);
    assert_eq!(
        m.value("chatd_runs_ended", &[("kind", "chat"), ("outcome", "done")]),
        1.0
    );
    assert_eq!(m.value("chatd_runs_live", &[("kind", "chat")]), 0.0);
    gate.open();
}

#[tokio::test]
async fn token_mode_hides_metrics_unless_the_operator_opens_them() {
    let token = "metrics-test-token";
    let guarded = Chatd::start([("ADMIN_TOKEN", token)]);
    let url = format!("{}/metrics", guarded.base);
    let (status, body) = call(Method::GET, &url, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(!body.contains("chatd_"), "{body}");
    let (status, body) = call(Method::GET, &url, Some(token)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.contains("# TYPE chatd_http_requests counter"),
        "{body}"
    );
    let (status, _) = call(Method::GET, &format!("{}/api/metrics", guarded.base), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    drop(guarded);

    let open = Chatd::start([("ADMIN_TOKEN", token), ("CHATD_METRICS", "open")]);
    let (status, body) = call(Method::GET, &format!("{}/metrics", open.base), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Opening the metrics opens nothing else.
    let (status, _) = call(Method::GET, &format!("{}/v1/chats", open.base), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    drop(open);

    let off = Chatd::start([("CHATD_METRICS", "off")]);
    let (status, body) = call(Method::GET, &format!("{}/metrics", off.base), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body.contains("message"), "{body}");
}

#[tokio::test]
async fn refused_plugin_files_and_configuration_reloads_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::write(plugins.join("broken.wasm"), b"not a component").unwrap();
    std::fs::write(
        plugins.join("broken.json"),
        r#"{"id":"broken","kind":"tool","wit":"chatd:plugin@0.1.0"}"#,
    )
    .unwrap();
    let config = dir.path().join("chatd.toml");
    std::fs::write(&config, "").unwrap();
    let chatd = Chatd::start([
        ("PLUGINS_DIR", plugins.to_str().unwrap()),
        ("CHATD_CONFIG", config.to_str().unwrap()),
    ]);
    let m = Scrape::of(&chatd.base).await;
    // Tried at the first scan and again when the watch starts (a refused file is retried).
    let refused = [("plugin", "broken"), ("outcome", "refused")];
    assert!(m.value("chatd_plugin_loads", &refused) >= 1.0, "{}", m.text);

    // A configuration file that cannot be used is refused; a good one is applied.
    std::fs::write(&config, "[providers.x]\nadapter = 7\n").unwrap();
    let refused = [("outcome", "refused")];
    let m = until(&chatd, |m| m.value("chatd_config_reloads", &refused) >= 1.0).await;
    assert_eq!(
        m.value("chatd_config_reloads", &[("outcome", "applied")]),
        0.0
    );
    std::fs::write(&config, "# nothing to declare\n").unwrap();
    until(&chatd, |m| {
        m.value("chatd_config_reloads", &[("outcome", "applied")]) >= 1.0
    })
    .await;
}

/// Scrapes until `done` holds (at most 20 s): what a watcher does happens after a change.
async fn until(chatd: &Chatd, done: impl Fn(&Scrape) -> bool) -> Scrape {
    let started = std::time::Instant::now();
    loop {
        let m = Scrape::of(&chatd.base).await;
        if done(&m) {
            return m;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "not seen in time:\n{}",
            m.text
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
