//! `bench people`: what a person's key costs against ADMIN_TOKEN, and what the usage ledger
//! costs. Two release servers in token mode against the zero-delay mock of `bench chat`: one
//! with a member (no budget) made through `POST /v1/users`, where every call is recorded in the
//! ledger, and one with no people, where nothing is. Requests go in turn to the people-less
//! server, then the other with ADMIN_TOKEN, then with the member's key, so all see the same
//! machine: a persisted non-streaming completion and a persisted stream's first delta. Between
//! ADMIN_TOKEN and the key on one server (each round in the other order), what differs is the key's lookup (kept 500 ms), the
//! owner check of each id, and the budgets' admission (none here). Printed: each row, the
//! member's p50 and p99 as a ratio of ADMIN_TOKEN's (the target: at most 1.05), and the ledger's
//! (ADMIN_TOKEN with people over ADMIN_TOKEN without).

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
    "usage: bench people [--requests N]   (a member's key against ADMIN_TOKEN; default 3000)"
}

pub fn parse(args: &[String]) -> anyhow::Result<usize> {
    let mut requests = 3_000;
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

/// One bearer's samples and chats, on one server.
struct Caller {
    base: String,
    client: reqwest::Client,
    chats: Vec<String>,
    persisted: Vec<Duration>,
    first_delta: Vec<Duration>,
}

async fn run_async(requests: usize) -> anyhow::Result<()> {
    let mock = crate::chat::start_mock().await?;
    let mock_url = format!("http://{mock}");
    let binary = server_binary()?;
    let env = [
        ("ADMIN_TOKEN", TOKEN),
        ("PROVIDER_C_BASE_URL", mock_url.as_str()),
        ("PROVIDER_C_API_KEY", "bench"),
        ("RUST_LOG", "warn,chatd=info,chatd::http::middleware=warn"),
    ];
    let (solo_dir, team_dir) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let (_solo, _, solo_addr) = start_with(&binary, solo_dir.path(), &env)?;
    let (_team, _, team_addr) = start_with(&binary, team_dir.path(), &env)?;
    let (solo, team) = (format!("http://{solo_addr}"), format!("http://{team_addr}"));
    let admin = client_as(TOKEN)?;
    for base in [&solo, &team] {
        check(admin.get(format!("{base}/v1/models")).send().await?).await?;
    }
    let made: Value = serde_json::from_slice(
        &check(
            admin
                .post(format!("{team}/v1/users"))
                .json(&json!({"name": "bench-member", "role": "member"}))
                .send()
                .await?,
        )
        .await?,
    )?;
    let key = made["key"].as_str().context("the member's key")?;
    let chats_each = (requests + WARMUP).div_ceil(PER_CHAT) + 1;
    let mut callers = Vec::new();
    for (base, client) in [
        (&solo, admin.clone()),
        (&team, admin),
        (&team, client_as(key)?),
    ] {
        callers.push(Caller {
            chats: chats(&client, base, chats_each).await?,
            base: base.clone(),
            client,
            persisted: Vec::with_capacity(requests),
            first_delta: Vec::with_capacity(requests),
        });
    }
    for i in 0..requests + WARMUP {
        // Each round in the other order: what goes first in a round is not always the same.
        let order = if i % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
        for n in order {
            let caller = &mut callers[n];
            let chat = &caller.chats[i / PER_CHAT];
            let t = std::time::Instant::now();
            check(
                caller
                    .client
                    .post(format!("{}/v1/chat-completions", caller.base))
                    .json(&completion(Some(chat), "zero", i))
                    .send()
                    .await?,
            )
            .await?;
            let took = t.elapsed();
            let first = to_first(
                &caller.client,
                &format!("{}/v1/chat-completions/stream", caller.base),
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
    println!(
        "a member's key (no budget) vs ADMIN_TOKEN, and the usage ledger, interleaved, loopback"
    );
    println!("{:<50} {:>9} {:>9} {:>9}", "", "p50 ms", "p99 ms", "max ms");
    let [solo, admin, member] = &mut callers[..] else {
        unreachable!("three callers")
    };
    let s = row("non-streaming: ADMIN_TOKEN, no people", &mut solo.persisted);
    let a = row("non-streaming: ADMIN_TOKEN, people", &mut admin.persisted);
    let m = row("non-streaming: member's key", &mut member.persisted);
    ratio("member / ADMIN_TOKEN: non-streaming", m, a);
    ratio("people / no people: non-streaming", a, s);
    let s = row("first delta: ADMIN_TOKEN, no people", &mut solo.first_delta);
    let a = row("first delta: ADMIN_TOKEN, people", &mut admin.first_delta);
    let m = row("first delta: member's key", &mut member.first_delta);
    ratio("member / ADMIN_TOKEN: first delta", m, a);
    ratio("people / no people: first delta", a, s);
    Ok(())
}

/// `over`'s p50 and p99 as ratios of `base`'s.
fn ratio(name: &str, over: (f64, f64), base: (f64, f64)) {
    println!(
        "{:<50} {:>9.3} {:>9.3}",
        format!("  {name}"),
        over.0 / base.0,
        over.1 / base.1
    );
}
