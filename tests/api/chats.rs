//! Chats: create, list, read, patch, star, delete, append — every contract rule and 404.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;

#[tokio::test]
async fn create_with_no_body_uses_defaults() {
    let server = TestServer::start().await;
    let (status, body) = server.post_raw("/v1/chats", "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let chat = &body["chat"];
    assert_eq!(chat["title"], Value::Null);
    assert_eq!(chat["starred"], false);
    assert_eq!(chat["starredAt"], Value::Null);
    for field in [
        "initiatedProvider",
        "initiatedModel",
        "lastUsedProvider",
        "lastUsedModel",
        "additionalSystemPrompt",
    ] {
        assert_eq!(chat[field], Value::Null, "{field}");
    }
    // Omitted enabledTools: every available tool.
    assert_eq!(
        chat["enabledTools"],
        json!(["web_search", "fetch_url", "python", "file_search"])
    );
    assert_eq!(chat["createdAt"], chat["updatedAt"]);
    let created = chat["createdAt"].as_str().unwrap();
    assert_eq!(
        created.len(),
        24,
        "ISO 8601 with milliseconds and Z: {created}"
    );
    assert!(created.ends_with('Z'));
}

#[tokio::test]
async fn create_trims_and_blanks_become_null() {
    let server = TestServer::start().await;
    let (_, body) = server
        .post(
            "/v1/chats",
            json!({ "title": "  Trip plans \n", "additionalSystemPrompt": "  Be brief.  " }),
        )
        .await;
    assert_eq!(body["chat"]["title"], "Trip plans");
    assert_eq!(body["chat"]["additionalSystemPrompt"], "Be brief.");
    let (_, body) = server
        .post(
            "/v1/chats",
            json!({ "title": "   ", "additionalSystemPrompt": "\t" }),
        )
        .await;
    assert_eq!(body["chat"]["title"], Value::Null);
    assert_eq!(body["chat"]["additionalSystemPrompt"], Value::Null);
}

#[tokio::test]
async fn provider_and_model_go_together() {
    let server = TestServer::start().await;
    let (status, body) = server
        .post(
            "/v1/chats",
            json!({ "provider": "provider_b", "model": " claude-x " }),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let chat = &body["chat"];
    assert_eq!(chat["initiatedProvider"], "provider_b");
    assert_eq!(chat["initiatedModel"], "claude-x");
    assert_eq!(chat["lastUsedProvider"], "provider_b");
    assert_eq!(chat["lastUsedModel"], "claude-x");

    let before = server.row_counts().await;
    for body in [
        json!({ "provider": "provider_a" }),
        json!({ "model": "m" }),
        json!({ "provider": "provider_a", "model": "  " }),
    ] {
        let (status, err) = server.post("/v1/chats", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            err["message"]
                .as_str()
                .unwrap()
                .contains("provider, model: must be supplied together"),
            "{err}"
        );
    }
    let (status, err) = server
        .post(
            "/v1/chats",
            json!({ "provider": "provider_z", "model": "m" }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("provider: \"provider_z\" is not a provider of this server; it has: provider_a, provider_b, provider_c"),
        "{err}"
    );
    assert_eq!(
        server.row_counts().await,
        before,
        "rejected requests store nothing"
    );
}

#[tokio::test]
async fn enabled_tools_ignore_unknown_names() {
    let server = TestServer::start().await;
    let (_, body) = server
        .post(
            "/v1/chats",
            json!({ "enabledTools": ["fetch_url", "teleport", "fetch_url"] }),
        )
        .await;
    assert_eq!(body["chat"]["enabledTools"], json!(["fetch_url"]));
    let (_, body) = server
        .post("/v1/chats", json!({ "enabledTools": [] }))
        .await;
    assert_eq!(body["chat"]["enabledTools"], json!([]));
    let (status, err) = server
        .post("/v1/chats", json!({ "enabledTools": "web_search" }))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("enabledTools: invalid type"),
        "{err}"
    );
}

#[tokio::test]
async fn initial_transcript_is_stored_in_order() {
    let server = TestServer::start().await;
    let id = server
        .new_chat(json!({ "messages": [
            { "role": "system", "content": "You are terse." },
            { "role": "user", "content": "Hi", "name": "  ada " },
            { "role": "assistant", "content": "Hello." },
            { "role": "tool", "content": "{}" },
        ]}))
        .await;
    let (status, body) = server.get(&format!("/v1/chats/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    let messages = body["chat"]["messages"].as_array().unwrap();
    let roles: Vec<_> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(messages[1]["content"], "Hi");
    assert_eq!(messages[1]["name"], "ada");
    assert_eq!(messages[0]["name"], Value::Null);
    assert_eq!(messages[0]["metadata"], Value::Null);
    assert!(
        messages
            .iter()
            .all(|m| m["id"].is_string() && m["createdAt"].is_string())
    );
    // The detail carries every summary field too.
    assert_eq!(body["chat"]["id"], id.as_str());
    assert_eq!(
        body["chat"]["enabledTools"],
        json!(["web_search", "fetch_url", "python", "file_search"])
    );
}

#[tokio::test]
async fn unknown_roles_and_wrong_types_are_400_naming_the_field() {
    let server = TestServer::start().await;
    let before = server.row_counts().await;
    let cases = [
        (
            json!({ "messages": [{ "role": "user", "content": "a" }, { "role": "robot", "content": "b" }] }),
            "messages[1].role: unknown variant `robot`",
        ),
        (
            json!({ "messages": [{ "role": "user", "content": 5 }] }),
            "messages[0].content: invalid type: integer `5`",
        ),
        (
            json!({ "messages": [{ "role": "user" }] }),
            "messages[0]: missing field `content`",
        ),
        (json!({ "title": 7 }), "title: invalid type"),
        (json!({ "messages": {} }), "messages: invalid type"),
        (json!([]), "request body: must be a JSON object"),
        (json!("text"), "request body: must be a JSON object"),
    ];
    for (body, expected) in cases {
        let (status, err) = server.post("/v1/chats", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let message = err["message"].as_str().unwrap();
        assert!(message.starts_with(expected), "{body} → {message}");
    }
    let (status, err) = server.post_raw("/v1/chats", "{\"title\": ").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("request body is not valid JSON")
    );
    assert_eq!(server.row_counts().await, before);
}

#[tokio::test]
async fn list_is_newest_first() {
    let server = TestServer::start().await;
    let a = server.new_chat(json!({ "title": "a" })).await;
    let b = server.new_chat(json!({ "title": "b" })).await;
    let c = server.new_chat(json!({ "title": "c" })).await;
    // Touch `a`: it becomes the most recently updated.
    let (status, _) = server
        .patch(&format!("/v1/chats/{a}"), json!({ "title": "a2" }))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = server.get("/v1/chats").await;
    let ids: Vec<_> = body["chats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [a.as_str(), c.as_str(), b.as_str()]);
    assert!(
        body["chats"][0].get("messages").is_none(),
        "summaries carry no transcript"
    );
}

#[tokio::test]
async fn patch_rules() {
    let server = TestServer::start().await;
    let id = server
        .new_chat(
            json!({ "title": "t", "additionalSystemPrompt": "p", "enabledTools": ["web_search"] }),
        )
        .await;
    let path = format!("/v1/chats/{id}");
    let (_, original) = server.get(&path).await;

    let (status, body) = server
        .patch(&path, json!({ "title": "  New title  " }))
        .await;
    assert_eq!(status, StatusCode::OK);
    let chat = &body["chat"];
    assert_eq!(chat["title"], "New title");
    // Omitted settings are unchanged.
    assert_eq!(chat["additionalSystemPrompt"], "p");
    assert_eq!(chat["enabledTools"], json!(["web_search"]));
    assert!(chat["updatedAt"].as_str().unwrap() > original["chat"]["updatedAt"].as_str().unwrap());
    assert_eq!(chat["createdAt"], original["chat"]["createdAt"]);

    let (_, body) = server
        .patch(&path, json!({ "additionalSystemPrompt": "  q  " }))
        .await;
    assert_eq!(body["chat"]["additionalSystemPrompt"], "q");
    let (_, body) = server
        .patch(&path, json!({ "additionalSystemPrompt": "   " }))
        .await;
    assert_eq!(body["chat"]["additionalSystemPrompt"], Value::Null);
    server
        .patch(&path, json!({ "additionalSystemPrompt": "r" }))
        .await;
    let (_, body) = server
        .patch(&path, json!({ "additionalSystemPrompt": null }))
        .await;
    assert_eq!(body["chat"]["additionalSystemPrompt"], Value::Null);

    let (_, body) = server
        .patch(
            &path,
            json!({ "enabledTools": ["fetch_url", "nope", "web_search"] }),
        )
        .await;
    assert_eq!(
        body["chat"]["enabledTools"],
        json!(["fetch_url", "web_search"])
    );
    let (_, body) = server.patch(&path, json!({ "enabledTools": [] })).await;
    assert_eq!(body["chat"]["enabledTools"], json!([]));
    assert_eq!(body["chat"]["title"], "New title");

    let before = server.get(&path).await.1;
    for (body, expected) in [
        (
            json!({ "title": "   " }),
            "title: must be a non-blank string",
        ),
        (
            json!({ "title": null }),
            "title: must be a non-blank string",
        ),
        (json!({ "title": ["x"] }), "title: invalid type"),
        (
            json!({ "enabledTools": null }),
            "enabledTools: must be an array",
        ),
        (
            json!({ "enabledTools": [1] }),
            "enabledTools[0]: invalid type",
        ),
        (
            json!({ "additionalSystemPrompt": false }),
            "additionalSystemPrompt: invalid type",
        ),
    ] {
        let (status, err) = server.patch(&path, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            err["message"].as_str().unwrap().starts_with(expected),
            "{body} → {err}"
        );
    }
    assert_eq!(
        server.get(&path).await.1,
        before,
        "rejected patches change nothing"
    );
}

#[tokio::test]
async fn star_and_unstar_leave_updated_at_and_transcript_alone() {
    let server = TestServer::start().await;
    let id = server
        .new_chat(json!({ "messages": [{ "role": "user", "content": "hi" }] }))
        .await;
    let path = format!("/v1/chats/{id}");
    let (_, before) = server.get(&path).await;

    let (status, body) = server
        .patch(&format!("{path}/star"), json!({ "starred": true }))
        .await;
    assert_eq!(status, StatusCode::OK);
    let starred_at = body["chat"]["starredAt"].as_str().unwrap().to_string();
    assert_eq!(body["chat"]["starred"], true);
    assert_eq!(body["chat"]["updatedAt"], before["chat"]["updatedAt"]);
    assert!(starred_at.as_str() >= before["chat"]["createdAt"].as_str().unwrap());

    // Starring again keeps the membership's original time.
    let (_, body) = server
        .patch(&format!("{path}/star"), json!({ "starred": true }))
        .await;
    assert_eq!(body["chat"]["starredAt"], starred_at.as_str());
    let (_, detail) = server.get(&path).await;
    assert_eq!(detail["chat"]["starred"], true);
    assert_eq!(detail["chat"]["starredAt"], starred_at.as_str());
    assert_eq!(detail["chat"]["messages"], before["chat"]["messages"]);
    let (_, list) = server.get("/v1/chats").await;
    assert_eq!(list["chats"][0]["starredAt"], starred_at.as_str());

    let (_, body) = server
        .patch(&format!("{path}/star"), json!({ "starred": false }))
        .await;
    assert_eq!(body["chat"]["starred"], false);
    assert_eq!(body["chat"]["starredAt"], Value::Null);
    assert_eq!(body["chat"]["updatedAt"], before["chat"]["updatedAt"]);

    for body in [
        json!({}),
        json!({ "starred": "yes" }),
        json!({ "starred": null }),
    ] {
        let (status, err) = server.patch(&format!("{path}/star"), body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            err["message"].as_str().unwrap().contains("starred"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn delete_removes_chat_messages_and_star() {
    let server = TestServer::start().await;
    let id = server
        .new_chat(json!({ "messages": [{ "role": "user", "content": "hi" }] }))
        .await;
    server
        .patch(&format!("/v1/chats/{id}/star"), json!({ "starred": true }))
        .await;
    let (status, body) = server.delete(&format!("/v1/chats/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({ "deleted": true }));
    let counts = server.row_counts().await;
    assert!(counts.iter().all(|(_, n)| *n == 0), "{counts:?}");
    let (status, body) = server.delete(&format!("/v1/chats/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, json!({ "message": "chat not found" }));
}

#[tokio::test]
async fn unknown_chat_is_404_everywhere() {
    let server = TestServer::start().await;
    let expected = json!({ "message": "chat not found" });
    let path = "/v1/chats/does-not-exist";
    assert_eq!(
        server.get(path).await,
        (StatusCode::NOT_FOUND, expected.clone())
    );
    assert_eq!(
        server.patch(path, json!({ "title": "x" })).await,
        (StatusCode::NOT_FOUND, expected.clone())
    );
    assert_eq!(
        server
            .patch(&format!("{path}/star"), json!({ "starred": true }))
            .await,
        (StatusCode::NOT_FOUND, expected.clone())
    );
    assert_eq!(
        server.delete(path).await,
        (StatusCode::NOT_FOUND, expected.clone())
    );
    assert_eq!(
        server
            .post(
                &format!("{path}/messages"),
                json!({ "role": "user", "content": "x" })
            )
            .await,
        (StatusCode::NOT_FOUND, expected.clone())
    );
    assert!(server.row_counts().await.iter().all(|(_, n)| *n == 0));
}

#[tokio::test]
async fn a_malformed_id_is_a_json_400() {
    let server = TestServer::start().await;
    // %FF decodes to a byte that is not UTF-8.
    for (path, method) in [
        ("/v1/chats/%FF", "GET"),
        ("/v1/searches/%FF", "GET"),
        ("/api/v1/chats/%FF/star", "PATCH"),
    ] {
        let (status, body) = server
            .request(
                method.parse().unwrap(),
                path,
                Some(json!({ "starred": true })),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{method} {path}");
        assert!(
            body["message"].as_str().unwrap().starts_with("path: "),
            "{body}"
        );
    }
}

#[tokio::test]
async fn bodies_declared_as_something_other_than_json_are_415() {
    let server = TestServer::start().await;
    let chat = server.new_chat(json!({})).await;
    let before = server.row_counts().await;
    // What a cross-site form or fetch without a preflight would send.
    for (content_type, path) in [
        ("text/plain", "/v1/chats".to_string()),
        (
            "application/x-www-form-urlencoded",
            "/v1/searches".to_string(),
        ),
        (
            "multipart/form-data; boundary=x",
            format!("/v1/chats/{chat}/messages"),
        ),
    ] {
        let res = server
            .client
            .post(format!("{}{path}", server.base))
            .header("content-type", content_type)
            .body(r#"{"role":"user","content":"x","title":"x","query":"x"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type}"
        );
        let body: Value = res.json().await.unwrap();
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .starts_with("Content-Type: a request body must be application/json (got "),
            "{body}"
        );
    }
    assert_eq!(server.row_counts().await, before);
    // JSON with parameters or a +json suffix is fine.
    for content_type in [
        "application/json; charset=utf-8",
        "application/merge-patch+json",
    ] {
        let res = server
            .client
            .post(format!("{}/v1/chats", server.base))
            .header("content-type", content_type)
            .body(r#"{"title":"ok"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{content_type}");
    }
}

#[tokio::test]
async fn concurrent_appends_keep_every_message_in_order() {
    let server = TestServer::start().await;
    let chat = server.new_chat(json!({})).await;
    let path = format!("/v1/chats/{chat}/messages");
    let posts =
        (0..24).map(|i| server.post(&path, json!({ "role": "user", "content": format!("m{i}") })));
    let results = futures::future::join_all(posts).await;
    let mut returned = Vec::new();
    for (status, body) in results {
        assert_eq!(status, StatusCode::OK, "{body}");
        returned.push(body["message"]["id"].as_str().unwrap().to_string());
    }
    let (_, detail) = server.get(&format!("/v1/chats/{chat}")).await;
    let stored: Vec<&str> = detail["chat"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(stored.len(), 24);
    let stored_set: std::collections::BTreeSet<&str> = stored.iter().copied().collect();
    let returned_set: std::collections::BTreeSet<&str> =
        returned.iter().map(String::as_str).collect();
    assert_eq!(stored_set.len(), 24, "no message is stored twice");
    assert_eq!(stored_set, returned_set, "every accepted message is stored");
    let created: Vec<&str> = detail["chat"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["createdAt"].as_str().unwrap())
        .collect();
    assert!(
        created.windows(2).all(|w| w[0] <= w[1]),
        "transcript order follows write order: {created:?}"
    );
}

#[tokio::test]
async fn append_message_stores_it_and_bumps_updated_at() {
    let server = TestServer::start().await;
    let id = server
        .new_chat(json!({ "messages": [{ "role": "user", "content": "first" }] }))
        .await;
    let (_, before) = server.get(&format!("/v1/chats/{id}")).await;
    let (status, body) = server
        .post(
            &format!("/v1/chats/{id}/messages"),
            json!({ "role": "assistant", "content": "second", "name": "bot", "metadata": { "source": "import" } }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let message = &body["message"];
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["content"], "second");
    assert_eq!(message["name"], "bot");
    assert_eq!(message["metadata"], json!({ "source": "import" }));

    let (_, after) = server.get(&format!("/v1/chats/{id}")).await;
    let messages = after["chat"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(&messages[1], message);
    assert!(
        after["chat"]["updatedAt"].as_str().unwrap()
            > before["chat"]["updatedAt"].as_str().unwrap()
    );

    for (body, expected) in [
        (
            json!({ "role": "user", "content": "x", "metadata": [1] }),
            "metadata: must be an object or null",
        ),
        (
            json!({ "role": "robot", "content": "x" }),
            "role: unknown variant `robot`",
        ),
        (
            json!({ "content": "x" }),
            "request body: missing field `role`",
        ),
    ] {
        let (status, err) = server
            .post(&format!("/v1/chats/{id}/messages"), body.clone())
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            err["message"].as_str().unwrap().starts_with(expected),
            "{body} → {err}"
        );
    }
    assert_eq!(
        server.get(&format!("/v1/chats/{id}")).await.1["chat"]["messages"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn a_patch_that_changes_nothing_writes_nothing() {
    let server = TestServer::start().await;
    let (_, created) = server.post("/v1/chats", json!({"title": "t"})).await;
    let id = created["chat"]["id"].as_str().unwrap();
    for body in [None, Some(json!({}))] {
        let (status, patched) = server
            .request(reqwest::Method::PATCH, &format!("/v1/chats/{id}"), body)
            .await;
        assert_eq!(status, StatusCode::OK, "{patched}");
        assert_eq!(patched["chat"], created["chat"], "updatedAt stays");
    }
    let (status, _) = server
        .patch("/v1/chats/01a20c76-0000-7000-8000-000000000000", json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_body_of_white_space_is_not_json_but_an_empty_one_is_an_empty_object() {
    let server = TestServer::start().await;
    let (status, error) = server.post_raw("/v1/chats", "\n").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error["message"],
        "request body is not valid JSON: it holds only white space"
    );
    let (status, _) = server.post_raw("/v1/chats", "").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn whole_numbers_written_as_floats_are_whole_numbers() {
    let server = TestServer::start().await;
    let chat = server.new_chat(json!({})).await;
    let (status, message) = server
        .post(
            &format!("/v1/chats/{chat}/messages"),
            json!({"role": "user", "content": "x",
                "attachments": [{"kind": "text", "text": "hello", "sizeBytes": 5.0}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{message}");
    assert_eq!(
        message["message"]["metadata"]["attachments"][0]["sizeBytes"],
        5
    );
    let (status, error) = server
        .post(
            &format!("/v1/chats/{chat}/messages"),
            json!({"role": "user", "content": "x",
                "attachments": [{"kind": "text", "text": "hello", "sizeBytes": 5.5}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // (serde reads a tagged attachment whole, so the path stops at the attachment.)
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "attachments[0]: invalid value: floating point `5.5`, expected a whole number"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn data_survives_a_restart() {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let server = TestServer::start_with(crate::support::Options {
        token: None,
        dir: Some(dir.clone()),
        ..crate::support::Options::default()
    })
    .await;
    let chat = server
        .new_chat(json!({ "title": "kept", "provider": "provider_c", "model": "grok", "additionalSystemPrompt": "p",
            "messages": [{ "role": "user", "content": "hello", "attachments": [{ "kind": "text", "text": "t" }] }] }))
        .await;
    server
        .post(
            &format!("/v1/chats/{chat}/messages"),
            json!({ "role": "assistant", "content": "hi" }),
        )
        .await;
    server
        .patch(
            &format!("/v1/chats/{chat}/star"),
            json!({ "starred": true }),
        )
        .await;
    let search = server.new_search(json!({ "query": "persisted" })).await;
    server
        .patch(
            &format!("/v1/searches/{search}/star"),
            json!({ "starred": true }),
        )
        .await;
    let paths = [
        format!("/v1/chats/{chat}"),
        format!("/v1/searches/{search}"),
        "/v1/chats".into(),
        "/v1/searches".into(),
        "/v1/workspace-items".into(),
    ];
    let mut before = Vec::new();
    for path in &paths {
        before.push(server.get(path).await);
    }
    server.stop().await;

    let server = TestServer::start_with(crate::support::Options {
        token: None,
        dir: Some(dir.clone()),
        ..crate::support::Options::default()
    })
    .await;
    for (path, expected) in paths.iter().zip(before) {
        assert_eq!(server.get(path).await, expected, "{path}");
    }
    assert_eq!(
        server.get(&format!("/v1/chats/{chat}")).await.1["chat"]["messages"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// PostgreSQL's TEXT cannot hold U+0000; a client may send it in any string, and gets it back.
#[tokio::test]
async fn text_with_nul_characters_comes_back_as_sent() {
    let server = TestServer::start().await;
    let odd = "a\u{0}b \u{10FFFF}\u{0}0 \u{10FFFF}\u{10FFFF}";
    let chat = server
        .new_chat(json!({"title": odd, "additionalSystemPrompt": odd,
            "messages": [{"role": "user", "content": odd, "name": odd}]}))
        .await;
    let (_, got) = server.get(&format!("/v1/chats/{chat}")).await;
    assert_eq!(got["chat"]["title"], odd);
    assert_eq!(got["chat"]["additionalSystemPrompt"], odd);
    assert_eq!(got["chat"]["messages"][0]["content"], odd);
    assert_eq!(got["chat"]["messages"][0]["name"], odd);
    let search = server.new_search(json!({"query": odd, "title": odd})).await;
    let (_, got) = server.get(&format!("/v1/searches/{search}")).await;
    assert_eq!(got["search"]["query"], odd);
    assert_eq!(got["search"]["title"], odd);
    let (status, reused) = server
        .post("/v1/searches", json!({"query": odd, "reuseByQuery": true}))
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{reused}");
    assert_eq!(reused["search"]["id"], search.as_str());
}
