//! Several chatd processes serving one deployment on one PostgreSQL database, black-box: the
//! real binary twice (A and B) against scripted upstreams. A stream started on A is attached and
//! resumed on B with the same events; the 409 holds across them; B lists and joins A's runs;
//! when A dies (kill -9) or freezes past its lease (SIGSTOP), B ends its runs within 15 s and A's
//! late events are refused; a listener connection killed under B loses nothing; an instance
//! whose lease ran out takes no new run until it has registered again; a stop sent to B ends the
//! run A owns.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chatd::config::DatabaseUrl;
use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::{ROUTE, TEXT_STREAM, body};
use crate::process;
use crate::support::{Event, Events, RawDb, plugin_cache_dir, test_database};

const BIN: &str = env!("CARGO_BIN_EXE_chatd");
const STREAM: &str = "/v1/chat-completions/stream";

/// How long after its owner stops a run must end elsewhere (the issue's bound).
const TAKEOVER: Duration = Duration::from_secs(15);

/// One chatd process; killed when dropped.
pub(crate) struct Instance {
    pub(crate) child: Child,
    pub(crate) base: String,
    /// The lines before it (startup's log).
    pub(crate) startup: Vec<String>,
    /// The lines after it, as they come.
    pub(crate) lines: std::sync::mpsc::Receiver<String>,
}

impl Instance {
    /// The binary on `database`, its provider_c and engine_a at `upstream`.
    fn start(dir: &tempfile::TempDir, database: &str, upstream: &str) -> Self {
        let cache = plugin_cache_dir();
        Self::with_env(
            dir.path(),
            &[
                ("DATABASE_URL", database),
                ("PLUGIN_CACHE_DIR", cache.to_str().unwrap()),
                ("PROVIDER_C_BASE_URL", upstream),
                ("PROVIDER_C_API_KEY", "c-key"),
                ("ENGINE_A_BASE_URL", upstream),
                ("ENGINE_A_API_KEY", "e-key"),
            ],
        )
    }

    /// The binary in `dir` with only `env` (and PATH, PORT=0).
    pub(crate) fn with_env(dir: &std::path::Path, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(BIN)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PORT", "0")
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chatd");
        let lines = process::stdout_lines(&mut child);
        let (base, startup) = process::listening_after(&lines);
        Self {
            child,
            base,
            startup,
            lines,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub(crate) async fn post(
        &self,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut request = reqwest::Client::new().post(self.url(path));
        if let Some(body) = body {
            request = request.json(&body);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }

    /// A persisted stream of the chat, which must be accepted.
    pub(crate) async fn stream(&self, chat_id: &str) -> Events {
        let res = self.post(STREAM, Some(chat_stream(chat_id)), &[]).await;
        Events::of(res).await
    }

    /// The chat's running stream, after `last` when given.
    async fn attach(&self, chat_id: &str, last: Option<&str>) -> Events {
        let path = format!("/v1/chats/{chat_id}/stream/attach");
        let header = last.map(|id| ("Last-Event-ID", id));
        Events::of(self.post(&path, None, header.as_slice()).await).await
    }

    pub(crate) async fn get(&self, path: &str) -> Value {
        reqwest::get(self.url(path))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub(crate) async fn new_chat(&self) -> String {
        let res = self
            .post("/v1/chats", Some(json!({"enabledTools": []})), &[])
            .await;
        let chat: Value = res.json().await.unwrap();
        chat["chat"]["id"].as_str().unwrap().to_string()
    }

    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal}");
    }

    /// Its exit status once it exits, if it does within `limit`.
    pub(crate) fn exit_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two instances on one fresh database, and a connection to it.
pub(crate) async fn deployment(
    upstream: &ScriptedUpstream,
) -> (tempfile::TempDir, Instance, Instance, RawDb) {
    let dir = tempfile::tempdir().unwrap();
    let database = test_database(&dir).await;
    let DatabaseUrl::Postgres(url) = &database else {
        unreachable!("the PostgreSQL suite")
    };
    let a = Instance::start(&dir, url, &upstream.url());
    let b = Instance::start(&dir, url, &upstream.url());
    let db = RawDb::connect(&database).await;
    (dir, a, b, db)
}

/// The recorded text stream with `n` deltas (`w0 `, `w1 `, …), one every `pause`.
pub(crate) fn paced_text(n: usize, pause: Duration) -> Reply {
    let blocks: Vec<&str> = TEXT_STREAM
        .split("\n\n")
        .filter(|b| !b.is_empty())
        .collect();
    let piece = |block: &str| format!("{block}\n\n").into_bytes();
    let mut pieces = vec![piece(blocks[0])];
    for i in 0..n {
        let delta = blocks[1].replace(r#""content":"The""#, &format!(r#""content":"w{i} ""#));
        pieces.push(piece(&delta));
    }
    pieces.extend(blocks[blocks.len() - 3..].iter().map(|b| piece(b)));
    Reply::sse("").paced(pieces, pause)
}

fn chat_stream(chat_id: &str) -> Value {
    body(Some(chat_id), json!([{"role": "user", "content": "hi"}]))
}

/// Events as comparable tuples.
fn triples(events: &[Event]) -> Vec<(String, String, Value)> {
    events
        .iter()
        .map(|e| (e.id.clone(), e.name.clone(), e.data.clone()))
        .collect()
}

/// The next `n` events, which must exist.
async fn take(events: &mut Events, n: usize) -> Vec<Event> {
    let mut taken = Vec::new();
    for _ in 0..n {
        taken.push(events.next().await.expect("an event"));
    }
    taken
}

/// `chat_id`'s stream on A, attached on B mid-run and resumed on B after an event of A's.
#[tokio::test]
async fn a_stream_on_a_is_attached_and_resumed_on_b_with_the_same_events() {
    let upstream =
        ScriptedUpstream::start([(ROUTE, paced_text(40, Duration::from_millis(25)))]).await;
    let (_dir, a, b, _db) = deployment(&upstream).await;
    let chat_id = a.new_chat().await;
    let mut on_a = a.stream(&chat_id).await;
    let mut seen_on_a = take(&mut on_a, 6).await;

    // B lists A's run, and a second stream for the chat is refused there too.
    assert_eq!(b.get("/v1/active-runs").await["chats"], json!([chat_id]));
    let second = b.post(STREAM, Some(chat_stream(&chat_id)), &[]).await;
    assert_eq!(second.status(), StatusCode::CONFLICT);

    let attach = format!("/v1/chats/{chat_id}/stream/attach");
    let attached = b.attach(&chat_id, None).await;
    let resume_after = seen_on_a[4].id.clone();
    let resumed = b.attach(&chat_id, Some(&resume_after)).await;
    let (attached, resumed) = (attached.rest().await, resumed.rest().await);
    seen_on_a.extend(on_a.rest().await);

    assert_eq!(
        seen_on_a.len(),
        42,
        "meta, 40 deltas, done: {:?}",
        triples(&seen_on_a)
    );
    assert_eq!(seen_on_a.last().unwrap().name, "done");
    assert_eq!(triples(&attached), triples(&seen_on_a), "attached on B");
    assert_eq!(triples(&resumed), triples(&seen_on_a[5..]), "resumed on B");
    // Positions 1, 2, 3, … : each event once, in order.
    for (i, event) in seen_on_a.iter().enumerate() {
        assert_eq!(event.run_and_position().1, i + 1);
    }
    // The run is over everywhere.
    assert_eq!(b.get("/v1/active-runs").await["chats"], json!([]));
    assert_eq!(
        b.post(&attach, None, &[]).await.status(),
        StatusCode::NOT_FOUND
    );

    // Each instance's metrics: A wrote the run's events (their lag measured) on PostgreSQL, B
    // served the two attaches.
    let text = |instance: &Instance| {
        let url = instance.url("/metrics");
        async move { reqwest::get(url).await.unwrap().text().await.unwrap() }
    };
    let on_a = text(&a).await;
    let lagged: u64 = on_a
        .lines()
        .find_map(|l| l.strip_prefix("chatd_run_event_write_lag_seconds_count "))
        .expect("the lag histogram")
        .parse()
        .unwrap();
    assert!(lagged > 0, "{on_a}");
    let began = r#"chatd_store_query_duration_seconds_count{backend="postgresql",operation="begin_call"} 1"#;
    assert!(on_a.lines().any(|l| l == began), "{on_a}");
    let on_b = text(&b).await;
    let attaches = r#"chatd_run_attaches_total{kind="chat"} 2"#;
    assert!(on_b.lines().any(|l| l == attaches), "{on_b}");
}

#[tokio::test]
async fn simultaneous_streams_on_a_and_b_get_one_409_each_pair() {
    // Paced, so each run outlasts the other request's start: an instant stream could end on one
    // instance before the other's request came in, and both would rightly be accepted.
    let paced = paced_text(4, Duration::from_millis(50));
    let upstream = ScriptedUpstream::start([(ROUTE, paced)]).await;
    let (_dir, a, b, _db) = deployment(&upstream).await;
    for pair in 0..20 {
        let chat_id = a.new_chat().await;
        let request = chat_stream(&chat_id);
        let (on_a, on_b) = tokio::join!(
            a.post(STREAM, Some(request.clone()), &[]),
            b.post(STREAM, Some(request), &[]),
        );
        let mut statuses = [on_a.status(), on_b.status()];
        statuses.sort();
        assert_eq!(
            statuses,
            [StatusCode::OK, StatusCode::CONFLICT],
            "pair {pair}"
        );
        let accepted = if on_a.status() == StatusCode::OK {
            on_a
        } else {
            on_b
        };
        let events = Events::of(accepted).await.rest().await;
        assert_eq!(events.last().unwrap().name, "done", "pair {pair}");
    }
    assert_eq!(
        calls(&upstream, "/chat/completions"),
        20,
        "one upstream call per pair"
    );
}

#[tokio::test]
async fn a_search_stream_sent_to_both_runs_once_upstream() {
    let gate = Gate::new();
    let upstream = ScriptedUpstream::start([
        (
            "POST /search",
            Reply::json(200, crate::search_runs::exa_results(3)).after(&gate),
        ),
        (
            "POST /answer",
            Reply::json(200, crate::search_runs::exa_answer()).after(&gate),
        ),
    ])
    .await;
    let (_dir, a, b, _db) = deployment(&upstream).await;
    let res = a
        .post("/v1/searches", Some(json!({"query": "tokio"})), &[])
        .await;
    let search_id = res.json::<Value>().await.unwrap()["search"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let run = format!("/v1/searches/{search_id}/run/stream");
    // Registered before its response starts.
    let on_a = Events::of(a.post(&run, Some(json!({})), &[]).await).await;
    assert_eq!(
        b.get("/v1/active-runs").await["searches"],
        json!([search_id])
    );
    // B joins A's run instead of starting one.
    let on_b = Events::of(b.post(&run, Some(json!({})), &[]).await).await;
    gate.open();
    let (on_a, on_b) = (on_a.rest().await, on_b.rest().await);
    assert_eq!(on_a.last().unwrap().name, "done");
    assert_eq!(triples(&on_b), triples(&on_a));
    assert_eq!(calls(&upstream, "/search"), 1, "one search upstream");
    assert_eq!(calls(&upstream, "/answer"), 1, "one answer upstream");
}

/// How many requests for `path` the upstream had (the instances also ask it for models).
fn calls(upstream: &ScriptedUpstream, path: &str) -> usize {
    upstream
        .requests()
        .iter()
        .filter(|r| r.path == path)
        .count()
}

/// Reads `events` until its terminal event; the events and how long that took.
async fn until_end(events: &mut Events) -> (Vec<Event>, Duration) {
    let started = Instant::now();
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        let end = event.name == "done" || event.name == "error";
        seen.push(event);
        if end {
            break;
        }
    }
    (seen, started.elapsed())
}

/// The stored error of the chat's call, once it has one.
async fn call_error(db: &mut RawDb, chat_id: &str) -> Option<String> {
    let rows: Vec<(Option<String>,)> = db
        .rows(
            "SELECT error FROM llm_calls WHERE chat_id = ? ORDER BY created_at",
            &[chat_id],
        )
        .await;
    rows.into_iter().next().and_then(|(error,)| error)
}

#[tokio::test]
async fn when_a_is_killed_b_ends_its_run_and_takes_new_streams() {
    // A's reply never ends (10 minutes of deltas); the next one is the recorded answer.
    let upstream = ScriptedUpstream::start([
        (ROUTE, paced_text(6_000, Duration::from_millis(100))),
        (ROUTE, Reply::sse(TEXT_STREAM)),
    ])
    .await;
    let (_dir, mut a, b, mut db) = deployment(&upstream).await;
    let chat_id = a.new_chat().await;
    let mut on_a = a.stream(&chat_id).await;
    take(&mut on_a, 3).await;
    let mut on_b = b.attach(&chat_id, None).await;
    take(&mut on_b, 3).await;

    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let (seen, took) = until_end(&mut on_b).await;
    let end = seen.last().expect("the run's end");
    assert_eq!(end.name, "error", "{end:?}");
    // The chat stream's own error event, as a client of A would have had it.
    assert_eq!(end.data["type"], "error", "{end:?}");
    assert_eq!(
        end.data["message"],
        "the server stopped before the reply was finished"
    );
    eprintln!("the run ended on B {took:?} after A was killed");
    assert!(took < TAKEOVER, "ended {took:?} after the kill");
    assert_eq!(
        call_error(&mut db, &chat_id).await.as_deref(),
        Some("the server stopped before the reply was finished")
    );
    assert_eq!(b.get("/v1/active-runs").await["chats"], json!([]));
    let again = b.stream(&chat_id).await;
    assert_eq!(again.rest().await.last().unwrap().name, "done");
}

#[tokio::test]
async fn a_frozen_past_its_lease_cannot_write_into_its_old_run() {
    let upstream = ScriptedUpstream::start([
        (ROUTE, paced_text(6_000, Duration::from_millis(50))),
        (ROUTE, paced_text(30, Duration::from_millis(100))),
    ])
    .await;
    let (_dir, a, b, mut db) = deployment(&upstream).await;
    let chat_id = a.new_chat().await;
    let mut on_a = a.stream(&chat_id).await;
    take(&mut on_a, 3).await;
    let mut on_b = b.attach(&chat_id, None).await;

    a.signal("-STOP");
    let (seen, took) = until_end(&mut on_b).await;
    assert_eq!(seen.last().unwrap().name, "error");
    eprintln!("the run ended on B {took:?} after A was frozen");
    assert!(took < TAKEOVER, "ended {took:?} after the freeze");
    let first_run: Vec<(String,)> = db
        .rows(
            "SELECT id FROM runs WHERE target_id = ? ORDER BY started_at",
            &[&chat_id],
        )
        .await;
    let first_run = first_run[0].0.clone();
    let stored_end = last_event(&mut db, &first_run).await;

    // B takes a new stream for the chat; then A wakes with deltas in its socket.
    let mut new_on_b = b.stream(&chat_id).await;
    take(&mut new_on_b, 2).await;
    a.signal("-CONT");
    // A finds its lease gone and stops what it was running: its own client gets an error.
    let (on_a_rest, _) = until_end(&mut on_a).await;
    assert_eq!(on_a_rest.last().unwrap().name, "error");
    let (new_run, _) = until_end(&mut new_on_b).await;
    assert_eq!(new_run.last().unwrap().name, "done");

    // Nothing of A's was stored after the run's end, and the call keeps the error it was given.
    assert_eq!(last_event(&mut db, &first_run).await, stored_end);
    assert_eq!(stored_end.1, "error");
    assert_eq!(
        call_error(&mut db, &chat_id).await.as_deref(),
        Some("the server stopped before the reply was finished")
    );
    // The transcript has B's answer only.
    let chat = b.get(&format!("/v1/chats/{chat_id}")).await;
    let messages: Vec<(&str, &str)> = chat["chat"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    let answer = new_run.last().unwrap().data["text"].as_str().unwrap();
    assert!(
        answer.starts_with("w0 w1 ") && answer.ends_with("w29 "),
        "{answer}"
    );
    assert_eq!(messages, [("user", "hi"), ("assistant", answer)]);
    // A registers again, under a new lease.
    loop {
        let live: Vec<(i64,)> = db
            .rows(
                "SELECT COUNT(*) FROM instances WHERE lease_until > clock_timestamp()",
                &[],
            )
            .await;
        if live[0].0 == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The last stored event of `run`: its position and name.
async fn last_event(db: &mut RawDb, run: &str) -> (i32, String) {
    let rows: Vec<(i32, String)> = db
        .rows(
            "SELECT seq, name FROM run_events WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
            &[run],
        )
        .await;
    rows.into_iter().next().expect("stored events")
}

#[tokio::test]
async fn a_listener_killed_under_b_loses_nothing() {
    let upstream =
        ScriptedUpstream::start([(ROUTE, paced_text(60, Duration::from_millis(25)))]).await;
    let (_dir, a, b, mut db) = deployment(&upstream).await;
    let chat_id = a.new_chat().await;
    let on_a = a.stream(&chat_id).await;
    let mut on_b = b.attach(&chat_id, None).await;
    let mut seen_on_b = take(&mut on_b, 5).await;
    // Every instance's listener is the connection whose last statement was its LISTEN.
    let killed: Vec<(bool,)> = db
        .rows(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND query LIKE 'LISTEN %'",
            &[],
        )
        .await;
    assert_eq!(killed.len(), 2, "A's and B's listeners");
    seen_on_b.extend(on_b.rest().await);
    let seen_on_a = on_a.rest().await;
    assert_eq!(seen_on_a.len(), 62, "meta, 60 deltas, done");
    assert_eq!(triples(&seen_on_b), triples(&seen_on_a));
}

#[tokio::test]
async fn an_instance_whose_lease_ran_out_takes_no_run_until_it_registers_again() {
    let upstream = ScriptedUpstream::start([(ROUTE, Reply::sse(TEXT_STREAM))]).await;
    let server = crate::completions::server_for(&upstream, &[]).await;
    let chat_id = server.new_chat(json!({"enabledTools": []})).await;
    let mut db = server.raw_db().await;
    let lapse = "UPDATE instances SET lease_until = clock_timestamp() - interval '1 minute'";
    // Its lease ran out, as a frozen instance's would: a stream asked for before its next beat
    // (every 2 s) notices is refused. When the beat came first, the lease is renewed: again.
    let mut tries = 0;
    let refused = loop {
        tries += 1;
        assert!(tries <= 20, "a stream was never refused");
        db.execute(lapse, &[]).await;
        let res = server.open(STREAM, Some(chat_stream(&chat_id)), &[]).await;
        let status = res.status();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            break res.json::<Value>().await.unwrap();
        }
        // Each refusal says what it got: a CI log keeps the panic's message, not its line.
        assert_eq!(
            status,
            StatusCode::OK,
            "try {tries}: {}",
            res.text().await.unwrap()
        );
        Events::of(res).await.rest().await;
        // The run is unregistered just after its `done`: the next stream waits for that, or
        // it is refused as a second stream of the chat (409), which is not what this tests.
        left_active_runs(&server, &chat_id).await;
    };
    assert!(
        refused["message"].as_str().unwrap().contains("lease"),
        "{refused}"
    );
    // The beat finds the lease gone and registers again; then streams are taken.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let res = server.open(STREAM, Some(chat_stream(&chat_id)), &[]).await;
        let status = res.status();
        if status == StatusCode::OK {
            let events = Events::of(res).await.rest().await;
            let last = events.last().unwrap();
            assert_eq!(last.name, "done", "{}", last.data);
            break;
        }
        let body = res.text().await.unwrap();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(Instant::now() < deadline, "not registered again: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits (up to 10 s) until `chat_id` has left `GET /v1/active-runs`.
async fn left_active_runs(server: &crate::support::TestServer, chat_id: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, runs) = server.get("/v1/active-runs").await;
        assert_eq!(status, StatusCode::OK, "{runs}");
        let running = runs["chats"]
            .as_array()
            .is_some_and(|chats| chats.iter().any(|c| c == chat_id));
        if !running {
            return;
        }
        assert!(Instant::now() < deadline, "{chat_id} still runs: {runs}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A stop sent to B ends the run A owns: the database carries the request to A, A drops its
/// upstream request and ends the run with the text so far, and every client (on A, attached on
/// B, and B's stop request) sees that end.
#[tokio::test]
async fn a_stop_sent_to_b_ends_the_run_a_owns() {
    let gate = Gate::new();
    let held = paced_text(3, Duration::from_millis(5)).hold_before(3, &gate);
    let upstream = ScriptedUpstream::start([(ROUTE, held)]).await;
    let (_dir, a, b, _db) = deployment(&upstream).await;
    let chat_id = a.new_chat().await;
    let mut on_a = a.stream(&chat_id).await;
    let seen = take(&mut on_a, 3).await;
    assert_eq!(seen[2].data["text"], "w1 ");
    let mut on_b = b.attach(&chat_id, None).await;
    take(&mut on_b, 3).await;

    let asked = Instant::now();
    let res = b
        .post(&format!("/v1/chats/{chat_id}/stream/cancel"), None, &[])
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let answered = asked.elapsed();
    let rest = on_a.rest().await;
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].name, "done");
    assert_eq!(rest[0].data["text"], "w0 w1 ");
    assert_eq!(triples(&on_b.rest().await), triples(&rest));
    tokio::time::timeout(Duration::from_secs(5), upstream.dropped(1))
        .await
        .expect("A dropped its upstream request");
    println!("B's stop answered in {answered:?}");
    assert!(answered < Duration::from_secs(5), "{answered:?}");

    assert_eq!(b.get("/v1/active-runs").await["chats"], json!([]));
    let chat = b.get(&format!("/v1/chats/{chat_id}")).await;
    let last = chat["chat"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], "w0 w1 ");
    assert_eq!(last["metadata"]["stopped"], true);
    // The chat takes its next stream, on either instance.
    gate.open();
    let next = b.stream(&chat_id).await.rest().await;
    assert_eq!(next.last().unwrap().name, "done");
    // Nothing runs now: a stop is 404 on both.
    for instance in [&a, &b] {
        let res = instance
            .post(&format!("/v1/chats/{chat_id}/stream/cancel"), None, &[])
            .await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
    }
}
