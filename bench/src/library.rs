//! `bench library`: the library's search at scale, through the store (no HTTP, no tool call
//! around it): `--chunks` chunks (100,000 by default) of about 1,000 characters in `--files`
//! files of one person, each with a vector of `--dims` dimensions, stored as the worker stores
//! them, then `--queries` questions of three kinds, each timed: an exact code (one chunk holds
//! it; the question's other words are in none), a question of common words (thousands of chunks
//! match some of them), and the two mixed; then the vector half (every vector of the person
//! scored exactly, the 50 best kept) and both halves one after the other, as a question with an
//! embedding model runs them. SQLite by default, PostgreSQL with `--database-url` (an empty
//! database).
//!
//! Then upload to ready: `--pdfs` generated PDFs of `--pages` pages each (about 1,500 characters a
//! page) uploaded to the real server, which reads them in the sandbox (the bundled `doc_text`
//! extractor, one file at a time), in pages per second from the first upload to the last file
//! ready; beside lopdf run natively on the same files (load, then each page's text), one at a
//! time too. Figures: BENCHMARKS.md, `bench library`.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chatd::config::DatabaseUrl;
use chatd::store::Store;
use chatd::store::library::{Added, ChunkVectors, NewLibraryFile};
use chatd::store::library_search::{NewChunk, Scope, keywords};
use chatd::store::library_vectors::unit;

const OWNER: &str = "bench-owner";
/// The instance that "processes" the seeded files (the worker's role, played here).
const SEEDER: &str = "bench-seeder";
/// The model the seeded vectors are "of".
const MODEL: &str = "bench/vectors";

pub struct Options {
    chunks: usize,
    files: usize,
    queries: usize,
    database_url: Option<String>,
    pdfs: usize,
    pages: usize,
    dims: usize,
    rounds: usize,
}

pub fn usage() -> &'static str {
    "usage: bench library [--chunks N] [--files N] [--queries N] [--dims N] [--database-url postgres://…] [--pdfs N] [--pages N] [--rounds N]\n\
     defaults: 100000 chunks in 1000 files with vectors of 768 dimensions, 500 questions of each kind;\n\
     SQLite in a temporary folder; then 20 PDFs of 20 pages uploaded to ready, beside lopdf natively;\n\
     then 200 rounds of a chat's first delta with 50 files searched and without (library_chat.rs)"
}

pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        chunks: 100_000,
        files: 1_000,
        queries: 500,
        database_url: None,
        pdfs: 20,
        pages: 20,
        dims: 768,
        rounds: 200,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("{flag} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "--chunks" => o.chunks = value()?.parse()?,
            "--files" => o.files = value()?.parse()?,
            "--queries" => o.queries = value()?.parse()?,
            "--database-url" => o.database_url = Some(value()?.clone()),
            "--pdfs" => o.pdfs = value()?.parse()?,
            "--pages" => o.pages = value()?.parse()?,
            "--dims" => o.dims = value()?.parse()?,
            "--rounds" => o.rounds = value()?.parse()?,
            other => bail!("unknown option {other}\n{}", usage()),
        }
    }
    anyhow::ensure!(
        o.files > 0 && o.chunks >= o.files && o.dims > 0,
        "--chunks must be at least --files, --dims at least 1\n{}",
        usage()
    );
    Ok(o)
}

/// A deterministic stream of numbers (xorshift), so every run seeds the same text.
struct Numbers(u64);

impl Numbers {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A word of a 20,000-word vocabulary, the low numbers far more often (roughly Zipf's law,
    /// as words in documents are).
    fn word(&mut self) -> String {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        let rank = (20_000f64.powf(u)) as u64;
        format!("{}{}", SYLLABLES[(rank % 16) as usize], rank)
    }
}

const SYLLABLES: [&str; 16] = [
    "ka", "lo", "mi", "ne", "po", "ra", "su", "ti", "va", "we", "xo", "yu", "za", "be", "co", "du",
];

/// Chunk `n`'s code: one word no other chunk has.
fn code(n: usize) -> String {
    format!("QZ{n}X")
}

/// Chunk `n`'s text: about 1,000 characters of vocabulary words, its code in the middle.
fn chunk_text(numbers: &mut Numbers, n: usize) -> String {
    let mut text = String::with_capacity(1_100);
    let mut coded = false;
    while text.len() < 1_000 {
        text.push_str(&numbers.word());
        text.push(' ');
        if text.len() > 500 && !coded {
            text.push_str(&code(n));
            text.push(' ');
            coded = true;
        }
    }
    text
}

pub fn run(o: Options) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = match &o.database_url {
        Some(url) => DatabaseUrl::Postgres(url.clone()),
        None => DatabaseUrl::Sqlite(format!(
            "sqlite://{}",
            dir.path().join("bench.db").display()
        )),
    };
    println!("database: {url}");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let store = Store::open(&url, 8, Duration::from_secs(30)).await?;
        let seeded = Instant::now();
        seed(&store, &o).await?;
        store.analyze().await?;
        println!(
            "seeded {} chunks in {} files in {:.1} s",
            o.chunks,
            o.files,
            seeded.elapsed().as_secs_f64()
        );
        println!(
            "\n{:<44} {:>9} {:>9} {:>9} {:>9} {:>8}",
            "the store's search (8 passages; vectors 50)",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "max ms",
            "found"
        );
        let mut numbers = Numbers(0x9e37_79b9_7f4a_7c15);
        let kinds: [(&str, Box<dyn Fn(&mut Numbers, usize) -> String>); 3] = [
            (
                "an exact code (one chunk)",
                Box::new(move |_, i| format!("What is {}?", code((i * 7919) % o.chunks))),
            ),
            (
                "eight common words (thousands match)",
                Box::new(|n, _| (0..8).map(|_| n.word()).collect::<Vec<_>>().join(" ")),
            ),
            (
                "a code and six common words",
                Box::new(move |n, i| {
                    let words: Vec<String> = (0..6).map(|_| n.word()).collect();
                    format!("{} {}", words.join(" "), code((i * 104_729) % o.chunks))
                }),
            ),
        ];
        for (name, question) in kinds {
            let mut samples = Vec::with_capacity(o.queries);
            let mut found = 0usize;
            for i in 0..o.queries + 20 {
                let words = keywords(&question(&mut numbers, i));
                let scope = Scope {
                    owner: OWNER,
                    collection: None,
                    file_ids: None,
                };
                let started = Instant::now();
                let passages = store.search_library(scope, &words, 8).await?;
                if i >= 20 {
                    samples.push(started.elapsed());
                    found += passages.len();
                }
            }
            report(name, &mut samples, found as f64 / o.queries as f64);
        }
        vectors(&store, &o, &mut numbers).await?;
        store.close().await;
        anyhow::Ok(())
    })?;
    rt.block_on(throughput(&o))?;
    rt.block_on(crate::library_chat::run(o.rounds))
}

/// A random vector of `dims` dimensions at unit length.
fn vector(numbers: &mut Numbers, dims: usize) -> Vec<f32> {
    let raw: Vec<f32> = (0..dims)
        .map(|_| (numbers.next() % 2_000) as f32 / 1_000.0 - 1.0)
        .collect();
    unit(&raw).unwrap_or_else(|| vec![1.0; dims])
}

/// The vector half alone (every vector of the person scored, the 50 best kept, as a question
/// with an embedding model asks), then both halves one after the other.
async fn vectors(store: &Store, o: &Options, numbers: &mut Numbers) -> anyhow::Result<()> {
    let scope = Scope {
        owner: OWNER,
        collection: None,
        file_ids: None,
    };
    // A tenth of the questions: each scans every vector.
    let queries = (o.queries / 10).max(10);
    for both in [false, true] {
        let mut samples = Vec::with_capacity(queries);
        let mut found = 0usize;
        for i in 0..queries + 5 {
            let query = vector(numbers, o.dims);
            let words = keywords(&format!("{} {}", numbers.word(), code(i % o.chunks)));
            let started = Instant::now();
            let near = store.nearest_chunks(scope, MODEL, &query, 50).await?;
            if both {
                store.search_library(scope, &words, 50).await?;
            }
            if i >= 5 {
                samples.push(started.elapsed());
                found += near.len();
            }
        }
        let name = match both {
            false => format!("vectors, exact ({} dims, 50 kept)", o.dims),
            true => "vectors, then a code and a word".to_string(),
        };
        report(&name, &mut samples, found as f64 / queries as f64);
    }
    // The worker's look between files when every chunk has its vector: the cost of an idle
    // library with an embedding model, every few seconds.
    let mut samples = Vec::new();
    for i in 0..25 {
        let started = Instant::now();
        let todo = store.unembedded_chunks(MODEL, 1).await?;
        anyhow::ensure!(todo.is_empty(), "a chunk without its vector");
        if i >= 5 {
            samples.push(started.elapsed());
        }
    }
    report(
        "the worker's look: a chunk without a vector?",
        &mut samples,
        0.0,
    );
    Ok(())
}

/// `n` PDFs of `pages` pages, each page about 1,500 characters of words.
fn pdfs(n: usize, pages: usize) -> Vec<Vec<u8>> {
    let mut numbers = Numbers(0x51_7cc1_b727_220a);
    (0..n)
        .map(|d| {
            let texts: Vec<String> = (0..pages)
                .map(|p| {
                    let mut text = format!("Document {d} page {p}");
                    while text.len() < 1_500 {
                        text.push(' ');
                        text.push_str(&numbers.word());
                    }
                    text
                })
                .collect();
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            crate::documents::pdf(&texts)
        })
        .collect()
}

/// Upload to ready through the real server, beside lopdf natively.
async fn throughput(o: &Options) -> anyhow::Result<()> {
    let files = pdfs(o.pdfs, o.pages);
    let total_pages = (o.pdfs * o.pages) as f64;
    let native = {
        let started = Instant::now();
        let mut read = 0usize;
        for bytes in &files {
            let document = lopdf::Document::load_mem(bytes)?;
            for number in document.get_pages().keys() {
                read += document.extract_text(&[*number])?.len();
            }
        }
        anyhow::ensure!(read > 0, "lopdf read no text");
        started.elapsed()
    };
    let dir = tempfile::tempdir()?;
    let config = chatd::config::Config::from_args(["chatd", "--host", "127.0.0.1", "--port", "0"])
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let server =
        crate::library_chat::InProcess::start(config, &dir.path().join("upload.db")).await?;
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let started = Instant::now();
    let files = files
        .into_iter()
        .enumerate()
        .map(|(i, bytes)| (format!("doc-{i}.pdf"), "application/pdf", bytes))
        .collect();
    let ready = crate::library_chat::add_ready(&client, &base, files).await?;
    let pages: i64 = ready.iter().map(|f| f["pages"].as_i64().unwrap_or(0)).sum();
    let sandboxed = started.elapsed();
    anyhow::ensure!(
        pages as f64 == total_pages,
        "{pages} pages read of {total_pages}"
    );
    server.stop().await?;
    println!(
        "\nupload to ready: {} PDFs of {} pages ({} pages)",
        o.pdfs, o.pages, total_pages
    );
    let rate = |d: Duration| total_pages / d.as_secs_f64();
    println!(
        "{:<44} {:>12.0} pages/s",
        "chatd (upload, doc_text in the sandbox, chunks)",
        rate(sandboxed)
    );
    println!(
        "{:<44} {:>12.0} pages/s",
        "lopdf natively (load, each page's text)",
        rate(native)
    );
    println!(
        "{:<44} {:>12.2}",
        "native / chatd",
        rate(native) / rate(sandboxed)
    );
    Ok(())
}

/// Files of [`OWNER`], each ready with its share of the chunks, stored as the worker stores them.
async fn seed(store: &Store, o: &Options) -> anyhow::Result<()> {
    let mut numbers = Numbers(0x2545_f491_4f6c_dd1d);
    let per_file = o.chunks / o.files;
    let mut n = 0;
    for f in 0..o.files {
        let count = if f + 1 == o.files {
            o.chunks - n
        } else {
            per_file
        };
        let file = NewLibraryFile {
            name: format!("file-{f}.txt"),
            mime_type: "text/plain".into(),
            collection: None,
            content: format!("file {f}").into_bytes(),
        };
        let Added::New(_) = store.add_library_file(OWNER, file).await? else {
            bail!("file {f} was not added: is the database empty?");
        };
        let claimed = store
            .claim_library_file(SEEDER, "")
            .await?
            .context("the file just added waits")?;
        let chunks = (0..count)
            .map(|i| NewChunk {
                page: None,
                text: chunk_text(&mut numbers, n + i),
            })
            .collect();
        let vectors = Some(ChunkVectors {
            model: MODEL.into(),
            vectors: (0..count).map(|_| vector(&mut numbers, o.dims)).collect(),
        });
        n += count;
        anyhow::ensure!(
            store
                .finish_library_file(&claimed.file.id, SEEDER, None, chunks, vectors)
                .await?,
            "file {f} was taken by another"
        );
    }
    Ok(())
}

fn report(name: &str, samples: &mut [Duration], found: f64) {
    samples.sort();
    let at = |p: f64| {
        let i = ((samples.len() as f64 * p).ceil() as usize).saturating_sub(1);
        samples[i.min(samples.len() - 1)].as_secs_f64() * 1000.0
    };
    println!(
        "{:<44} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>8.1}",
        name,
        at(0.50),
        at(0.95),
        at(0.99),
        samples.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0),
        found
    );
}
