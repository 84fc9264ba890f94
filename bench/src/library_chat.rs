//! `bench library`, last part: what a library of 50 files adds to a chat's first delta. The same
//! chat (tools on, `persist: false`, provider_c) is asked `--rounds` times two ways, interleaved,
//! against a zero-delay mock upstream in this process: the model answers at once (`plain`: the
//! chat without files), or first calls `file_search` over the person's 50 files (`search`: a
//! second round after the tool's answer, as a model with files does). The mock also serves
//! OpenAI's `/embeddings` (deterministic vectors) and counts its calls: a question must cost
//! exactly one. The server runs in this process too, on SQLite.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::harness::{DELTA, client, row, to_first};

const TEXT_STREAM: &str = include_str!(
    "../../tests/fixtures/upstream/openai_chat/02_stream_text_include_usage.response.sse"
);
const TOOL_STREAM: &str = include_str!(
    "../../tests/fixtures/upstream/openai_chat/01_stream_tool_call_include_usage.response.sse"
);
/// Files in the library, and the chunks' vectors' dimensions.
const FILES: usize = 50;
const DIMS: usize = 256;

/// What the mock counted.
#[derive(Default)]
struct Counts {
    embedding_calls: AtomicUsize,
}

pub async fn run(rounds: usize) -> anyhow::Result<()> {
    if rounds == 0 {
        return Ok(());
    }
    let counts = Arc::new(Counts::default());
    let mock = mock(counts.clone()).await?;
    let dir = tempfile::tempdir()?;
    let mut config = chatd::config::Config::from_args([
        "chatd",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--provider-c-base-url",
        &mock,
        "--provider-c-api-key",
        "bench-key",
        "--chatd-embedding-model",
        "provider_c/embed",
    ])
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    config.chatd_allow_private_networks = true;
    let server = InProcess::start(config, &dir.path().join("chat.db")).await?;
    let base = server.base.clone();
    let client = client()?;
    let chunks = library(&client, &base).await?;
    println!(
        "\nfirst delta of a chat, tools on, persist: false: {} rounds each way, {FILES} files \
         ({chunks} chunks, vectors of {DIMS} dimensions) searched or none",
        rounds
    );
    println!("{:<50} {:>9} {:>9} {:>9}", "", "p50 ms", "p99 ms", "max ms");
    let url = format!("{base}/v1/chat-completions/stream");
    let body = |model: &str, i: usize| {
        json!({"provider": "provider_c", "model": model, "persist": false,
               "enabledTools": ["file_search"],
               "messages": [{"role": "user", "content": format!("What does the travel policy say? ({i})")}]})
    };
    // Warm both paths first.
    for i in 0..10 {
        to_first(&client, &url, &body("plain", i), DELTA).await?;
        to_first(&client, &url, &body("search", i), DELTA).await?;
    }
    let before = counts.embedding_calls.load(Ordering::SeqCst);
    let (mut plain, mut search) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        plain.push(to_first(&client, &url, &body("plain", i), DELTA).await?);
        search.push(to_first(&client, &url, &body("search", i), DELTA).await?);
    }
    let calls = counts.embedding_calls.load(Ordering::SeqCst) - before;
    let without = row("without files (the model answers at once)", &mut plain);
    let with = row("file_search over 50 files, then the answer", &mut search);
    println!(
        "{:<50} {:>9.3} {:>9.3}",
        "  added by the library (target: at most 1,000 ms)",
        with.0 - without.0,
        with.1 - without.1
    );
    println!(
        "{:<50} {:>9.2}",
        "embedding calls per question (must be 1)",
        calls as f64 / rounds as f64
    );
    ensure!(
        calls == rounds,
        "{calls} embedding calls for {} questions",
        rounds
    );
    server.stop().await
}

/// A server in this process, open mode, on a SQLite file.
pub(crate) struct InProcess {
    pub(crate) base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    served: tokio::task::JoinHandle<()>,
}

impl InProcess {
    /// `config` served on `db` (a SQLite file), without an admin token.
    pub(crate) async fn start(
        mut config: chatd::config::Config,
        db: &std::path::Path,
    ) -> anyhow::Result<Self> {
        config.database_url =
            chatd::config::DatabaseUrl::Sqlite(format!("sqlite://{}", db.display()));
        config.admin_token = None;
        let plugins = chatd::plugins::loading::plugin_host::PluginHost::start(&config).await?;
        let server = chatd::server::Server::bind(&config, plugins).await?;
        let base = format!("http://{}", server.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(server.run(async {
            let _ = stopped.await;
        }));
        Ok(Self { base, stop, served })
    }

    /// Stops it gracefully and waits until it has.
    pub(crate) async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.served.await?;
        Ok(())
    }
}

/// Adds the 50 files (text of about 20,000 characters each) and waits until each is ready:
/// the chunks they made.
async fn library(client: &reqwest::Client, base: &str) -> anyhow::Result<i64> {
    let mut files = Vec::with_capacity(FILES);
    for f in 0..FILES {
        let mut text = format!("Travel policy {f}. ");
        let mut n = f as u64 + 1;
        while text.len() < 20_000 {
            n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            text.push_str(&format!("word{} ", (n >> 33) % 5_000));
            if n % 17 == 0 {
                text.push_str("\n\n");
            }
        }
        files.push((format!("policy-{f}.txt"), "text/plain", text.into_bytes()));
    }
    let ready = add_ready(client, base, files).await?;
    Ok(ready
        .iter()
        .map(|f| f["chunks"].as_i64().unwrap_or(0))
        .sum())
}

/// Adds `files` (name, media type, bytes) to the library at `base`, one after another, and
/// waits until each is ready: each file as it ended.
pub(crate) async fn add_ready(
    client: &reqwest::Client,
    base: &str,
    files: Vec<(String, &'static str, Vec<u8>)>,
) -> anyhow::Result<Vec<Value>> {
    let mut ids = Vec::with_capacity(files.len());
    for (name, mime, bytes) in files {
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(name)
            .mime_str(mime)?;
        let answer: Value = client
            .post(format!("{base}/v1/files"))
            .multipart(reqwest::multipart::Form::new().part("file", part))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        ids.push(answer["id"].as_str().context("a file id")?.to_string());
    }
    let mut ready = Vec::with_capacity(ids.len());
    for id in &ids {
        loop {
            let file: Value = client
                .get(format!("{base}/v1/files/{id}"))
                .send()
                .await?
                .json()
                .await?;
            match file["status"].as_str() {
                Some("ready") => {
                    ready.push(file);
                    break;
                }
                Some("processing") => tokio::time::sleep(Duration::from_millis(5)).await,
                _ => bail!("file {id} did not become ready: {file}"),
            }
        }
    }
    Ok(ready)
}

/// The mock upstream on loopback: its base URL.
async fn mock(counts: Arc<Counts>) -> anyhow::Result<String> {
    let app = Router::new()
        .route("/models", get(models))
        .route("/chat/completions", post(completions))
        .route("/embeddings", post(embeddings))
        .with_state(counts);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

async fn models() -> axum::Json<Value> {
    let ids = ["plain", "search", "embed"];
    axum::Json(
        json!({"object": "list", "data": ids.map(|id| json!({"id": id, "object": "model"}))}),
    )
}

fn sse(body: String) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(body))
        .unwrap()
}

/// `search` calls `file_search` until the tool's answer is in the transcript; then, and for
/// `plain` at once, the recorded text.
async fn completions(body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let answered = request["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    if request["model"] == "search" && !answered {
        return sse(TOOL_STREAM
            .replace("get_capital", "file_search")
            .replace(r#""arguments":"country""#, r#""arguments":"query""#)
            .replace(
                r#""arguments":"UK""#,
                r#""arguments":"travel policy word17 word4000""#,
            ));
    }
    sse(TEXT_STREAM.to_string())
}

/// OpenAI's `/embeddings`: each text's words hashed into [`DIMS`] buckets.
async fn embeddings(State(counts): State<Arc<Counts>>, body: Bytes) -> axum::Json<Value> {
    counts.embedding_calls.fetch_add(1, Ordering::SeqCst);
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let inputs: Vec<String> = match &request["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => Vec::new(),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let mut v = vec![0f32; DIMS];
            for word in text.split_whitespace() {
                let h = word.bytes().fold(1_469_598_103_934_665_603u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(1_099_511_628_211)
                });
                v[(h % DIMS as u64) as usize] += 1.0;
            }
            v[0] += 0.001;
            json!({"object": "embedding", "index": index, "embedding": v})
        })
        .collect();
    axum::Json(
        json!({"object": "list", "data": data, "model": request["model"],
                      "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
    )
}
