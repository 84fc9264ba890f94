//! Streaming search runs, black-box, against the mock engine_a of `search_runs.rs`: run/stream
//! (each part as it ends, one upstream request for two concurrent calls, a second call joining
//! and resuming with `Last-Event-ID`), attach, a client that leaves, failures as events, a search
//! deleted during its run, and shutdown past the grace period.

use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::json;

use crate::search_runs::{
    exa_answer, exa_results, held_answer, held_engine, names, open_stream, server_for,
};
use crate::support::{Event, Events, Options, TestServer};

#[tokio::test]
async fn a_stream_sends_each_part_as_it_ends_then_done_with_the_stored_search() {
    let (gate, _upstream, server) = held_answer(2).await;
    let id = server.new_search(json!({"query": "q"})).await;
    let mut events = open_stream(&server, &id, json!({"numResults": 2})).await;
    let results = events.expect("search_results").await;
    assert_eq!(results.run_and_position().1, 1);
    assert_eq!(results.data["requestId"], "search-req-1");
    assert_eq!(results.data["results"].as_array().unwrap().len(), 2);
    gate.open();
    let answer = events.expect("answer").await;
    assert_eq!(
        answer.data,
        json!({
            "answerText": "Tokio is an asynchronous runtime for Rust.",
            "answerRequestId": "answer-req-1",
            "answerCitations": exa_answer()["citations"].as_array().unwrap().iter()
                .map(|c| { let mut c = c.clone(); c.as_object_mut().unwrap().remove("author"); c })
                .collect::<Vec<_>>()
        })
    );
    let done = events.expect("done").await;
    assert_eq!(done.run_and_position(), (results.run_and_position().0, 3));
    assert!(events.next().await.is_none(), "done is terminal");
    let (_, stored) = server.get(&format!("/v1/searches/{id}")).await;
    assert_eq!(done.data, stored);
    assert_eq!(stored["search"]["results"], results.data["results"]);
    assert_eq!(
        server.get("/v1/active-runs").await.1,
        json!({"chats": [], "searches": []})
    );
}

#[tokio::test]
async fn two_concurrent_streams_share_one_run_and_one_upstream_request() {
    let (gate, upstream, server) = held_engine(2).await;
    let id = server.new_search(json!({"query": "Shared"})).await;
    let first = open_stream(&server, &id, json!({})).await;
    upstream.received(2).await;
    // The second call (even with another body) attaches to the running one.
    let second = open_stream(&server, &id, json!({"type": "fast"})).await;

    assert_eq!(
        server.get("/v1/active-runs").await.1,
        json!({"chats": [], "searches": [id]})
    );
    let (_, reused) = server
        .post(
            "/v1/searches",
            json!({"query": "shared", "reuseByQuery": true}),
        )
        .await;
    assert_eq!(reused["reused"], true);
    assert_eq!(
        reused["cacheHit"], false,
        "not a cache hit while it streams"
    );

    gate.open();
    let (first, second) = futures::join!(first.rest(), second.rest());
    assert_eq!(names(&first).last(), Some(&"done"));
    let data = |events: &[Event]| {
        events
            .iter()
            .map(|e| (e.id.clone(), e.data.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(data(&first), data(&second));
    assert_eq!(upstream.requests().len(), 2, "one /search and one /answer");
    let (_, reused) = server
        .post(
            "/v1/searches",
            json!({"query": "shared", "reuseByQuery": true}),
        )
        .await;
    assert_eq!(reused["cacheHit"], true);
}

#[tokio::test]
async fn a_second_stream_call_joins_whatever_its_body_says_and_run_meanwhile_is_409() {
    let (gate, upstream, server) = held_engine(2).await;
    // No stored query: only the first call's override makes a run possible.
    let id = server.new_search(json!({"title": "untitled yet"})).await;
    let first = open_stream(&server, &id, json!({"query": "the override"})).await;
    upstream.received(2).await;
    let second = open_stream(&server, &id, json!({})).await;
    let (status, body) = server
        .post(&format!("/v1/searches/{id}/run"), json!({"query": "other"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("run/stream/attach")
    );
    // A bad body is still the client's mistake: 400, not 409 (schemathesis found this order).
    let (status, body) = server
        .post(
            &format!("/v1/searches/{id}/run"),
            json!({"numResults": 612}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    gate.open();
    let (first, second) = futures::join!(first.rest(), second.rest());
    assert_eq!(names(&first), names(&second));
    let done = second.last().unwrap();
    assert_eq!(done.name, "done");
    assert_eq!(done.data["search"]["query"], "the override");
    assert_eq!(upstream.requests().len(), 2, "one /search and one /answer");
}

#[tokio::test]
async fn a_second_stream_call_with_a_last_event_id_gets_only_what_followed_it() {
    let (gate, _upstream, server) = held_answer(1).await;
    let id = server.new_search(json!({"query": "q"})).await;
    let mut first = open_stream(&server, &id, json!({})).await;
    let results = first.expect("search_results").await;
    let path = format!("/v1/searches/{id}/run/stream");
    let last = [("Last-Event-ID", results.id.as_str())];
    let resumed = Events::of(server.open(&path, Some(json!({})), &last).await).await;
    let bad = server
        .open(&path, Some(json!({})), &[("Last-Event-ID", "x-1")])
        .await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    gate.open();
    assert_eq!(names(&resumed.rest().await), ["answer", "done"]);
    assert_eq!(names(&first.rest().await), ["answer", "done"]);
}

#[tokio::test]
async fn attach_replays_then_follows_and_is_404_when_nothing_runs() {
    let (gate, _upstream, server) = held_answer(1).await;
    let id = server.new_search(json!({"query": "q"})).await;
    let attach = format!("/v1/searches/{id}/run/stream/attach");
    let (status, body) = server.post(&attach, json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, json!({"message": "active search stream not found"}));

    let mut first = open_stream(&server, &id, json!({})).await;
    let results = first.expect("search_results").await;
    let mut attached = Events::of(server.open(&attach, None, &[]).await).await;
    let replayed = attached.expect("search_results").await;
    assert_eq!((&replayed.id, &replayed.data), (&results.id, &results.data));
    let last = [("Last-Event-ID", results.id.as_str())];
    let resumed = Events::of(server.open(&attach, None, &last).await).await;

    gate.open();
    let follow = attached.rest().await;
    assert_eq!(names(&follow), ["answer", "done"]);
    let resumed = resumed.rest().await;
    assert_eq!(names(&resumed), ["answer", "done"]);
    assert_eq!(
        resumed[0].run_and_position(),
        (results.run_and_position().0, 2)
    );
    assert_eq!(names(&first.rest().await), ["answer", "done"]);

    let (status, body) = server.post(&attach, json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, json!({"message": "active search stream not found"}));
}

#[tokio::test]
async fn a_client_that_leaves_does_not_stop_the_run_and_its_outcome_is_persisted() {
    let (gate, upstream, server) = held_engine(4).await;
    let id = server.new_search(json!({"query": "q"})).await;
    let res = server
        .open(
            &format!("/v1/searches/{id}/run/stream"),
            Some(json!({})),
            &[],
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    upstream.received(2).await;
    drop(res);

    // Still running without its client; a new client follows it to the end.
    let attach = format!("/v1/searches/{id}/run/stream/attach");
    let attached = Events::of(server.open(&attach, None, &[]).await).await;
    assert_eq!(
        server.get("/v1/active-runs").await.1["searches"],
        json!([id])
    );
    gate.open();
    let events = attached.rest().await;
    assert_eq!(names(&events).last(), Some(&"done"));
    let (_, stored) = server.get(&format!("/v1/searches/{id}")).await;
    assert_eq!(stored["search"]["results"].as_array().unwrap().len(), 4);
    assert_eq!(
        stored["search"]["answerText"],
        "Tokio is an asynchronous runtime for Rust."
    );
}

#[tokio::test]
async fn stream_failures_are_events_and_a_total_failure_stores_nothing() {
    let upstream = ScriptedUpstream::start([
        ("POST /search", Reply::json(503, json!({"error": "busy"}))),
        ("POST /search", Reply::json(503, json!({"error": "busy"}))),
        ("POST /answer", Reply::json(200, exa_answer())),
        ("POST /answer", Reply::json(500, json!({"error": "down"}))),
    ])
    .await;
    let server = server_for(&upstream).await;
    let id = server.new_search(json!({"query": "q"})).await;

    let events = open_stream(&server, &id, json!({})).await.rest().await;
    let mut seen = names(&events);
    seen.sort();
    assert_eq!(seen, ["answer", "done", "search_error"]);
    let search_error = events.iter().find(|e| e.name == "search_error").unwrap();
    assert!(
        search_error.data["error"].as_str().unwrap().contains("503"),
        "{:?}",
        search_error.data
    );
    let done = events.last().unwrap();
    assert_eq!(done.name, "done");
    assert_eq!(done.data["search"]["error"], search_error.data["error"]);
    assert_eq!(
        done.data["search"]["answerText"],
        "Tokio is an asynchronous runtime for Rust."
    );

    let events = open_stream(&server, &id, json!({})).await.rest().await;
    let last = events.last().unwrap();
    assert_eq!(last.name, "error");
    let message = last.data["message"].as_str().unwrap();
    assert!(
        message.contains("search:") && message.contains("answer:"),
        "{message}"
    );
    assert_eq!(
        last.data.as_object().unwrap().len(),
        1,
        "{{ message }} only"
    );
    assert_eq!(events.len(), 3, "search_error, answer_error, error");
    // The first run's outcome stays; the run is over.
    assert_eq!(
        server.get(&format!("/v1/searches/{id}")).await.1,
        json!({"search": done.data["search"]})
    );
    assert_eq!(server.get("/v1/active-runs").await.1["searches"], json!([]));
}

#[tokio::test]
async fn a_search_deleted_during_its_run_ends_with_an_error() {
    let (gate, upstream, server) = held_engine(1).await;
    let id = server.new_search(json!({"query": "q"})).await;
    let events = open_stream(&server, &id, json!({})).await;
    upstream.received(2).await;
    assert_eq!(
        server.delete(&format!("/v1/searches/{id}")).await.0,
        StatusCode::OK
    );
    gate.open();
    let events = events.rest().await;
    let last = events.last().unwrap();
    assert_eq!(
        (last.name.as_str(), &last.data),
        ("error", &json!({"message": "search not found"}))
    );
    assert_eq!(
        server.get(&format!("/v1/searches/{id}")).await.0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn shutdown_past_the_grace_period_ends_a_search_stream_with_an_error() {
    let gate = Gate::new(); // never opened: the answer outlives the grace period
    let upstream = ScriptedUpstream::start([
        ("POST /search", Reply::json(200, exa_results(1))),
        ("POST /answer", Reply::json(200, exa_answer()).after(&gate)),
    ])
    .await;
    let server = TestServer::start_with(Options {
        args: vec![
            "--engine-a-base-url".into(),
            upstream.url(),
            "--chatd-shutdown-grace-secs".into(),
            "1".into(),
        ],
        ..Default::default()
    })
    .await;
    let id = server.new_search(json!({"query": "q"})).await;
    let mut events = open_stream(&server, &id, json!({})).await;
    events.expect("search_results").await;
    let stopping = tokio::spawn(server.stop());
    let rest = events.rest().await;
    let last = rest.last().unwrap();
    assert_eq!(
        (last.name.as_str(), &last.data),
        (
            "error",
            &json!({"message": "the server shut down before the search was finished"})
        )
    );
    stopping.await.unwrap();
}
