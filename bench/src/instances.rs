//! `bench instances`: two release servers (A and B) on one PostgreSQL database, against the
//! mock upstream of `bench chat` (`chat.rs`). Each figure is set beside the same thing on the
//! run's own instance, measured in the same run:
//!
//! 1. Attach: time to the first replayed event, attaching on B (a mirror read from the database)
//!    to a stream A runs, vs attaching on A (its memory).
//! 2. Lag of live events: a paced stream on A (64 deltas 20 ms apart) read on A and, attached from
//!    its start, on B; per event, when B got it minus when A's client got it. The same with the
//!    second reader also on A, as the floor.
//! 3. Live streams over two instances: N paced streams at once, half sent to each; every one
//!    must get meta, its 64 deltas in order, done.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail, ensure};
use futures::StreamExt;

use crate::chat::{PACED_DELTAS, attach_times, start_mock, verify};
use crate::harness::{chats, check, completion, open_stream, row};
use crate::plugins::server_binary;
use crate::plugins::start_with;

pub struct Options {
    database_url: String,
    attaches: usize,
    lag_streams: usize,
    streams: usize,
}

pub fn usage() -> &'static str {
    "usage: bench instances --database-url postgres://… [--attaches N] [--lag-streams N] [--streams N]\n\
     two release servers on one PostgreSQL database (an empty one: it is migrated)"
}

pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        database_url: String::new(),
        attaches: 200,
        lag_streams: 20,
        streams: 1_000,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || args.next().context("a value after the flag");
        match flag.as_str() {
            "--database-url" => o.database_url = value()?.clone(),
            "--attaches" => o.attaches = value()?.parse()?,
            "--lag-streams" => o.lag_streams = value()?.parse()?,
            "--streams" => o.streams = value()?.parse()?,
            other => bail!("unknown option {other}\n{}", usage()),
        }
    }
    ensure!(
        o.database_url.starts_with("postgres://"),
        "--database-url: a postgres:// URL is required\n{}",
        usage()
    );
    Ok(o)
}

pub fn run(o: Options) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run_async(o))
}

async fn run_async(o: Options) -> anyhow::Result<()> {
    let mock = format!("http://{}", start_mock().await?);
    let binary = server_binary()?;
    let dir = tempfile::tempdir()?;
    let env = [
        ("DATABASE_URL", o.database_url.as_str()),
        ("PROVIDER_C_BASE_URL", mock.as_str()),
        ("PROVIDER_C_API_KEY", "bench"),
        ("DATABASE_MAX_CONNECTIONS", "32"),
        ("RUST_LOG", "warn,chatd=info,chatd::http::middleware=warn"),
    ];
    let (server_a, _, a) = start_with(&binary, dir.path(), &env)?;
    let (server_b, _, b) = start_with(&binary, dir.path(), &env)?;
    let (a, b) = (format!("http://{a}"), format!("http://{b}"));
    let client = crate::harness::client()?;
    for base in [&a, &b] {
        check(client.get(format!("{base}/v1/models")).send().await?).await?;
    }
    println!("two instances on one PostgreSQL database; A runs the streams");
    println!("{:<50} {:>9} {:>9} {:>9}", "", "p50 ms", "p99 ms", "max ms");
    attach(&client, &a, &b, o.attaches).await?;
    lag(&client, &a, &b, o.lag_streams).await?;
    live_streams(&client, &a, &b, o.streams).await?;
    drop((server_a, server_b));
    Ok(())
}

/// Attaches on `other` and on `owner` in turn to streams `owner` runs; time to the first event.
async fn attach(
    client: &reqwest::Client,
    owner: &str,
    other: &str,
    n: usize,
) -> anyhow::Result<()> {
    let mut samples = attach_times(client, owner, &[other, owner], n).await?;
    let (mut there, mut here) = (samples.remove(0), samples.remove(0));
    let b = row(
        "attach on B to A's stream: first replayed event",
        &mut there,
    );
    let a = row("attach on A to its own stream: first event", &mut here);
    println!(
        "{:<50} {:>9.2} {:>9.2}",
        "  ratio B / A",
        b.0 / a.0,
        b.1 / a.1
    );
    Ok(())
}

/// When each event of a stream arrived, by position.
async fn arrivals(res: reqwest::Response) -> anyhow::Result<(HashMap<usize, Instant>, usize)> {
    ensure!(res.status().is_success(), "answered {}", res.status());
    let mut body = res.bytes_stream();
    let (mut seen, mut buffer, mut first_chunk_last) = (HashMap::new(), String::new(), None);
    while let Some(chunk) = body.next().await {
        let at = Instant::now();
        buffer.push_str(std::str::from_utf8(&chunk?)?);
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let Some(position) = event
                .lines()
                .find_map(|l| l.strip_prefix("id: "))
                .and_then(|id| id.split_once('-'))
                .and_then(|(_, p)| p.parse::<usize>().ok())
            else {
                continue;
            };
            seen.insert(position, at);
        }
        // What came in the first read is the replay, not the live part.
        first_chunk_last.get_or_insert_with(|| seen.keys().copied().max().unwrap_or(0));
    }
    Ok((seen, first_chunk_last.unwrap_or(0)))
}

/// The lag of live events on a second reader, on `other` and on `owner` itself.
async fn lag(client: &reqwest::Client, owner: &str, other: &str, n: usize) -> anyhow::Result<()> {
    let (mut there, mut here) = (Vec::new(), Vec::new());
    for i in 0..n * 2 {
        let second = if i % 2 == 0 { other } else { owner };
        let id = chats(client, owner, 1).await?.remove(0);
        let res = client
            .post(format!("{owner}/v1/chat-completions/stream"))
            .json(&completion(Some(&id), "paced", i))
            .send()
            .await?;
        let on_owner = tokio::spawn(arrivals(res));
        let attached = client
            .post(format!("{second}/v1/chats/{id}/stream/attach"))
            .send()
            .await?;
        let (on_second, replayed) = arrivals(attached).await?;
        let (on_owner, _) = on_owner.await??;
        ensure!(
            on_second.len() == PACED_DELTAS + 2 && on_owner.len() == PACED_DELTAS + 2,
            "an event was missed"
        );
        let samples = if i % 2 == 0 { &mut there } else { &mut here };
        for (position, at) in &on_second {
            if *position > replayed {
                samples.push(at.saturating_duration_since(on_owner[position]));
            }
        }
    }
    let b = row("live event on B behind A's own client", &mut there);
    let a = row("live event on a second client of A (the floor)", &mut here);
    println!(
        "{:<50} {:>9.2} {:>9.2}",
        "  added by following from the database",
        b.0 - a.0,
        b.1 - a.1
    );
    Ok(())
}

async fn live_streams(client: &reqwest::Client, a: &str, b: &str, n: usize) -> anyhow::Result<()> {
    let t = Instant::now();
    let failed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let base = if i % 2 == 0 { a } else { b }.to_string();
        let (client, failed) = (client.clone(), failed.clone());
        tasks.push(tokio::spawn(async move {
            let outcome = async {
                let res = open_stream(&client, &base, &completion(None, "paced", i)).await?;
                verify(&res.text().await?)
            }
            .await;
            if let Err(e) = outcome
                && failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 3
            {
                eprintln!("a stream failed: {e:#}");
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    let failed = failed.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "live streams: {n} at once, half on each instance, {PACED_DELTAS} deltas 20 ms apart: {} complete and in order, {failed} failed, all done in {:.1} s",
        n - failed,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
