//! `stream: true` on `/openai/v1/chat/completions` (`http/openai/stream.rs`), with the official
//! OpenAI Python SDK reading the chunks (`tests/openai/sdk.py stream`) and the raw bytes where
//! the wire itself is the point: the role first, the text, `finish_reason` on the last choice
//! chunk, the usage chunk with empty `choices` when asked, `data: [DONE]`; a failure before the
//! first text as an HTTP status (a 429 after chatd's tries with `Retry-After`), one after it as
//! an error chunk the SDK raises; and a client that leaves stopping the run: its upstream closed
//! within a second, a running tool ended, the call recorded.

use std::time::{Duration, Instant};

use chatd::plugins::testing::{Gate, Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::call_row;
use crate::live_replies::{A, B, C, Wire, after_first_text, call, paced, server, text};
use crate::openai::{TOKEN, all_providers, hello};
use crate::openai_sdk::{python, python_sdk};
use crate::support::{Options, TestServer, write_config};

/// A streamed completion's raw response, sent with the token.
async fn post_stream(server: &TestServer, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}/openai/v1/chat/completions", server.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the server answers")
}

/// The `data:` payloads of an SSE body, comments left out.
fn data_lines(body: &str) -> Vec<&str> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .collect()
}

fn content(chunks: &[Value]) -> String {
    chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect()
}

/// Each provider's stream through the SDK, with the usage chunk asked for: the role first, the
/// text as the upstream sent it, one `finish_reason`, then the usage alone; one id and object
/// throughout.
#[tokio::test]
async fn the_python_sdk_streams_every_provider_with_the_usage_last() {
    let Some(python) = python() else { return };
    let items = [text(&["The answer ", "is ", "42."])];
    let upstream = ScriptedUpstream::start([
        (A.route, paced(A, &items)),
        (B.route, paced(B, &items)),
        (C.route, paced(C, &items)),
        ("POST /mine/chat/completions", paced(C, &items)),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let usage = json!({"stream_options": {"include_usage": true}}).to_string();
    for model in [
        "provider_a/gpt-4o-mini",
        "provider_b/claude-haiku-4-5",
        "provider_c/grok-4",
        "mine/meta-llama/llama-3.3-70b-instruct",
    ] {
        let out = python_sdk(&python, &base, TOKEN, &["stream", model, &hello(), &usage]).await;
        let chunks = out["chunks"].as_array().unwrap_or_else(|| panic!("{out}"));
        assert!(out.get("raised").is_none(), "{model}: {out}");
        assert_eq!(
            chunks[0]["choices"][0]["delta"]["role"], "assistant",
            "{model}: {out}"
        );
        assert_eq!(content(chunks), "The answer is 42.", "{model}");
        let (last, choices) = chunks.split_last().unwrap();
        assert_eq!(last["choices"], json!([]), "{model}: {last}");
        assert!(
            last["usage"]["total_tokens"].as_u64().unwrap() > 0,
            "{last}"
        );
        let finishes: Vec<&Value> = choices
            .iter()
            .map(|c| &c["choices"][0]["finish_reason"])
            .collect();
        assert_eq!(finishes.last().unwrap().as_str(), Some("stop"), "{model}");
        assert!(finishes[..finishes.len() - 1].iter().all(|f| f.is_null()));
        assert!(choices.iter().all(|c| c["usage"].is_null()), "{model}");
        let id = &chunks[0]["id"];
        assert!(id.as_str().unwrap().starts_with("chatcmpl-"));
        for chunk in chunks {
            assert_eq!(&chunk["id"], id);
            assert_eq!(chunk["object"], "chat.completion.chunk");
            assert_eq!(chunk["model"], model);
        }
        // Recorded as a call, with the usage the upstream counted; no chat.
        let call_id = id.as_str().unwrap().trim_start_matches("chatcmpl-");
        let row = call_row(&server, call_id).await;
        assert_eq!(row.chat_id, None);
        assert!(row.usage.unwrap().total_tokens > 0, "{model}");
    }
    let (_, chats) = server.get("/v1/chats").await;
    assert_eq!(chats["chats"], json!([]), "{chats}");
}

/// On the wire: `data:` lines only, no usage field unless asked, `[DONE]` last.
#[tokio::test]
async fn the_raw_stream_ends_with_done_and_has_no_usage_unless_asked() {
    let upstream =
        ScriptedUpstream::start([(C.route, paced(C, &[text(&["Hi ", "there."])]))]).await;
    let (server, _files) = all_providers(&upstream).await;
    let response = post_stream(
        &server,
        json!({"model": "provider_c/grok-4", "stream": true,
            "messages": [{"role": "user", "content": "Hi"}]}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream; charset=utf-8"
    );
    let body = response.text().await.unwrap();
    let lines = data_lines(&body);
    assert_eq!(lines.last(), Some(&"[DONE]"), "{body}");
    let chunks: Vec<Value> = lines[..lines.len() - 1]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(content(&chunks), "Hi there.");
    assert!(chunks.iter().all(|c| c.get("usage").is_none()), "{body}");
    assert!(
        chunks
            .iter()
            .all(|c| c["choices"].as_array().unwrap().len() == 1)
    );

    // stream_options without stream is refused, naming it.
    let response = post_stream(
        &server,
        json!({"model": "provider_c/grok-4", "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "Hi"}]}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["param"], "stream_options", "{error}");
    let response = post_stream(
        &server,
        json!({"model": "provider_c/grok-4", "stream": true,
            "stream_options": {"include_obfuscation": true},
            "messages": [{"role": "user", "content": "Hi"}]}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let error: Value = response.json().await.unwrap();
    assert_eq!(
        error["error"]["param"], "stream_options.include_obfuscation",
        "{error}"
    );
}

/// The role goes out with the turn's first content, as OpenAI's does: `"content": ""` before a
/// text, `"content": null` beside the first call of a turn that opens with a client's calls
/// (the Vercel AI SDK opens a text part for an empty string).
#[tokio::test]
async fn the_role_goes_out_with_the_first_text_or_the_first_call() {
    let args = r#"{"city":"Paris"}"#;
    let upstream = ScriptedUpstream::start([
        (C.route, paced(C, &[call("c1", "get_weather", args)])),
        (C.route, paced(C, &[text(&["Sunny."])])),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
    for expected in ["call", "text"] {
        let response = post_stream(
            &server,
            json!({"model": "provider_c/grok-4", "stream": true, "tools": tools,
                "messages": [{"role": "user", "content": "Weather?"}]}),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.text().await.unwrap();
        assert!(body.starts_with(": chatcmpl-"), "{body}");
        let first: Value = serde_json::from_str(data_lines(&body)[0]).unwrap();
        let delta = &first["choices"][0]["delta"];
        assert_eq!(delta["role"], "assistant", "{body}");
        match expected {
            "call" => {
                assert_eq!(delta["content"], Value::Null, "{body}");
                assert!(
                    delta.get("content").is_some(),
                    "content: null, not absent: {body}"
                );
                assert_eq!(delta["tool_calls"][0]["function"]["name"], "get_weather");
                let roles = body.matches("\"role\"").count();
                assert_eq!(roles, 1, "the role once: {body}");
            }
            _ => {
                assert_eq!(delta["content"], "", "{body}");
                assert!(delta.get("tool_calls").is_none(), "{body}");
            }
        }
    }
}

/// A server of provider_c on `upstream` with `[retry]` as given.
async fn retrying(upstream: &ScriptedUpstream, retry: &str) -> TestServer {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let config = write_config(dir.path(), retry);
    server(
        C,
        upstream,
        Options {
            token: Some(TOKEN.into()),
            config: Some(config),
            dir: Some(dir),
            ..Options::default()
        },
    )
    .await
}

/// An upstream's 429 that chatd's tries did not get past is OpenAI's 429, streamed or not, with
/// the upstream's wait as `Retry-After`, which the SDK raises as its `RateLimitError`. A stream
/// cut after its first text ends with an error chunk, which the SDK raises, and no `[DONE]`.
#[tokio::test]
async fn failures_are_statuses_before_the_first_text_and_error_chunks_after_it() {
    let Some(python) = python() else { return };
    let limited = Reply::json(
        429,
        json!({"error": {"message": "slow down", "type": "rate_limit"}}),
    )
    .header("retry-after", "3600");
    let upstream = ScriptedUpstream::start([(C.route, limited)]).await;
    let server = retrying(&upstream, "[retry]\nmax_wait_ms = 1000\n").await;
    for stream in [true, false] {
        let response = post_stream(
            &server,
            json!({"model": "provider_c/grok-4", "stream": stream,
                "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .await;
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS, "{stream}");
        assert_eq!(response.headers()["retry-after"], "3600");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["type"], "rate_limit_error", "{error}");
        assert_eq!(error["error"]["code"], "rate_limit_exceeded");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("provider_c"),
            "{error}"
        );
    }
    let base = format!("{}/openai/v1", server.base);
    let out = python_sdk(
        &python,
        &base,
        TOKEN,
        &["stream", "provider_c/grok-4", &hello()],
    )
    .await;
    assert_eq!(out["raised"], "RateLimitError", "{out}");
    assert_eq!(out["status"], 429);

    let items = [text(&["Half ", "of it"])];
    let mut pieces = (C.stream)(&items);
    pieces.pop(); // no finish, no [DONE]: the connection is cut mid-answer
    let cut = Reply::sse("").paced(pieces, Duration::from_millis(2)).cut();
    let upstream = ScriptedUpstream::start([(C.route, cut.clone())]).await;
    let server = retrying(&upstream, "").await;
    let base = format!("{}/openai/v1", server.base);
    let out = python_sdk(
        &python,
        &base,
        TOKEN,
        &["stream", "provider_c/grok-4", &hello()],
    )
    .await;
    assert_eq!(out["raised"], "APIError", "{out}");
    assert!(
        out["message"].as_str().unwrap().contains("provider_c"),
        "{out}"
    );
    assert_eq!(content(out["chunks"].as_array().unwrap()), "Half of it");
    let upstream = ScriptedUpstream::start([(C.route, cut)]).await;
    let server = retrying(&upstream, "").await;
    let body = post_stream(
        &server,
        json!({"model": "provider_c/grok-4", "stream": true,
            "messages": [{"role": "user", "content": "Hi"}]}),
    )
    .await
    .text()
    .await
    .unwrap();
    let last: Value = serde_json::from_str(data_lines(&body).last().unwrap()).unwrap();
    assert_eq!(last["error"]["type"], "api_error", "{body}");
    assert!(!body.contains("[DONE]"), "{body}");
}

/// Reads `response` until `seen` holds for its body so far.
async fn read_until(response: &mut reqwest::Response, seen: impl Fn(&str) -> bool) -> String {
    let mut body = String::new();
    while !seen(&body) {
        let chunk = response.chunk().await.unwrap().expect("more of the stream");
        body.push_str(&String::from_utf8_lossy(&chunk));
    }
    body
}

/// Waits until the call has been recorded as ended; its record.
async fn call_ended(server: &TestServer, call_id: &str) -> chatd::store::CallRecord {
    loop {
        let row = call_row(server, call_id).await;
        if row.completed_at.is_some() || row.error.is_some() {
            return row;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn call_id(body: &str) -> String {
    let first: Value = serde_json::from_str(data_lines(body)[0]).unwrap();
    let id = first["id"].as_str().unwrap();
    id.trim_start_matches("chatcmpl-").to_string()
}

/// A client that leaves after the first text closes the upstream request within a second; the
/// call is recorded.
#[tokio::test]
async fn a_client_that_leaves_closes_the_upstream_within_a_second() {
    let wire: Wire = C;
    let items = [text(&["One ", "two ", "three"])];
    let gate = Gate::new();
    let reply = paced(wire, &items).hold_before(after_first_text(wire, &items), &gate);
    let upstream = ScriptedUpstream::start([(wire.route, reply)]).await;
    let (server, _files) = all_providers(&upstream).await;
    let mut response = post_stream(
        &server,
        json!({"model": "provider_c/grok-4", "stream": true,
            "messages": [{"role": "user", "content": "count"}]}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = read_until(&mut response, |b| b.contains("One ")).await;
    let left = Instant::now();
    drop(response);
    tokio::time::timeout(Duration::from_secs(1), upstream.dropped(1))
        .await
        .expect("the upstream request is closed within a second of the client leaving");
    println!("upstream closed {:?} after the client left", left.elapsed());
    let row = tokio::time::timeout(
        Duration::from_secs(10),
        call_ended(&server, &call_id(&body)),
    )
    .await
    .expect("the call is recorded");
    assert_eq!(row.error, None, "{row:?}");
    gate.open();
}

/// A client that leaves while chatd's `python` runs an endless loop for it stops the loop: the
/// run ends, and its call is recorded, long before the interpreter's 30 s limit; the model is
/// not asked again.
#[tokio::test]
async fn a_client_that_leaves_stops_the_server_tools_running_for_it() {
    let args = json!({"code": "while True:\n    pass"}).to_string();
    let looping = paced(C, &[call("p1", "python", &args)]);
    let upstream = ScriptedUpstream::start([(C.route, looping)]).await;
    let (server, _files) = all_providers(&upstream).await;
    let mut response = post_stream(
        &server,
        json!({"model": "provider_c/grok-4", "stream": true, "chatd_tools": ["python"],
            "messages": [{"role": "user", "content": "loop"}]}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    // The head goes out while the loop runs (a comment naming the completion: the turn's first
    // content is not known yet); the client reads it and leaves.
    let body = read_until(&mut response, |b| b.contains("\n\n")).await;
    let left = Instant::now();
    drop(response);
    let id = body
        .strip_prefix(": chatcmpl-")
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_else(|| panic!("{body}"))
        .to_string();
    let row = tokio::time::timeout(Duration::from_secs(10), call_ended(&server, &id))
        .await
        .expect("the run stopped with its client, not at the loop's 30 s limit");
    println!("the run ended {:?} after the client left", left.elapsed());
    assert_eq!(row.error, None, "{row:?}");
    let turns = upstream
        .requests()
        .iter()
        .filter(|r| r.path == "/chat/completions")
        .count();
    assert_eq!(turns, 1, "the model was not asked again");
}

/// When the operator's fallback answers a stream, its last chunk names the model that answered,
/// and the call records both the one asked and the one that answered.
#[tokio::test]
async fn a_fallback_that_answers_is_named_in_the_last_chunk_and_the_call() {
    let refused = Reply::json(
        529,
        json!({"error": {"message": "overloaded", "type": "overloaded"}}),
    )
    .header("retry-after-ms", "5");
    let upstream = ScriptedUpstream::start([
        (C.route, refused),
        (A.route, paced(A, &[text(&["From ", "the fallback."])])),
    ])
    .await;
    let url = upstream.url();
    let config = "[retry.providers.provider_c]\nattempts = 1\n\
                  fallback = { provider = \"provider_a\", model = \"gpt-4o-mini\" }\n";
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let server = server(
        C,
        &upstream,
        Options {
            token: Some(TOKEN.into()),
            config: Some(write_config(dir.path(), config)),
            dir: Some(dir),
            args: [
                "--provider-a-base-url",
                &url,
                "--provider-a-api-key",
                "a-key",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            ..Options::default()
        },
    )
    .await;
    let body = post_stream(
        &server,
        json!({"model": "provider_c/grok-4", "stream": true,
            "messages": [{"role": "user", "content": "Hi"}]}),
    )
    .await
    .text()
    .await
    .unwrap();
    let lines = data_lines(&body);
    let chunks: Vec<Value> = lines[..lines.len() - 1]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(content(&chunks), "From the fallback.", "{body}");
    assert_eq!(chunks.last().unwrap()["model"], "provider_a/gpt-4o-mini");
    let row = call_row(&server, &call_id(&body)).await;
    assert_eq!(
        (row.provider.as_str(), row.model.as_str()),
        ("provider_c", "grok-4")
    );
    assert_eq!(
        row.answered_by,
        Some(("provider_a".to_string(), "gpt-4o-mini".to_string()))
    );
}
