//! The whole history: the chat and search lists a page at a time (`?limit`, `?cursor`), their
//! rows found by title whatever their age (`?title`), and the search over message text
//! (`GET /v1/message-search`), on each store.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;

/// Every page of `path` (`limit` each) joined, following `nextCursor`: the ids in order.
async fn all_pages(server: &TestServer, path: &str, key: &str, limit: u32) -> (Vec<String>, usize) {
    let (mut ids, mut pages) = (Vec::new(), 0);
    let mut cursor: Option<String> = None;
    let join = if path.contains('?') { '&' } else { '?' };
    loop {
        let url = match &cursor {
            None => format!("{path}{join}limit={limit}"),
            Some(c) => format!("{path}{join}limit={limit}&cursor={c}"),
        };
        let (status, body) = server.get(&url).await;
        assert_eq!(status, StatusCode::OK, "{url}: {body}");
        pages += 1;
        let rows = body[key].as_array().unwrap();
        assert!(rows.len() <= limit as usize);
        ids.extend(rows.iter().map(|r| r["id"].as_str().unwrap().to_string()));
        match body.get("nextCursor") {
            Some(Value::String(next)) => cursor = Some(next.clone()),
            None => break,
            Some(other) => panic!("nextCursor: {other}"),
        }
    }
    (ids, pages)
}

#[tokio::test]
async fn the_lists_page_through_everything_in_the_whole_lists_order() {
    let server = TestServer::start().await;
    for i in 0..23 {
        server
            .new_chat(json!({ "title": format!("chat {i}") }))
            .await;
        if i % 3 == 0 {
            server
                .new_search(json!({ "query": format!("query {i}") }))
                .await;
        }
    }
    // A chat touched again moves to the front, in pages as in the whole list.
    let (_, whole) = server.get("/v1/chats").await;
    let oldest = whole["chats"][22]["id"].as_str().unwrap().to_string();
    server
        .patch(
            &format!("/v1/chats/{oldest}"),
            json!({ "title": "renamed" }),
        )
        .await;

    for (path, key) in [("/v1/chats", "chats"), ("/v1/searches", "searches")] {
        let (status, whole) = server.get(path).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            whole.get("nextCursor").is_none(),
            "the whole list has no cursor"
        );
        let expected: Vec<String> = whole[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect();
        for limit in [1, 5, 8, 100] {
            let (ids, pages) = all_pages(&server, path, key, limit).await;
            assert_eq!(ids, expected, "{path} in pages of {limit}");
            assert_eq!(
                pages,
                expected.len().div_ceil(limit as usize).max(1),
                "{path} {limit}"
            );
        }
    }
    let (_, first) = server.get("/v1/chats?limit=1").await;
    assert_eq!(first["chats"][0]["id"], oldest.as_str());
}

#[tokio::test]
async fn bad_page_parameters_are_refused_naming_them() {
    let server = TestServer::start().await;
    for (query, needle) in [
        ("limit=0", "limit: must be from 1 to 1000"),
        ("limit=1001", "limit: must be from 1 to 1000"),
        ("limit=ten", "limit"),
        ("cursor=nope", "cursor: not a cursor this server gave"),
        ("cursor=", "cursor: not a cursor this server gave"),
        (
            "cursor=bm8gbmV3bGluZQ",
            "cursor: not a cursor this server gave",
        ),
    ] {
        for path in ["/v1/chats", "/v1/searches"] {
            let (status, body) = server.get(&format!("{path}?{query}")).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path}?{query}: {body}");
            let message = body["message"].as_str().unwrap();
            assert!(
                message.starts_with(needle) || message.contains(needle),
                "{path}?{query}: {message}"
            );
        }
    }
}

/// The ids of a whole list's rows.
async fn ids(server: &TestServer, path: &str, key: &str) -> Vec<String> {
    let (status, body) = server.get(path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    assert!(body.get("nextCursor").is_none(), "{path}: a whole list");
    body[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn rows_are_found_by_title_whatever_their_age_a_page_at_a_time() {
    let server = TestServer::start().await;
    let oldest = server
        .new_chat(json!({ "title": "Quarterly Budget Review" }))
        .await;
    let mut numbered = Vec::new();
    for i in 0..30 {
        numbered.push(
            server
                .new_chat(json!({ "title": format!("chat {i}") }))
                .await,
        );
    }
    let odd = server
        .new_chat(json!({ "title": "100% done_now \\ Café" }))
        .await;
    let untitled = server
        .new_search(json!({ "query": "budget forecast" }))
        .await;
    let titled = server
        .new_search(json!({ "title": "Other", "query": "budget ignored" }))
        .await;

    // Case ignored, however old: the oldest chat from a page of one.
    let (_, page) = server.get("/v1/chats?title=budget%20REVIEW&limit=1").await;
    assert_eq!(page["chats"][0]["id"], oldest.as_str(), "{page}");
    assert!(page.get("nextCursor").is_none(), "{page}");
    // In pages, the same rows in the same order as the whole filtered list; newest first.
    let whole = ids(&server, "/v1/chats?title=chat%201", "chats").await;
    let mut expected: Vec<String> = [1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
        .iter()
        .map(|&i| numbered[i].clone())
        .collect();
    expected.reverse();
    assert_eq!(whole, expected);
    for limit in [1, 3, 11, 50] {
        let (paged, pages) = all_pages(&server, "/v1/chats?title=chat%201", "chats", limit).await;
        assert_eq!(paged, expected, "pages of {limit}");
        assert_eq!(pages, 11usize.div_ceil(limit as usize), "{limit}");
    }
    // LIKE's own characters match themselves; text as written always matches.
    for title in ["%25", "_", "%5C", "done_now", "Caf%C3%A9"] {
        let found = ids(&server, &format!("/v1/chats?title={title}"), "chats").await;
        assert_eq!(found, vec![odd.clone()], "{title}");
    }
    assert!(
        ids(&server, "/v1/chats?title=nowhere", "chats")
            .await
            .is_empty()
    );
    // A search without a title is known by its query.
    let found = ids(&server, "/v1/searches?title=Forecast", "searches").await;
    assert_eq!(found, vec![untitled]);
    // A titled one by its title only.
    let found = ids(&server, "/v1/searches?title=other", "searches").await;
    assert_eq!(found, vec![titled]);
    assert!(
        ids(&server, "/v1/searches?title=ignored", "searches")
            .await
            .is_empty()
    );

    for (query, status) in [
        ("title=", StatusCode::BAD_REQUEST),
        ("title=a%00b", StatusCode::BAD_REQUEST),
        (
            &format!("title={}", "a".repeat(501)),
            StatusCode::BAD_REQUEST,
        ),
        (&format!("title={}", "a".repeat(500)), StatusCode::OK),
    ] {
        for path in ["/v1/chats", "/v1/searches"] {
            let (got, body) = server.get(&format!("{path}?{query}")).await;
            assert_eq!(
                got,
                status,
                "{path}?{}: {body}",
                &query[..20.min(query.len())]
            );
            if status == StatusCode::BAD_REQUEST {
                let message = body["message"].as_str().unwrap();
                assert!(message.starts_with("title: must"), "{message}");
            }
        }
    }
}

/// A chat created with `messages` as its transcript.
async fn chat_with(server: &TestServer, title: &str, messages: Value) -> String {
    server
        .new_chat(json!({ "title": title, "messages": messages }))
        .await
}

#[tokio::test]
async fn message_text_is_found_newest_first_a_page_at_a_time() {
    let server = TestServer::start().await;
    let old = chat_with(
        &server,
        "old",
        json!([{ "role": "user", "content": "How do lifetimes work in Rust?" },
               { "role": "assistant", "content": "Lifetimes name how long a reference is valid." }]),
    )
    .await;
    let mid = chat_with(
        &server,
        "mid",
        json!([{ "role": "system", "content": "You know Rust lifetimes well." },
               { "role": "user", "content": "Café au lait, s'il vous plaît" }]),
    )
    .await;
    let new = chat_with(&server, "new", json!([])).await;
    server
        .post(&format!("/v1/chats/{new}/messages"), json!({ "role": "assistant", "content": "More on LIFETIMES: see the book.\n\nAlso   borrowing." }))
        .await;

    let (status, body) = server.get("/v1/message-search?q=lifetimes").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let hits = body["hits"].as_array().unwrap();
    // The system row is not a user's or an assistant's message.
    let found: Vec<(&str, &str)> = hits
        .iter()
        .map(|h| (h["chatId"].as_str().unwrap(), h["role"].as_str().unwrap()))
        .collect();
    assert_eq!(
        found,
        [
            (new.as_str(), "assistant"),
            (old.as_str(), "assistant"),
            (old.as_str(), "user")
        ]
    );
    assert_eq!(hits[0]["chatTitle"], "new");
    assert_eq!(
        hits[0]["snippet"],
        "More on LIFETIMES: see the book. Also borrowing."
    );
    assert!(hits[0]["messageId"].is_string() && hits[0]["createdAt"].is_string());
    assert_eq!(body["nextCursor"], Value::Null);

    // Every word must be there, as a whole word, whatever its case.
    let (_, body) = server.get("/v1/message-search?q=RUST%20lifetimes").await;
    assert_eq!(body["hits"].as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body["hits"][0]["chatId"], old.as_str());
    assert_eq!(body["hits"][0]["role"], "user");
    let (_, body) = server.get("/v1/message-search?q=lifetime").await;
    assert_eq!(body["hits"], json!([]), "not the start of a word");
    let (_, body) = server.get("/v1/message-search?q=lait").await;
    assert_eq!(body["hits"][0]["chatId"], mid.as_str(), "{body}");
    let (_, body) = server.get("/v1/message-search?q=nothing-like-this").await;
    assert_eq!(body, json!({ "hits": [], "nextCursor": null }));

    // Pages of one follow each other to the end.
    let mut seen = Vec::new();
    let mut url = "/v1/message-search?q=lifetimes&limit=1".to_string();
    loop {
        let (status, body) = server.get(&url).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        seen.extend(
            body["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["messageId"].clone()),
        );
        match &body["nextCursor"] {
            Value::String(c) => url = format!("/v1/message-search?q=lifetimes&limit=1&cursor={c}"),
            _ => break,
        }
    }
    let all: Vec<Value> = hits.iter().map(|h| h["messageId"].clone()).collect();
    assert_eq!(seen, all);

    // A deleted chat's messages are found no more.
    server.delete(&format!("/v1/chats/{new}")).await;
    let (_, body) = server.get("/v1/message-search?q=lifetimes").await;
    assert_eq!(body["hits"].as_array().unwrap().len(), 2, "{body}");
}

#[tokio::test]
async fn bad_message_searches_are_refused_naming_the_parameter() {
    let server = TestServer::start().await;
    let long = "a".repeat(201);
    for (query, message) in [
        ("", "q: required, the words to find"),
        ("q=%20%20", "q: required, the words to find"),
        ("q=%21%21%3F", "q: needs a letter or a digit"),
        (&format!("q={long}")[..], "q: at most 200 characters"),
        ("q=a&limit=0", "limit: must be from 1 to 100"),
        ("q=a&limit=101", "limit: must be from 1 to 100"),
        (
            "q=a&cursor=%00",
            "cursor: not a cursor this server gave (use nextCursor)",
        ),
        (
            "q=a&cursor=x%27y",
            "cursor: not a cursor this server gave (use nextCursor)",
        ),
    ] {
        let (status, body) = server.get(&format!("/v1/message-search?{query}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["message"], message, "{query}");
    }
    // Words that look like either index's operators are words.
    for q in [
        "NEAR",
        "a%20OR%20b",
        "%22quoted%22",
        "x%3A*",
        "a%26b%7Cc",
        "NOT%20(x)",
    ] {
        let (status, body) = server.get(&format!("/v1/message-search?q={q}")).await;
        assert_eq!(status, StatusCode::OK, "{q}: {body}");
    }
}

/// A message of distinct words past what a PostgreSQL tsvector holds (1 MB) is stored, and is
/// found by a word near its start, on both stores (PostgreSQL indexes its first 100,000
/// characters).
#[tokio::test]
async fn a_huge_message_of_distinct_words_is_stored_and_found() {
    let server = TestServer::start().await;
    let words: Vec<String> = (0..150_000).map(|i| format!("tok{i:06}x")).collect();
    let content = words.join(" ");
    assert!(content.len() > 1_500_000);
    let chat = server.new_chat(json!({ "title": "a log" })).await;
    let (status, body) = server
        .post(
            &format!("/v1/chats/{chat}/messages"),
            json!({ "role": "user", "content": content }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = server.get("/v1/message-search?q=tok000005x").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["hits"][0]["chatId"], chat.as_str(), "{body}");
}
