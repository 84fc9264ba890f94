//! chatd's tools and the client's in one `/openai/v1` request (`chat/kept.rs`,
//! `http/openai/kept.rs`, `store/exchanges.rs`): chatd's calls run on the server, a client's
//! call ends the turn with an id chatd made, and the client's next request carrying that id gets
//! the server tools' rounds back into the model's context, so the answer can use what they found.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::openai::{TOKEN, all_providers};
use crate::openai_sdk::{python, python_sdk};

const CHAT_CALLS: &str =
    include_str!("../fixtures/upstream/openai_chat/06_nonstream_parallel_tool_calls.response.json");
const CHAT_TEXT: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");

/// What the search engine (`live_replies::exa`) found: only the server saw it.
const FOUND: &str = "About A.";

pub(crate) fn tools() -> Value {
    json!([{"type": "function", "function": {
        "name": "Get-Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}
    }}])
}

/// The recorded answer with these calls: `(id, name, arguments)`.
pub(crate) fn calling(calls: &[(&str, &str, &str)]) -> Reply {
    let mut answer: Value = serde_json::from_str(CHAT_CALLS).unwrap();
    answer["choices"][0]["message"]["tool_calls"] = calls
        .iter()
        .map(|(id, name, arguments)| {
            json!({"id": id, "type": "function",
                "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    Reply::json(200, answer)
}

pub(crate) fn text() -> Reply {
    Reply::text(200, "application/json", CHAT_TEXT)
}

/// The follow-up: the user's question, the assistant's calls as the client got them, and a
/// result for each.
pub(crate) fn follow_up(calls: &Value) -> Value {
    let mut messages = vec![
        json!({"role": "user", "content": "Capital of the UK, and its weather?"}),
        json!({"role": "assistant", "content": null, "tool_calls": calls}),
    ];
    for call in calls.as_array().unwrap() {
        messages
            .push(json!({"role": "tool", "tool_call_id": call["id"], "content": "Sunny, 21 C"}));
    }
    Value::Array(messages)
}

/// The messages of each request that reached `path`, in order.
pub(crate) fn sent_messages(upstream: &ScriptedUpstream, path: &str) -> Vec<Value> {
    upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == path)
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap()["messages"].clone())
        .collect()
}

/// Through the official Python SDK: the model searches (on the server), then calls the client's
/// tool (numbered `call_0`, as some servers number every call); the client gets the call under
/// an id chatd made and its own name, never the search; its follow-up's upstream request holds
/// the search round before the client's call, so the answer can use it.
#[tokio::test]
async fn the_server_tools_round_comes_back_with_the_clients_next_request() {
    let Some(python) = python() else { return };
    let upstream = ScriptedUpstream::start([
        (
            "POST /chat/completions",
            calling(&[("call_0", "web_search", r#"{"query":"UK capital"}"#)]),
        ),
        ("POST /search", crate::live_replies::exa()),
        (
            "POST /chat/completions",
            calling(&[("call_0", "get_weather", r#"{"city":"London"}"#)]),
        ),
        ("POST /chat/completions", text()),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let base = format!("{}/openai/v1", server.base);
    let extra = json!({"tools": tools(), "chatd_tools": ["web_search"]}).to_string();
    let asked = json!([{"role": "user", "content": "Capital of the UK, and its weather?"}]);
    let first = python_sdk(
        &python,
        &base,
        TOKEN,
        &["chat", "provider_c/grok-4", &asked.to_string(), &extra],
    )
    .await;
    assert_eq!(first["finish_reason"], "tool_calls", "{first}");
    let calls = first["raw"]["choices"][0]["message"]["tool_calls"].clone();
    let call = &calls[0];
    assert_eq!(calls.as_array().unwrap().len(), 1, "{calls}");
    assert_eq!(call["function"]["name"], "Get-Weather");
    let id = call["id"].as_str().unwrap();
    assert!(id.starts_with("call_chatd_") && id.len() == 43, "{id}");
    assert!(
        !first.to_string().contains(FOUND),
        "the client never sees the search: {first}"
    );

    let answer = python_sdk(
        &python,
        &base,
        TOKEN,
        &[
            "chat",
            "provider_c/grok-4",
            &follow_up(&calls).to_string(),
            &extra,
        ],
    )
    .await;
    assert_eq!(answer["finish_reason"], "stop", "{answer}");
    let rounds = sent_messages(&upstream, "/chat/completions");
    assert_eq!(rounds.len(), 3);
    let last = rounds[2].as_array().unwrap();
    // The system prompt (chatd's tool instruction), the question, the search's round, the
    // client's call under chatd's id and its result.
    let roles: Vec<&str> = last.iter().map(|m| m["role"].as_str().unwrap()).collect();
    let from = roles.iter().position(|r| *r == "user").unwrap();
    assert_eq!(
        roles[from..],
        ["user", "assistant", "tool", "assistant", "tool"],
        "{last:?}"
    );
    assert_eq!(
        last[from + 1]["tool_calls"][0]["function"]["name"],
        "web_search"
    );
    // The kept call has an id of chatd's too (the upstream numbered both calls `call_0`), its
    // result the same.
    let kept_id = last[from + 1]["tool_calls"][0]["id"].as_str().unwrap();
    assert!(
        kept_id.starts_with("call_chatd_") && kept_id != id,
        "{kept_id}"
    );
    assert_eq!(last[from + 2]["tool_call_id"], kept_id);
    let found = last[from + 2]["content"].to_string();
    assert!(found.contains(FOUND), "the search result is back: {found}");
    assert_eq!(last[from + 3]["tool_calls"][0]["id"], id);
    assert_eq!(
        last[from + 3]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    assert_eq!(last[from + 4]["tool_call_id"], id);
}

/// In one turn the model calls chatd's tool and the client's: chatd's runs first, the client
/// gets only its own, and the follow-up has the server's call and result before it.
#[tokio::test]
async fn a_turn_calling_both_runs_chatds_call_and_returns_the_clients() {
    let upstream = ScriptedUpstream::start([
        (
            "POST /chat/completions",
            calling(&[
                ("call_a", "web_search", r#"{"query":"UK capital"}"#),
                ("call_b", "get_weather", r#"{"city":"London"}"#),
            ]),
        ),
        ("POST /search", crate::live_replies::exa()),
        ("POST /chat/completions", text()),
        ("POST /chat/completions", text()),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let post = |body: Value| {
        reqwest::Client::new()
            .post(format!("{}/openai/v1/chat/completions", server.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
    };
    let asked = json!([{"role": "user", "content": "Capital of the UK, and its weather?"}]);
    let body = json!({"model": "provider_c/grok-4", "messages": asked, "tools": tools(),
        "chatd_tools": ["web_search"]});
    let response = post(body).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let first: Value = response.json().await.unwrap();
    let calls = first["choices"][0]["message"]["tool_calls"].clone();
    assert_eq!(calls.as_array().unwrap().len(), 1, "{first}");
    assert_eq!(calls[0]["function"]["name"], "Get-Weather");
    let searched = upstream
        .requests()
        .iter()
        .filter(|r| r.path == "/search")
        .count();
    assert_eq!(searched, 1, "chatd's call ran");

    let body = json!({"model": "provider_c/grok-4", "messages": follow_up(&calls),
        "tools": tools(), "chatd_tools": ["web_search"]});
    let response = post(body).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let rounds = sent_messages(&upstream, "/chat/completions");
    let last = rounds[1].as_array().unwrap();
    let from = last.iter().position(|m| m["role"] == "user").unwrap();
    let kept_id = &last[from + 1]["tool_calls"][0]["id"];
    assert!(
        kept_id.as_str().unwrap().starts_with("call_chatd_"),
        "{kept_id}"
    );
    assert_eq!(&last[from + 2]["tool_call_id"], kept_id);
    assert!(last[from + 2]["content"].to_string().contains(FOUND));
    assert_eq!(last[from + 3]["tool_calls"][0]["id"], calls[0]["id"]);
    // An id chatd did not make finds nothing, and the request goes on with what it has.
    let mut stray = calls.clone();
    stray[0]["id"] = json!("call_chatd_00000000000000000000000000000000");
    let body = json!({"model": "provider_c/grok-4", "messages": follow_up(&stray),
        "tools": tools()});
    let response = post(body).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let rounds = sent_messages(&upstream, "/chat/completions");
    let roles: Vec<&str> = rounds[2]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .filter(|r| *r != "system")
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool"], "{}", rounds[2]);
}

/// At the tool-round limit a turn calling both does not run chatd's call; the client still
/// gets its own.
#[tokio::test]
async fn past_the_round_limit_chatds_call_does_not_run() {
    let upstream = ScriptedUpstream::start([
        (
            "POST /chat/completions",
            calling(&[("call_a", "web_search", r#"{"query":"UK"}"#)]),
        ),
        ("POST /search", crate::live_replies::exa()),
        (
            "POST /chat/completions",
            calling(&[
                ("call_b", "web_search", r#"{"query":"London"}"#),
                ("call_c", "get_weather", r#"{"city":"London"}"#),
            ]),
        ),
    ])
    .await;
    let (server, _files) =
        crate::openai::all_providers_with(&upstream, &["--chat-max-tool-rounds", "1"]).await;
    let body = json!({"model": "provider_c/grok-4", "tools": tools(), "chatd_tools": ["web_search"],
        "messages": [{"role": "user", "content": "Capital of the UK, and its weather?"}]});
    let response = reqwest::Client::new()
        .post(format!("{}/openai/v1/chat/completions", server.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.unwrap();
    let calls = &answer["choices"][0]["message"]["tool_calls"];
    assert_eq!(calls.as_array().unwrap().len(), 1, "{answer}");
    assert_eq!(calls[0]["function"]["name"], "Get-Weather");
    let searched = upstream
        .requests()
        .iter()
        .filter(|r| r.path == "/search")
        .count();
    assert_eq!(searched, 1, "only the first round's search ran");
}
