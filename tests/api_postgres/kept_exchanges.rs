//! The server tools' rounds kept for an `/openai/v1` client's next request
//! (`store/exchanges.rs`) are shared by every instance on PostgreSQL: the request that ended with
//! the client's call goes to A, the follow-up to B, and B's upstream request holds A's search.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::instances::deployment;

const CHAT_CALLS: &str =
    include_str!("../fixtures/upstream/openai_chat/06_nonstream_parallel_tool_calls.response.json");
const CHAT_TEXT: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");

fn calling(id: &str, name: &str, arguments: &str) -> Reply {
    let mut answer: Value = serde_json::from_str(CHAT_CALLS).unwrap();
    answer["choices"][0]["message"]["tool_calls"] = json!([{"id": id, "type": "function",
        "function": {"name": name, "arguments": arguments}}]);
    Reply::json(200, answer)
}

#[tokio::test]
async fn the_follow_up_on_another_instance_gets_the_kept_round() {
    let upstream = ScriptedUpstream::start([
        (
            "POST /chat/completions",
            calling("call_0", "web_search", r#"{"query":"UK"}"#),
        ),
        ("POST /search", crate::live_replies::exa()),
        (
            "POST /chat/completions",
            calling("call_0", "get_weather", r#"{"city":"London"}"#),
        ),
        (
            "POST /chat/completions",
            Reply::text(200, "application/json", CHAT_TEXT),
        ),
    ])
    .await;
    let (_dir, a, b, mut db) = deployment(&upstream).await;
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {}}}}]);
    let user = json!({"role": "user", "content": "Capital of the UK, and its weather?"});
    let first = a
        .post(
            "/openai/v1/chat/completions",
            Some(
                json!({"model": "provider_c/grok-4", "messages": [user], "tools": tools,
                "chatd_tools": ["web_search"]}),
            ),
            &[],
        )
        .await;
    assert_eq!(first.status(), StatusCode::OK);
    let first: Value = first.json().await.unwrap();
    let calls = first["choices"][0]["message"]["tool_calls"].clone();
    let id = calls[0]["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("call_chatd_"), "{first}");
    let kept: Vec<(i64,)> = db
        .rows(
            "SELECT COUNT(*) FROM kept_exchanges WHERE call_id = $1",
            &[&id],
        )
        .await;
    assert_eq!(kept[0].0, 1);

    let messages = json!([user, {"role": "assistant", "content": null, "tool_calls": calls},
        {"role": "tool", "tool_call_id": id, "content": "Sunny"}]);
    let answer = b
        .post(
            "/openai/v1/chat/completions",
            Some(
                json!({"model": "provider_c/grok-4", "messages": messages, "tools": tools,
                "chatd_tools": ["web_search"]}),
            ),
            &[],
        )
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
    let sent: Value = serde_json::from_slice(
        &upstream
            .requests()
            .into_iter()
            .rfind(|r| r.path == "/chat/completions")
            .unwrap()
            .body,
    )
    .unwrap();
    let text = sent["messages"].to_string();
    assert!(
        text.contains("About A.") && text.contains("web_search"),
        "{text}"
    );
}
