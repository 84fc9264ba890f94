//! Stopping a reply, black-box: `POST /v1/chats/:chatId/stream/cancel` ends the run with `done`
//! carrying the text streamed so far, stored as the assistant message (`metadata.stopped`), the
//! upstream's connection closed, the chat out of active-runs and ready for its next message; a
//! tool call running then ends as failed; attached clients get the same end; 404 with nothing
//! running. And a `persist: false` stream whose client leaves closes its upstream request.

use std::time::{Duration, Instant};

use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::{deltas, names};
use crate::live_replies::{C, after_first_text, ask, call, exa, paced, server, text};
use crate::support::{Events, Options, TestServer};

/// What the chat holds: each message's role, content and metadata.
async fn messages(server: &TestServer, chat_id: &str) -> Vec<Value> {
    let (status, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(status, StatusCode::OK);
    chat["chat"]["messages"].as_array().unwrap().clone()
}

/// Waits until a request for `path` has reached the upstream.
pub async fn arrived(upstream: &ScriptedUpstream, path: &str) {
    for n in 1.. {
        upstream.received(n).await;
        if upstream.requests().iter().any(|r| r.path == path) {
            return;
        }
    }
}

async fn stop(server: &TestServer, chat_id: &str) -> (StatusCode, Value) {
    server
        .post(&format!("/v1/chats/{chat_id}/stream/cancel"), json!({}))
        .await
}

#[tokio::test]
async fn a_stopped_reply_ends_with_its_text_stored_and_the_upstream_closed() {
    let items = [text(&["Partial ", "answer", " never sent"])];
    let gate = Gate::new();
    // Held after two deltas, for good: only a stop ends this stream.
    let reply = paced(C, &items).hold_before(after_first_text(C, &items) + 1, &gate);
    let upstream = ScriptedUpstream::start([(C.route, reply), ("POST /search", exa())]).await;
    let server = server(C, &upstream, Options::default()).await;
    let mut stream = ask(&server, C, "Tell me").await;
    let meta = stream.expect("meta").await;
    let chat_id = meta.data["chatId"].as_str().unwrap().to_string();
    assert_eq!(stream.expect("delta").await.data["text"], "Partial ");
    assert_eq!(stream.expect("delta").await.data["text"], "answer");
    let attach = format!("/v1/chats/{chat_id}/stream/attach");
    let attached = Events::of(server.open(&attach, None, &[]).await).await;

    let asked = Instant::now();
    let (status, body) = stop(&server, &chat_id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"stopped": true}));
    let rest = stream.rest().await;
    let took = asked.elapsed();
    assert_eq!(names(&rest), ["done"]);
    assert_eq!(rest[0].data["text"], "Partial answer");
    assert!(
        took < Duration::from_secs(1),
        "the stream ended {took:?} after the stop"
    );
    // The upstream saw its connection closed.
    tokio::time::timeout(Duration::from_secs(5), upstream.dropped(1))
        .await
        .expect("the upstream request is dropped");
    // Every reader gets the same end.
    let seen = attached.rest().await;
    assert_eq!(seen.last().unwrap().data, rest[0].data);
    assert_eq!(deltas(&seen), "Partial answer");

    let stored = messages(&server, &chat_id).await;
    let last = stored.last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["content"], "Partial answer");
    assert_eq!(last["metadata"]["stopped"], true);
    let call = server
        .store
        .get_call(meta.data["callId"].as_str().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert!(
        call.completed_at.is_some() && call.error.is_none(),
        "{call:?}"
    );

    let (_, runs) = server.get("/v1/active-runs").await;
    assert_eq!(runs["chats"], json!([]));
    // The next message is taken (no 409), and a stop now finds nothing.
    let (status, body) = stop(&server, &chat_id).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["message"], "active chat stream not found");
    gate.open();
    let next = server
        .stream(json!({"chatId": chat_id, "provider": C.provider, "model": C.model,
            "messages": [{"role": "user", "content": "Tell me"}, {"role": "user", "content": "again"}]}))
        .await
        .rest()
        .await;
    assert_eq!(next.last().unwrap().name, "done");
}

#[tokio::test]
async fn a_tool_running_when_the_reply_stops_ends_as_failed_and_is_stored() {
    let call = [
        text(&["Searching."]),
        call("call_1", "web_search", r#"{"query":"slow"}"#),
    ];
    let search_gate = Gate::new();
    let upstream = ScriptedUpstream::start([
        (C.route, paced(C, &call)),
        ("POST /search", exa().after(&search_gate)),
    ])
    .await;
    let server = server(C, &upstream, Options::default()).await;
    let mut stream = ask(&server, C, "Find it").await;
    let meta = stream.expect("meta").await;
    let chat_id = meta.data["chatId"].as_str().unwrap().to_string();
    stream.expect("delta").await;
    let initiated = stream.expect("tool_call").await;
    assert_eq!(initiated.data["status"], "initiated");
    // The tool is in flight: its upstream has the request.
    arrived(&upstream, "/search").await;
    let (status, _) = stop(&server, &chat_id).await;
    assert_eq!(status, StatusCode::OK);
    let rest = stream.rest().await;
    assert_eq!(names(&rest), ["tool_call", "done"]);
    assert_eq!(rest[0].data["status"], "failed");
    assert!(
        rest[0].data["error"]
            .as_str()
            .unwrap()
            .starts_with("stopped"),
        "{}",
        rest[0].data
    );
    assert_eq!(rest[1].data["text"], "Searching.");
    let stored = messages(&server, &chat_id).await;
    let roles: Vec<&str> = stored.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "tool", "assistant"]);
    assert_eq!(stored[1]["metadata"]["status"], "failed");
    assert_eq!(stored[2]["metadata"]["stopped"], true);
    // Only the first round reached the provider.
    let turns = upstream
        .requests()
        .iter()
        .filter(|r| r.path == "/chat/completions")
        .count();
    assert_eq!(turns, 1);
    search_gate.open();
}

#[tokio::test]
async fn a_reply_stopped_before_any_text_stores_no_message() {
    let gate = Gate::new();
    let upstream = ScriptedUpstream::start([(C.route, Reply::sse("").after(&gate))]).await;
    let server = server(C, &upstream, Options::default()).await;
    let mut stream = ask(&server, C, "Slow").await;
    let meta = stream.expect("meta").await;
    let chat_id = meta.data["chatId"].as_str().unwrap().to_string();
    arrived(&upstream, "/chat/completions").await;
    let (status, _) = stop(&server, &chat_id).await;
    assert_eq!(status, StatusCode::OK);
    let rest = stream.rest().await;
    assert_eq!(names(&rest), ["done"]);
    assert_eq!(rest[0].data["text"], "");
    let stored = messages(&server, &chat_id).await;
    assert_eq!(stored.len(), 1, "the user's message only: {stored:?}");
    gate.open();
}

#[tokio::test]
async fn stopping_with_nothing_running_is_404() {
    let upstream = ScriptedUpstream::start([]).await;
    let server = server(C, &upstream, Options::default()).await;
    let chat_id = server.new_chat(json!({})).await;
    let (status, body) = stop(&server, &chat_id).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["message"], "active chat stream not found");
    let (status, _) = stop(&server, "no-such-chat").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_persist_false_stream_whose_client_leaves_closes_its_upstream_within_a_second() {
    let items = [text(&["One ", "two ", "three"])];
    let gate = Gate::new();
    let reply = paced(C, &items).hold_before(after_first_text(C, &items), &gate);
    let upstream = ScriptedUpstream::start([(C.route, reply)]).await;
    let server = server(C, &upstream, Options::default()).await;
    let mut stream = server
        .stream(
            json!({"provider": C.provider, "model": C.model, "persist": false,
            "messages": [{"role": "user", "content": "count"}]}),
        )
        .await;
    stream.expect("meta").await;
    stream.expect("delta").await;
    let left = Instant::now();
    drop(stream);
    tokio::time::timeout(Duration::from_secs(1), upstream.dropped(1))
        .await
        .expect("the upstream request is closed within a second of the client leaving");
    println!("upstream closed {:?} after the client left", left.elapsed());
    gate.open();
}

#[tokio::test]
async fn on_postgres_a_stop_request_is_marked_for_an_owner_whose_listener_was_away() {
    if !crate::support::on_postgres() {
        return;
    }
    let upstream = ScriptedUpstream::start([]).await;
    let server = server(C, &upstream, Options::default()).await;
    let table = server.store.runs_table().expect("PostgreSQL shares runs");
    assert_eq!(
        table.request_stop("chat", "nothing-runs").await.unwrap(),
        None
    );
    table.start("run-1", "chat", "chat-1", 7).await.unwrap();
    assert!(table.stop_requests().await.unwrap().is_empty());
    let asked = table.request_stop("chat", "chat-1").await.unwrap();
    assert_eq!(asked, Some(("run-1".to_string(), 7)));
    // What the owner reads when it listens again (`runs/shared.rs`).
    assert_eq!(table.stop_requests().await.unwrap(), ["run-1"]);
}
