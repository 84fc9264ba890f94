//! Metrics, traces and JSON logs of the real chatd binary. Each test starts its own process: the
//! metrics registry and the trace exporter are process-wide, so counts read here are this
//! test's only. Upstreams are scripted on loopback from the recorded wire formats.

#[path = "../common/binary.rs"]
mod binary;
#[path = "../common/mcp.rs"]
mod mcp;
mod mcp_logs;
mod metrics;
mod openai;
mod otlp;
#[path = "../common/process.rs"]
mod process;
mod scrape;
mod traces;
#[path = "../common/upstream.rs"]
#[allow(dead_code)] // the browser tests use the rest
mod upstream;
#[path = "../common/wires.rs"]
#[allow(dead_code)] // the other wires are the API suite's
mod wires;

use binary::Chatd;
use serde_json::Value;

/// The events of a chat stream, `(name, data)`, through its end.
pub async fn stream(chatd: &Chatd, body: Value, headers: &[(&str, &str)]) -> Vec<(String, Value)> {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    let mut request = reqwest::Client::new()
        .post(format!("{}/v1/chat-completions/stream", chatd.base))
        .json(&body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("the stream answers");
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    response
        .bytes_stream()
        .eventsource()
        .map(|event| {
            let event = event.expect("a well-formed event stream");
            (event.event, serde_json::from_str(&event.data).unwrap())
        })
        .collect()
        .await
}

/// A new chat made of `body`; its id.
pub async fn new_chat(chatd: &Chatd, body: Value) -> String {
    let chat = chatd
        .api(reqwest::Method::POST, "/v1/chats", Some(body), None)
        .await;
    chat["chat"]["id"].as_str().expect("a chat id").to_string()
}

/// A request's status and body text.
pub async fn call(
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
) -> (reqwest::StatusCode, String) {
    let mut request = reqwest::Client::new().request(method, url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("the server answers");
    (response.status(), response.text().await.unwrap())
}
