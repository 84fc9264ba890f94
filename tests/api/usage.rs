//! Usage and budgets (docs/teams.md, `usage/`): every model call of a person in the ledger,
//! whatever the route (`persist: false`, `/openai/v1`, titles), its sums exactly what the
//! upstream reported, at the configured prices; nothing recorded before people exist; budgets
//! per person and per key refusing before the upstream is called, with the 429's fields (OpenAI's
//! `insufficient_quota` under `/openai/v1`); a USD budget refusing a model without a price; and
//! concurrent requests, on two instances on PostgreSQL, overshooting by at most one request.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::people::{TOKEN, add_person, call};
use crate::support::{Options, TestServer, write_config};

const TEXT_STREAM: &str =
    include_str!("../fixtures/upstream/openai_chat/02_stream_text_include_usage.response.sse");
const RESPONSES_TEXT: &str =
    include_str!("../fixtures/upstream/openai_responses/01_nonstream_text.response.json");
/// What the recorded stream reports: 78 input and 9 output tokens.
const STREAM_IN: i64 = 78;
const STREAM_OUT: i64 = 9;
/// What the recorded Responses answer (the title model's) reports.
const TITLE_IN: i64 = 23;
const TITLE_OUT: i64 = 89;
const TITLE_MODEL: &str = "t-mini";

/// A server whose provider_c (the chats) and provider_a (titles) answer from `upstream`, with
/// provider_c's models priced at 2 and 10 USD per million tokens.
async fn server(upstream: &ScriptedUpstream, files: &tempfile::TempDir) -> TestServer {
    on(upstream, files, None).await
}

/// [`server`], on `dir`'s database when given (another instance of its deployment).
async fn on(
    upstream: &ScriptedUpstream,
    files: &tempfile::TempDir,
    dir: Option<std::sync::Arc<tempfile::TempDir>>,
) -> TestServer {
    let config = write_config(
        files.path(),
        "[pricing.\"provider_c/*\"]\ninput_per_million = 2.0\noutput_per_million = 10.0\n\
         [pricing.\"search_engine_a/answer\"]\nper_call = 0.005\n",
    );
    let url = upstream.url();
    let args = [
        "--engine-a-base-url",
        &url,
        "--engine-a-api-key",
        "e-key",
        "--provider-c-base-url",
        &url,
        "--provider-c-api-key",
        "c-key",
        "--provider-a-base-url",
        &url,
        "--provider-a-api-key",
        "a-key",
        "--title-model",
        TITLE_MODEL,
    ];
    TestServer::start_with(Options {
        token: Some(TOKEN.into()),
        args: args.iter().map(|s| s.to_string()).collect(),
        config: Some(config),
        dir,
        ..Options::default()
    })
    .await
}

async fn upstream() -> ScriptedUpstream {
    ScriptedUpstream::start([
        ("POST /chat/completions", Reply::sse(TEXT_STREAM)),
        (
            "POST /responses",
            Reply::text(200, "application/json", RESPONSES_TEXT),
        ),
        (
            "POST /search",
            Reply::json(200, json!({"requestId": "s1", "results": []})),
        ),
        (
            "POST /answer",
            Reply::json(
                200,
                json!({"requestId": "a1", "answer": "London.", "citations": []}),
            ),
        ),
    ])
    .await
}

fn calls(upstream: &ScriptedUpstream) -> usize {
    upstream
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count()
}

/// A `persist: false` stream by `key`: its status, and the events' text when 200.
async fn ephemeral(server: &TestServer, key: &str, max_tokens: Option<u64>) -> (StatusCode, Value) {
    let mut body = json!({"provider": "provider_c", "model": "grok-4", "persist": false,
        "enabledTools": [], "messages": [{"role": "user", "content": "hi"}]});
    if let Some(n) = max_tokens {
        body["maxTokens"] = json!(n);
    }
    let res = server
        .client
        .post(format!("{}/v1/chat-completions/stream", server.base))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    if status == StatusCode::OK {
        assert!(text.contains("event: done"), "{text}");
        return (status, Value::String(text));
    }
    (status, serde_json::from_str(&text).unwrap())
}

async fn ledger_rows(server: &TestServer) -> i64 {
    let rows: Vec<(i64,)> = server
        .raw_db()
        .await
        .rows("SELECT COUNT(*) FROM usage_ledger", &[])
        .await;
    rows[0].0
}

#[tokio::test]
async fn every_model_call_is_in_the_ledger_at_the_upstreams_counts() {
    let upstream = upstream().await;
    let files = tempfile::tempdir().unwrap();
    let server = server(&upstream, &files).await;

    // No one but ADMIN_TOKEN: nothing is recorded.
    let (status, _) = ephemeral(&server, TOKEN, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ledger_rows(&server).await, 0);

    let (ann_id, ann) = add_person(&server, "ann", "member").await;
    // A persisted stream, a `persist: false` one, both /openai/v1 routes, a title.
    let (status, body) = call(&server, &ann, Method::POST, "/v1/chats", Some(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let chat_id = body["chat"]["id"].as_str().unwrap().to_string();
    let res = server
        .client
        .post(format!("{}/v1/chat-completions/stream", server.base))
        .bearer_auth(&ann)
        .json(
            &json!({"chatId": chat_id, "provider": "provider_c", "model": "grok-4",
            "enabledTools": [], "messages": [{"role": "user", "content": "hi"}]}),
        )
        .send()
        .await
        .unwrap();
    assert!(res.text().await.unwrap().contains("event: done"));
    assert_eq!(ephemeral(&server, &ann, None).await.0, StatusCode::OK);
    for (path, body) in [
        (
            "/openai/v1/chat/completions",
            json!({"model": "provider_c/grok-4", "stream": true,
                "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "/openai/v1/responses",
            json!({"model": "provider_c/grok-4", "stream": true, "input": "hi"}),
        ),
    ] {
        let res = server
            .client
            .post(format!("{}{path}", server.base))
            .bearer_auth(&ann)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        res.text().await.unwrap();
    }
    let (status, body) = call(
        &server,
        &ann,
        Method::POST,
        "/v1/chats/title/suggest",
        Some(json!({"chatId": chat_id, "content": "Where is London?"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // `persist: false` kept no chat.
    let (_, chats) = call(&server, &ann, Method::GET, "/v1/chats", None).await;
    assert_eq!(chats["chats"].as_array().unwrap().len(), 1, "{chats}");

    let (status, usage) = call(&server, &ann, Method::GET, "/v1/usage?groupBy=model", None).await;
    assert_eq!(status, StatusCode::OK, "{usage}");
    let groups = usage["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{usage}");
    let chats = &groups
        .iter()
        .find(|g| g["group"] == "provider_c/grok-4")
        .unwrap();
    assert_eq!(chats["calls"], 4);
    assert_eq!(chats["inputTokens"], 4 * STREAM_IN);
    assert_eq!(chats["outputTokens"], 4 * STREAM_OUT);
    // 4 × (78 × 2 + 9 × 10) µUSD.
    let cost = chats["costUsd"].as_f64().unwrap();
    assert!((cost - 4.0 * 246e-6).abs() < 1e-12, "{cost}");
    assert_eq!(chats["unpricedCalls"], 0);
    let titles = groups
        .iter()
        .find(|g| g["group"] == format!("provider_a/{TITLE_MODEL}"))
        .unwrap();
    assert_eq!(
        (
            &titles["calls"],
            &titles["inputTokens"],
            &titles["outputTokens"]
        ),
        (&json!(1), &json!(TITLE_IN), &json!(TITLE_OUT))
    );
    assert_eq!(titles["unpricedCalls"], 1);
    assert_eq!(usage["total"]["calls"], 5);

    // By day and by key: the same sums, under today and ann's first key.
    let (_, by_key) = call(&server, &ann, Method::GET, "/v1/usage?groupBy=key", None).await;
    let (_, keys) = call(&server, &ann, Method::GET, "/v1/keys", None).await;
    assert_eq!(by_key["groups"][0]["group"], keys["keys"][0]["id"]);
    assert_eq!(by_key["total"], usage["total"]);

    // Another person sees none of it; only an admin sums everyone's, by person id.
    let (_, bob) = add_person(&server, "bob", "member").await;
    let (_, bobs) = call(&server, &bob, Method::GET, "/v1/usage", None).await;
    assert_eq!(bobs["total"]["calls"], 0, "{bobs}");
    let (status, refused) = call(&server, &bob, Method::GET, "/v1/usage?groupBy=user", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("`admin` scope")
    );
    let (status, everyone) = server.get("/v1/usage?groupBy=user").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        everyone["groups"].as_array().unwrap().len(),
        1,
        "{everyone}"
    );
    assert_eq!(everyone["groups"][0]["group"], ann_id.as_str());
    for bad in [
        "groupBy=week",
        "from=yesterday",
        "from=2026-12-02&to=2026-12-01",
    ] {
        let (status, body) = server.get(&format!("/v1/usage?{bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }

    // Spend counters by person id, never by name.
    let metrics = server
        .client
        .get(format!("{}/metrics", server.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = format!(
        "chatd_spend_tokens_total{{user=\"{ann_id}\",direction=\"input\"}} {}",
        4 * STREAM_IN + TITLE_IN
    );
    assert!(metrics.contains(&line), "{line} in\n{metrics}");
    assert!(!metrics.contains("user=\"ann\""));
}

#[tokio::test]
async fn budgets_refuse_before_the_upstream_is_called() {
    let upstream = upstream().await;
    let files = tempfile::tempdir().unwrap();
    let server = server(&upstream, &files).await;
    let (ann_id, ann) = add_person(&server, "ann", "member").await;
    let per_call = STREAM_IN + STREAM_OUT;

    // Three calls' worth of tokens a day.
    let (status, body) = server
        .patch(
            &format!("/v1/users/{ann_id}"),
            json!({"budget": {"tokens": 3 * per_call, "period": "day"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["budget"],
        json!({"tokens": 3 * per_call, "period": "day"})
    );
    for _ in 0..3 {
        assert_eq!(ephemeral(&server, &ann, None).await.0, StatusCode::OK);
    }
    let before = calls(&upstream);
    let (status, refused) = ephemeral(&server, &ann, None).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{refused}");
    assert_eq!(calls(&upstream), before, "the upstream was not called");
    let budget = &refused["budget"];
    assert_eq!(budget["scope"], "user");
    assert_eq!(budget["limit"], 3 * per_call);
    assert_eq!(budget["spent"], 3 * per_call);
    assert_eq!(budget["period"], "day");
    assert_eq!(budget["unit"], "tokens");
    let tomorrow = (chrono::Utc::now().date_naive() + chrono::Days::new(1)).to_string();
    assert_eq!(budget["resetsAt"], format!("{tomorrow}T00:00:00.000Z"));
    assert!(refused["message"].as_str().unwrap().contains("budget"));

    // Under /openai/v1: OpenAI's shape, which the SDKs do not retry.
    let res = server
        .client
        .post(format!("{}/openai/v1/chat/completions", server.base))
        .bearer_auth(&ann)
        .json(&json!({"model": "provider_c/grok-4",
            "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(res.headers()["x-should-retry"], "false");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "insufficient_quota", "{body}");
    assert_eq!(body["error"]["type"], "insufficient_quota");
    assert_eq!(body["error"]["budget"]["scope"], "user");
    assert_eq!(calls(&upstream), before);

    // No person budget; a key's own: one call's worth a month.
    let (status, _) = server
        .patch(&format!("/v1/users/{ann_id}"), json!({"budget": null}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, made) = call(
        &server,
        &ann,
        Method::POST,
        "/v1/keys",
        Some(json!({"name": "ci", "budget": {"tokens": per_call, "period": "month"}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{made}");
    assert_eq!(made["budget"]["period"], "month");
    let ci = made["key"].as_str().unwrap().to_string();
    assert_eq!(ephemeral(&server, &ci, None).await.0, StatusCode::OK);
    let (status, refused) = ephemeral(&server, &ci, None).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused["budget"]["scope"], "key");
    assert_eq!(refused["budget"]["spent"], per_call);
    // Ann's other key is not the key's budget's; a key with a budget makes no keys, whose
    // budgets would spend beside its own.
    assert_eq!(ephemeral(&server, &ann, None).await.0, StatusCode::OK);
    let (status, refused) = call(
        &server,
        &ci,
        Method::POST,
        "/v1/keys",
        Some(json!({"name": "escape"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("budget"));

    // A USD budget pays only for priced models: provider_c's are, the title model is not.
    let (status, _) = server
        .patch(
            &format!("/v1/users/{ann_id}"),
            json!({"budget": {"usd": 5, "period": "week"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ephemeral(&server, &ann, None).await.0, StatusCode::OK);
    let (_, chat) = call(&server, &ann, Method::POST, "/v1/chats", Some(json!({}))).await;
    let before = calls(&upstream);
    let (status, refused) = call(
        &server,
        &ann,
        Method::POST,
        "/v1/chats/title/suggest",
        Some(json!({"chatId": chat["chat"]["id"], "content": "Where is London?"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("provider_a/{TITLE_MODEL}")),
        "{message}"
    );
    assert_eq!(calls(&upstream), before);

    // Bad budgets name the field and the rule; the built-in admin has none.
    for (bad, field) in [
        (json!({"usd": 1, "tokens": 1, "period": "day"}), "budget"),
        (json!({"tokens": 0, "period": "day"}), "budget.tokens"),
        (json!({"tokens": 5, "period": "year"}), "budget.period"),
    ] {
        let (status, body) = server
            .patch(&format!("/v1/users/{ann_id}"), json!({"budget": bad}))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(
            body["message"].as_str().unwrap().starts_with(field),
            "{body}"
        );
    }
    let (status, _) = server
        .patch(
            "/v1/users/admin",
            json!({"budget": {"tokens": 5, "period": "day"}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// 50 requests at once against ten calls' worth: each holds at least what it will spend, so
/// the calls made stay under the budget plus one call (the last one admitted), whichever
/// instance each reaches. Every refusal is the 429 with its fields, and the ledger holds
/// exactly what the upstream reported for the calls made.
#[tokio::test]
async fn concurrent_requests_overshoot_by_at_most_one_call() {
    let upstream = upstream().await;
    let files = tempfile::tempdir().unwrap();
    let first = server(&upstream, &files).await;
    // Another instance on PostgreSQL (SQLite serves one).
    let second = match crate::support::on_postgres() {
        true => Some(on(&upstream, &files, Some(first.dir.clone())).await),
        false => None,
    };
    let (ann_id, ann) = add_person(&first, "ann", "member").await;
    let per_call = STREAM_IN + STREAM_OUT;
    let limit = 10 * per_call;
    let (status, _) = first
        .patch(
            &format!("/v1/users/{ann_id}"),
            json!({"budget": {"tokens": limit, "period": "month"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let servers: Vec<&TestServer> = std::iter::once(&first).chain(second.as_ref()).collect();
    // A hold of the input's guess and 100 output tokens: more than the 87 a call reports.
    let requests = (0..50).map(|i| ephemeral(servers[i % servers.len()], &ann, Some(100)));
    let outcomes = futures::future::join_all(requests).await;
    let made = outcomes
        .iter()
        .filter(|(s, _)| *s == StatusCode::OK)
        .count() as i64;
    for (status, body) in &outcomes {
        if *status != StatusCode::OK {
            assert_eq!(*status, StatusCode::TOO_MANY_REQUESTS, "{body}");
            assert_eq!(body["budget"]["limit"], limit);
            assert!(body["budget"]["spent"].as_i64().unwrap() >= 0);
        }
    }
    assert!(made >= 1, "at least one request is admitted");
    assert!(
        made * per_call < limit + per_call,
        "{made} calls of {per_call} tokens against {limit}"
    );
    assert_eq!(calls(&upstream) as i64, made);
    let (_, usage) = call(&first, &ann, Method::GET, "/v1/usage", None).await;
    assert_eq!(usage["total"]["calls"], made);
    assert_eq!(usage["total"]["inputTokens"], made * STREAM_IN);
    assert_eq!(usage["total"]["outputTokens"], made * STREAM_OUT);
    // Every hold ended with its request: the rest of the budget is there to spend.
    let holds: Vec<(i64,)> = first
        .raw_db()
        .await
        .rows("SELECT COUNT(*) FROM usage_holds", &[])
        .await;
    assert_eq!(holds[0].0, 0);
    if made * per_call < limit {
        assert_eq!(ephemeral(&first, &ann, Some(100)).await.0, StatusCode::OK);
    }
}

/// A search's answer is a model's: each run's (run, run/stream, `/mcp`'s search tool) is in the
/// ledger at its `per_call` price, and a spent budget refuses the next before the engine is
/// asked.
#[tokio::test]
async fn search_answers_are_counted_and_refused_over_budget() {
    let upstream = upstream().await;
    let files = tempfile::tempdir().unwrap();
    let server = server(&upstream, &files).await;
    let (ann_id, ann) = add_person(&server, "ann", "member").await;
    let (status, made) = call(
        &server,
        &ann,
        Method::POST,
        "/v1/searches",
        Some(json!({"query": "capital of the uk"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{made}");
    let run = format!(
        "/v1/searches/{}/run",
        made["search"]["id"].as_str().unwrap()
    );
    let (status, body) = call(&server, &ann, Method::POST, &run, Some(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let res = server
        .client
        .post(format!("{}{run}/stream", server.base))
        .bearer_auth(&ann)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert!(res.text().await.unwrap().contains("event: done"));
    let mcp_search = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "chatd_search", "arguments": {"query": "capital of the uk"}}});
    let mcp = |body: Value| {
        server
            .client
            .post(format!("{}/mcp", server.base))
            .bearer_auth(&ann)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body)
            .send()
    };
    let answered: Value = mcp(mcp_search.clone()).await.unwrap().json().await.unwrap();
    assert_eq!(answered["result"]["isError"], false, "{answered}");

    let (_, usage) = call(&server, &ann, Method::GET, "/v1/usage?groupBy=model", None).await;
    let answers = &usage["groups"][0];
    assert_eq!(answers["group"], "search_engine_a/answer", "{usage}");
    assert_eq!(answers["calls"], 3);
    assert_eq!(answers["totalTokens"], 0);
    assert!(
        (answers["costUsd"].as_f64().unwrap() - 0.015).abs() < 1e-12,
        "{usage}"
    );

    // A cent a day is spent: the next run and the next /mcp search are refused.
    let (status, _) = server
        .patch(
            &format!("/v1/users/{ann_id}"),
            json!({"budget": {"usd": 0.01, "period": "day"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let asked = calls(&upstream);
    let (status, refused) = call(&server, &ann, Method::POST, &run, Some(json!({}))).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{refused}");
    assert_eq!(refused["budget"]["unit"], "usd");
    assert_eq!(refused["budget"]["limit"], 0.01);
    assert_eq!(refused["budget"]["spent"], 0.015);
    let res = server
        .client
        .post(format!("{}{run}/stream", server.base))
        .bearer_auth(&ann)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let refused: Value = mcp(mcp_search).await.unwrap().json().await.unwrap();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused.to_string().contains("budget is spent"), "{refused}");
    assert_eq!(calls(&upstream), asked, "the engine was not asked");
}

/// A reply stopped before the upstream said what it used (usage comes last) was paid for all
/// the same: the turn is recorded with a guess from its input and the text that came out.
#[tokio::test]
async fn a_stopped_turn_is_recorded_with_a_guess() {
    use crate::live_replies::{C, after_first_text, ask, paced, text};
    let items = [text(&["Partial ", "answer", " never sent"])];
    let gate = chatd::plugins::testing::Gate::new();
    // Held after two deltas, for good: only the stop ends it, and no usage ever comes.
    let reply = paced(C, &items).hold_before(after_first_text(C, &items) + 1, &gate);
    let upstream = ScriptedUpstream::start([(C.route, reply)]).await;
    let options = Options {
        token: Some(TOKEN.into()),
        ..Options::default()
    };
    let server = crate::live_replies::server(C, &upstream, options).await;
    add_person(&server, "ann", "member").await;
    let mut stream = ask(&server, C, "Tell me").await;
    let meta = stream.expect("meta").await;
    let chat_id = meta.data["chatId"].as_str().unwrap().to_string();
    stream.expect("delta").await;
    stream.expect("delta").await;
    let (status, _) = server
        .post(&format!("/v1/chats/{chat_id}/stream/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    stream.rest().await;
    let (_, usage) = server.get("/v1/usage").await;
    let total = &usage["total"];
    assert_eq!(total["calls"], 1, "{usage}");
    assert!(total["inputTokens"].as_i64().unwrap() >= 1, "{usage}");
    // "Partial answer": 14 bytes, about 4 tokens.
    assert!(total["outputTokens"].as_i64().unwrap() >= 3, "{usage}");
}
