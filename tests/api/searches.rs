//! Searches without a search engine: create, reuseByQuery and cacheHit, read, star, delete, 404s.

use chatd::runs::RunKind;
use chatd::store::SearchRunOutcome;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;

/// Persists a run outcome the way a search run will (no endpoint of this build runs one).
async fn seed_run(server: &TestServer, id: &str, outcome: SearchRunOutcome) {
    server
        .store
        .record_search_run(id, outcome)
        .await
        .unwrap()
        .expect("search exists");
}

fn outcome_with_results() -> SearchRunOutcome {
    SearchRunOutcome {
        request_id: Some("req-1".into()),
        latency_ms: Some(321),
        results: vec![json!({ "url": "https://example.com", "title": "Example", "score": 0.9 })],
        answer_text: Some("An answer.".into()),
        answer_request_id: Some("ans-1".into()),
        answer_citations: vec![json!({ "url": "https://example.com" })],
        ..Default::default()
    }
}

#[tokio::test]
async fn create_trims_and_never_reuses_by_default() {
    let server = TestServer::start().await;
    let (status, body) = server
        .post(
            "/v1/searches",
            json!({ "query": "  Rust Async  ", "title": "  " }),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["reused"], false);
    assert_eq!(body["cacheHit"], false);
    let search = &body["search"];
    assert_eq!(search["query"], "Rust Async");
    assert_eq!(search["title"], Value::Null);
    assert_eq!(search["starred"], false);
    assert_eq!(search["starredAt"], Value::Null);
    let first = search["id"].as_str().unwrap().to_string();

    // reuseByQuery defaults to false: the same query makes a new search.
    let (_, body) = server
        .post("/v1/searches", json!({ "query": "Rust Async" }))
        .await;
    assert_ne!(body["search"]["id"], first.as_str());
    assert_eq!(body["reused"], false);
    // Empty body: a search with neither title nor query.
    let (status, body) = server.post_raw("/v1/searches", "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["search"]["query"], Value::Null);

    for (body, expected) in [
        (json!({ "query": 1 }), "query: invalid type"),
        (
            json!({ "reuseByQuery": "yes" }),
            "reuseByQuery: invalid type",
        ),
    ] {
        let (status, err) = server.post("/v1/searches", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(
            err["message"].as_str().unwrap().starts_with(expected),
            "{err}"
        );
    }
}

#[tokio::test]
async fn reuse_by_query_returns_the_latest_normalized_match() {
    let server = TestServer::start().await;
    let older = server.new_search(json!({ "query": "Tokio Runtime" })).await;
    let newer = server.new_search(json!({ "query": "tokio runtime" })).await;
    server
        .new_search(json!({ "query": "something else" }))
        .await;

    let (status, body) = server
        .post(
            "/v1/searches",
            json!({ "query": "  TOKIO runtime ", "reuseByQuery": true }),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["reused"], true);
    assert_eq!(body["search"]["id"], newer.as_str());
    assert_eq!(body["cacheHit"], false, "no results or answer yet");

    // A run on the older one makes it the most recently updated match.
    seed_run(&server, &older, outcome_with_results()).await;
    let (_, body) = server
        .post(
            "/v1/searches",
            json!({ "query": "tokio runtime", "reuseByQuery": true }),
        )
        .await;
    assert_eq!(body["search"]["id"], older.as_str());
    assert_eq!(body["cacheHit"], true);

    // No query: nothing to reuse by, so a new search.
    let (_, body) = server
        .post(
            "/v1/searches",
            json!({ "reuseByQuery": true, "title": "t" }),
        )
        .await;
    assert_eq!(body["reused"], false);
    // No match: a new search.
    let (_, body) = server
        .post(
            "/v1/searches",
            json!({ "query": "unseen", "reuseByQuery": true }),
        )
        .await;
    assert_eq!(body["reused"], false);
    assert_eq!(body["search"]["query"], "unseen");
}

#[tokio::test]
async fn concurrent_reuse_by_query_makes_one_search() {
    let server = TestServer::start().await;
    let requests = (0..12).map(|i| server.post("/v1/searches", json!({ "query": format!("  Same Query{} ", if i % 2 == 0 { "" } else { " " }), "reuseByQuery": true })));
    let results = futures::future::join_all(requests).await;
    let ids: std::collections::BTreeSet<&str> = results
        .iter()
        .map(|(_, b)| b["search"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 1, "every caller got the same search: {ids:?}");
    let created = results.iter().filter(|(_, b)| b["reused"] == false).count();
    assert_eq!(created, 1, "exactly one request created it");
    assert_eq!(
        server.get("/v1/searches").await.1["searches"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn cache_hit_needs_output_no_stream_and_24_hours() {
    let server = TestServer::start().await;
    let id = server.new_search(json!({ "query": "q" })).await;
    let reuse = || {
        server.post(
            "/v1/searches",
            json!({ "query": "q", "reuseByQuery": true }),
        )
    };

    // Answer text alone is output.
    seed_run(
        &server,
        &id,
        SearchRunOutcome {
            answer_text: Some("a".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reuse().await.1["cacheHit"], true);
    // An empty outcome is not.
    seed_run(
        &server,
        &id,
        SearchRunOutcome {
            answer_text: Some(String::new()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(reuse().await.1["cacheHit"], false);
    seed_run(&server, &id, outcome_with_results()).await;
    assert_eq!(reuse().await.1["cacheHit"], true);

    // While a stream runs on it, it is not a cache hit, and it is listed as active.
    let run = server.state.runs.start(RunKind::Search, &id).await.unwrap();
    let (_, body) = reuse().await;
    assert_eq!(body["reused"], true);
    assert_eq!(body["cacheHit"], false);
    assert_eq!(
        server.get("/v1/active-runs").await.1,
        json!({ "chats": [], "searches": [id] })
    );
    run.finish("error", r#"{"message":"ended by the test"}"#)
        .await;
    assert_eq!(reuse().await.1["cacheHit"], true);
    assert_eq!(
        server.get("/v1/active-runs").await.1,
        json!({ "chats": [], "searches": [] })
    );

    // Older than the 24-hour window: reused, but not a hit.
    server.age_search(&id, 25).await;
    let (_, body) = reuse().await;
    assert_eq!(body["reused"], true);
    assert_eq!(body["cacheHit"], false);
}

#[tokio::test]
async fn detail_list_star_and_delete() {
    let server = TestServer::start().await;
    let id = server.new_search(json!({ "query": "rust" })).await;
    let path = format!("/v1/searches/{id}");

    // Before any run: the contract's types, with documented fallbacks.
    let (status, body) = server.get(&path).await;
    assert_eq!(status, StatusCode::OK);
    let search = &body["search"];
    assert_eq!(search["title"], "rust", "title falls back to the query");
    assert_eq!(search["query"], "rust");
    assert_eq!(search["requestId"], "");
    assert_eq!(search["latencyMs"], 0);
    assert_eq!(search["results"], json!([]));
    assert_eq!(search["answerCitations"], json!([]));
    for field in ["error", "answerText", "answerRequestId", "answerError"] {
        assert_eq!(search[field], Value::Null, "{field}");
    }

    seed_run(
        &server,
        &id,
        SearchRunOutcome {
            error: None,
            answer_error: Some("answer timed out".into()),
            ..outcome_with_results()
        },
    )
    .await;
    let (_, body) = server.get(&path).await;
    let search = &body["search"];
    assert_eq!(search["requestId"], "req-1");
    assert_eq!(search["latencyMs"], 321);
    assert_eq!(search["results"][0]["title"], "Example");
    assert_eq!(search["answerText"], "An answer.");
    assert_eq!(search["answerRequestId"], "ans-1");
    assert_eq!(
        search["answerCitations"],
        json!([{ "url": "https://example.com" }])
    );
    assert_eq!(search["answerError"], "answer timed out");
    let updated_at = search["updatedAt"].clone();

    // Starring touches neither updatedAt nor results.
    let (status, body) = server
        .patch(&format!("{path}/star"), json!({ "starred": true }))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["search"]["starred"], true);
    let starred_at = body["search"]["starredAt"].clone();
    assert!(starred_at.is_string());
    assert_eq!(body["search"]["updatedAt"], updated_at);
    let (_, body) = server
        .patch(&format!("{path}/star"), json!({ "starred": true }))
        .await;
    assert_eq!(
        body["search"]["starredAt"], starred_at,
        "starring twice keeps the first time"
    );
    let (_, detail) = server.get(&path).await;
    assert_eq!(detail["search"]["starredAt"], starred_at);
    assert_eq!(detail["search"]["results"][0]["title"], "Example");
    let (_, body) = server
        .patch(&format!("{path}/star"), json!({ "starred": false }))
        .await;
    assert_eq!(body["search"]["starred"], false);
    assert_eq!(body["search"]["starredAt"], Value::Null);
    assert_eq!(body["search"]["updatedAt"], updated_at);
    let (status, _) = server
        .patch(&format!("{path}/star"), json!({ "starred": 1 }))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let other = server.new_search(json!({ "title": "second" })).await;
    let (_, list) = server.get("/v1/searches").await;
    let ids: Vec<_> = list["searches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [other.as_str(), id.as_str()]);
    assert!(
        list["searches"][0].get("results").is_none(),
        "summaries carry no results"
    );

    let (status, body) = server.delete(&path).await;
    assert_eq!((status, body), (StatusCode::OK, json!({ "deleted": true })));
    let (status, body) = server.get(&path).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::NOT_FOUND,
            json!({ "message": "search not found" })
        )
    );
}

#[tokio::test]
async fn unknown_search_is_404_everywhere() {
    let server = TestServer::start().await;
    let expected = (
        StatusCode::NOT_FOUND,
        json!({ "message": "search not found" }),
    );
    assert_eq!(server.get("/v1/searches/nope").await, expected);
    assert_eq!(server.delete("/v1/searches/nope").await, expected);
    assert_eq!(
        server
            .patch("/v1/searches/nope/star", json!({ "starred": true }))
            .await,
        expected
    );
}
