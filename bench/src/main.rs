//! chatd's benchmark programs. They print figures; nothing here asserts a time.
//!
//! `cargo run --release -p bench -- crud` seeds a fresh SQLite database with 100,000 chats and
//! 1,000,000 messages through the store, starts the real server on 127.0.0.1:0, and measures
//! sequential requests over loopback HTTP (one keep-alive connection):
//! GET /v1/workspace-items, GET /v1/chats/:chatId (50 messages), GET /v1/message-search (a
//! word in one chat, a word in every message, and the second page of that),
//! POST /v1/chats/:chatId/messages.
//! See BENCHMARKS.md for recorded figures.
//!
//! `cargo run --release -p bench -- plugins` measures the plugin host: start to ready with the
//! bundled plugins (first boot and restart), idle RSS, and the host's overhead per tool call
//! (see `plugins.rs`).
//!
//! `cargo run --release -p bench -- chat` measures chat completions against a zero-delay mock
//! upstream: added latency, time to first delta, live streams and RSS, attach (see `chat.rs`).
//! `bench proxy` is the do-nothing proxy its `--persist-false-only` mode compares chatd with
//! (`proxy.rs`).
//!
//! `cargo run --release -p bench -- body` measures the server's peak memory for a 32 MB request
//! of images, the largest the contract allows (see `body.rs`).
//!
//! `cargo run --release -p bench -- python` measures the `python` tool's interpreter beside a
//! plain Python tool plugin: a new session's first run, a warm run, memory per idle session,
//! sessions at once (see `python.rs`).
//!
//! `cargo run --release -p bench -- openai` measures what `/openai/v1/chat/completions` adds to a
//! completion beside LiteLLM's proxy and the do-nothing proxy, in the same run (see `openai.rs`).
//!
//! `cargo run --release -p bench -- library` measures the library's search at 100,000 chunks
//! (keywords, vectors), on SQLite or PostgreSQL, upload to ready, and a chat's first delta with
//! 50 files searched (see `library.rs`, `library_chat.rs`).
//!
//! `cargo run --release -p bench -- instances --database-url postgres://…` runs two servers on
//! one PostgreSQL database: attach and the lag of live events on the other instance, and live
//! streams split over both (see `instances.rs`).

mod body;
mod chat;
/// Generated documents, shared with the black-box tests.
#[allow(dead_code)]
#[path = "../../tests/api/documents.rs"]
mod documents;
mod harness;
mod instances;
mod languages;
mod library;
mod library_chat;
mod live;
mod mcp;
mod mcp_served;
mod openai;
mod people;
mod plugins;
mod proxy;
mod python;
mod straight;
mod telemetry;
/// The providers' streamed wires, shared with the black-box tests (which use all of it).
#[allow(dead_code)]
#[path = "../../tests/common/wires.rs"]
mod wires;

use chatd::store::people::BUILTIN_ADMIN;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chatd::config::{Config, DatabaseUrl};
use chatd::plugins::loading::plugin_host::PluginHost;
use chatd::server::Server;
use chatd::store::{NewChat, NewMessage, Store};
use chatd::vocabulary::Role;
use serde_json::json;

struct Options {
    chats: usize,
    messages_per_chat: usize,
    /// Chats that get 50 messages: the targets of GET /v1/chats/:chatId.
    long_chats: usize,
    requests: usize,
    warmup: usize,
    db: Option<String>,
    /// A PostgreSQL database to seed and measure instead of a SQLite file (it must be empty).
    database_url: Option<String>,
}

fn usage() -> &'static str {
    "usage: bench crud [--chats N] [--messages-per-chat N] [--requests N] [--warmup N] [--db PATH] [--database-url postgres://…]\n\
     --db keeps the database at PATH; when PATH exists it is reused instead of seeded\n\
     --database-url seeds and measures an empty PostgreSQL database instead of a SQLite file\n\
     defaults: 100000 chats and 1,000,000 messages (100 chats with 50, the rest 9 or 10); 5000 requests per endpoint"
}

fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        chats: 100_000,
        messages_per_chat: 10,
        long_chats: 100,
        requests: 5_000,
        warmup: 500,
        db: None,
        database_url: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("{flag} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "--chats" => o.chats = value()?.parse()?,
            "--messages-per-chat" => o.messages_per_chat = value()?.parse()?,
            "--requests" => o.requests = value()?.parse()?,
            "--warmup" => o.warmup = value()?.parse()?,
            "--db" => o.db = Some(value()?.clone()),
            "--database-url" => o.database_url = Some(value()?.clone()),
            other => bail!("unknown option {other}\n{}", usage()),
        }
    }
    if o.chats == 0 || o.requests == 0 {
        bail!("--chats and --requests must be at least 1");
    }
    o.long_chats = o.long_chats.min(o.chats);
    Ok(o)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("crud") => crud(parse(&args[1..])?),
        Some("plugins") => plugins::run(plugins::parse(&args[1..])?),
        Some("chat") => chat::run(chat::parse(&args[1..])?),
        Some("proxy") => proxy::run(&args[1..]),
        Some("body") => body::run(body::parse(&args[1..])?),
        Some("instances") => instances::run(instances::parse(&args[1..])?),
        Some("mcp") => mcp::run(&args[1..]),
        Some("languages") => languages::run(languages::parse(&args[1..])?),
        Some("python") => python::run(python::parse(&args[1..])?),
        Some("openai") => openai::run(openai::parse(&args[1..])?),
        Some("people") => people::run(people::parse(&args[1..])?),
        Some("library") => library::run(library::parse(&args[1..])?),
        _ => {
            eprintln!(
                "{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}",
                usage(),
                plugins::usage(),
                chat::usage(),
                proxy::usage(),
                body::usage(),
                instances::usage(),
                mcp::usage(),
                languages::usage(),
                python::usage(),
                openai::usage(),
                people::usage(),
                library::usage()
            );
            std::process::exit(2);
        }
    }
}

fn crud(o: Options) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path =
        o.db.clone()
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| dir.path().join("bench.db"));
    let url = match &o.database_url {
        Some(url) => DatabaseUrl::Postgres(url.clone()),
        None => DatabaseUrl::Sqlite(format!("sqlite://{}", path.display())),
    };
    println!("database: {url}");

    // The server gets its own runtime (2 workers, like the machine), the client another, so
    // the client's bookkeeping does not queue behind server tasks.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (ids, long_ids) = if o.db.is_some() && path.exists() && o.database_url.is_none() {
        server_rt.block_on(existing(&url, &o))?
    } else {
        server_rt.block_on(seed(&url, &o))?
    };

    let mut config = Config::from_args(["chatd", "--host", "127.0.0.1", "--port", "0"])
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    config.database_url = url;
    config.admin_token = None;
    let plugins = server_rt.block_on(PluginHost::start(&config))?;
    let server = server_rt.block_on(Server::bind(&config, plugins))?;
    let base = format!("http://{}", server.local_addr()?);
    let store = server.state().store.clone();
    let long_for_store = long_ids.clone();
    server_rt.block_on(async {
        println!("\nthe store alone (no HTTP): where the time goes");
        println!(
            "{:<38} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "store call", "p50 ms", "p90 ms", "p99 ms", "max ms", "calls/s"
        );
        measure("store.workspace_items(100)", &o, |_| {
            let store = store.clone();
            async move {
                store
                    .workspace_items(100, BUILTIN_ADMIN)
                    .await
                    .map(drop)
                    .map_err(Into::into)
            }
        })
        .await?;
        search_store(&store, &o).await?;
        measure("store.get_chat_with_messages (50)", &o, |i| {
            let store = store.clone();
            let id = long_for_store[i % long_for_store.len()].clone();
            async move {
                store
                    .get_chat_with_messages(&id)
                    .await
                    .map(drop)
                    .map_err(Into::into)
            }
        })
        .await
    })?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = server_rt.spawn(server.run(async {
        let _ = stop_rx.await;
    }));

    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    client_rt.block_on(async {
        let client = reqwest::Client::builder().tcp_nodelay(true).pool_max_idle_per_host(1).build()?;
        println!("\nsequential requests over loopback HTTP, one keep-alive connection; {} measured after {} warm-up", o.requests, o.warmup);
        println!("{:<38} {:>9} {:>9} {:>9} {:>9} {:>9}", "endpoint", "p50 ms", "p90 ms", "p99 ms", "max ms", "req/s");

        let workspace = format!("{base}/v1/workspace-items");
        measure("GET /v1/workspace-items", &o, |_| {
            let req = client.get(&workspace);
            async move { check(req.send().await?).await }
        })
        .await?;

        measure("GET /v1/chats/:chatId (50 messages)", &o, |i| {
            let req = client.get(format!("{base}/v1/chats/{}", long_ids[i % long_ids.len()]));
            async move { check(req.send().await?).await }
        })
        .await?;

        search_http(&client, &base, &o).await?;

        let content = "a user message of about two hundred characters, ".repeat(4);
        measure("POST /v1/chats/:chatId/messages", &o, |i| {
            // Spread over the whole table so the writes touch cold pages too.
            let chat = &ids[(i * 7919) % ids.len()];
            let req = client
                .post(format!("{base}/v1/chats/{chat}/messages"))
                .json(&json!({ "role": "user", "content": content }));
            async move { check(req.send().await?).await }
        })
        .await?;
        anyhow::Ok(())
    })?;

    let _ = stop_tx.send(());
    server_rt.block_on(served)?;
    Ok(())
}

/// The message search through the store alone: a word in one chat's messages (the chat's
/// number, another chat each call), a word in every message, and both.
async fn search_store(store: &chatd::store::Store, o: &Options) -> anyhow::Result<()> {
    for (name, common) in [
        ("store.search_messages (rare word)", None),
        ("store.search_messages (every row)", Some("ordinary")),
        ("store.search_messages (both words)", Some("ordinary")),
    ] {
        let both = name.contains("both");
        measure(name, &o, |i| {
            let store = store.clone();
            let rare = rare_word(i, o);
            let words: Vec<String> = match (common, both) {
                (None, _) => vec![rare],
                (Some(c), false) => vec![c.to_string()],
                (Some(c), true) => vec![c.to_string(), rare],
            };
            async move {
                let hits = store
                    .search_messages(&words, 21, None, BUILTIN_ADMIN)
                    .await?;
                anyhow::ensure!(hits.is_some_and(|h| !h.is_empty()), "no hits for {words:?}");
                Ok(())
            }
        })
        .await?;
    }
    Ok(())
}

/// The message search over HTTP: a rare word, a word in every message, and that one's second
/// page (its first asked for the cursor, then the second measured with it).
async fn search_http(client: &reqwest::Client, base: &str, o: &Options) -> anyhow::Result<()> {
    measure("GET /v1/message-search (rare word)", &o, |i| {
        let req = client.get(format!("{base}/v1/message-search?q={}", rare_word(i, o)));
        async move { check(req.send().await?).await }
    })
    .await?;
    measure("GET /v1/message-search (every row)", &o, |_| {
        let req = client.get(format!("{base}/v1/message-search?q=ordinary"));
        async move { check(req.send().await?).await }
    })
    .await?;
    measure("GET /v1/message-search (page 2)", &o, |_| {
        let client = client.clone();
        let first = format!("{base}/v1/message-search?q=ordinary");
        async move {
            let page: serde_json::Value = client.get(&first).send().await?.json().await?;
            let cursor = page["nextCursor"].as_str().unwrap_or_default().to_string();
            check(
                client
                    .get(format!("{first}&cursor={cursor}"))
                    .send()
                    .await?,
            )
            .await
        }
    })
    .await?;

    Ok(())
}

async fn check(res: reqwest::Response) -> anyhow::Result<()> {
    let status = res.status();
    let body = res.bytes().await?;
    if !status.is_success() {
        bail!("{status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(())
}

async fn measure<F, Fut>(name: &str, o: &Options, mut request: F) -> anyhow::Result<()>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    for i in 0..o.warmup {
        request(i).await?;
    }
    let mut samples = Vec::with_capacity(o.requests);
    let all = Instant::now();
    for i in 0..o.requests {
        let start = Instant::now();
        request(o.warmup + i).await?;
        samples.push(start.elapsed());
    }
    let total = all.elapsed();
    samples.sort();
    let pct = |p: f64| {
        ms(samples[((samples.len() as f64 * p).ceil() as usize)
            .saturating_sub(1)
            .min(samples.len() - 1)])
    };
    println!(
        "{:<38} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.0}",
        name,
        pct(0.50),
        pct(0.90),
        pct(0.99),
        ms(*samples.last().unwrap()),
        o.requests as f64 / total.as_secs_f64()
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Messages of chat `i`: 50 for the first `long_chats`, the rest share what is left of
/// `chats × messages_per_chat` (1,000,000 by default) as evenly as whole numbers allow.
/// The number of a seeded chat with messages, for the `i`th search: spread over all of them
/// (at small sizes only the long chats have messages).
fn rare_word(i: usize, o: &Options) -> String {
    let chat = (i * 7919) % o.chats;
    let chat = if messages_in_chat(chat, o) > 0 {
        chat
    } else {
        chat % o.long_chats.max(1)
    };
    chat.to_string()
}

fn messages_in_chat(i: usize, o: &Options) -> usize {
    if i < o.long_chats {
        return 50;
    }
    let rest_chats = o.chats - o.long_chats;
    let rest_messages = (o.chats * o.messages_per_chat).saturating_sub(o.long_chats * 50);
    let (base, extra) = (rest_messages / rest_chats, rest_messages % rest_chats);
    base + usize::from(i - o.long_chats < extra)
}

/// Reuses a database seeded by an earlier run with `--db` (seeding takes minutes; handy when
/// comparing changes). The 50-message chats are the ones titled `chat 0` … `chat 99`.
async fn existing(url: &DatabaseUrl, o: &Options) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let store = Store::open(url, 16, std::time::Duration::from_secs(30)).await?;
    let chats = store.list_chats(BUILTIN_ADMIN).await?;
    store.close().await;
    let long: Vec<String> = chats
        .iter()
        .filter(|c| {
            c.title
                .as_deref()
                .and_then(|t| t.strip_prefix("chat "))
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n < o.long_chats)
        })
        .map(|c| c.id.clone())
        .collect();
    println!(
        "reusing {} chats from the existing database ({} with 50 messages)",
        chats.len(),
        long.len()
    );
    Ok((chats.into_iter().map(|c| c.id).collect(), long))
}

/// Seeds through the store's own write path (one transaction per chat, as the API does).
/// Returns every chat id and the ids of the 50-message chats.
async fn seed(url: &DatabaseUrl, o: &Options) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let store = Store::open(url, 16, std::time::Duration::from_secs(30)).await?;
    let started = Instant::now();
    let mut ids = Vec::with_capacity(o.chats);
    let mut long_ids = Vec::with_capacity(o.long_chats);
    let mut messages_total = 0usize;
    for i in 0..o.chats {
        let n = messages_in_chat(i, o);
        let messages = (0..n)
            .map(|j| NewMessage {
                role: if j % 2 == 0 { Role::User } else { Role::Assistant },
                content: format!("message {j} of chat {i}: some ordinary chat text to give the row a realistic size."),
                name: None,
                metadata: None,
            })
            .collect();
        messages_total += n;
        let chat = store
            .create_chat(NewChat {
                title: Some(format!("chat {i}")),
                enabled_tools: vec![],
                messages,
                ..NewChat::owned_by(BUILTIN_ADMIN)
            })
            .await?;
        if i < o.long_chats {
            long_ids.push(chat.id.clone());
        }
        ids.push(chat.id);
        if (i + 1) % 20_000 == 0 {
            eprintln!(
                "seeded {} chats, {messages_total} messages ({:.0?})",
                i + 1,
                started.elapsed()
            );
        }
    }
    // The 50-message chats were created first; the workspace list shows the newest 100.
    // The planner's statistics now, not whenever autovacuum gets to them (PostgreSQL).
    store.analyze().await?;
    store.close().await;
    println!(
        "seeded {} chats and {messages_total} messages in {:.1?} ({} chats with 50 messages)",
        o.chats,
        started.elapsed(),
        o.long_chats
    );
    Ok((ids, long_ids))
}
