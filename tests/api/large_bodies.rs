//! What the contract allows goes through: a request of about 30 MB (four 5.25 MiB PNG images,
//! under the 32 MiB body limit) through each of the four providers as a persisted stream, a
//! `persist: false` stream and a persisted non-streaming completion, with every image arriving
//! upstream byte for byte (hashed). The providers' sandboxes
//! are capped at 64 MiB: the images go to them by reference (`plugins/worlds/provider/references.rs`).

use base64::Engine as _;
use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::completions::{TEXT_STREAM, server_for};
use crate::support::data_url;

const IMAGE_BYTES: usize = 5 * 1024 * 1024 + 256 * 1024;
const RESPONSES_STREAM: &str =
    include_str!("../fixtures/upstream/openai_responses/02_stream_text.response.sse");
const RESPONSES_BODY: &str =
    include_str!("../fixtures/upstream/openai_responses/01_nonstream_text.response.json");
const MESSAGES_BODY: &str =
    include_str!("../fixtures/upstream/anthropic_messages/01_nonstream_text.response.json");
const MESSAGES_STREAM: &str =
    include_str!("../fixtures/upstream/anthropic_messages/04_stream_text.response.sse");
const CHAT_BODY: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");

/// A PNG of `len` bytes whose content after the signature is pseudo-random, seeded by `seed`, so
/// that each image hashes differently and a byte out of place shows.
fn png(len: usize, seed: u64) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while bytes.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// Every image in an upstream request body, decoded, hashed, in order: whatever the wire
/// format, an image is a long base64 string, bare or in a data URL.
fn images_sent(body: &[u8]) -> Vec<String> {
    fn walk(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::String(s) if s.len() > 1024 * 1024 => {
                let data = s.split_once(";base64,").map_or(s.as_str(), |(_, d)| d);
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .expect("an image is base64");
                found.push(sha256(&bytes));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            Value::Object(map) => map.values().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let body: Value = serde_json::from_slice(body).expect("the upstream body is JSON");
    let mut found = Vec::new();
    walk(&body, &mut found);
    found
}

#[tokio::test]
async fn a_30_mb_request_of_images_reaches_every_provider_intact() {
    let images: Vec<Vec<u8>> = (0..4).map(|i| png(IMAGE_BYTES, i + 1)).collect();
    let hashes: Vec<String> = images.iter().map(|i| sha256(i)).collect();
    let attachments: Vec<Value> = images
        .iter()
        .map(|bytes| json!({"kind": "image", "dataUrl": data_url("image/png", bytes)}))
        .collect();
    let messages =
        json!([{"role": "user", "content": "What is in these?", "attachments": attachments}]);
    // Each provider: a persisted stream, a `persist: false` stream, a persisted non-streaming
    // completion, in that order (provider_c and provider_agent share the chat completions route).
    let stream = |body: &str| Reply::sse(body);
    let whole = |body: &str| Reply::json(200, serde_json::from_str(body).unwrap());
    let mut routes = Vec::new();
    for (route, streamed, body) in [
        ("POST /responses", RESPONSES_STREAM, RESPONSES_BODY),
        ("POST /messages", MESSAGES_STREAM, MESSAGES_BODY),
        ("POST /chat/completions", TEXT_STREAM, CHAT_BODY),
        ("POST /chat/completions", TEXT_STREAM, CHAT_BODY),
    ] {
        routes.push((route, stream(streamed)));
        routes.push((route, stream(streamed)));
        routes.push((route, whole(body)));
    }
    let upstream = ScriptedUpstream::start(routes).await;
    let server = crate::refusals::every_provider(&upstream).await;
    let mut cases = Vec::new();
    for (provider, model) in [
        ("provider_a", "gpt-4o"),
        ("provider_b", "claude-sonnet-4-5"),
        ("provider_c", "grok-4"),
        ("provider_agent", "hermes"),
    ] {
        cases.push((provider, model, "/v1/chat-completions/stream", true));
        cases.push((provider, model, "/v1/chat-completions/stream", false));
        cases.push((provider, model, "/v1/chat-completions", true));
    }
    let client = reqwest::Client::new();
    for (i, (provider, model, path, persist)) in cases.into_iter().enumerate() {
        // A temperature: the provider also builds the first turn's request once before the run
        // (a check for parameters its model does not take).
        let mut body = json!({"provider": provider, "model": model, "messages": messages,
            "temperature": 0.5});
        if path.ends_with("/stream") {
            body["persist"] = json!(persist);
        } else {
            // A persisted non-streaming completion: of a chat.
            body["chatId"] = json!(server.new_chat(json!({})).await);
        }
        let body = serde_json::to_vec(&body).unwrap();
        assert!(
            body.len() > 29_000_000 && body.len() < 32 * 1024 * 1024,
            "{}",
            body.len()
        );
        let res = client
            .post(format!("{}{path}", server.base))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{provider} {path}");
        let text = res.text().await.unwrap();
        if path.ends_with("/stream") {
            assert!(
                text.contains("event: done"),
                "{provider} {path}: {}",
                &text[text.len().saturating_sub(500)..]
            );
        } else {
            let json: Value = serde_json::from_str(&text).unwrap();
            assert!(json["message"]["content"].is_string(), "{json}");
        }
        let sent = upstream
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .nth(i)
            .expect("the upstream got the request");
        assert_eq!(
            images_sent(&sent.body),
            hashes,
            "{provider} {path}: the images, intact"
        );
    }
}

#[tokio::test]
async fn a_29_mb_text_reaches_the_provider_whole_and_escaped() {
    // Quotes, back-slashes, new lines, control and non-ASCII characters: what JSON escapes
    // (24 MB of it is 29 MB as JSON).
    let piece = "A \"quoted\" line,\\ back-slashed\tand é — 😀\u{1}\n";
    let text = piece.repeat(24_000_000 / piece.len());
    let upstream = ScriptedUpstream::start([("POST /messages", Reply::sse(MESSAGES_STREAM))]).await;
    let url = upstream.url();
    let server = server_for(
        &upstream,
        &[
            "--provider-b-base-url",
            &url,
            "--provider-b-api-key",
            "b-key",
        ],
    )
    .await;
    let body = json!({"provider": "provider_b", "model": "claude-sonnet-4-5",
        "messages": [{"role": "user", "content": text}]});
    let events = server.stream(body).await.rest().await;
    assert_eq!(events.last().unwrap().name, "done", "{:?}", events.last());
    let sent = upstream
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    let sent: Value = serde_json::from_slice(&sent.body).unwrap();
    assert!(
        sent["messages"][0]["content"][0]["text"] == text,
        "the text, whole"
    );
}

#[tokio::test]
async fn a_30_mb_history_of_short_messages_reaches_the_provider_whole() {
    // 2,000 messages of 15,000 characters: each under the size that goes by reference alone,
    // together far past what a 64 MiB sandbox could hold twice.
    let upstream =
        ScriptedUpstream::start([("POST /chat/completions", Reply::sse(TEXT_STREAM))]).await;
    let server = server_for(&upstream, &[]).await;
    let messages: Vec<Value> = (0..2_000)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("{i:04} {}", "x".repeat(15_000))})
        })
        .collect();
    let body = json!({"provider": "provider_c", "model": "grok-4", "persist": false,
        "messages": messages});
    let events = server.stream(body).await.rest().await;
    assert_eq!(events.last().unwrap().name, "done", "{:?}", events.last());
    let sent = upstream
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    let sent: Value = serde_json::from_slice(&sent.body).unwrap();
    // After the tool loop's instruction (every tool is on for a request that names none).
    let got: Vec<&Value> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .collect();
    assert_eq!(got.len(), 2_000);
    for (i, message) in got.iter().enumerate() {
        let text = message["content"]
            .as_str()
            .or_else(|| message["content"][0]["text"].as_str())
            .unwrap_or_else(|| panic!("message {i}: {message}"));
        assert_eq!(
            text,
            format!("{i:04} {}", "x".repeat(15_000)),
            "message {i}"
        );
    }
}
