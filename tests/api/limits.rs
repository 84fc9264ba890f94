//! Length limits on titles, queries, names, model ids and the system prompt: refused above the
//! limit with a 400 naming the field, nothing written; accepted at it; in the OpenAPI document as
//! `maxLength`; and rows stored before the limits brought within them.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;

const TITLE: usize = 500;
const QUERY: usize = 2_000;
const NAME: usize = 256;
const MODEL: usize = 256;
const PROMPT: usize = 32_000;

fn long(chars: usize) -> String {
    // Two bytes a character: the limits count characters.
    "é".repeat(chars)
}

async fn refused(
    server: &TestServer,
    method: &str,
    path: &str,
    body: Value,
    field: &str,
    max: usize,
) {
    let before = server.row_counts().await;
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let (status, json) = server.request(method.clone(), path, Some(body)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{method} {path}: {json}");
    assert_eq!(
        json["message"],
        format!("{field}: must be at most {max} characters"),
        "{method} {path}"
    );
    assert_eq!(
        server.row_counts().await,
        before,
        "{method} {path} wrote nothing"
    );
}

#[tokio::test]
async fn each_limited_text_is_refused_above_its_limit_naming_the_field() {
    let server = TestServer::start().await;
    let chat = server.new_chat(json!({})).await;
    let search = server.new_search(json!({"query": "q"})).await;
    let cases = [
        (
            "POST",
            "/v1/chats".to_string(),
            json!({"title": long(TITLE + 1)}),
            "title",
            TITLE,
        ),
        (
            "POST",
            "/v1/chats".into(),
            json!({"provider": "provider_a", "model": long(MODEL + 1)}),
            "model",
            MODEL,
        ),
        (
            "POST",
            "/v1/chats".into(),
            json!({"additionalSystemPrompt": long(PROMPT + 1)}),
            "additionalSystemPrompt",
            PROMPT,
        ),
        (
            "POST",
            "/v1/chats".into(),
            json!({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b", "name": long(NAME + 1)}]}),
            "messages[1].name",
            NAME,
        ),
        (
            "PATCH",
            format!("/v1/chats/{chat}"),
            json!({"title": long(TITLE + 1)}),
            "title",
            TITLE,
        ),
        (
            "PATCH",
            format!("/v1/chats/{chat}"),
            json!({"additionalSystemPrompt": long(PROMPT + 1)}),
            "additionalSystemPrompt",
            PROMPT,
        ),
        (
            "POST",
            format!("/v1/chats/{chat}/messages"),
            json!({"role": "user", "content": "hi", "name": long(NAME + 1)}),
            "name",
            NAME,
        ),
        (
            "POST",
            "/v1/chat-completions".into(),
            json!({"provider": "provider_a", "model": long(MODEL + 1), "messages": [{"role": "user", "content": "hi"}]}),
            "model",
            MODEL,
        ),
        (
            "POST",
            "/v1/chat-completions/stream".into(),
            json!({"provider": "provider_a", "model": "m", "additionalSystemPrompt": long(PROMPT + 1), "messages": [{"role": "user", "content": "hi"}]}),
            "additionalSystemPrompt",
            PROMPT,
        ),
        (
            "POST",
            "/v1/searches".into(),
            json!({"title": long(TITLE + 1)}),
            "title",
            TITLE,
        ),
        (
            "POST",
            "/v1/searches".into(),
            json!({"query": long(QUERY + 1)}),
            "query",
            QUERY,
        ),
        (
            "POST",
            format!("/v1/searches/{search}/run"),
            json!({"query": long(QUERY + 1)}),
            "query",
            QUERY,
        ),
        (
            "POST",
            format!("/v1/searches/{search}/chat"),
            json!({"title": long(TITLE + 1)}),
            "title",
            TITLE,
        ),
    ];
    for (method, path, body, field, max) in cases {
        refused(&server, method, &path, body, field, max).await;
    }
}

#[tokio::test]
async fn texts_at_their_limits_are_stored_whole() {
    let server = TestServer::start().await;
    let (status, json) = server
        .post(
            "/v1/chats",
            json!({
                "title": long(TITLE),
                "provider": "provider_b",
                "model": long(MODEL),
                "additionalSystemPrompt": long(PROMPT),
                "messages": [{"role": "user", "content": "hi", "name": long(NAME)}],
            }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{json}");
    let chat = &json["chat"];
    assert_eq!(chat["title"], long(TITLE));
    assert_eq!(chat["lastUsedModel"], long(MODEL));
    assert_eq!(chat["additionalSystemPrompt"], long(PROMPT));
    let id = chat["id"].as_str().unwrap();
    let (_, detail) = server.get(&format!("/v1/chats/{id}")).await;
    assert_eq!(detail["chat"]["messages"][0]["name"], long(NAME));
    let (status, json) = server
        .post(
            "/v1/searches",
            json!({"title": long(TITLE), "query": long(QUERY)}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{json}");
    assert_eq!(json["search"]["query"], long(QUERY));
}

#[tokio::test]
async fn a_chat_from_a_long_query_gets_a_title_within_the_limit() {
    let server = TestServer::start().await;
    let search = server.new_search(json!({"query": long(QUERY)})).await;
    let (status, json) = server
        .post(&format!("/v1/searches/{search}/chat"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{json}");
    let title = json["chat"]["title"].as_str().unwrap();
    assert!(title.starts_with("Search: é"), "{title}");
    assert_eq!(title.chars().count(), TITLE);
}

#[tokio::test]
async fn the_openapi_document_gives_every_limit_as_max_length() {
    let server = TestServer::start().await;
    let (_, doc) = server.get("/openapi.json").await;
    let schemas = &doc["components"]["schemas"];
    for (schema, property, max) in [
        ("CreateChatRequest", "title", TITLE),
        ("CreateChatRequest", "model", MODEL),
        ("CreateChatRequest", "additionalSystemPrompt", PROMPT),
        ("PatchChatRequest", "title", TITLE),
        ("MessageInput", "name", NAME),
        ("AddMessageRequest", "name", NAME),
        ("CompletionRequest", "model", MODEL),
        ("CompletionRequest", "additionalSystemPrompt", PROMPT),
        ("CreateSearchRequest", "query", QUERY),
        ("RunSearchRequest", "query", QUERY),
        ("SearchChatRequest", "title", TITLE),
    ] {
        assert_eq!(
            schemas[schema]["properties"][property]["maxLength"], max,
            "{schema}.{property}"
        );
    }
}

/// Schemathesis once found `AddMessageRequest.attachments` without its count: every request schema
/// that takes attachments says how many, not only the one first written.
#[tokio::test]
async fn every_attachments_list_in_the_openapi_document_gives_its_count() {
    let server = TestServer::start().await;
    let (_, doc) = server.get("/openapi.json").await;
    let mut found = Vec::new();
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        if let Some(list) = schema.pointer("/properties/attachments") {
            assert_eq!(list["maxItems"], 8, "{name}.attachments: {list}");
            found.push(name.as_str());
        }
    }
    found.sort();
    assert_eq!(found, ["AddMessageRequest", "MessageInput"]);
}

#[tokio::test]
async fn rows_stored_before_the_limits_are_brought_within_them() {
    if crate::support::on_postgres() {
        // A PostgreSQL database starts with the limits: only SQLite has rows from before them.
        return;
    }
    let server = TestServer::start().await;
    let chat = server.new_chat(json!({"title": "short"})).await;
    let search = server.new_search(json!({"query": "q"})).await;
    let mut db = server.raw_db().await;
    // What an older chatd accepted: a title of 600 characters, a query of 3,000.
    db.execute(
        "UPDATE chats SET title = ?, additional_system_prompt = ? WHERE id = ?",
        &[&long(600), &long(40_000), &chat],
    )
    .await;
    db.execute(
        "UPDATE searches SET title = ?, query = ? WHERE id = ?",
        &[&long(600), &long(3_000), &search],
    )
    .await;
    let crate::support::RawDb::Sqlite(conn) = &mut db else {
        unreachable!("SQLite, above")
    };
    sqlx::raw_sql(include_str!(
        "../../migrations/sqlite/20261124000001_length_limits.sql"
    ))
    .execute(conn)
    .await
    .unwrap();
    let (_, chats) = server.get("/v1/chats").await;
    assert_eq!(chats["chats"][0]["title"], long(TITLE));
    assert_eq!(chats["chats"][0]["additionalSystemPrompt"], long(PROMPT));
    let (_, searches) = server.get("/v1/searches").await;
    assert_eq!(searches["searches"][0]["title"], long(TITLE));
    assert_eq!(searches["searches"][0]["query"], long(QUERY));
}
