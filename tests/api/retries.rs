//! A turn the upstream refused before answering is tried again, black-box: a 429 then success
//! is one normal stream over two upstream calls; a 429 that persists ends with the `error`
//! event within the budget (a `Retry-After` past it is not waited for); a failure after the
//! first delta is not retried; the operator's fallback answers when the tries are exhausted,
//! named in the stored reply's metadata.

use std::time::{Duration, Instant};

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::json;

use crate::completions::{deltas, names};
use crate::live_replies::{A, C, ask, paced, server, text};
use crate::support::{Options, TestServer, write_config};

fn refused(status: u16) -> Reply {
    Reply::json(
        status,
        json!({"error": {"message": "slow down", "type": "rate_limit"}}),
    )
}

fn turns(upstream: &ScriptedUpstream, path: &str) -> usize {
    upstream
        .requests()
        .iter()
        .filter(|r| r.path == path)
        .count()
}

/// A server on `upstream` with the configuration file `config`.
async fn configured(upstream: &ScriptedUpstream, config: &str, extra: &[&str]) -> TestServer {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let path = write_config(dir.path(), config);
    let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    args.extend(["--provider-a-api-key".into(), "a-key".into()]);
    server(
        C,
        upstream,
        Options {
            config: Some(path),
            dir: Some(dir),
            args,
            ..Options::default()
        },
    )
    .await
}

#[tokio::test]
async fn a_429_then_success_is_one_normal_stream_over_two_calls() {
    let answer = [text(&["Hello ", "again."])];
    let upstream = ScriptedUpstream::start([
        (C.route, refused(429).header("retry-after-ms", "20")),
        (C.route, paced(C, &answer)),
    ])
    .await;
    let server = configured(&upstream, "", &[]).await;
    let events = ask(&server, C, "hi").await.rest().await;
    assert_eq!(names(&events), ["meta", "delta", "delta", "done"]);
    assert_eq!(deltas(&events), "Hello again.");
    assert_eq!(turns(&upstream, "/chat/completions"), 2);
}

#[tokio::test]
async fn a_refusal_that_persists_ends_with_the_error_within_the_budget() {
    let upstream =
        ScriptedUpstream::start([(C.route, refused(503).header("retry-after", "0"))]).await;
    let server = configured(
        &upstream,
        "[retry]\nattempts = 3\nmax_wait_ms = 2000\n",
        &[],
    )
    .await;
    let started = Instant::now();
    let events = ask(&server, C, "hi").await.rest().await;
    assert_eq!(names(&events), ["meta", "error"]);
    assert!(
        events[1].data["message"].as_str().unwrap().contains("503"),
        "{}",
        events[1].data
    );
    assert_eq!(turns(&upstream, "/chat/completions"), 3, "the attempts");
    assert!(started.elapsed() < Duration::from_secs(10));

    // A Retry-After past the budget is not waited for: one try, at once.
    let upstream =
        ScriptedUpstream::start([(C.route, refused(429).header("retry-after", "3600"))]).await;
    let server = configured(&upstream, "[retry]\nmax_wait_ms = 1000\n", &[]).await;
    let started = Instant::now();
    let events = ask(&server, C, "hi").await.rest().await;
    assert_eq!(names(&events), ["meta", "error"]);
    assert_eq!(turns(&upstream, "/chat/completions"), 1);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_failure_after_the_first_delta_is_not_retried() {
    let items = [text(&["Half ", "of it"])];
    let mut pieces = (C.stream)(&items);
    pieces.pop(); // no finish, no [DONE]: the connection is cut mid-answer
    let cut = Reply::sse("").paced(pieces, Duration::from_millis(2)).cut();
    let upstream = ScriptedUpstream::start([(C.route, cut)]).await;
    let server = configured(&upstream, "", &[]).await;
    let events = ask(&server, C, "hi").await.rest().await;
    assert_eq!(names(&events), ["meta", "delta", "delta", "error"]);
    assert_eq!(turns(&upstream, "/chat/completions"), 1);
}

#[tokio::test]
async fn a_body_cut_after_its_head_is_not_retried() {
    // A 200 whose body breaks before any event (an SSE comment, then the cut, a pause later so
    // the head is out first): the upstream began answering, and may have generated, so the
    // turn is not sent again.
    let broken = Reply::sse("")
        .paced(vec![b": working\n\n".to_vec()], Duration::from_millis(20))
        .cut();
    let upstream = ScriptedUpstream::start([(C.route, broken)]).await;
    let server = configured(&upstream, "", &[]).await;
    let events = ask(&server, C, "hi").await.rest().await;
    assert_eq!(names(&events), ["meta", "error"]);
    assert_eq!(turns(&upstream, "/chat/completions"), 1);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let upstream = ScriptedUpstream::start([(C.route, refused(401))]).await;
    let server = configured(&upstream, "", &[]).await;
    let events = ask(&server, C, "hi").await.rest().await;
    assert_eq!(names(&events), ["meta", "error"]);
    assert_eq!(turns(&upstream, "/chat/completions"), 1);
}

#[tokio::test]
async fn the_fallback_answers_when_the_tries_are_exhausted() {
    let answer = [text(&["From ", "the fallback."])];
    let upstream = ScriptedUpstream::start([
        (C.route, refused(529).header("retry-after-ms", "5")),
        (A.route, paced(A, &answer)),
    ])
    .await;
    let url = upstream.url();
    let config = "[retry.providers.provider_c]\nattempts = 2\n\
                  fallback = { provider = \"provider_a\", model = \"gpt-4o-mini\" }\n";
    let server = configured(&upstream, config, &["--provider-a-base-url", &url]).await;
    let events = ask(&server, C, "hi").await.rest().await;
    assert_eq!(names(&events), ["meta", "delta", "delta", "done"]);
    assert_eq!(
        events[0].data["provider"], "provider_c",
        "meta names the request's"
    );
    assert_eq!(deltas(&events), "From the fallback.");
    assert_eq!(turns(&upstream, "/chat/completions"), 2);
    assert_eq!(turns(&upstream, "/responses"), 1);
    let sent = upstream
        .requests()
        .into_iter()
        .find(|r| r.path == "/responses")
        .unwrap()
        .json();
    assert_eq!(sent["model"], "gpt-4o-mini");
    let chat_id = events[0].data["chatId"].as_str().unwrap();
    let (status, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(status, StatusCode::OK);
    let reply = chat["chat"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(reply["content"], "From the fallback.");
    assert_eq!(
        reply["metadata"]["fallback"],
        json!({"provider": "provider_a", "model": "gpt-4o-mini"})
    );
    // The call names what was asked and what answered.
    let call =
        crate::completions::call_row(&server, events[0].data["callId"].as_str().unwrap()).await;
    assert_eq!(
        (call.provider.as_str(), call.model.as_str()),
        ("provider_c", "grok-4")
    );
    assert_eq!(
        call.answered_by,
        Some(("provider_a".to_string(), "gpt-4o-mini".to_string()))
    );
}

#[tokio::test]
async fn a_non_streaming_completion_is_retried_too() {
    let upstream = ScriptedUpstream::start([
        (C.route, refused(502).header("retry-after-ms", "5")),
        (
            C.route,
            Reply::json(
                200,
                json!({"id": "x", "object": "chat.completion", "model": "grok-4",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Fine."},
                        "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}),
            ),
        ),
    ])
    .await;
    let server = configured(&upstream, "", &[]).await;
    let (status, body) = server
        .post(
            "/v1/chat-completions",
            json!({"provider": C.provider, "model": C.model,
                "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["message"]["content"], "Fine.");
    assert_eq!(turns(&upstream, "/chat/completions"), 2);
}
