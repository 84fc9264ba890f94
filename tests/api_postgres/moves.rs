//! Moving a deployment from SQLite to PostgreSQL with chatd itself, black-box: chats (with an
//! attachment and a reply), a search with results and an answer, stars, calls and a library
//! file made on an SQLite server are exported (`chatd export`, while it serves), imported into a new PostgreSQL
//! database (`chatd import`), and read back identical through the API. An import that meets an
//! id the database has stops with nothing stored.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use chatd::config::DatabaseUrl;
use chatd::plugins::testing::{Reply, ScriptedUpstream};
use serde_json::{Value, json};

use crate::completions::{ROUTE, TEXT_STREAM};
use crate::instances::Instance;
use crate::search_runs::{exa_answer, exa_results};
use crate::support::{data_url, plugin_cache_dir, png_bytes, test_database};

const BIN: &str = env!("CARGO_BIN_EXE_chatd");

/// `chatd ARGS` in `dir` with only `env`; its output.
fn chatd(dir: &Path, env: &[(&str, &str)], args: &[&str], stdin: Option<&Path>) -> Output {
    Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .args(args)
        .current_dir(dir)
        .stdin(stdin.map_or(Stdio::null(), |p| std::fs::File::open(p).unwrap().into()))
        .output()
        .expect("run chatd")
}

/// What a client reads of every chat and search.
async fn read_all(instance: &Instance) -> Value {
    let mut all = json!({
        "chats": instance.get("/v1/chats").await,
        "searches": instance.get("/v1/searches").await,
        "files": instance.get("/v1/files").await,
    });
    let mut details = Vec::new();
    for chat in all["chats"]["chats"].as_array().unwrap() {
        details.push(
            instance
                .get(&format!("/v1/chats/{}", chat["id"].as_str().unwrap()))
                .await,
        );
    }
    for search in all["searches"]["searches"].as_array().unwrap() {
        let id = search["id"].as_str().unwrap();
        details.push(instance.get(&format!("/v1/searches/{id}")).await);
    }
    all["details"] = Value::from(details);
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_exported_and_imported_into_postgresql_reads_back_identical() {
    let upstream = ScriptedUpstream::start([
        (ROUTE, Reply::sse(TEXT_STREAM)),
        (ROUTE, Reply::sse(TEXT_STREAM)),
        ("POST /search", Reply::json(200, exa_results(3))),
        ("POST /answer", Reply::json(200, exa_answer())),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}", dir.path().join("old/chatd.db").display());
    let cache = plugin_cache_dir();
    let url = upstream.url();
    let env = |database: &str| -> Vec<(String, String)> {
        vec![
            ("DATABASE_URL".into(), database.into()),
            ("PLUGIN_CACHE_DIR".into(), cache.display().to_string()),
            ("PROVIDER_C_BASE_URL".into(), url.clone()),
            ("PROVIDER_C_API_KEY".into(), "c-key".into()),
            ("ENGINE_A_BASE_URL".into(), url.clone()),
            ("ENGINE_A_API_KEY".into(), "e-key".into()),
        ]
    };
    let old_env = env(&sqlite);
    let old = Instance::with_env(dir.path(), &borrow(&old_env));

    // Two chats with replies, one with an image; a search run with results and an answer.
    let image = json!({ "kind": "image", "filename": "pic.png", "mimeType": "image/png",
                        "sizeBytes": 64, "dataUrl": data_url("image/png", &png_bytes(64)) });
    let first = old.new_chat().await;
    old.stream(&first).await.rest().await;
    let res = old
        .post(
            "/v1/chats",
            Some(json!({"title": "with a picture", "messages": [
                {"role": "user", "content": "look", "attachments": [image]}]})),
            &[],
        )
        .await;
    let second = res.json::<Value>().await.unwrap()["chat"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    old.stream(&second).await.rest().await;
    let res = old
        .post("/v1/searches", Some(json!({"query": "tokio"})), &[])
        .await;
    let search = res.json::<Value>().await.unwrap()["search"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ran = old
        .post(&format!("/v1/searches/{search}/run"), Some(json!({})), &[])
        .await;
    assert!(ran.status().is_success());
    let star = |path: String| {
        reqwest::Client::new()
            .patch(old.url(&path))
            .json(&json!({"starred": true}))
            .send()
    };
    assert!(
        star(format!("/v1/chats/{second}/star"))
            .await
            .unwrap()
            .status()
            .is_success()
    );
    assert!(
        star(format!("/v1/searches/{search}/star"))
            .await
            .unwrap()
            .status()
            .is_success()
    );
    // A library file, read to its chunks.
    let added: Value = reqwest::Client::new()
        .post(old.url("/v1/files"))
        .multipart(
            reqwest::multipart::Form::new().part(
                "file",
                reqwest::multipart::Part::bytes(b"The harbour code is HB-3308.".to_vec())
                    .file_name("notes.txt"),
            ),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let file_id = added["id"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while old.get(&format!("/v1/files/{file_id}")).await["status"] != "ready" {
        assert!(std::time::Instant::now() < deadline, "the file is read");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let before = read_all(&old).await;
    assert_eq!(before["chats"]["chats"].as_array().unwrap().len(), 2);
    assert!(
        before.to_string().contains("starredAt\":\"2"),
        "stars are set"
    );

    // Exported while the SQLite server serves.
    let export = chatd(dir.path(), &borrow(&old_env), &["export"], None);
    let stderr = String::from_utf8_lossy(&export.stderr);
    assert!(export.status.success(), "{stderr}");
    assert!(
        stderr.contains("2 chats, 5 messages, 0 chat_files, 1 searches"),
        "{stderr}"
    );
    assert!(stderr.contains("2 llm_calls"), "{stderr}");
    assert!(
        stderr.contains("1 library_files, 1 library_chunks"),
        "{stderr}"
    );
    let file = dir.path().join("export.jsonl");
    std::fs::write(&file, &export.stdout).unwrap();
    let header: Value =
        serde_json::from_slice(export.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(
        (header["format"].as_str(), header["version"].as_u64()),
        (Some("chatd-export"), Some(5))
    );
    drop(old);

    let postgres = test_database(&dir).await;
    let DatabaseUrl::Postgres(pg) = &postgres else {
        unreachable!("the PostgreSQL suite")
    };
    let new_env = env(pg);
    let import = chatd(
        dir.path(),
        &borrow(&new_env),
        &["import", file.to_str().unwrap()],
        None,
    );
    let stderr = String::from_utf8_lossy(&import.stderr);
    assert!(import.status.success(), "{stderr}");
    assert!(
        stderr.contains("imported 2 chats, 5 messages, 0 chat_files, 1 searches"),
        "{stderr}"
    );

    let new = Instance::with_env(dir.path(), &borrow(&new_env));
    assert_eq!(
        read_all(&new).await,
        before,
        "every chat, search and file reads back identical"
    );
    // The file's original, and its chunk found by the new database's own index.
    let content = reqwest::get(new.url(&format!("/v1/files/{file_id}/content")))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(&content[..], b"The harbour code is HB-3308.");
    let found = reqwest::Client::new()
        .post(new.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "file_search", "arguments": {"query": "HB-3308"}}}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(found.contains(&file_id), "{found}");

    // Again: the ids exist. A file whose first chat is new and second is not stores neither.
    let text = std::fs::read_to_string(&file).unwrap();
    let changed = text.replacen(&first, "01900000-0000-7000-8000-000000000001", 1);
    let partly_new = dir.path().join("partly-new.jsonl");
    std::fs::write(&partly_new, changed).unwrap();
    let again = chatd(
        dir.path(),
        &borrow(&new_env),
        &["import", "-"],
        Some(&partly_new),
    );
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("exists in the database (nothing was imported"),
        "{stderr}"
    );
    assert_eq!(read_all(&new).await, before, "nothing changed");
    // Told to, it skips what exists and stores the rest.
    let skipping = chatd(
        dir.path(),
        &borrow(&new_env),
        &["import", "--skip-existing", partly_new.to_str().unwrap()],
        None,
    );
    let stderr = String::from_utf8_lossy(&skipping.stderr);
    assert!(skipping.status.success(), "{stderr}");
    assert!(stderr.contains("imported 1 chats"), "{stderr}");

    // A chat whose messages' seq has a gap is refused, and nothing of its file kept.
    let gap = dir.path().join("gap.jsonl");
    let at = "2026-01-01T00:00:00.000000Z";
    let chat = "01900000-0000-7000-8000-0000000000ff";
    let lines = [
        json!({"format": "chatd-export", "version": 5, "exportedAt": at, "from": "sqlite"}),
        json!({"chat": {"id": chat, "created_at": at, "updated_at": at, "enabled_tools": "[]"}}),
        json!({"message": {"id": format!("{chat}-1"), "chat_id": chat, "seq": 1,
                           "created_at": at, "role": "user", "content": "a"}}),
        json!({"message": {"id": format!("{chat}-3"), "chat_id": chat, "seq": 3,
                           "created_at": at, "role": "user", "content": "b"}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&gap, text.join("\n") + "\n").unwrap();
    let refused = chatd(
        dir.path(),
        &borrow(&new_env),
        &["import", gap.to_str().unwrap()],
        None,
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("chat {chat}: its messages' seq must run 1, 2, 3")),
        "{stderr}"
    );
    let found = reqwest::get(new.url(&format!("/v1/chats/{chat}")))
        .await
        .unwrap();
    assert_eq!(found.status(), 404, "nothing of the file is kept");
}

fn borrow(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}
