//! Each person's library (docs/files.md): uploads as a client sends them (multipart), the
//! refusals at upload, files whose content is not what they say failing alone, processing to
//! `ready`, the keyword search through the `file_search` tool (over `/mcp`, as an agent calls
//! it), the original served back, and deletion taking the chunks with the file.

use std::time::{Duration, Instant};

use reqwest::multipart::{Form, Part};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::people::{add_person, call, second_instance, token_server};
use crate::support::TestServer;

/// Uploads `bytes` as `name` (declared `mime` when given) with `key`: status and body.
pub async fn upload(
    server: &TestServer,
    key: &str,
    name: &str,
    mime: Option<&str>,
    bytes: Vec<u8>,
    collection: Option<&str>,
) -> (StatusCode, Value) {
    let mut part = Part::bytes(bytes).file_name(name.to_string());
    if let Some(mime) = mime {
        part = part.mime_str(mime).unwrap();
    }
    let mut form = Form::new().part("file", part);
    if let Some(collection) = collection {
        form = form.text("collection", collection.to_string());
    }
    send(server, key, form).await
}

async fn send(server: &TestServer, key: &str, form: Form) -> (StatusCode, Value) {
    let res = server
        .client
        .post(format!("{}/v1/files", server.base))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("{status}: {text}")),
    )
}

/// Waits until file `id` is no longer `processing` (at most 20 s): the file as it ends.
pub async fn settled(server: &TestServer, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, file) = call(server, key, Method::GET, &format!("/v1/files/{id}"), None).await;
        assert_eq!(status, StatusCode::OK, "{file}");
        if file["status"] != "processing" {
            return file;
        }
        assert!(Instant::now() < deadline, "still processing: {file}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `file_search` called over `/mcp` with `key`: the passages, or the tool's error text.
pub async fn file_search(
    server: &TestServer,
    key: &str,
    arguments: Value,
) -> Result<Vec<Value>, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "file_search", "arguments": arguments}});
    let res = server
        .client
        .post(format!("{}/mcp", server.base))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let answer: Value = res.json().await.unwrap();
    let result = &answer["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    if result["isError"] == true {
        return Err(text.to_string());
    }
    let found: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("{answer}"));
    Ok(found["passages"].as_array().unwrap().clone())
}

fn names(passages: &[Value]) -> Vec<&str> {
    passages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect()
}

const HANDBOOK: &str = "# Travel handbook\n\nEmployees who travel abroad are reimbursed for \
    lodging within ten business days.\n\nThe reimbursement form is TRV-2291. Receipts must be \
    scanned.\n\nMeals are paid by a daily allowance.";

#[tokio::test]
async fn files_are_added_processed_searched_served_and_deleted() {
    let server = token_server().await;
    let (_, key) = add_person(&server, "ann", "member").await;
    let (status, file) = upload(
        &server,
        &key,
        "handbook.md",
        Some("text/markdown"),
        HANDBOOK.into(),
        Some("policies"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{file}");
    let id = file["id"].as_str().unwrap().to_string();
    assert_eq!(file["name"], "handbook.md");
    assert_eq!(file["mimeType"], "text/markdown");
    assert_eq!(file["sizeBytes"], HANDBOOK.len());
    assert_eq!(file["collection"], "policies");
    assert!(file["createdAt"].as_str().unwrap().ends_with('Z'));
    let ready = settled(&server, &key, &id).await;
    assert_eq!(ready["status"], "ready", "{ready}");
    assert_eq!(ready["chunks"], 1);
    assert!(ready.get("pages").is_none() && ready.get("error").is_none());

    // The same bytes again, under another name and with no type: the same file.
    let (status, again) = upload(&server, &key, "copy.txt", None, HANDBOOK.into(), None).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], id.as_str());

    // Another file, found by its name's ending, in no collection.
    let notes = "Quarterly numbers: the Lisbon office code is LX-8812. Revenue rose.";
    let (status, other) = upload(&server, &key, "notes.TXT", None, notes.into(), None).await;
    assert_eq!(status, StatusCode::CREATED, "{other}");
    assert_eq!(other["mimeType"], "text/plain");
    assert_eq!(other["collection"], Value::Null);
    let other_id = other["id"].as_str().unwrap().to_string();
    settled(&server, &key, &other_id).await;

    let (status, listed) = call(&server, &key, Method::GET, "/v1/files", None).await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&str> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [other_id.as_str(), id.as_str()], "newest first");
    let (_, only) = call(
        &server,
        &key,
        Method::GET,
        "/v1/files?collection=policies",
        None,
    )
    .await;
    assert_eq!(only["files"].as_array().unwrap().len(), 1, "{only}");
    assert_eq!(only["files"][0]["id"], id.as_str());

    // The tool is offered, and finds by words (stemmed) and by exact codes.
    let (_, tools) = call(&server, &key, Method::GET, "/v1/chat-tools", None).await;
    assert!(tools.to_string().contains("\"file_search\""), "{tools}");
    let found = file_search(
        &server,
        &key,
        json!({"query": "how are lodging costs reimbursed?"}),
    )
    .await
    .unwrap();
    assert_eq!(names(&found), ["handbook.md"]);
    assert_eq!(found[0]["fileId"], id.as_str());
    assert_eq!(found[0]["chunk"], 0);
    assert!(found[0]["text"].as_str().unwrap().contains("TRV-2291"));
    assert!(found[0].get("page").is_none());
    let found = file_search(&server, &key, json!({"query": "LX-8812"}))
        .await
        .unwrap();
    assert_eq!(names(&found)[0], "notes.TXT", "{found:?}");
    // Narrowed by collection and by ids.
    let found = file_search(
        &server,
        &key,
        json!({"query": "LX-8812 reimbursed", "collection": "policies"}),
    )
    .await
    .unwrap();
    assert_eq!(names(&found), ["handbook.md"]);
    let found = file_search(
        &server,
        &key,
        json!({"query": "LX-8812 reimbursed", "fileIds": [other_id]}),
    )
    .await
    .unwrap();
    assert_eq!(names(&found), ["notes.TXT"]);
    let error = file_search(&server, &key, json!({"query": "q", "k": 1}))
        .await
        .unwrap_err();
    assert!(error.contains("k: unknown field"), "{error}");

    // The original, as an attachment that runs nothing.
    let res = server
        .client
        .get(format!("{}/v1/files/{id}/content", server.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let headers = res.headers().clone();
    assert_eq!(headers["content-type"], "text/markdown");
    assert!(
        headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment; filename=\"handbook.md\"")
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(res.bytes().await.unwrap(), HANDBOOK.as_bytes());

    // Deleted: gone, with its chunks (no longer found).
    let path = format!("/v1/files/{id}");
    let (status, deleted) = call(&server, &key, Method::DELETE, &path, None).await;
    assert_eq!(
        (status, deleted),
        (StatusCode::OK, json!({"deleted": true}))
    );
    for path in [path.clone(), format!("{path}/content")] {
        let (status, body) = call(&server, &key, Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(body["message"], "file not found");
    }
    let (status, _) = call(&server, &key, Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let found = file_search(&server, &key, json!({"query": "lodging reimbursed TRV"}))
        .await
        .unwrap();
    assert!(found.is_empty(), "{found:?}");
    let chunks: Vec<(i64,)> = server
        .raw_db()
        .await
        .rows(
            "SELECT COUNT(*) FROM library_chunks WHERE file_id = ?",
            &[&id],
        )
        .await;
    assert_eq!(chunks, [(0,)]);
    server.stop().await;
}

#[tokio::test]
async fn uploads_are_refused_only_for_size_type_and_form_and_bad_content_fails_alone() {
    let server = token_server().await;
    let (_, key) = add_person(&server, "ann", "member").await;
    let refusals = [
        (
            upload(&server, &key, "a.png", Some("image/png"), vec![1; 10], None).await,
            StatusCode::BAD_REQUEST,
            "file: type image/png is not one the library takes",
        ),
        (
            upload(&server, &key, "a.zip", None, vec![1; 10], None).await,
            StatusCode::BAD_REQUEST,
            "file: type (none",
        ),
        (
            upload(
                &server,
                &key,
                "big.txt",
                None,
                vec![b'a'; (25 << 20) + 1],
                None,
            )
            .await,
            StatusCode::PAYLOAD_TOO_LARGE,
            "file: must be at most 25 MiB",
        ),
        (
            upload(&server, &key, "a.txt", None, b"x".to_vec(), Some("  ")).await,
            StatusCode::BAD_REQUEST,
            "collection: must be a non-blank string",
        ),
        (
            send(&server, &key, Form::new().text("collection", "c")).await,
            StatusCode::BAD_REQUEST,
            "file: required",
        ),
        (
            send(&server, &key, Form::new().text("other", "c")).await,
            StatusCode::BAD_REQUEST,
            "other: unknown field",
        ),
        (
            call(
                &server,
                &key,
                Method::POST,
                "/v1/files",
                Some(json!({"file": "x"})),
            )
            .await,
            StatusCode::BAD_REQUEST,
            "body: must be multipart/form-data",
        ),
    ];
    for ((status, body), want, message) in refusals {
        assert_eq!(status, want, "{body}");
        assert!(
            body["message"].as_str().unwrap().starts_with(message),
            "{body}"
        );
    }
    let (_, listed) = call(&server, &key, Method::GET, "/v1/files", None).await;
    assert_eq!(listed["files"], json!([]), "nothing refused was kept");

    // Content that is not what it says is accepted, then fails with its reason; a good file
    // uploaded after it is ready.
    let mut ids = Vec::new();
    for (name, bytes) in [
        ("binary.txt", b"PK\x03\x04\x14\0\0\0".to_vec()),
        ("latin1.csv", b"caf\xe9;1\n".to_vec()),
        ("good.txt", b"plain words".to_vec()),
    ] {
        let (status, file) = upload(&server, &key, name, None, bytes, None).await;
        assert_eq!(status, StatusCode::CREATED, "{file}");
        ids.push(file["id"].as_str().unwrap().to_string());
    }
    let binary = settled(&server, &key, &ids[0]).await;
    assert_eq!(binary["status"], "failed");
    assert!(
        binary["error"].as_str().unwrap().contains("NUL byte"),
        "{binary}"
    );
    let latin1 = settled(&server, &key, &ids[1]).await;
    assert!(
        latin1["error"].as_str().unwrap().contains("not UTF-8 text"),
        "{latin1}"
    );
    assert_eq!(settled(&server, &key, &ids[2]).await["status"], "ready");
    server.stop().await;
}

/// A file left `processing` by an instance that is gone is taken over: on SQLite by the next
/// start, on PostgreSQL by another instance once the first's lease ran out (here: it left).
#[tokio::test]
async fn a_file_left_processing_is_taken_over() {
    let server = token_server().await;
    let (_, key) = add_person(&server, "ann", "member").await;
    let (status, file) = upload(&server, &key, "a.txt", None, b"taken over".to_vec(), None).await;
    assert_eq!(status, StatusCode::CREATED);
    let id = file["id"].as_str().unwrap().to_string();
    settled(&server, &key, &id).await;
    // As if an instance took it and stopped: processing, held by an instance that is no more.
    let mut db = server.raw_db().await;
    db.execute(
        "UPDATE library_files SET status = 'processing', chunks = NULL, \
         leased_by = 'gone-instance' WHERE id = ?",
        &[&id],
    )
    .await;
    db.execute("DELETE FROM library_chunks WHERE file_id = ?", &[&id])
        .await;
    let server = match second_instance(&server).await {
        Some(second) => second,
        None => {
            let dir = server.dir.clone();
            server.stop().await;
            crate::support::TestServer::start_with(crate::support::Options {
                token: Some(crate::people::TOKEN.into()),
                dir: Some(dir),
                ..Default::default()
            })
            .await
        }
    };
    let ready = settled(&server, &key, &id).await;
    assert_eq!(ready["status"], "ready", "{ready}");
    assert_eq!(ready["chunks"], 1);
    let found = file_search(&server, &key, json!({"query": "taken"}))
        .await
        .unwrap();
    assert_eq!(names(&found), ["a.txt"]);
}
