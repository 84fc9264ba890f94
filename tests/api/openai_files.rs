//! The `python` tool's files on `/openai/v1` (`http/openai/files.rs`): a request with
//! `chatd_tools: ["python"]` runs its code in a container; the files it wrote are named as
//! OpenAI's code interpreter names them (`container_file_citation`), served at
//! `/openai/v1/files/{id}` and `/content` (read here with the official Python SDK's
//! `files.retrieve` and `files.content`), and a later request that names the container as
//! `chatd_session` finds them, and the session's globals.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::TEXT_STREAM;
use crate::openai::{TOKEN, all_providers};
use crate::openai_sdk::{python, python_sdk};
use crate::python_call::python_call;

const CHAT_CALLS: &str =
    include_str!("../fixtures/upstream/openai_chat/06_nonstream_parallel_tool_calls.response.json");
const CHAT_TEXT: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");

/// The recorded non-streamed answer calling `python` once with `code`.
fn python_call_json(code: &str) -> Value {
    let mut answer: Value = serde_json::from_str(CHAT_CALLS).unwrap();
    let calls = answer["choices"][0]["message"]["tool_calls"]
        .as_array_mut()
        .unwrap();
    calls.truncate(1);
    calls[0]["function"]["name"] = json!("python");
    calls[0]["function"]["arguments"] = json!(json!({"code": code}).to_string());
    answer
}

/// The recorded non-streamed text answer, saying `text`.
fn text_json(text: &str) -> Value {
    let mut answer: Value = serde_json::from_str(CHAT_TEXT).unwrap();
    answer["choices"][0]["message"]["content"] = json!(text);
    answer
}

async fn post(
    server: &crate::support::TestServer,
    route: &str,
    body: Value,
) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/openai/v1/{route}", server.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

const WRITE: &str = "import os\nos.makedirs('out', exist_ok=True)\n\
    open('out/data.csv', 'w').write('a,b\\n1,2\\n')\nkept = 41";

#[tokio::test]
async fn python_files_are_cited_served_and_found_by_the_next_request() {
    let upstream = ScriptedUpstream::start([
        (
            "POST /chat/completions",
            Reply::json(200, python_call_json(WRITE)),
        ),
        (
            "POST /chat/completions",
            Reply::json(200, text_json("I wrote data.csv for you.")),
        ),
        (
            "POST /chat/completions",
            Reply::json(
                200,
                python_call_json("(open('out/data.csv').read(), kept + 1)"),
            ),
        ),
        (
            "POST /chat/completions",
            Reply::json(200, text_json("Read it.")),
        ),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let ask = |extra: Value| {
        let mut body = json!({"model": "provider_c/grok-4", "chatd_tools": ["python"],
            "messages": [{"role": "user", "content": "Make a CSV."}]});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let (status, answer) = post(&server, "chat/completions", ask(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let session = answer["chatd_session"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string();
    assert!(
        session.starts_with("cntr_") && session.len() == 37,
        "{session}"
    );
    let message = &answer["choices"][0]["message"];
    assert_eq!(message["content"], "I wrote data.csv for you.");
    let cited = &message["annotations"][0];
    assert_eq!(cited["type"], "container_file_citation", "{message}");
    let cited = &cited["container_file_citation"];
    assert_eq!(cited["container_id"], session.as_str());
    assert_eq!(cited["filename"], "data.csv");
    assert_eq!(
        (cited["start_index"].clone(), cited["end_index"].clone()),
        (json!(8), json!(16))
    );
    let file_id = cited["file_id"].as_str().unwrap().to_string();
    assert!(file_id.starts_with("cfile_"), "{file_id}");

    // Served as OpenAI's Files API serves a file, to the token, and only to it.
    let object = reqwest::Client::new()
        .get(format!("{}/openai/v1/files/{file_id}", server.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(object.status(), StatusCode::OK);
    let object: Value = object.json().await.unwrap();
    assert_eq!(object["object"], "file");
    assert_eq!(object["bytes"], 8);
    assert_eq!(object["filename"], "data.csv");
    assert!(object["expires_at"].as_i64().unwrap() > object["created_at"].as_i64().unwrap());
    let bytes = reqwest::Client::new()
        .get(format!("{}/openai/v1/files/{file_id}/content", server.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(bytes.status(), StatusCode::OK);
    assert_eq!(bytes.headers()["content-type"], "text/csv");
    assert!(
        bytes.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("sandbox")
    );
    assert_eq!(bytes.text().await.unwrap(), "a,b\n1,2\n");
    let anonymous = reqwest::get(format!("{}/openai/v1/files/{file_id}/content", server.base))
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    if let Some(python) = python() {
        let base = format!("{}/openai/v1", server.base);
        let retrieved = python_sdk(&python, &base, TOKEN, &["file", &file_id]).await;
        assert_eq!(retrieved["filename"], "data.csv", "{retrieved}");
        assert_eq!(retrieved["purpose"], "assistants_output", "{retrieved}");
        let content = python_sdk(&python, &base, TOKEN, &["file_content", &file_id]).await;
        assert_eq!(content["text"], "a,b\n1,2\n", "{content}");
    }

    // The next request names the container: its code finds the file and the globals.
    let (status, again) = post(
        &server,
        "chat/completions",
        ask(json!({"chatd_session": session})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["chatd_session"], session.as_str());
    let result = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == "/chat/completions")
        .last()
        .map(|r| r.json())
        .unwrap();
    let seen = result["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    let seen: Value = serde_json::from_str(seen.as_str().unwrap()).unwrap();
    assert_eq!(seen["value"], "('a,b\\n1,2\\n', 42)", "{seen}");

    // Refusals: an unknown session, a session without python, an unknown file.
    let (status, error) = post(
        &server,
        "chat/completions",
        ask(json!({"chatd_session": "cntr_00000000000000000000000000000000"})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{error}");
    assert_eq!(error["error"]["code"], "session_not_found");
    assert_eq!(error["error"]["param"], "chatd_session");
    let (status, error) = post(
        &server,
        "chat/completions",
        json!({"model": "provider_c/grok-4",
        "chatd_session": session, "messages": [{"role": "user", "content": "Hi"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["error"]["param"], "chatd_session");
    let missing = reqwest::Client::new()
        .get(format!("{}/openai/v1/files/cfile_nope", server.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let missing: Value = missing.json().await.unwrap();
    assert_eq!(
        missing["error"]["type"], "invalid_request_error",
        "{missing}"
    );
}

/// Streamed on `/responses`: the citation is an annotation of the message's `output_text`,
/// announced before the text's `.done`, and the completed response names the session.
#[tokio::test]
async fn a_streamed_response_cites_its_files_before_its_text_is_done() {
    let upstream = ScriptedUpstream::start([
        ("POST /chat/completions", Reply::sse(&python_call(WRITE))),
        ("POST /chat/completions", Reply::sse(TEXT_STREAM)),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let response = reqwest::Client::new()
        .post(format!("{}/openai/v1/responses", server.base))
        .bearer_auth(TOKEN)
        .json(
            &json!({"model": "provider_c/grok-4", "input": "Make a CSV.", "stream": true,
            "chatd_tools": ["python"]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.text().await.unwrap();
    let events: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let added = kinds
        .iter()
        .position(|k| *k == "response.output_text.annotation.added")
        .unwrap_or_else(|| panic!("{kinds:?}"));
    let done = kinds
        .iter()
        .position(|k| *k == "response.output_text.done")
        .unwrap();
    assert!(added < done, "{kinds:?}");
    assert_eq!(events[added]["annotation"]["filename"], "data.csv");
    let completed = events.last().unwrap();
    assert_eq!(completed["type"], "response.completed");
    let response = &completed["response"];
    let session = response["chatd_session"].as_str().unwrap();
    let part = &response["output"][0]["content"][0];
    assert_eq!(part["annotations"][0]["container_id"], session);
    assert_eq!(part["annotations"][0]["type"], "container_file_citation");
}
