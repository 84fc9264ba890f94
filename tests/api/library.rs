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
    let (status, empty) = call(&server, &key, Method::GET, "/v1/files?collection=", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{empty}");
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
    let mut db = server.raw_db().await;
    let chunks: Vec<(i64,)> = db
        .rows(
            "SELECT COUNT(*) FROM library_chunks WHERE file_id = ?",
            &[&id],
        )
        .await;
    assert_eq!(chunks, [(0,)]);
    if !crate::support::on_postgres() {
        // The FTS5 index holds exactly the chunks there are (an error here otherwise).
        db.execute(
            "INSERT INTO library_chunks_fts (library_chunks_fts) VALUES ('integrity-check')",
            &[],
        )
        .await;
    }
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
            "file: type \"image/png\" is not one the library takes",
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
            "\"other\": unknown field",
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
    // The same bytes again: the same file, read again (and failing again, for the same reason).
    let (status, again) = upload(
        &server,
        &key,
        "again.txt",
        None,
        b"PK\x03\x04\x14\0\0\0".to_vec(),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        (again["id"].as_str(), again["status"].as_str()),
        (Some(ids[0].as_str()), Some("processing"))
    );
    assert_eq!(again["name"], "binary.txt");
    let failed = settled(&server, &key, &ids[0]).await;
    assert!(
        failed["error"].as_str().unwrap().contains("NUL byte"),
        "{failed}"
    );
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

/// The top passage `file_search` finds for `query`, with `key`.
async fn top(server: &TestServer, key: &str, query: &str) -> Value {
    let found = file_search(server, key, json!({ "query": query }))
        .await
        .unwrap();
    assert!(!found.is_empty(), "{query}: nothing found");
    found[0].clone()
}

#[tokio::test]
async fn each_format_is_read_in_the_sandbox_and_pdf_pages_are_kept() {
    use crate::documents::{docx, pdf, xlsx};
    let server = token_server().await;
    let (_, key) = add_person(&server, "ann", "member").await;
    let html = "<html><head><title>Menu</title><script>var s = 'scriptword';</script></head>\
                <body><h1>Cafeteria</h1><p>The lunch voucher code is LN-9902.</p></body></html>";
    let files: [(&str, Vec<u8>); 6] = [
        (
            "report.pdf",
            pdf(&[
                "Introduction to the annual report",
                "The travel reimbursement code is QX-5521",
                "Closing remarks",
            ]),
        ),
        (
            "memo.docx",
            docx(&[
                "Memo about parking",
                "Parking permits use the code PK-7730 & more",
            ]),
        ),
        (
            "codes.xlsx",
            xlsx(
                "Regions",
                &[vec!["Region", "Code"], vec!["North", "NR-4410"]],
            ),
        ),
        ("menu.html", html.as_bytes().to_vec()),
        ("cities.csv", b"city,code\nLisbon,LS-1203\n".to_vec()),
        (
            // A character reference to U+0000, which PostgreSQL's text cannot hold.
            "nul.docx",
            crate::documents::docx_of(
                br#"<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Null&#0;byte code NB-6060</w:t></w:r></w:p></w:body></w:document>"#
                    .to_vec(),
            ),
        ),
    ];
    let mut ids = Vec::new();
    for (name, bytes) in files {
        let (status, file) = upload(&server, &key, name, None, bytes, None).await;
        assert_eq!(status, StatusCode::CREATED, "{file}");
        ids.push(file["id"].as_str().unwrap().to_string());
    }
    for id in &ids {
        let file = settled(&server, &key, id).await;
        assert_eq!(file["status"], "ready", "{file}");
    }
    let report = settled(&server, &key, &ids[0]).await;
    assert_eq!(
        (report["pages"].clone(), report["chunks"].clone()),
        (json!(3), json!(3))
    );

    let found = top(&server, &key, "QX-5521").await;
    assert_eq!(
        (found["name"].as_str(), found["page"].as_i64()),
        (Some("report.pdf"), Some(2))
    );
    assert_eq!(found["chunk"], 1);
    let found = top(&server, &key, "PK-7730").await;
    assert_eq!(found["name"], "memo.docx");
    assert!(found.get("page").is_none(), "{found}");
    assert!(
        found["text"].as_str().unwrap().contains("PK-7730 & more"),
        "{found}"
    );
    let found = top(&server, &key, "NR-4410").await;
    assert_eq!(found["name"], "codes.xlsx");
    assert!(
        found["text"].as_str().unwrap().contains("North | NR-4410"),
        "{found}"
    );
    let found = top(&server, &key, "LN-9902").await;
    assert_eq!(found["name"], "menu.html");
    assert!(
        !found["text"].as_str().unwrap().contains("scriptword"),
        "{found}"
    );
    assert!(
        file_search(&server, &key, json!({"query": "scriptword"}))
            .await
            .unwrap()
            .is_empty()
    );
    let found = top(&server, &key, "LS-1203").await;
    assert_eq!(found["name"], "cities.csv");
    let found = top(&server, &key, "NB-6060").await;
    assert_eq!(found["name"], "nul.docx");
    assert!(
        found["text"].as_str().unwrap().contains("Null byte code"),
        "{found}"
    );
    server.stop().await;
}

/// Hostile files (a PDF whose page expands to 2 GiB, a DOCX zip bomb of 1 GiB, structures
/// nested 10,000 deep, a file that is not what its name says) each end alone, while a good file
/// uploaded after them is read and the server goes on answering.
#[tokio::test]
async fn hostile_files_fail_alone_while_other_work_goes_on() {
    use crate::documents::{docx, docx_bomb, pdf_bomb, pdf_nested};
    let server = token_server().await;
    let (_, key) = add_person(&server, "ann", "member").await;
    let nested_html = format!("{}deep{}", "<div>".repeat(10_000), "</div>".repeat(10_000));
    let nested_docx = format!(
        r#"<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{}<w:p><w:r><w:t>deepest</w:t></w:r></w:p>{}</w:body></w:document>"#,
        "<w:sdt><w:sdtContent>".repeat(10_000),
        "</w:sdtContent></w:sdt>".repeat(10_000)
    );
    let hostile: [(&str, Vec<u8>, Option<&str>); 6] = [
        ("bomb.pdf", pdf_bomb(2048), Some("expands past 64 MiB")),
        ("bomb.docx", docx_bomb(1024), Some("expands past 64 MiB")),
        ("nested.pdf", pdf_nested(10_000), None),
        ("nested.html", nested_html.into_bytes(), None),
        (
            "nested.docx",
            crate::documents::docx_of(nested_docx.into_bytes()),
            None,
        ),
        (
            "photo.pdf",
            crate::support::png_bytes(2048),
            Some("not a PDF file"),
        ),
    ];
    let started = Instant::now();
    let mut ids = Vec::new();
    for (name, bytes, _) in &hostile {
        assert!(bytes.len() < 4 << 20, "{name}: {} bytes", bytes.len());
        let (status, file) = upload(&server, &key, name, None, bytes.clone(), None).await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {file}");
        ids.push(file["id"].as_str().unwrap().to_string());
    }
    let (status, good) = upload(
        &server,
        &key,
        "good.docx",
        None,
        docx(&["After the storm, the harbour code is HB-3308"]),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    // The server answers while they are worked on.
    let (status, _) = call(&server, &key, Method::POST, "/v1/chats", Some(json!({}))).await;
    assert_eq!(status, StatusCode::OK);
    for ((name, _, error), id) in hostile.iter().zip(&ids) {
        let file = settled(&server, &key, id).await;
        match error {
            Some(error) => {
                assert_eq!(file["status"], "failed", "{name}: {file}");
                let said = file["error"].as_str().unwrap();
                assert!(said.contains(error), "{name}: {said}");
            }
            // Read, or refused with a reason: never a harm to anything else.
            None if file["status"] == "failed" => {
                assert!(
                    !file["error"].as_str().unwrap().is_empty(),
                    "{name}: {file}"
                );
            }
            None => assert_eq!(file["status"], "ready", "{name}: {file}"),
        }
        eprintln!("{name}: {} {}", file["status"], file["error"]);
    }
    let good = settled(&server, &key, good["id"].as_str().unwrap()).await;
    assert_eq!(good["status"], "ready", "{good}");
    assert_eq!(top(&server, &key, "HB-3308").await["name"], "good.docx");
    eprintln!("all ended in {:?}", started.elapsed());
    server.stop().await;
}

/// The model calls `file_search` in the tool loop (provider_c's wire): the passages with their
/// file and page go back to it, and the tool message keeps them.
#[tokio::test]
async fn the_model_searches_the_library_in_the_tool_loop() {
    use chatd::plugins::testing::{Reply, ScriptedUpstream};
    const TOOL_STREAM: &str = include_str!(
        "../fixtures/upstream/openai_chat/01_stream_tool_call_include_usage.response.sse"
    );
    let call_stream = TOOL_STREAM
        .replace("get_capital", "file_search")
        .replace(r#""arguments":"country""#, r#""arguments":"query""#)
        .replace(r#""arguments":"UK""#, r#""arguments":"QX-5521""#);
    let upstream = ScriptedUpstream::start([
        (crate::completions::ROUTE, Reply::sse(&call_stream)),
        (
            crate::completions::ROUTE,
            Reply::sse(crate::completions::TEXT_STREAM),
        ),
    ])
    .await;
    let server = crate::live_replies::server(
        crate::live_replies::C,
        &upstream,
        crate::support::Options {
            token: Some(crate::people::TOKEN.into()),
            ..Default::default()
        },
    )
    .await;
    let key = crate::people::TOKEN;
    let report = crate::documents::pdf(&["Cover", "The travel reimbursement code is QX-5521"]);
    let (_, file) = upload(&server, key, "report.pdf", None, report, None).await;
    settled(&server, key, file["id"].as_str().unwrap()).await;
    let chat_id = server.new_chat(json!({})).await;
    let mut stream = server
        .stream(crate::completions::body(
            Some(&chat_id),
            json!([{"role": "user", "content": "What is the reimbursement code?"}]),
        ))
        .await;
    stream.expect("meta").await;
    let called = stream.expect("tool_call").await;
    assert_eq!(called.data["name"], "file_search");
    let completed = stream.expect("tool_call").await;
    assert_eq!(completed.data["status"], "completed", "{}", completed.data);
    let rest = stream.rest().await;
    assert_eq!(rest.last().unwrap().name, "done");
    // Round two carried the passage, named by file and page.
    let sent: Vec<Value> = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == "/chat/completions")
        .map(|r| r.json())
        .collect();
    let offered: Vec<&str> = sent[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"file_search"), "{offered:?}");
    let messages = sent[1]["messages"].as_array().unwrap();
    let result: Value =
        serde_json::from_str(messages.last().unwrap()["content"].as_str().unwrap()).unwrap();
    let passage = &result["passages"][0];
    assert_eq!(
        (passage["name"].as_str(), passage["page"].as_i64()),
        (Some("report.pdf"), Some(2))
    );
    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    let tool = &chat["chat"]["messages"][1];
    assert_eq!(tool["name"], "file_search");
    assert!(
        tool["content"].as_str().unwrap().contains("QX-5521"),
        "{tool}"
    );
    server.stop().await;
}
