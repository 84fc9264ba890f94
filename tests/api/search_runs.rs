//! Search runs, black-box, with the bundled `search_engine_a` plugin against a mock engine_a:
//! run (persisted, replacing the last run; partial and total failures; validation), cacheHit
//! during a run, a client that hangs up, and a chat started from a search. The streaming runs
//! are in `search_streams.rs`, with the engine mocks from here.

use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Event, Events, Options, TestServer};

const KEY: &str = "exa-test-key";

/// engine_a's search answer as its SDKs document it, with every field search mode keeps and a
/// few it drops.
pub(crate) fn exa_results(n: usize) -> Value {
    let results: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "id": format!("doc-{i}"),
                "url": format!("https://site{i}.example/page"),
                "title": format!("Result {i}"),
                "publishedDate": "2026-01-02T00:00:00.000Z",
                "author": "Ann Author",
                "score": 0.5,
                "text": format!("Full text of result {i}."),
                "highlights": [format!("Highlight of result {i}")],
                "highlightScores": [0.7],
                "summary": format!("Summary of result {i}."),
                "image": "https://site.example/image.png",
                "favicon": "https://site.example/favicon.ico",
                "subpages": [],
                "extras": {"links": []}
            })
        })
        .collect();
    json!({
        "requestId": "search-req-1",
        "resolvedSearchType": "neural",
        "results": results,
        "costDollars": {"total": 0.005}
    })
}

pub(crate) fn exa_answer() -> Value {
    json!({
        "requestId": "answer-req-1",
        "answer": "Tokio is an asynchronous runtime for Rust.",
        "citations": [
            {"id": "https://tokio.rs/", "url": "https://tokio.rs/", "title": "Tokio",
             "author": null, "publishedDate": "2025-05-01"}
        ],
        "costDollars": {"total": 0.005}
    })
}

pub(crate) async fn server_for(upstream: &ScriptedUpstream) -> TestServer {
    TestServer::start_with(Options {
        args: vec![
            "--engine-a-base-url".into(),
            upstream.url(),
            "--engine-a-api-key".into(),
            KEY.into(),
        ],
        ..Default::default()
    })
    .await
}

pub(crate) async fn engine(search: Reply, answer: Reply) -> (ScriptedUpstream, TestServer) {
    let upstream =
        ScriptedUpstream::start([("POST /search", search), ("POST /answer", answer)]).await;
    let server = server_for(&upstream).await;
    (upstream, server)
}

/// An engine whose search (`n` results) and answer both wait for the returned gate.
pub(crate) async fn held_engine(n: usize) -> (Gate, ScriptedUpstream, TestServer) {
    let gate = Gate::new();
    let (upstream, server) = engine(
        Reply::json(200, exa_results(n)).after(&gate),
        Reply::json(200, exa_answer()).after(&gate),
    )
    .await;
    (gate, upstream, server)
}

/// An engine whose search answers at once with `n` results and whose answer waits for the
/// returned gate.
pub(crate) async fn held_answer(n: usize) -> (Gate, ScriptedUpstream, TestServer) {
    let gate = Gate::new();
    let (upstream, server) = engine(
        Reply::json(200, exa_results(n)),
        Reply::json(200, exa_answer()).after(&gate),
    )
    .await;
    (gate, upstream, server)
}

pub(crate) fn names(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_str()).collect()
}

pub(crate) async fn open_stream(server: &TestServer, id: &str, body: Value) -> Events {
    Events::of(
        server
            .open(&format!("/v1/searches/{id}/run/stream"), Some(body), &[])
            .await,
    )
    .await
}

#[tokio::test]
async fn a_run_persists_results_answer_and_citations_and_the_next_run_replaces_them() {
    let upstream = ScriptedUpstream::start([
        ("POST /search", Reply::json(200, exa_results(2))),
        ("POST /search", Reply::json(200, exa_results(1))),
        ("POST /answer", Reply::json(200, exa_answer())),
    ])
    .await;
    let server = server_for(&upstream).await;
    let id = server.new_search(json!({"query": "Rust async"})).await;

    let (status, body) = server
        .post(
            &format!("/v1/searches/{id}/run"),
            json!({"type": "deep", "numResults": 5, "includeDomains": ["tokio.rs"],
                   "excludeDomains": ["spam.example"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let search = &body["search"];
    assert_eq!(search["requestId"], "search-req-1");
    assert!(search["latencyMs"].as_i64().unwrap() >= 0);
    assert_eq!(search["error"], Value::Null);
    assert_eq!(
        search["answerText"],
        "Tokio is an asynchronous runtime for Rust."
    );
    assert_eq!(search["answerRequestId"], "answer-req-1");
    assert_eq!(search["answerError"], Value::Null);
    assert_eq!(
        search["answerCitations"],
        json!([{"id": "https://tokio.rs/", "url": "https://tokio.rs/", "title": "Tokio",
                "publishedDate": "2025-05-01"}])
    );
    // Every useful field kept, the engine's bookkeeping dropped.
    assert_eq!(
        search["results"][0],
        json!({
            "id": "doc-0", "url": "https://site0.example/page", "title": "Result 0",
            "publishedDate": "2026-01-02T00:00:00.000Z", "author": "Ann Author", "score": 0.5,
            "text": "Full text of result 0.", "highlights": ["Highlight of result 0"],
            "summary": "Summary of result 0.", "image": "https://site.example/image.png",
            "favicon": "https://site.example/favicon.ico"
        })
    );
    assert_eq!(search["results"].as_array().unwrap().len(), 2);
    assert_eq!(server.get(&format!("/v1/searches/{id}")).await.1, body);

    // What engine_a received: the documented request, with the operator's key added by the host.
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2);
    let sent = requests.iter().find(|r| r.path == "/search").unwrap();
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    let sent = sent.json();
    assert_eq!(sent["query"], "Rust async");
    assert_eq!(sent["type"], "deep");
    assert_eq!(sent["numResults"], 5);
    assert_eq!(sent["includeDomains"], json!(["tokio.rs"]));
    assert_eq!(sent["excludeDomains"], json!(["spam.example"]));
    assert_eq!(sent["contents"]["summary"], true);
    let asked = requests.iter().find(|r| r.path == "/answer").unwrap();
    assert_eq!(asked.header("x-api-key"), Some(KEY));
    assert_eq!(asked.json()["query"], "Rust async");

    // The next run, with overrides, replaces the outcome and stores the new query and title.
    let (status, body) = server
        .post(
            &format!("/v1/searches/{id}/run"),
            json!({"query": "tokio runtime", "title": "Runtimes"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["search"]["results"].as_array().unwrap().len(), 1);
    assert_eq!(body["search"]["query"], "tokio runtime");
    assert_eq!(body["search"]["title"], "Runtimes");
    let sent = upstream.requests()[2..]
        .iter()
        .find(|r| r.path == "/search")
        .unwrap()
        .json();
    assert_eq!(sent["query"], "tokio runtime");
    assert_eq!(sent["type"], "auto", "the default type");
    assert!(sent.get("includeDomains").is_none());
    // The new query is the one reuseByQuery finds.
    let (_, reused) = server
        .post(
            "/v1/searches",
            json!({"query": " Tokio Runtime ", "reuseByQuery": true}),
        )
        .await;
    assert_eq!(reused["search"]["id"], json!(id));
    assert_eq!(reused["cacheHit"], true);
}

#[tokio::test]
async fn one_failing_part_leaves_the_other_persisted_with_its_error_set() {
    let upstream = ScriptedUpstream::start([
        (
            "POST /search",
            Reply::json(
                500,
                json!({"requestId": "x", "error": "index unavailable", "tag": "INTERNAL"}),
            ),
        ),
        ("POST /search", Reply::json(200, exa_results(3))),
        ("POST /answer", Reply::json(200, exa_answer())),
        (
            "POST /answer",
            Reply::json(429, json!({"error": "rate limited"})),
        ),
    ])
    .await;
    let server = server_for(&upstream).await;
    let id = server.new_search(json!({"query": "q"})).await;
    let path = format!("/v1/searches/{id}/run");

    let (status, body) = server.post(&path, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let error = body["search"]["error"].as_str().unwrap();
    assert!(
        error.contains("500") && error.contains("engine_a: index unavailable"),
        "{error}"
    );
    assert_eq!(body["search"]["results"], json!([]));
    assert_eq!(body["search"]["requestId"], "");
    assert_eq!(
        body["search"]["answerText"],
        "Tokio is an asynchronous runtime for Rust."
    );

    let (status, body) = server.post(&path, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["search"]["error"], Value::Null);
    assert_eq!(body["search"]["results"].as_array().unwrap().len(), 3);
    let answer_error = body["search"]["answerError"].as_str().unwrap();
    assert!(
        answer_error.contains("429") && answer_error.contains("rate limited"),
        "{answer_error}"
    );
    assert_eq!(body["search"]["answerText"], Value::Null);
    assert_eq!(body["search"]["answerCitations"], json!([]));
    assert_eq!(server.get(&format!("/v1/searches/{id}")).await.1, body);
}

#[tokio::test]
async fn both_parts_failing_is_a_502_and_the_last_outcome_stays() {
    let upstream = ScriptedUpstream::start([
        ("POST /search", Reply::json(200, exa_results(2))),
        (
            "POST /search",
            Reply::json(401, json!({"error": "Invalid API key"})),
        ),
        ("POST /answer", Reply::json(200, exa_answer())),
        (
            "POST /answer",
            Reply::text(200, "application/json", "{\"answer\": "),
        ),
    ])
    .await;
    let server = server_for(&upstream).await;
    let id = server.new_search(json!({"query": "q"})).await;
    let path = format!("/v1/searches/{id}/run");
    let (status, first) = server.post(&path, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{first}");

    let (status, body) = server.post(&path, json!({})).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("search: upstream answered 401: engine_a: Invalid API key"),
        "{message}"
    );
    assert!(
        message.contains("answer: malformed upstream response"),
        "{message}"
    );
    assert_eq!(server.get(&format!("/v1/searches/{id}")).await.1, first);
    // The server goes on serving.
    assert_eq!(server.get("/health").await.0, StatusCode::OK);
}

#[tokio::test]
async fn bad_run_bodies_are_400s_naming_the_field_and_reach_no_engine() {
    let (upstream, server) = engine(
        Reply::json(200, exa_results(1)),
        Reply::json(200, exa_answer()),
    )
    .await;
    let id = server.new_search(json!({"query": "q"})).await;
    let untitled = server.new_search(json!({})).await;
    let before = server.row_counts().await;
    for (search, body, starts) in [
        (&id, json!({"type": "slow"}), "type: unknown variant `slow`"),
        (
            &id,
            json!({"numResults": 0}),
            "numResults: must be an integer from 1 to 100",
        ),
        (
            &id,
            json!({"numResults": 101}),
            "numResults: must be an integer from 1 to 100",
        ),
        (&id, json!({"numResults": "5"}), "numResults: invalid type"),
        (
            &id,
            json!({"includeDomains": [1]}),
            "includeDomains[0]: invalid type",
        ),
        (
            &id,
            json!({"excludeDomains": "a.com"}),
            "excludeDomains: invalid type",
        ),
        (
            &id,
            json!({"includeDomains": ["a.com", ""]}),
            "includeDomains[1]: must be a non-blank domain",
        ),
        (
            &id,
            json!({"query": " "}),
            "query: must be a non-blank string",
        ),
        (
            &id,
            json!({"title": ""}),
            "title: must be a non-blank string",
        ),
        (
            &id,
            json!({"query": "q".repeat(2_001)}),
            "query: must be at most 2000 characters",
        ),
        (
            &id,
            json!({"excludeDomains": ["d".repeat(301)]}),
            "excludeDomains[0]: must be at most 300",
        ),
        (&untitled, json!({}), "query: the search has no query"),
    ] {
        for path in [
            format!("/v1/searches/{search}/run"),
            format!("/v1/searches/{search}/run/stream"),
        ] {
            let res = server.open(&path, Some(body.clone()), &[]).await;
            assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{path} {body}");
            let message = res.json::<Value>().await.unwrap()["message"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(message.starts_with(starts), "{body}: {message}");
        }
    }
    for path in [
        "/v1/searches/nope/run",
        "/v1/searches/nope/run/stream",
        "/v1/searches/nope/chat",
    ] {
        let (status, body) = server.post(path, json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(body, json!({"message": "search not found"}));
    }
    assert_eq!(server.row_counts().await, before);
    assert!(upstream.requests().is_empty());
}

#[tokio::test]
async fn cache_hit_is_false_once_the_window_passes_and_true_after_a_new_run() {
    let (_upstream, server) = engine(
        Reply::json(200, exa_results(1)),
        Reply::json(200, exa_answer()),
    )
    .await;
    let id = server.new_search(json!({"query": "Window"})).await;
    let reuse = || {
        server.post(
            "/v1/searches",
            json!({"query": "window", "reuseByQuery": true}),
        )
    };
    assert_eq!(reuse().await.1["cacheHit"], false, "never run");
    assert_eq!(
        server
            .post(&format!("/v1/searches/{id}/run"), json!({}))
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(reuse().await.1["cacheHit"], true);

    server.age_search(&id, 25).await;
    assert_eq!(reuse().await.1["cacheHit"], false, "older than 24 hours");
    assert_eq!(
        server
            .post(&format!("/v1/searches/{id}/run"), json!({}))
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(reuse().await.1["cacheHit"], true, "the re-run refreshed it");
}

#[tokio::test]
async fn a_chat_from_a_search_is_seeded_with_one_hidden_bounded_system_message() {
    let mut big = exa_results(40);
    for result in big["results"].as_array_mut().unwrap() {
        result["summary"] = json!("long ".repeat(2_000));
    }
    let (_upstream, server) = engine(Reply::json(200, big), Reply::json(200, exa_answer())).await;
    let id = server
        .new_search(json!({"query": "Rust async", "title": "My search"}))
        .await;
    assert_eq!(
        server
            .post(&format!("/v1/searches/{id}/run"), json!({}))
            .await
            .0,
        StatusCode::OK
    );

    let (status, body) = server
        .post(&format!("/v1/searches/{id}/chat"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["chat"]["title"], "Search: Rust async");
    let chat_id = body["chat"]["id"].as_str().unwrap();
    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    let messages = chat["chat"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    let seed = &messages[0];
    assert_eq!(seed["role"], "system");
    assert_eq!(
        seed["metadata"],
        json!({"hidden": true, "kind": "search_context", "searchId": id})
    );
    let content = seed["content"].as_str().unwrap();
    assert!(content.contains("Query: Rust async"), "{content}");
    assert!(content.contains("Tokio is an asynchronous runtime for Rust."));
    assert!(content.contains("- Tokio — https://tokio.rs/"));
    assert!(content.contains("1. Result 0 — https://site0.example/page"));
    assert!(content.contains("8. Result 7"), "the top results");
    assert!(
        !content.contains("9. Result 8"),
        "no more than the top eight"
    );
    assert!(
        content.chars().count() <= 16_000,
        "{}",
        content.chars().count()
    );

    let (status, body) = server
        .post(
            &format!("/v1/searches/{id}/chat"),
            json!({"title": " Follow-up "}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["chat"]["title"], "Follow-up");
    let (status, body) = server
        .post(&format!("/v1/searches/{id}/chat"), json!({"title": "  "}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["message"].as_str().unwrap().starts_with("title:"));

    // Without a query, the title is used.
    let titled = server.new_search(json!({"title": "Only a title"})).await;
    let (_, body) = server
        .post(&format!("/v1/searches/{titled}/chat"), json!({}))
        .await;
    assert_eq!(body["chat"]["title"], "Search: Only a title");
}

#[tokio::test]
async fn a_run_whose_client_hangs_up_still_stores_its_outcome() {
    let (gate, upstream, server) = held_engine(3).await;
    let id = server.new_search(json!({"query": "q"})).await;
    let request = server
        .client
        .post(format!("{}/v1/searches/{id}/run", server.base))
        .json(&json!({}))
        .send();
    let hung_up = tokio::spawn(request);
    upstream.received(2).await;
    hung_up.abort();
    gate.open();
    // The run is a task of its own: it ends, and stores its outcome, without the client.
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        server.state.runs.settled(),
    )
    .await
    .expect("the run ends");
    let (_, stored) = server.get(&format!("/v1/searches/{id}")).await;
    assert_eq!(stored["search"]["results"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn without_a_search_plugin_runs_are_503() {
    // An operator's plugin under the search plugin's id that is not a search backend.
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(
        folder.path().join("search_engine_a.json"),
        r#"{"id":"search_engine_a","kind":"tool","wit":"chatd:plugin@0.1.0"}"#,
    )
    .unwrap();
    std::fs::write(
        folder.path().join("search_engine_a.wasm"),
        crate::support::test_component("test-plugin-hostile"),
    )
    .unwrap();
    let server = TestServer::start_with(Options {
        plugins_dir: Some(folder.path().to_path_buf()),
        ..Default::default()
    })
    .await;
    let id = server.new_search(json!({"query": "q"})).await;
    for path in [
        format!("/v1/searches/{id}/run"),
        format!("/v1/searches/{id}/run/stream"),
    ] {
        let (status, body) = server.post(&path, json!({})).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("the search plugin search_engine_a is not loaded"),
            "{body}"
        );
    }
}
