//! Backend-owned chat runs, black-box: a second stream is refused while one runs, attach replays
//! and follows (and resumes with `Last-Event-ID`), a client that leaves does not stop the run
//! (not even while its new chat is being written), one that only closes its sending side still
//! gets the whole stream, shutdown lets runs finish within the grace period before stopping the
//! rest, and a client that stops sending does not keep the server from stopping, nor a request
//! body that stops arriving hold its connection.

use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::{
    ROUTE, TEXT_STREAM, TEXT_STREAM_TEXT, body, deltas, names, pairs, server_for, transcript,
};
use crate::support::{Event, Events, TestServer};

/// A stream whose upstream holds its answer until `gate` opens.
async fn gated(gate: &Gate) -> (ScriptedUpstream, TestServer) {
    let upstream = ScriptedUpstream::start([(ROUTE, Reply::sse(TEXT_STREAM).after(gate))]).await;
    let server = server_for(&upstream, &[]).await;
    (upstream, server)
}

/// A persisted stream of a new chat, held by `gate`, read as far as its `meta`.
struct HeldRun {
    _upstream: ScriptedUpstream,
    server: TestServer,
    chat_id: String,
    stream: Events,
    meta: Event,
}

async fn held_run(gate: &Gate) -> HeldRun {
    let (upstream, server) = gated(gate).await;
    let chat_id = server.new_chat(json!({"enabledTools": []})).await;
    let mut stream = server
        .stream(body(
            Some(&chat_id),
            json!([{"role": "user", "content": "hi"}]),
        ))
        .await;
    let meta = stream.expect("meta").await;
    HeldRun {
        _upstream: upstream,
        server,
        chat_id,
        stream,
        meta,
    }
}

#[tokio::test]
async fn a_second_stream_gets_409_then_attach_replays_and_follows() {
    let gate = Gate::new();
    let (_upstream, server) = gated(&gate).await;
    let chat_id = server.new_chat(json!({"enabledTools": []})).await;
    let request = body(Some(&chat_id), json!([{"role": "user", "content": "hi"}]));
    let mut first = server.stream(request.clone()).await;
    let meta = first.expect("meta").await;

    let second = server
        .open("/v1/chat-completions/stream", Some(request), &[])
        .await;
    assert_eq!(second.status(), StatusCode::CONFLICT);
    assert!(second.json::<Value>().await.unwrap()["message"].is_string());

    let (_, runs) = server.get("/v1/active-runs").await;
    assert_eq!(runs["chats"], json!([chat_id]));

    let attach_path = format!("/v1/chats/{chat_id}/stream/attach");
    let mut attached = Events::of(server.open(&attach_path, None, &[]).await).await;
    let replayed = attached.expect("meta").await;
    assert_eq!(replayed.data, meta.data);
    assert_eq!(replayed.id, meta.id);
    assert_eq!(replayed.run_and_position().1, 1);
    // Resume after event 1: the next event the client sees is a new one.
    let resumed = Events::of(
        server
            .open(&attach_path, None, &[("Last-Event-ID", meta.id.as_str())])
            .await,
    );

    gate.open();
    let original = first.rest().await;
    let follow = attached.rest().await;
    assert_eq!(names(&original), names(&follow));
    assert_eq!(deltas(&follow), TEXT_STREAM_TEXT);
    let resumed = resumed.await.rest().await;
    assert_eq!(
        resumed[0].run_and_position(),
        (meta.run_and_position().0, 2)
    );
    assert_eq!(resumed.len(), original.len());

    // Done: the run is gone.
    let res = server.open(&attach_path, None, &[]).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        res.json::<Value>().await.unwrap(),
        json!({"message": "active chat stream not found"})
    );
    let (_, runs) = server.get("/v1/active-runs").await;
    assert_eq!(runs["chats"], json!([]));
    // The refused stream wrote nothing: one user row, one reply, one call.
    assert_eq!(
        transcript(&server, &chat_id).await,
        pairs(&[("user", "hi"), ("assistant", TEXT_STREAM_TEXT)])
    );
    let counts = server.row_counts().await;
    assert!(counts.contains(&("llm_calls".to_string(), 1)), "{counts:?}");
}

#[tokio::test]
async fn an_event_id_from_an_earlier_run_of_the_chat_replays_the_new_run_from_its_start() {
    let gate = Gate::new();
    let upstream = ScriptedUpstream::start([
        (ROUTE, Reply::sse(TEXT_STREAM)),
        (ROUTE, Reply::sse(TEXT_STREAM).after(&gate)),
    ])
    .await;
    let server = server_for(&upstream, &[]).await;
    let chat_id = server.new_chat(json!({"enabledTools": []})).await;
    let hi = json!({"role": "user", "content": "hi"});
    let earlier = server
        .stream(body(Some(&chat_id), json!([hi])))
        .await
        .rest()
        .await;
    // The earlier run's last id: resumed after it, a run as long would show nothing.
    let stale = earlier.last().unwrap().id.clone();

    let history = json!([hi, {"role": "assistant", "content": TEXT_STREAM_TEXT},
                         {"role": "user", "content": "again"}]);
    let mut now = server.stream(body(Some(&chat_id), history)).await;
    let meta = now.expect("meta").await;
    assert_ne!(
        meta.run_and_position().0,
        earlier[0].run_and_position().0,
        "each run has its own ids"
    );
    assert_attach_replays_all(&server, &chat_id, &stale, &gate, now, &meta).await;
}

#[tokio::test]
async fn a_last_event_id_past_the_runs_last_event_replays_it_from_its_start() {
    let gate = Gate::new();
    let run = held_run(&gate).await;
    // This run's tag, at a position it has not reached: an id no client was given.
    let ahead = format!("{}-999", run.meta.run_and_position().0);
    assert_attach_replays_all(
        &run.server,
        &run.chat_id,
        &ahead,
        &gate,
        run.stream,
        &run.meta,
    )
    .await;
}

/// Attaches to `chat_id`'s run (held by `gate`) with `last_event_id`, lets the run finish, and
/// checks that the attach got all of it: the run's `meta` first, then what its own client
/// (`live`, read as far as `meta`) got.
async fn assert_attach_replays_all(
    server: &TestServer,
    chat_id: &str,
    last_event_id: &str,
    gate: &Gate,
    live: Events,
    meta: &Event,
) {
    let attach_path = format!("/v1/chats/{chat_id}/stream/attach");
    let resumed = Events::of(
        server
            .open(&attach_path, None, &[("Last-Event-ID", last_event_id)])
            .await,
    );
    gate.open();
    let rest = live.rest().await;
    let resumed = resumed.await.rest().await;
    assert_eq!(resumed[0].id, meta.id);
    assert_eq!(resumed.len(), rest.len() + 1);
    assert_eq!(deltas(&resumed), TEXT_STREAM_TEXT);
}

#[tokio::test]
async fn a_last_event_id_that_is_not_an_event_id_is_refused() {
    let gate = Gate::new();
    let run = held_run(&gate).await;
    let attach_path = format!("/v1/chats/{}/stream/attach", run.chat_id);
    for bad in ["x-1", "1a2b3c4d-", "1a2b3c4d-one", "+1"] {
        let res = run
            .server
            .open(&attach_path, None, &[("Last-Event-ID", bad)])
            .await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{bad:?}");
        let message = res.json::<Value>().await.unwrap()["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(message.starts_with("Last-Event-ID: "), "{message}");
    }
    gate.open();
    assert_eq!(run.stream.rest().await.last().unwrap().name, "done");
}

#[tokio::test]
async fn a_client_that_disconnects_does_not_stop_the_run() {
    let gate = Gate::new();
    let run = held_run(&gate).await;
    drop(run.stream);
    gate.open();
    // Follow the run to its end through attach (the run may even have ended already).
    let path = format!("/v1/chats/{}/stream/attach", run.chat_id);
    let res = run.server.open(&path, None, &[]).await;
    if res.status() == StatusCode::OK {
        let events = Events::of(res).await.rest().await;
        assert_eq!(events.last().unwrap().name, "done");
    }
    assert_eq!(
        transcript(&run.server, &run.chat_id).await,
        pairs(&[("user", "hi"), ("assistant", TEXT_STREAM_TEXT)])
    );
}

#[tokio::test]
async fn a_new_chats_stream_dropped_while_the_chat_is_written_still_runs() {
    use tower::ServiceExt;
    let gate = Gate::new();
    let (upstream, server) = gated(&gate).await;
    // In-process, as a connection would hand it over: with its Host (an HTTP/1.1 request
    // without one is refused).
    let request = axum::http::Request::post("/v1/chat-completions/stream")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(
            body(None, json!([{"role": "user", "content": "hi"}])).to_string(),
        ))
        .unwrap();
    // The handler, polled once as a connection would: for a new chat nothing before the chat's
    // write waits, so that poll reaches it. Polled no more (a handler polled again once the
    // write is done would go on whatever the code), it is dropped when the chat is stored, as a
    // connection reset drops it.
    let mut handler = Box::pin(chatd::http::router(server.state.clone()).oneshot(request));
    assert!(futures::poll!(handler.as_mut()).is_pending());
    let chat_id = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            if let Some(chat) = server.get("/v1/chats").await.1["chats"].get(0) {
                break chat["id"].as_str().unwrap().to_string();
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the new chat was stored");
    drop(handler);
    // The run goes on: it calls the upstream (beside the model list the server asks for when
    // it starts), and stores the question and the reply.
    let mut arrived = 0;
    while !upstream
        .requests()
        .iter()
        .any(|r| r.path == "/chat/completions")
    {
        arrived += 1;
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            upstream.received(arrived),
        )
        .await
        .expect("the new chat's run reached the upstream");
    }
    gate.open();
    let attached = server
        .open(&format!("/v1/chats/{chat_id}/stream/attach"), None, &[])
        .await;
    if attached.status() == StatusCode::OK {
        let events = Events::of(attached).await.rest().await;
        assert_eq!(events.last().unwrap().name, "done");
    }
    assert_eq!(
        transcript(&server, &chat_id).await,
        pairs(&[("user", "hi"), ("assistant", TEXT_STREAM_TEXT)])
    );
}

#[tokio::test]
async fn a_client_that_half_closes_still_gets_the_whole_stream() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let gate = Gate::new();
    let (_upstream, server) = gated(&gate).await;
    let request = body(None, json!([{"role": "user", "content": "hi"}])).to_string();
    let addr = server.base.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/chat-completions/stream HTTP/1.1\r\nhost: {addr}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        request.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    // Nothing more to send: the client says so before the answer has begun.
    tcp.shutdown().await.unwrap();
    gate.open();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("event: done"), "{answer}");
    // `done` carries the whole text (each SSE frame is one chunk of the chunked body).
    assert!(answer.contains(TEXT_STREAM_TEXT), "{answer}");
}

#[tokio::test]
async fn shutdown_lets_runs_finish_in_the_grace_period_then_stops_the_rest_with_an_error() {
    let (finishes, hangs) = (Gate::new(), Gate::new());
    let upstream = ScriptedUpstream::start([
        (ROUTE, Reply::sse(TEXT_STREAM).after(&finishes)),
        (ROUTE, Reply::sse(TEXT_STREAM).after(&hangs)),
    ])
    .await;
    let server = server_for(&upstream, &["--chatd-shutdown-grace-secs", "1"]).await;
    // The model listing at startup is one upstream request; the endpoint waits for it.
    server.get("/v1/models").await;
    let before = upstream.requests().len();
    let (one, two) = (
        server.new_chat(json!({"enabledTools": []})).await,
        server.new_chat(json!({"enabledTools": []})).await,
    );
    let history = json!([{"role": "user", "content": "hi"}]);
    let mut first = server.stream(body(Some(&one), history.clone())).await;
    first.expect("meta").await;
    upstream.received(before + 1).await;
    let mut second = server.stream(body(Some(&two), history)).await;
    let meta = second.expect("meta").await;
    upstream.received(before + 2).await;

    let (db, _dir) = (server.database_url.clone(), server.dir.clone());
    let stopping = tokio::spawn(server.stop());
    finishes.open();
    let done = first.rest().await;
    assert_eq!(done.last().unwrap().name, "done");
    let stopped = second.rest().await;
    let last = stopped.last().unwrap();
    assert_eq!(last.name, "error");
    assert_eq!(
        last.data["message"],
        "the server shut down before the reply was finished"
    );
    stopping.await.unwrap();

    let mut db = crate::support::RawDb::connect(&db).await;
    let rows: Vec<(String, String)> = db
        .rows(
            "SELECT chat_id, role FROM messages ORDER BY chat_id, seq",
            &[],
        )
        .await;
    assert!(rows.contains(&(one.clone(), "assistant".into())));
    assert!(
        rows.contains(&(two.clone(), "user".into())),
        "the accepted message is kept"
    );
    assert!(!rows.contains(&(two.clone(), "assistant".into())));
    let (error,) = db
        .rows::<(Option<String>,)>(
            "SELECT error FROM llm_calls WHERE id = ?",
            &[meta.data["callId"].as_str().unwrap()],
        )
        .await[0]
        .clone();
    assert_eq!(
        error.as_deref(),
        Some("the server shut down before the reply was finished")
    );
}

/// A `persist: false` stream's run is driven by its response rather than a task of its own
/// (`runs::ActiveRuns::driven`): shutdown still waits for it, then ends it with the same error.
#[tokio::test]
async fn shutdown_past_the_grace_period_ends_a_persist_false_stream_with_an_error() {
    let hangs = Gate::new();
    let upstream = ScriptedUpstream::start([(ROUTE, Reply::sse(TEXT_STREAM).after(&hangs))]).await;
    let server = server_for(&upstream, &["--chatd-shutdown-grace-secs", "1"]).await;
    server.get("/v1/models").await;
    let before = upstream.requests().len();
    let mut request = body(None, json!([{"role": "user", "content": "hi"}]));
    request["persist"] = json!(false);
    request["enabledTools"] = json!([]);
    let mut stream = server.stream(request).await;
    stream.expect("meta").await;
    upstream.received(before + 1).await;
    let stopping = tokio::spawn(server.stop());
    let events = stream.rest().await;
    let last = events.last().expect("an event after meta");
    assert_eq!(last.name, "error", "{events:?}");
    assert_eq!(
        last.data["message"],
        "the server shut down before the reply was finished"
    );
    stopping.await.unwrap();
    hangs.open();
}

#[tokio::test]
async fn a_client_that_stops_sending_its_body_does_not_hold_up_shutdown() {
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = TestServer::start_with(crate::support::Options {
        args: vec!["--chatd-shutdown-grace-secs".into(), "1".into()],
        ..Default::default()
    })
    .await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut answer = [0u8; 1024];
    // A request whose body never comes. `expect: 100-continue` makes the server say when
    // it starts reading the body, so the request is known to be in flight before the signal.
    tcp.write_all(
        format!(
            "POST /v1/chats HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             content-length: 100\r\nexpect: 100-continue\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let n = tcp.read(&mut answer).await.unwrap();
    assert!(
        answer[..n].starts_with(b"HTTP/1.1 100"),
        "{:?}",
        String::from_utf8_lossy(&answer[..n])
    );
    tcp.write_all(b"{\"title\":").await.unwrap();

    let started = Instant::now();
    // Well under the 30 s after which the body's idle timeout would end the request anyway.
    tokio::time::timeout(Duration::from_secs(15), server.stop())
        .await
        .expect("the server stops although the body never came");
    // The grace period (1 s here) plus the 3.5 s given to stopped runs' last events.
    assert!(
        started.elapsed() >= Duration::from_millis(4_500),
        "closed too soon"
    );
    // The connection was closed (an end of stream or a reset), not left open.
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the connection is still open");
}

/// A JSON body that arrives in `pieces`, `pause` apart, then (if `stall`) never ends.
fn trickled(pieces: &[&'static str], pause: std::time::Duration, stall: bool) -> axum::body::Body {
    use futures::StreamExt;
    let pieces = futures::stream::iter(pieces.to_vec()).then(move |piece| async move {
        tokio::time::sleep(pause).await;
        Ok::<_, std::io::Error>(axum::body::Bytes::from_static(piece.as_bytes()))
    });
    let rest = futures::stream::pending().take(usize::from(stall));
    axum::body::Body::from_stream(pieces.chain(rest))
}

#[tokio::test]
async fn a_body_that_stops_arriving_is_refused_and_a_slow_one_is_not() {
    use std::time::Duration;
    use tower::ServiceExt;
    let server = TestServer::start().await;
    // The real router and state, with a 600 ms limit between pieces of a body.
    let timeouts = chatd::http::BodyTimeouts {
        idle: Duration::from_millis(600),
        total: Duration::from_secs(60),
    };
    let router = chatd::http::router_with(server.state.clone(), timeouts);
    let post = |body| {
        axum::http::Request::post("/v1/chats")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .body(body)
            .unwrap()
    };
    let stalled = trickled(&[r#"{"title":"#], Duration::ZERO, true);
    let res = tokio::time::timeout(
        Duration::from_secs(10),
        router.clone().oneshot(post(stalled)),
    )
    .await
    .expect("a stalled body is cut, not waited for")
    .unwrap();
    assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
    let body = axum::body::to_bytes(res.into_body(), 1024).await.unwrap();
    let message: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        message["message"],
        "request body: stopped arriving before its end"
    );
    // Six pieces 150 ms apart: longer in all than the limit, never near it between two.
    let pieces = [r#"{"#, r#""tit"#, r#"le""#, ":", r#""slow""#, "}"];
    let slow = trickled(&pieces, Duration::from_millis(150), false);
    let res = router.oneshot(post(slow)).await.unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    let body = axum::body::to_bytes(res.into_body(), 64 * 1024)
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["chat"]["title"],
        "slow"
    );
}

#[tokio::test]
async fn a_body_that_trickles_past_the_deadline_is_refused() {
    use futures::StreamExt;
    use std::time::Duration;
    use tower::ServiceExt;
    let server = TestServer::start().await;
    // A title that never ends, a piece every 150 ms: never a pause near the 600 ms idle limit.
    let timeouts = chatd::http::BodyTimeouts {
        idle: Duration::from_millis(600),
        total: Duration::from_secs(1),
    };
    let router = chatd::http::router_with(server.state.clone(), timeouts);
    let endless = futures::stream::once(async { r#"{"title":""# })
        .chain(futures::stream::repeat("a"))
        .then(|piece| async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            Ok::<_, std::io::Error>(axum::body::Bytes::from_static(piece.as_bytes()))
        });
    let request = axum::http::Request::post("/v1/chats")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(axum::body::Body::from_stream(endless))
        .unwrap();
    let res = tokio::time::timeout(Duration::from_secs(30), router.oneshot(request))
        .await
        .expect("a body that never ends is cut at the deadline")
        .unwrap();
    assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
    let body = axum::body::to_bytes(res.into_body(), 1024).await.unwrap();
    let message: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        message["message"],
        "request body: not all of it arrived within 1 s of the request"
    );
    let (_, chats) = server.get("/v1/chats").await;
    assert_eq!(chats["chats"], serde_json::json!([]), "nothing was written");
}
