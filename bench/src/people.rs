//! `bench people`: what a person's key costs against ADMIN_TOKEN. One release server in token
//! mode, with a member (no budget) made through `POST /v1/users`, against the zero-delay mock of
//! `bench chat`. Requests alternate between the two bearers, so both see the same machine: a
//! persisted non-streaming completion and a persisted stream's first delta. Both are recorded
//! in the usage ledger (people exist); what differs is the key's lookup (kept 500 ms), the owner
//! check of each id, and the budgets' admission (none here). Printed: each row, and the
//! member's p50 and p99 as a ratio of ADMIN_TOKEN's (the target: at most 1.05).

use std::time::Duration;

use anyhow::{Context, bail};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::harness::{DELTA, chats, check, completion, row, to_first};
use crate::plugins::{server_binary, start_with};

const TOKEN: &str = "bench-people-admin-token";
const WARMUP: usize = 50;
/// Persisted requests per chat, so transcripts stay short.
const PER_CHAT: usize = 10;

pub fn usage() -> &'static str {
    "usage: bench people [--requests N]   (a member's key against ADMIN_TOKEN; default 1000)"
}

pub fn parse(args: &[String]) -> anyhow::Result<usize> {
    let mut requests = 1_000;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--requests" => {
                requests = it
                    .next()
                    .with_context(|| format!("--requests needs a value\n{}", usage()))?
                    .parse()?
            }
            other => bail!("unknown option {other}\n{}", usage()),
        }
    }
    if requests == 0 {
        bail!("--requests must be at least 1");
    }
    Ok(requests)
}

pub fn run(requests: usize) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run_async(requests))
}

/// A client that sends `bearer` on every request.
fn client_as(bearer: &str) -> anyhow::Result<reqwest::Client> {
    let mut headers = HeaderMap::new();
    headers.insert(
        AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {bearer}"))?,
    );
    Ok(reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(usize::MAX)
        .default_headers(headers)
        .build()?)
}

/// One bearer's samples and chats.
struct Caller {
    client: reqwest::Client,
    chats: Vec<String>,
    persisted: Vec<Duration>,
    first_delta: Vec<Duration>,
}

async fn run_async(requests: usize) -> anyhow::Result<()> {
    let mock = crate::chat::start_mock().await?;
    let mock_url = format!("http://{mock}");
    let dir = tempfile::tempdir()?;
    let (_server, _, addr) = start_with(
        &server_binary()?,
        dir.path(),
        &[
            ("ADMIN_TOKEN", TOKEN),
            ("PROVIDER_C_BASE_URL", mock_url.as_str()),
            ("PROVIDER_C_API_KEY", "bench"),
            ("RUST_LOG", "warn,chatd=info,chatd::http::middleware=warn"),
        ],
    )?;
    let base = format!("http://{addr}");
    let admin = client_as(TOKEN)?;
    check(admin.get(format!("{base}/v1/models")).send().await?).await?;
    let made: Value = serde_json::from_slice(
        &check(
            admin
                .post(format!("{base}/v1/users"))
                .json(&json!({"name": "bench-member", "role": "member"}))
                .send()
                .await?,
        )
        .await?,
    )?;
    let key = made["key"].as_str().context("the member's key")?;
    let chats_each = (requests + WARMUP).div_ceil(PER_CHAT) + 1;
    let mut callers = Vec::new();
    for client in [admin, client_as(key)?] {
        callers.push(Caller {
            chats: chats(&client, &base, chats_each).await?,
            client,
            persisted: Vec::with_capacity(requests),
            first_delta: Vec::with_capacity(requests),
        });
    }
    let stream_url = format!("{base}/v1/chat-completions/stream");
    for i in 0..requests + WARMUP {
        for caller in &mut callers {
            let chat = &caller.chats[i / PER_CHAT];
            let t = std::time::Instant::now();
            check(
                caller
                    .client
                    .post(format!("{base}/v1/chat-completions"))
                    .json(&completion(Some(chat), "zero", i))
                    .send()
                    .await?,
            )
            .await?;
            let took = t.elapsed();
            let first = to_first(
                &caller.client,
                &stream_url,
                &completion(Some(chat), "zero", i),
                DELTA,
            )
            .await?;
            if i >= WARMUP {
                caller.persisted.push(took);
                caller.first_delta.push(first);
            }
        }
    }
    println!("a member's key (no budget) vs ADMIN_TOKEN, one server, interleaved, loopback");
    println!("{:<50} {:>9} {:>9} {:>9}", "", "p50 ms", "p99 ms", "max ms");
    let [admin, member] = &mut callers[..] else {
        unreachable!("two callers")
    };
    let a = row(
        "non-streaming, persisted: ADMIN_TOKEN",
        &mut admin.persisted,
    );
    let m = row(
        "non-streaming, persisted: member's key",
        &mut member.persisted,
    );
    ratio("non-streaming, persisted", m, a);
    let a = row(
        "first delta, persisted: ADMIN_TOKEN",
        &mut admin.first_delta,
    );
    let m = row(
        "first delta, persisted: member's key",
        &mut member.first_delta,
    );
    ratio("first delta, persisted", m, a);
    Ok(())
}

fn ratio(name: &str, member: (f64, f64), admin: (f64, f64)) {
    println!(
        "{:<50} {:>9.3} {:>9.3}",
        format!("  member / ADMIN_TOKEN: {name}"),
        member.0 / admin.0,
        member.1 / admin.1
    );
}
