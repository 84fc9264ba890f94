//! `bench proxy UPSTREAM`: the least an HTTP proxy can do, as a process of its own. Every request
//! is forwarded to UPSTREAM and its answer streamed back as it arrives: axum's server, a pooled
//! reqwest client (chatd's plugin HTTP client too), TCP_NODELAY on both sides, a two-worker tokio
//! runtime (chatd's on a 2-core machine).
//!
//! `bench chat --persist-false-only` measures through it beside chatd: what any proxy between
//! the benchmark and the mock adds on this machine (two loopback hops, two more processes to
//! wake), the floor under chatd's own figure.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use crate::plugins::Running;

pub fn usage() -> &'static str {
    "usage: bench proxy UPSTREAM_URL   (started by `bench chat --persist-false-only`)"
}

pub fn run(args: &[String]) -> anyhow::Result<()> {
    let upstream = args
        .first()
        .context(usage())?
        .trim_end_matches('/')
        .to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let client = reqwest::Client::builder().tcp_nodelay(true).build()?;
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                forward(client.clone(), upstream.clone(), method, uri, headers, body)
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("listening on http://{}", listener.local_addr()?);
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await?;
        Ok(())
    })
}

async fn forward(
    client: reqwest::Client,
    upstream: String,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut request = client
        .request(method, format!("{upstream}{path}"))
        .body(body);
    if let Some(kind) = headers.get(header::CONTENT_TYPE) {
        request = request.header(header::CONTENT_TYPE, kind);
    }
    match request.send().await {
        Ok(answer) => {
            let mut response = Response::builder().status(answer.status());
            if let Some(kind) = answer.headers().get(header::CONTENT_TYPE) {
                response = response.header(header::CONTENT_TYPE, kind);
            }
            response
                .body(Body::from_stream(answer.bytes_stream()))
                .unwrap_or_else(|e| (StatusCode::BAD_GATEWAY, e.to_string()).into_response())
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

/// Starts `bench proxy upstream` (this same program) and returns it with its URL.
pub fn start(upstream: &str) -> anyhow::Result<(Running, String)> {
    use std::io::{BufRead, BufReader};
    let program = std::env::current_exe()?;
    let mut child = Command::new(Path::new(&program))
        .args(["proxy", upstream])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let running = Running { child };
    let mut line = String::new();
    // A blocking read in the benchmark's async code: once, before anything is measured.
    BufReader::new(stdout).read_line(&mut line)?;
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .with_context(|| format!("the proxy said {line:?}"))?
        .to_string();
    Ok((running, addr))
}
