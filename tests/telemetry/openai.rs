//! `/openai/v1` is counted as every route is: its requests by route and status, and the
//! provider's turns and tokens, streamed or not.

use chatd::plugins::testing::Reply;
use reqwest::StatusCode;
use serde_json::json;

use crate::binary::Chatd;
use crate::scrape::Scrape;
use crate::upstream::{COMPLETIONS, Upstreams, text_reply};

/// A listed model of the recorded model list.
const MODEL: &str = "gpt-4";

#[tokio::test]
async fn openai_completions_are_counted_like_every_run() {
    let upstreams = Upstreams::start([
        (
            COMPLETIONS,
            Reply::text(
                200,
                "application/json",
                include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json"),
            ),
        ),
        (COMPLETIONS, text_reply(&["Two."])),
    ])
    .await;
    let chatd = Chatd::start(upstreams.env());
    chatd.get("/v1/models").await;
    let client = reqwest::Client::new();
    for stream in [false, true] {
        let response = client
            .post(format!("{}/openai/v1/chat/completions", chatd.base))
            .json(
                &json!({"model": format!("provider_c/{MODEL}"), "stream": stream,
                "messages": [{"role": "user", "content": "Count."}]}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.text().await.unwrap();
        assert!(
            body.contains(if stream { "Two." } else { "Hello!" }),
            "{body}"
        );
    }
    let m = Scrape::of(&chatd.base).await;
    assert_eq!(
        m.value(
            "chatd_http_requests",
            &[("route", "/openai/v1/chat/completions"), ("status", "200")]
        ),
        2.0
    );
    let listed = [("provider", "provider_c"), ("model", MODEL)];
    assert_eq!(m.value("chatd_provider_turns", &listed), 2.0);
    let output = [
        ("provider", "provider_c"),
        ("model", MODEL),
        ("direction", "output"),
    ];
    assert!(m.value("chatd_provider_tokens", &output) > 0.0);
}
