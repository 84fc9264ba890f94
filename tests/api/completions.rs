//! Chat completions against the real server, the bundled provider_c plugin (chat completions
//! wire) and scripted upstreams replaying and varying `fixtures/upstream/openai_chat`: the
//! persistence rules, the event stream, the tool loop, runs, attach, and upstream failures.

use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Event, Options, TestServer};

pub(crate) const TEXT_STREAM: &str =
    include_str!("../fixtures/upstream/openai_chat/02_stream_text_include_usage.response.sse");
pub(crate) const TEXT_STREAM_TEXT: &str = "The capital of the UK is London.";
const TOOL_STREAM: &str =
    include_str!("../fixtures/upstream/openai_chat/01_stream_tool_call_include_usage.response.sse");
const PARALLEL_STREAM: &str =
    include_str!("../fixtures/upstream/openai_chat/03_stream_parallel_tool_calls.response.sse");
pub(crate) const TEXT_BODY: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");
const ERROR_401: &str =
    include_str!("../fixtures/upstream/openai_chat/07_error_401_invalid_api_key.response.json");

pub(crate) const ROUTE: &str = "POST /chat/completions";

/// The recorded tool-call stream, varied to call chatd's web_search with `{"query":"UK"}`.
fn web_search_stream() -> String {
    TOOL_STREAM
        .replace("get_capital", "web_search")
        .replace(r#""arguments":"country""#, r#""arguments":"query""#)
}

fn exa_results() -> Value {
    json!({"requestId": "r1", "results": [
        {"url": "https://www.gov.uk/", "title": "UK government", "summary": "London is the capital."}
    ]})
}

/// A server whose provider_c and engine_a point at `upstream`.
pub(crate) async fn server_for(upstream: &ScriptedUpstream, extra: &[&str]) -> TestServer {
    let args = extra.iter().map(|s| s.to_string()).collect();
    crate::live_replies::server(
        crate::live_replies::C,
        upstream,
        Options {
            args,
            ..Options::default()
        },
    )
    .await
}

/// The completion requests the upstream received, as JSON.
fn completion_bodies(upstream: &ScriptedUpstream) -> Vec<Value> {
    upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == "/chat/completions")
        .map(|r| r.json())
        .collect()
}

pub(crate) fn body(chat_id: Option<&str>, messages: Value) -> Value {
    let mut body = json!({"provider": "provider_c", "model": "grok-4", "messages": messages});
    if let Some(id) = chat_id {
        body["chatId"] = json!(id);
    }
    body
}

pub(crate) async fn transcript(server: &TestServer, chat_id: &str) -> Vec<(String, String)> {
    let (status, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(status, StatusCode::OK);
    chat["chat"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

pub(crate) fn pairs(rows: &[(&str, &str)]) -> Vec<(String, String)> {
    rows.iter()
        .map(|(r, c)| (r.to_string(), c.to_string()))
        .collect()
}

/// The `llm_calls` row of a call.
pub(crate) async fn call_row(server: &TestServer, call_id: &str) -> chatd::store::CallRecord {
    server
        .store
        .get_call(call_id)
        .await
        .unwrap()
        .expect("the call is recorded")
}

pub(crate) fn names(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_str()).collect()
}

pub(crate) fn deltas(events: &[Event]) -> String {
    events
        .iter()
        .filter(|e| e.name == "delta")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn non_streaming_stores_new_rows_once_and_records_the_call() {
    let upstream =
        ScriptedUpstream::start([(ROUTE, Reply::text(200, "application/json", TEXT_BODY))]).await;
    let server = server_for(&upstream, &[]).await;
    let chat_id = server
        .new_chat(json!({"additionalSystemPrompt": "Be brief.", "enabledTools": []}))
        .await;
    let history = json!([
        {"role": "system", "content": "hidden seed"},
        {"role": "user", "content": "Hello"}
    ]);
    let (status, reply) = server
        .post(
            "/v1/chat-completions",
            body(Some(&chat_id), history.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["chatId"], chat_id);
    assert_eq!(reply["provider"], "provider_c");
    assert_eq!(reply["model"], "grok-4");
    assert_eq!(
        reply["message"],
        json!({"role": "assistant", "content": "Hello! How can I assist you today?"})
    );
    assert_eq!(
        reply["usage"],
        json!({"inputTokens": 11, "outputTokens": 9, "totalTokens": 20})
    );
    assert_eq!(
        reply["raw"],
        serde_json::from_str::<Value>(TEXT_BODY).unwrap()
    );

    // The upstream got the stored prompt first, then the history; no tools for this chat.
    let sent = &completion_bodies(&upstream)[0];
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    assert_eq!(sent["messages"][1]["content"], "hidden seed");
    assert_eq!(sent["messages"][2]["content"], "Hello");
    assert!(sent.get("tools").is_none(), "{sent}");
    assert_eq!(
        upstream.requests()[0].header("authorization"),
        Some("Bearer c-key")
    );

    let answer = "Hello! How can I assist you today?";
    assert_eq!(
        transcript(&server, &chat_id).await,
        pairs(&[
            ("system", "hidden seed"),
            ("user", "Hello"),
            ("assistant", answer)
        ])
    );
    // The same history again, with the reply and one new turn: only the new turn is stored.
    let mut longer = history.as_array().unwrap().clone();
    one_more_turn(&server, &chat_id, &mut longer, answer).await;
    assert_eq!(
        transcript(&server, &chat_id).await,
        pairs(&[
            ("system", "hidden seed"),
            ("user", "Hello"),
            ("assistant", answer),
            ("user", "Hello"),
            ("assistant", answer)
        ])
    );

    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(chat["chat"]["initiatedProvider"], "provider_c");
    assert_eq!(chat["chat"]["lastUsedModel"], "grok-4");
    // chat_id, total_tokens, latency_ms, error
    type CallRow = (String, Option<i64>, Option<i64>, Option<String>);
    let calls: Vec<CallRow> = server
        .raw_db()
        .await
        .rows(
            "SELECT chat_id, total_tokens, latency_ms, error FROM llm_calls ORDER BY created_at",
            &[],
        )
        .await;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, chat_id);
    assert_eq!(calls[0].1, Some(20));
    assert!(calls[0].2.is_some());
    assert_eq!(calls[0].3, None);

    // Continued twice, the chat is kept in the process (on SQLite): a change to its settings
    // reaches the next completion, and a deleted chat is not found (a stream first: were the
    // chat still kept, it would start, and fail only after `meta`).
    let path = format!("/v1/chats/{chat_id}");
    let (status, _) = server
        .patch(&path, json!({"additionalSystemPrompt": "Be thorough."}))
        .await;
    assert_eq!(status, StatusCode::OK);
    one_more_turn(&server, &chat_id, &mut longer, answer).await;
    let sent = &completion_bodies(&upstream)[2];
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "Be thorough."})
    );
    assert_eq!(transcript(&server, &chat_id).await.len(), 7);
    assert_eq!(server.delete(&path).await.0, StatusCode::OK);
    for route in ["/v1/chat-completions/stream", "/v1/chat-completions"] {
        let (status, reply) = server
            .post(route, body(Some(&chat_id), json!(longer)))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{route}: {reply}");
    }
    assert_eq!(completion_bodies(&upstream).len(), 3, "nothing sent");
}

/// Adds `answer` and another "Hello" to `history` and sends it, non-streaming: answered.
async fn one_more_turn(server: &TestServer, chat_id: &str, history: &mut Vec<Value>, answer: &str) {
    history.push(json!({"role": "assistant", "content": answer}));
    history.push(json!({"role": "user", "content": "Hello"}));
    let (status, reply) = server
        .post("/v1/chat-completions", body(Some(chat_id), json!(history)))
        .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
}

#[tokio::test]
async fn a_stream_is_meta_then_deltas_then_done_with_their_text_and_ids() {
    let upstream = ScriptedUpstream::start([(ROUTE, Reply::sse(TEXT_STREAM))]).await;
    let server = server_for(&upstream, &[]).await;
    let stream = server
        .stream(
            json!({"provider": "provider_c", "model": "grok-4", "enabledTools": [],
                       "messages": [{"role": "user", "content": "Capital of the UK?"}]}),
        )
        .await;
    let events = stream.rest().await;
    assert_eq!(events[0].name, "meta");
    let chat_id = events[0].data["chatId"].as_str().unwrap().to_string();
    let call_id = events[0].data["callId"].as_str().unwrap().to_string();
    assert_eq!(events[0].data["type"], "meta");
    assert_eq!(events[0].data["provider"], "provider_c");
    assert_eq!(events[0].data["model"], "grok-4");
    let last = events.last().unwrap();
    assert_eq!(last.name, "done");
    assert!(
        names(&events[1..events.len() - 1])
            .iter()
            .all(|n| *n == "delta")
    );
    assert!(events.len() > 3, "the recording streams several deltas");
    assert_eq!(deltas(&events), TEXT_STREAM_TEXT);
    assert_eq!(last.data["text"], TEXT_STREAM_TEXT);
    assert_eq!(
        last.data["usage"],
        json!({"inputTokens": 78, "outputTokens": 9, "totalTokens": 87})
    );
    let run = events[0].run_and_position().0;
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event.run_and_position(), (run, i + 1));
    }
    // Persisted before `done`: the chat was created with the user row and the reply.
    assert_eq!(
        transcript(&server, &chat_id).await,
        pairs(&[
            ("user", "Capital of the UK?"),
            ("assistant", TEXT_STREAM_TEXT)
        ])
    );
    let call = call_row(&server, &call_id).await;
    assert_eq!(call.usage.unwrap().total_tokens, 87);
    assert_eq!(call.error, None);
    assert!(call.completed_at.is_some());
    let (_, runs) = server.get("/v1/active-runs").await;
    assert_eq!(runs["chats"], json!([]));
}

#[tokio::test]
async fn the_tool_loop_runs_web_search_and_stores_the_call_before_its_terminal_event() {
    let upstream = ScriptedUpstream::start([
        (ROUTE, Reply::sse(&web_search_stream())),
        (ROUTE, Reply::sse(TEXT_STREAM)),
        ("POST /search", Reply::json(200, exa_results())),
    ])
    .await;
    let server = server_for(&upstream, &[]).await;
    let chat_id = server.new_chat(json!({})).await;
    let mut stream = server
        .stream(body(
            Some(&chat_id),
            json!([{"role": "user", "content": "Capital of the UK?"}]),
        ))
        .await;
    stream.expect("meta").await;
    let initiated = stream.expect("tool_call").await;
    assert_eq!(initiated.data["status"], "initiated");
    assert_eq!(initiated.data["name"], "web_search");
    assert_eq!(initiated.data["args"], json!({"query": "UK"}));
    assert!(initiated.data.get("type").is_none());
    assert!(initiated.data.get("completedAt").is_none());
    let id = initiated.data["toolCallId"].clone();
    assert_eq!(id, "call_ZR5UUuTt3pf61kjwAJIYdVMj");

    let completed = stream.expect("tool_call").await;
    // Stored before this event was sent.
    // (The reply may be stored by now too: the run does not wait for this client.)
    let rows = transcript(&server, &chat_id).await;
    assert!(rows.len() >= 2, "{rows:?}");
    assert_eq!(rows[1].0, "tool");
    assert!(rows[1].1.contains("UK government"), "{rows:?}");
    assert_eq!(completed.data["toolCallId"], id);
    assert_eq!(completed.data["status"], "completed");
    assert!(completed.data["durationMs"].is_u64());
    assert!(completed.data["completedAt"].is_string());
    assert!(
        completed.data["resultPreview"]
            .as_str()
            .unwrap()
            .contains("London")
    );
    let rest = stream.rest().await;
    assert_eq!(rest.last().unwrap().name, "done");
    assert!(names(&rest[..rest.len() - 1]).iter().all(|n| *n == "delta"));
    assert_eq!(rest.last().unwrap().data["text"], TEXT_STREAM_TEXT);
    assert_eq!(deltas(&rest), TEXT_STREAM_TEXT);
    // Both rounds' usage.
    assert_eq!(rest.last().unwrap().data["usage"]["totalTokens"], 68 + 87);

    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    let tool = &chat["chat"]["messages"][1];
    assert_eq!(tool["metadata"]["kind"], "tool_call");
    assert_eq!(tool["metadata"]["status"], "completed");
    assert_eq!(tool["metadata"]["args"], json!({"query": "UK"}));
    assert_eq!(tool["name"], "web_search");

    // Round two carried the call and its result, after the internal tool instruction.
    let sent = completion_bodies(&upstream);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["messages"][0]["role"], "system");
    assert!(sent[0]["tools"].as_array().unwrap().len() >= 2);
    let second = sent[1]["messages"].as_array().unwrap();
    let n = second.len();
    assert_eq!(second[n - 2]["tool_calls"][0]["id"], id);
    assert_eq!(second[n - 1]["role"], "tool");
    assert_eq!(second[n - 1]["tool_call_id"], id);
    assert!(
        second[n - 1]["content"]
            .as_str()
            .unwrap()
            .contains("UK government")
    );
    assert_eq!(
        upstream
            .requests()
            .iter()
            .find(|r| r.path == "/search")
            .unwrap()
            .header("x-api-key"),
        Some("e-key")
    );
}

#[tokio::test]
async fn a_failing_tool_is_a_failed_call_the_model_sees_and_parallel_calls_all_run() {
    let upstream = ScriptedUpstream::start([
        (ROUTE, Reply::sse(PARALLEL_STREAM)),
        (ROUTE, Reply::sse(TEXT_STREAM)),
    ])
    .await;
    let server = server_for(&upstream, &[]).await;
    let chat_id = server.new_chat(json!({})).await;
    let events = server
        .stream(body(
            Some(&chat_id),
            json!([{"role": "user", "content": "Weather?"}]),
        ))
        .await
        .rest()
        .await;
    assert_eq!(
        names(&events),
        ["meta", "tool_call", "tool_call", "tool_call", "tool_call"]
            .into_iter()
            .chain(std::iter::repeat_n("delta", events.len() - 6))
            .chain(["done"])
            .collect::<Vec<_>>()
    );
    let failed: Vec<&Event> = events
        .iter()
        .filter(|e| e.name == "tool_call" && e.data["status"] == "failed")
        .collect();
    assert_eq!(failed.len(), 2);
    for event in &failed {
        assert!(
            event.data["error"]
                .as_str()
                .unwrap()
                .contains("not enabled"),
            "{event:?}"
        );
    }
    // The model saw both failures, in call order.
    let sent = completion_bodies(&upstream);
    let second = sent[1]["messages"].as_array().unwrap();
    let n = second.len();
    assert_eq!(
        second[n - 2]["tool_call_id"],
        "call_NS4iQj14cDFwc0BnrKqDHavt"
    );
    assert_eq!(
        second[n - 1]["tool_call_id"],
        "call_SkGkkGDvHQEEk0CGbnAh2AQw"
    );
    assert!(
        second[n - 1]["content"]
            .as_str()
            .unwrap()
            .starts_with("Error:")
    );
    let rows = transcript(&server, &chat_id).await;
    assert_eq!(rows.iter().filter(|(r, _)| r == "tool").count(), 2);
    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(chat["chat"]["messages"][1]["metadata"]["status"], "failed");
}

#[tokio::test]
async fn the_loop_stops_with_a_tool_limit_message_after_max_rounds() {
    let upstream = ScriptedUpstream::start([
        (ROUTE, Reply::sse(&web_search_stream())),
        ("POST /search", Reply::json(200, exa_results())),
    ])
    .await;
    let server = server_for(&upstream, &["--chat-max-tool-rounds", "2"]).await;
    let events = server
        .stream(json!({"provider": "provider_c", "model": "m",
                       "messages": [{"role": "user", "content": "loop"}]}))
        .await
        .rest()
        .await;
    let done = events.last().unwrap();
    assert_eq!(done.name, "done");
    assert!(
        done.data["text"]
            .as_str()
            .unwrap()
            .contains("CHAT_MAX_TOOL_ROUNDS")
    );
    assert_eq!(deltas(&events), done.data["text"].as_str().unwrap());
    // Two rounds of tools ran (4 events), then the third request's calls were not run.
    assert_eq!(events.iter().filter(|e| e.name == "tool_call").count(), 4);
    assert_eq!(completion_bodies(&upstream).len(), 3);
}

#[tokio::test]
async fn persist_false_writes_nothing_and_refuses_a_chat_id() {
    let upstream = ScriptedUpstream::start([(ROUTE, Reply::sse(TEXT_STREAM))]).await;
    let server = server_for(&upstream, &[]).await;
    let before = server.row_counts().await;
    let events = server
        .stream(
            json!({"provider": "provider_c", "model": "m", "persist": false,
                       "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await
        .rest()
        .await;
    assert_eq!(events[0].data["chatId"], Value::Null);
    assert_eq!(events[0].data["callId"], Value::Null);
    assert_eq!(events.last().unwrap().data["text"], TEXT_STREAM_TEXT);
    assert_eq!(server.row_counts().await, before);

    let chat_id = server.new_chat(json!({})).await;
    let res = server
        .open(
            "/v1/chat-completions/stream",
            Some(
                json!({"provider": "provider_c", "model": "m", "persist": false, "chatId": chat_id,
                        "messages": [{"role": "user", "content": "hi"}]}),
            ),
            &[],
        )
        .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let error: Value = res.json().await.unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("chatId"),
        "{error}"
    );
}

#[tokio::test]
async fn upstream_failures_are_502s_and_error_events_and_the_chat_stays_usable() {
    let cut = TEXT_STREAM
        .split("\n\n")
        .take(3)
        .collect::<Vec<_>>()
        .join("\n\n")
        + "\n\n";
    let upstream = ScriptedUpstream::start([
        (ROUTE, Reply::text(401, "application/json", ERROR_401)),
        // Cut after its text went out (a pause, so the text is flushed first): a stream cut
        // before anything arrived would be tried again (`retries.rs`).
        (
            ROUTE,
            Reply::sse("")
                .paced(vec![cut.into_bytes()], std::time::Duration::from_millis(50))
                .cut(),
        ),
        (ROUTE, Reply::sse(TEXT_STREAM)),
    ])
    .await;
    let server = server_for(&upstream, &[]).await;
    let chat_id = server.new_chat(json!({"enabledTools": []})).await;
    let history = json!([{"role": "user", "content": "hi"}]);

    let (status, error) = server
        .post(
            "/v1/chat-completions",
            body(Some(&chat_id), history.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("provider_c: upstream answered 401: "),
        "{message}"
    );
    assert!(message.contains("Incorrect API key"), "{message}");
    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(
        chat["chat"]["initiatedProvider"], "provider_c",
        "set on a failed first call too"
    );

    let events = server
        .stream(body(Some(&chat_id), history.clone()))
        .await
        .rest()
        .await;
    let last = events.last().unwrap();
    assert_eq!(last.name, "error");
    assert_eq!(last.data["type"], "error");
    assert!(
        last.data["message"]
            .as_str()
            .unwrap()
            .starts_with("provider_c: "),
        "{last:?}"
    );
    let call = call_row(&server, events[0].data["callId"].as_str().unwrap()).await;
    assert_eq!(call.error.as_deref(), last.data["message"].as_str());

    // Still usable; the user row was stored once, by the first call.
    let events = server
        .stream(body(Some(&chat_id), history))
        .await
        .rest()
        .await;
    assert_eq!(events.last().unwrap().name, "done");
    assert_eq!(
        transcript(&server, &chat_id).await,
        pairs(&[("user", "hi"), ("assistant", TEXT_STREAM_TEXT)])
    );
    let errors: Vec<(Option<String>,)> = server
        .raw_db()
        .await
        .rows("SELECT error FROM llm_calls ORDER BY created_at", &[])
        .await;
    let errors: Vec<Option<String>> = errors.into_iter().map(|(e,)| e).collect();
    assert_eq!(errors.len(), 3);
    assert!(errors[0].as_deref().unwrap().contains("401"));
    assert!(errors[2].is_none());
}

#[tokio::test]
async fn bad_input_is_a_400_naming_the_field() {
    let upstream = ScriptedUpstream::start([]).await;
    let server = server_for(&upstream, &[]).await;
    let before = server.row_counts().await;
    for (body, field) in [
        (
            json!({"provider": "provider_c", "model": " ", "messages": [{"role": "user", "content": "x"}]}),
            "model",
        ),
        (
            json!({"provider": "provider_c", "model": "m", "messages": []}),
            "messages",
        ),
        (
            json!({"provider": "nope", "model": "m", "messages": []}),
            "provider",
        ),
        (
            json!({"provider": "provider_c", "model": "m", "temperature": 3, "messages": [{"role": "user", "content": "x"}]}),
            "temperature",
        ),
        (
            json!({"provider": "provider_c", "model": "m", "maxTokens": 0, "messages": [{"role": "user", "content": "x"}]}),
            "maxTokens",
        ),
        (
            json!({"provider": "provider_agent", "model": "m", "messages": [{"role": "user", "content": "x"}]}),
            "AGENT_API_KEY",
        ),
        (
            json!({"provider": "provider_c", "model": "m", "messages": [{"role": "tool", "content": "x",
            "attachments": [{"kind": "text", "text": "t"}]}]}),
            "messages[0].attachments",
        ),
    ] {
        for path in ["/v1/chat-completions", "/v1/chat-completions/stream"] {
            let (status, error) = server.post(path, body.clone()).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {body}: {error}");
            assert!(
                error["message"].as_str().unwrap().contains(field),
                "{field}: {error}"
            );
        }
    }
    let (status, error) = server
        .post(
            "/v1/chat-completions",
            body(Some("missing"), json!([{"role": "user", "content": "x"}])),
        )
        .await;
    assert_eq!(
        (status, error),
        (StatusCode::NOT_FOUND, json!({"message": "chat not found"}))
    );
    let (status, _) = server
        .post("/v1/chats/missing/stream/attach", json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(server.row_counts().await, before);
}

#[tokio::test]
async fn a_malformed_stream_and_a_plugin_over_its_time_limit_fail_the_call_not_the_server() {
    let gate = Gate::new();
    let upstream = ScriptedUpstream::start([
        (ROUTE, Reply::sse("data: {\"choices\": [oops\n\n")),
        // Never answered: the plugin's limit ends the call.
        (ROUTE, Reply::sse(TEXT_STREAM).after(&gate)),
        (ROUTE, Reply::text(200, "application/json", TEXT_BODY)),
    ])
    .await;
    // The bundled provider_c, replaced through PLUGINS_DIR by the same component with a 500 ms
    // limit: an operator's override by id.
    let plugins = tempfile::tempdir().unwrap();
    let (manifest, wasm, _) = chatd::plugins::loading::embedded::bundled()
        .iter()
        .find(|(manifest, _, _)| manifest.contains("\"provider_c\""))
        .unwrap();
    let mut manifest: Value = serde_json::from_str(manifest).unwrap();
    manifest["limits"]["timeoutMs"] = json!(500);
    std::fs::write(plugins.path().join("provider_c.json"), manifest.to_string()).unwrap();
    std::fs::write(plugins.path().join("provider_c.wasm"), wasm).unwrap();
    let url = upstream.url();
    let server = TestServer::start_with(Options {
        plugins_dir: Some(plugins.path().to_path_buf()),
        args: ["--provider-c-base-url", &url, "--provider-c-api-key", "k"]
            .map(String::from)
            .to_vec(),
        ..Options::default()
    })
    .await;
    let chat_id = server.new_chat(json!({"enabledTools": []})).await;
    let history = json!([{"role": "user", "content": "hi"}]);
    let events = server
        .stream(body(Some(&chat_id), history.clone()))
        .await
        .rest()
        .await;
    let message = events.last().unwrap().data["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.starts_with("provider_c: malformed upstream response"),
        "{message}"
    );

    let (status, error) = server
        .post(
            "/v1/chat-completions",
            body(Some(&chat_id), history.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("provider_c: no answer within"),
        "{message}"
    );

    let (status, reply) = server
        .post("/v1/chat-completions", body(Some(&chat_id), history))
        .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(
        reply["message"]["content"],
        "Hello! How can I assist you today?"
    );
    gate.open();
}

#[tokio::test]
async fn a_tool_call_when_no_tools_were_offered_ends_the_turn_without_tool_events() {
    let upstream = ScriptedUpstream::start([(ROUTE, Reply::sse(TOOL_STREAM))]).await;
    let server = server_for(&upstream, &[]).await;
    let events = server
        .stream(
            json!({"provider": "provider_c", "model": "m", "enabledTools": [],
                       "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await
        .rest()
        .await;
    assert_eq!(names(&events), ["meta", "done"]);
    assert_eq!(events[1].data["text"], "");
    assert_eq!(completion_bodies(&upstream).len(), 1);
    // The chat this stream created keeps the request's (empty) tool choice.
    let chat_id = events[0].data["chatId"].as_str().unwrap();
    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(chat["chat"]["enabledTools"], json!([]));
}
