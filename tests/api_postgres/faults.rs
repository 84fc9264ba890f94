//! Faults between an instance and PostgreSQL, black-box: the real binary reaches the database
//! through a TCP proxy the test can cut (`proxy.rs`). Cut, the instance ends its own clients'
//! runs with the contract's `error` once its lease has run out (it cannot reach the database
//! to learn it); requests that need the database get 503 naming it within the timeout, and
//! `/ready` says the same; SIGTERM still ends the process within the grace period plus 5 s.

use std::time::{Duration, Instant};

use chatd::config::DatabaseUrl;
use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::{ROUTE, TEXT_BODY, body};
use crate::instances::{Instance, paced_text};
use crate::proxy::Proxy;
use crate::support::{plugin_cache_dir, test_database};

/// How long an instance's lease lasts without a renewal (`store::liveness::LEASE`).
const LEASE: Duration = Duration::from_secs(10);

/// An instance on a fresh database reached through a proxy; its upstream at `upstream`. The
/// tests run on a multi-threaded runtime: the proxy's tasks must go on while a test waits for
/// the process without awaiting.
async fn behind_a_proxy(
    dir: &tempfile::TempDir,
    upstream: &str,
    extra: &[(&str, &str)],
) -> (Proxy, Instance) {
    let DatabaseUrl::Postgres(url) = test_database(dir).await else {
        unreachable!("the PostgreSQL suite")
    };
    let port = url::Url::parse(&url).unwrap().port().unwrap();
    let proxy = Proxy::start(port).await;
    let proxied = url.replace(&format!(":{port}/"), &format!(":{}/", proxy.port));
    let cache = plugin_cache_dir();
    let mut env = vec![
        ("DATABASE_URL", proxied.as_str()),
        ("PLUGIN_CACHE_DIR", cache.to_str().unwrap()),
        ("PROVIDER_C_BASE_URL", upstream),
        ("PROVIDER_C_API_KEY", "c-key"),
        ("DATABASE_TIMEOUT_SECS", "2"),
    ];
    env.extend_from_slice(extra);
    let instance = Instance::with_env(dir.path(), &env);
    (proxy, instance)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_owner_ends_its_own_clients_run_when_its_lease_runs_out() {
    // A stream of 60 s, and a non-streaming reply held until the end: neither can end by
    // itself during the test.
    let gate = Gate::new();
    let upstream = ScriptedUpstream::start([
        (ROUTE, paced_text(600, Duration::from_millis(100))),
        (
            ROUTE,
            Reply::text(200, "application/json", TEXT_BODY).after(&gate),
        ),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (proxy, a) = behind_a_proxy(&dir, &upstream.url(), &[]).await;
    let chat_id = a.new_chat().await;
    let mut events = a.stream(&chat_id).await;
    events.expect("meta").await;
    events.expect("delta").await;
    let other = a.new_chat().await;
    let before = upstream.requests().len();
    let request = reqwest::Client::new()
        .post(a.url("/v1/chat-completions"))
        .json(&body(
            Some(&other),
            json!([{"role": "user", "content": "hi"}]),
        ))
        .send();
    let waiting = tokio::spawn(request);
    // Stored, and at the upstream, when the partition comes.
    upstream.received(before + 1).await;

    proxy.set_cut(true);
    let cut = Instant::now();
    let last = loop {
        let event = events
            .next()
            .await
            .expect("the stream ends with a terminal event");
        if event.name != "delta" {
            break event;
        }
    };
    let took = cut.elapsed();
    assert_eq!(last.name, "error", "{last:?}");
    let message = last.data["message"].as_str().unwrap();
    assert!(message.contains("lost its lease"), "{message}");
    assert!(
        took <= LEASE + Duration::from_secs(4),
        "the error came {took:?} after the cut"
    );
    eprintln!("the owner's client got `error` {took:?} into the partition");
    assert!(events.next().await.is_none(), "the stream ends after it");
    // The non-streaming request is answered too: 503, not the 500 of a bug.
    let res = waiting.await.unwrap().unwrap();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = res.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("lost its lease"),
        "{body}"
    );
    gate.open();
    proxy.set_cut(false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_a_503_and_sigterm_still_ends_within_the_grace_period() {
    let upstream = ScriptedUpstream::start([]).await;
    let dir = tempfile::tempdir().unwrap();
    let (proxy, mut a) =
        behind_a_proxy(&dir, &upstream.url(), &[("CHATD_SHUTDOWN_GRACE_SECS", "2")]).await;
    let (status, _) = get(&a, "/v1/chats").await;
    assert_eq!(status, StatusCode::OK);

    proxy.set_cut(true);
    for path in ["/v1/chats", "/api/v1/workspace-items"] {
        let asked = Instant::now();
        let (status, body) = get(&a, path).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.starts_with("the database (postgresql) is unavailable"),
            "{path}: {message}"
        );
        // DATABASE_TIMEOUT_SECS=2, not the pool's old 10 s nor the TCP timeout.
        assert!(
            asked.elapsed() < Duration::from_secs(4),
            "{:?}",
            asked.elapsed()
        );
    }
    // OpenAI's wire too: a follow-up needs the database for the rounds kept for its calls
    // (`http/openai/kept.rs`) and for its call's record; either failing is OpenAI's error
    // shape, naming the database. (Both give the same answer, so this does not tell which.)
    let id = "call_chatd_00000000000000000000000000000000";
    let follow_up = json!({"model": "provider_c/grok-4",
        "tools": [{"type": "function", "function": {"name": "get_weather"}}],
        "messages": [{"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": id, "content": "Sunny"}]});
    let res = a
        .post("/openai/v1/chat/completions", Some(follow_up), &[])
        .await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = res.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("the database (postgresql) is unavailable"),
        "{body}"
    );
    let deadline = Instant::now() + Duration::from_secs(8);
    loop {
        let (status, body) = get(&a, "/ready").await;
        if status == StatusCode::SERVICE_UNAVAILABLE {
            assert!(
                body["message"].as_str().unwrap().contains("database"),
                "{body}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "/ready stayed {status}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(get(&a, "/health").await.0, StatusCode::OK);

    // SIGTERM with the database still away: out within the grace period (2 s) plus 5 s.
    let signaled = Instant::now();
    a.signal("-TERM");
    let status = a
        .exit_within(Duration::from_secs(2 + 5 + 3))
        .expect("chatd exits within the grace period plus 5 s");
    let took = signaled.elapsed();
    assert!(
        took <= Duration::from_secs(2 + 5),
        "exited after {took:?} ({status})"
    );
    eprintln!("SIGTERM with the database away: exited after {took:?} ({status})");
    proxy.set_cut(false);
}

async fn get(instance: &Instance, path: &str) -> (StatusCode, Value) {
    let res = reqwest::get(instance.url(path)).await.unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}
