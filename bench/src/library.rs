//! `bench library`: the library's keyword search at scale, through the store (no HTTP, no
//! tool call around it): `--chunks` chunks (100,000 by default) of about 1,000 characters in
//! `--files` files of one person, stored as the worker stores them, then `--queries` questions of
//! three kinds, each timed: an exact code (one chunk holds it), a question of common words
//! (thousands of chunks match some of them, all ranked), and the two mixed. SQLite by default,
//! PostgreSQL with `--database-url` (an empty database). Figures: BENCHMARKS.md, `bench library`.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chatd::config::DatabaseUrl;
use chatd::store::Store;
use chatd::store::library::{Added, NewLibraryFile};
use chatd::store::library_search::{NewChunk, Scope, keywords};

const OWNER: &str = "bench-owner";
/// The instance that "processes" the seeded files (the worker's role, played here).
const SEEDER: &str = "bench-seeder";

pub struct Options {
    chunks: usize,
    files: usize,
    queries: usize,
    database_url: Option<String>,
}

pub fn usage() -> &'static str {
    "usage: bench library [--chunks N] [--files N] [--queries N] [--database-url postgres://…]\n\
     defaults: 100000 chunks in 1000 files, 500 questions of each kind; SQLite in a temporary folder"
}

pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        chunks: 100_000,
        files: 1_000,
        queries: 500,
        database_url: None,
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
            other => bail!("unknown option {other}\n{}", usage()),
        }
    }
    anyhow::ensure!(
        o.files > 0 && o.chunks >= o.files,
        "--chunks must be at least --files\n{}",
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

/// Chunk `n`'s text: about 1,000 characters of vocabulary words and its code, `CODE-n`.
fn chunk_text(numbers: &mut Numbers, n: usize) -> String {
    let mut text = String::with_capacity(1_100);
    while text.len() < 1_000 {
        text.push_str(&numbers.word());
        text.push(' ');
        if text.len() > 500 && !text.contains("CODE-") {
            text.push_str(&format!("CODE-{n} "));
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
            "store.search_library (8 passages)", "p50 ms", "p95 ms", "p99 ms", "max ms", "found"
        );
        let mut numbers = Numbers(0x9e37_79b9_7f4a_7c15);
        let kinds: [(&str, Box<dyn Fn(&mut Numbers, usize) -> String>); 3] = [
            (
                "an exact code (one chunk)",
                Box::new(move |_, i| format!("What is CODE-{}?", (i * 7919) % o.chunks)),
            ),
            (
                "eight common words (thousands match)",
                Box::new(|n, _| (0..8).map(|_| n.word()).collect::<Vec<_>>().join(" ")),
            ),
            (
                "a code and six common words",
                Box::new(move |n, i| {
                    let words: Vec<String> = (0..6).map(|_| n.word()).collect();
                    format!("{} CODE-{}", words.join(" "), (i * 104_729) % o.chunks)
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
        store.close().await;
        anyhow::Ok(())
    })
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
            .claim_library_file(SEEDER)
            .await?
            .context("the file just added waits")?;
        let chunks = (0..count)
            .map(|i| NewChunk {
                page: None,
                text: chunk_text(&mut numbers, n + i),
            })
            .collect();
        n += count;
        anyhow::ensure!(
            store
                .finish_library_file(&claimed.file.id, SEEDER, None, chunks)
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
