//! Health, session, active runs, and the combined workspace list (ordering, shapes, caps).

use chatd::runs::RunKind;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;

#[tokio::test]
async fn health_session_and_active_runs() {
    let server = TestServer::start().await;
    for prefix in ["", "/api"] {
        assert_eq!(
            server.get(&format!("{prefix}/health")).await,
            (StatusCode::OK, json!({ "ok": true }))
        );
        assert_eq!(
            server.get(&format!("{prefix}/v1/auth/session")).await,
            (
                StatusCode::OK,
                json!({ "authenticated": true, "mode": "open" })
            )
        );
        assert_eq!(
            server.get(&format!("{prefix}/v1/active-runs")).await,
            (StatusCode::OK, json!({ "chats": [], "searches": [] }))
        );
    }
    let chat = server.new_chat(json!({})).await;
    let _run = server.state.runs.start(RunKind::Chat, &chat).await.unwrap();
    assert_eq!(
        server.get("/v1/active-runs").await.1,
        json!({ "chats": [chat], "searches": [] })
    );
}

#[tokio::test]
async fn api_prefix_serves_the_same_routes() {
    let server = TestServer::start().await;
    let id = server.new_chat(json!({ "title": "via root" })).await;
    let (status, body) = server.get(&format!("/api/v1/chats/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["chat"]["title"], "via root");
    let (status, body) = server
        .post("/api/v1/searches", json!({ "query": "q" }))
        .await;
    assert_eq!(status, StatusCode::OK);
    let search = body["search"]["id"].as_str().unwrap();
    assert_eq!(
        server.get(&format!("/v1/searches/{search}")).await.0,
        StatusCode::OK
    );
    assert_eq!(
        server.get("/api/v1/chats/nope").await,
        (
            StatusCode::NOT_FOUND,
            json!({ "message": "chat not found" })
        )
    );
    let (status, body) = server.get("/api/v1/nothing-here").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["message"].is_string());
    let (status, body) = server
        .request(reqwest::Method::PUT, "/v1/chats", None)
        .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(body["message"].is_string());
}

#[tokio::test]
async fn items_mix_chats_and_searches_newest_first() {
    let server = TestServer::start().await;
    let c1 = server
        .new_chat(json!({ "title": "c1", "provider": "provider_a", "model": "m" }))
        .await;
    let s1 = server.new_search(json!({ "query": "s1" })).await;
    let c2 = server.new_chat(json!({ "title": "c2" })).await;
    let s2 = server.new_search(json!({ "title": "s2" })).await;
    // Updating c1 moves it to the front; starring s1 does not move it.
    server
        .post(
            &format!("/v1/chats/{c1}/messages"),
            json!({ "role": "user", "content": "again" }),
        )
        .await;
    server
        .patch(
            &format!("/v1/searches/{s1}/star"),
            json!({ "starred": true }),
        )
        .await;

    let (status, body) = server.get("/v1/workspace-items").await;
    assert_eq!(status, StatusCode::OK);
    let items = body["items"].as_array().unwrap();
    let order: Vec<(&str, &str)> = items
        .iter()
        .map(|i| (i["type"].as_str().unwrap(), i["id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        order,
        [
            ("chat", c1.as_str()),
            ("search", s2.as_str()),
            ("chat", c2.as_str()),
            ("search", s1.as_str())
        ]
    );
    let updated: Vec<&str> = items
        .iter()
        .map(|i| i["updatedAt"].as_str().unwrap())
        .collect();
    assert!(updated.windows(2).all(|w| w[0] >= w[1]), "{updated:?}");

    // Each item has exactly the contract's fields for its type.
    let keys = |item: &Value| {
        let mut k: Vec<String> = item.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let mut chat_keys = vec![
        "type",
        "id",
        "title",
        "createdAt",
        "updatedAt",
        "starred",
        "starredAt",
        "initiatedProvider",
        "initiatedModel",
        "lastUsedProvider",
        "lastUsedModel",
        "additionalSystemPrompt",
        "enabledTools",
    ];
    chat_keys.sort();
    let mut search_keys = vec![
        "type",
        "id",
        "title",
        "query",
        "createdAt",
        "updatedAt",
        "starred",
        "starredAt",
    ];
    search_keys.sort();
    assert_eq!(keys(&items[0]), chat_keys);
    assert_eq!(keys(&items[1]), search_keys);
    assert_eq!(items[0]["initiatedProvider"], "provider_a");
    assert_eq!(items[3]["starred"], true);
    assert!(items[3]["starredAt"].is_string());
}

#[tokio::test]
async fn items_are_capped_at_100_of_each() {
    let server = TestServer::start().await;
    let mut chats = Vec::new();
    let mut searches = Vec::new();
    for i in 0..101 {
        chats.push(server.new_chat(json!({ "title": format!("c{i}") })).await);
        searches.push(server.new_search(json!({ "query": format!("s{i}") })).await);
    }
    let (_, body) = server.get("/v1/workspace-items").await;
    let items = body["items"].as_array().unwrap();
    assert_eq!(items.len(), 200);
    let count = |kind: &str| items.iter().filter(|i| i["type"] == kind).count();
    assert_eq!((count("chat"), count("search")), (100, 100));
    let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert!(
        !ids.contains(&chats[0].as_str()),
        "the oldest chat is left out"
    );
    assert!(
        !ids.contains(&searches[0].as_str()),
        "the oldest search is left out"
    );
    assert_eq!(ids[0], searches[100].as_str());
    assert_eq!(ids[1], chats[100].as_str());
    // The separate lists are not capped.
    assert_eq!(
        server.get("/v1/chats").await.1["chats"]
            .as_array()
            .unwrap()
            .len(),
        101
    );
    assert_eq!(
        server.get("/v1/searches").await.1["searches"]
            .as_array()
            .unwrap()
            .len(),
        101
    );
}
