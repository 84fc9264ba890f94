//! What OpenAI's clients send by default beside the options (`http/openai/tuning.rs`, WIT
//! 0.1.3's `turn-tuning`): a tool's `strict`, `parallel_tool_calls: false`, `reasoning_effort`
//! (the Responses API's `reasoning`), `seed`, the penalties, `logit_bias`, `verbosity` and a
//! message's `name`. Each reaches each provider's upstream as its wire spells it; what a wire
//! lacks and would change the answer is a 400 naming it; a strict tool's arguments are checked
//! by chatd itself for a provider whose wire has no strict mode.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::openai::{TOKEN, all_providers};

const CHAT_TEXT: &str =
    include_str!("../fixtures/upstream/openai_chat/04_nonstream_text.response.json");
const MESSAGES_TEXT: &str =
    include_str!("../fixtures/upstream/anthropic_messages/01_nonstream_text.response.json");
const MESSAGES_TOOL_USE: &str =
    include_str!("../fixtures/upstream/anthropic_messages/02a_nonstream_tool_use.response.json");
const RESPONSES_TEXT: &str =
    include_str!("../fixtures/upstream/openai_responses/01_nonstream_text.response.json");

/// A strict tool as the Agents SDK and `openai.pydantic_function_tool` send one.
fn strict_tools() -> Value {
    json!([{"type": "function", "function": {
        "name": "weather", "strict": true,
        "description": "Gets current weather for a location",
        "parameters": {"type": "object", "title": "weather_args",
            "properties": {"latitude": {"type": "string", "title": "Latitude"},
                           "longitude": {"type": "string", "title": "Longitude"}},
            "required": ["latitude", "longitude"], "additionalProperties": false}
    }}])
}

/// The JSON body of the last request that reached `path`.
fn sent(upstream: &ScriptedUpstream, path: &str) -> Value {
    let request = upstream
        .requests()
        .into_iter()
        .rfind(|r| r.path == path)
        .unwrap_or_else(|| panic!("nothing reached {path}"));
    serde_json::from_slice(&request.body).unwrap()
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

fn with(model: &str, extra: Value) -> Value {
    let mut body = json!({"model": model,
        "messages": [{"role": "user", "content": "Weather in Berlin?", "name": "ann"}]});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    body
}

#[tokio::test]
async fn each_provider_gets_the_tuning_in_its_own_wire() {
    let upstream = ScriptedUpstream::start([
        (
            "POST /chat/completions",
            Reply::text(200, "application/json", CHAT_TEXT),
        ),
        (
            "POST /responses",
            Reply::text(200, "application/json", RESPONSES_TEXT),
        ),
        (
            "POST /messages",
            Reply::text(200, "application/json", MESSAGES_TEXT),
        ),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let tuned = json!({"tools": strict_tools(), "parallel_tool_calls": false,
        "reasoning_effort": "high", "seed": 7, "verbosity": "low"});
    let (status, body) = post(
        &server,
        "chat/completions",
        with(
            "provider_c/grok-4",
            json!({
        "tools": strict_tools(), "parallel_tool_calls": false, "reasoning_effort": "low",
        "seed": 7, "presence_penalty": 0.5, "frequency_penalty": -0.5,
        "logit_bias": {"50256": -100}, "verbosity": "low"}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let c = sent(&upstream, "/chat/completions");
    assert_eq!(c["tools"][0]["function"]["strict"], true, "{c}");
    assert_eq!(c["parallel_tool_calls"], false);
    assert_eq!(c["reasoning_effort"], "low");
    assert_eq!(c["seed"], 7);
    assert_eq!(c["presence_penalty"], 0.5);
    assert_eq!(c["frequency_penalty"], -0.5);
    assert_eq!(c["logit_bias"], json!({"50256": -100.0}));
    assert!(
        c.get("verbosity").is_none(),
        "verbosity is sent nowhere: {c}"
    );
    assert!(
        c["messages"][0].get("name").is_none(),
        "nor a message's name: {c}"
    );

    let (status, body) = post(
        &server,
        "chat/completions",
        with("provider_a/gpt-5", tuned.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let a = sent(&upstream, "/responses");
    assert_eq!(a["tools"][0]["strict"], true, "{a}");
    assert_eq!(a["parallel_tool_calls"], false);
    assert_eq!(a["reasoning"], json!({"effort": "high"}));
    assert!(a.get("seed").is_none(), "{a}");
    // A model that does not reason: the effort changes nothing there, and is left out.
    let (status, _) = post(
        &server,
        "chat/completions",
        with("provider_a/gpt-4o-mini", tuned.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(sent(&upstream, "/responses").get("reasoning").is_none());

    let (status, body) = post(
        &server,
        "chat/completions",
        with("provider_b/claude-opus-4-7", tuned),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let b = sent(&upstream, "/messages");
    assert_eq!(
        b["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    assert_eq!(b["output_config"], json!({"effort": "high"}));
    assert!(
        b.get("seed").is_none() && b["tools"][0].get("strict").is_none(),
        "{b}"
    );

    // The Responses API's own spellings: `reasoning`, `text.verbosity`, flat strict tools;
    // the response repeats them.
    let (status, response) = post(
        &server,
        "responses",
        json!({
        "model": "provider_a/gpt-5", "input": [{"role": "user", "content": "Weather?"}],
        "instructions": "Answer briefly.", "include": [],
        "tools": [{"type": "function", "name": "weather", "strict": true,
            "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}],
        "parallel_tool_calls": false, "reasoning": {"effort": "none", "summary": "auto"},
        "text": {"verbosity": "low"}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{response}");
    let a = sent(&upstream, "/responses");
    assert_eq!(a["reasoning"], json!({"effort": "none"}));
    assert_eq!(a["parallel_tool_calls"], false);
    assert_eq!(a["tools"][0]["strict"], true);
    assert_eq!(response["parallel_tool_calls"], false);
    assert_eq!(response["reasoning"]["effort"], "none");
}

/// What a provider's wire lacks and would change its answer is a 400 naming it (under the
/// Responses API's own name there), and nothing goes upstream; what it lacks and is a hint
/// (a seed, a reasoning effort for a provider without one) is left to the upstream.
#[tokio::test]
async fn what_a_wire_lacks_is_refused_by_name_or_left_to_the_upstream() {
    let upstream = ScriptedUpstream::start([(
        "POST /messages",
        Reply::text(200, "application/json", MESSAGES_TEXT),
    )])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    for (extra, param) in [
        (json!({"presence_penalty": 0.5}), "presence_penalty"),
        (json!({"frequency_penalty": 1}), "frequency_penalty"),
        (json!({"logit_bias": {"1": 5}}), "logit_bias"),
        (json!({"reasoning_effort": "huge"}), "reasoning_effort"),
        // A bad value is refused as such before an option the provider lacks.
        (
            json!({"response_format": {"type": "json_object"}, "reasoning_effort": "huge"}),
            "reasoning_effort",
        ),
        (json!({"seed": "7"}), "seed"),
        (json!({"verbosity": "loud"}), "verbosity"),
        (
            json!({"tools": [{"type": "function", "function": {"name": "f", "strict": true,
            "parameters": {"type": "object", "properties": {"a": {"type": "nonsense"}}}}}]}),
            "tools[0].function.parameters",
        ),
    ] {
        let (status, error) = post(
            &server,
            "chat/completions",
            with("provider_b/claude-opus-4-7", extra.clone()),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{extra}: {error}");
        assert_eq!(error["error"]["param"], param, "{error}");
    }
    let (status, error) = post(
        &server,
        "responses",
        json!({"model": "provider_b/claude-opus-4-7",
        "input": "Hi", "reasoning": {"effort": "huge"}}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["error"]["param"], "reasoning.effort", "{error}");
    assert!(
        upstream.requests().iter().all(|r| r.method != "POST"),
        "nothing went upstream"
    );
    let (status, body) = post(
        &server,
        "chat/completions",
        with(
            "provider_b/claude-opus-4-7",
            json!({"seed": 7, "presence_penalty": 0, "logit_bias": {}}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// A strict tool's arguments are checked by chatd before its call goes back to the client:
/// the Messages API (no strict mode) returns the recorded call, whose arguments match, then the
/// same call with a number where the schema wants a string, which fails the request with a 502
/// naming the tool, the place and the rule; the call is recorded as failed.
#[tokio::test]
async fn a_strict_tools_arguments_are_checked_before_they_reach_the_client() {
    let mut wrong: Value = serde_json::from_str(MESSAGES_TOOL_USE).unwrap();
    wrong["content"][0]["input"]["latitude"] = json!(52.52);
    let upstream = ScriptedUpstream::start([
        (
            "POST /messages",
            Reply::text(200, "application/json", MESSAGES_TOOL_USE),
        ),
        ("POST /messages", Reply::json(200, wrong)),
    ])
    .await;
    let (server, _files) = all_providers(&upstream).await;
    let ask = || {
        post(
            &server,
            "chat/completions",
            with(
                "provider_b/claude-haiku-4-5",
                json!({"tools": strict_tools()}),
            ),
        )
    };
    let (status, body) = ask().await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let call = &body["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "weather");
    assert_eq!(
        serde_json::from_str::<Value>(call["function"]["arguments"].as_str().unwrap()).unwrap(),
        json!({"latitude": "52.5200", "longitude": "13.4050"})
    );
    let (status, error) = ask().await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "the model called weather with arguments that do not match its schema (strict)"
        ) && message.contains("/latitude")
            && message.contains("string"),
        "{message}"
    );
    assert_eq!(error["error"]["type"], "api_error", "{error}");
    // Without strict, the same arguments go back as the model wrote them.
    let mut loose = strict_tools();
    loose[0]["function"]["strict"] = json!(false);
    let (status, body) = post(
        &server,
        "chat/completions",
        with("provider_b/claude-haiku-4-5", json!({"tools": loose})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}
