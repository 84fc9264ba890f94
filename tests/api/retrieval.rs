//! The library's hybrid search, black-box (docs/files.md, "How a question is answered"): a
//! generated corpus of 210 documents in seven formats (`retrieval_corpus.rs`), each stating a
//! fact in words no question uses and holding an exact code, searched through `file_search`
//! with provider_c's embeddings from a mock OpenAI `/embeddings` built on the corpus's concept
//! table. The keyword half finds the codes the vector half cannot; the vector half finds the
//! paraphrases the keyword half cannot; fused, both. A question costs exactly one embedding
//! call, a chunk is embedded once; an embedder that is down holds up no upload; a change of
//! model re-embeds in the background while the old vectors serve.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::library::{file_search, settled, upload};
use crate::people::{TOKEN, add_person};
use crate::retrieval_corpus::{Corpus, Embedder, Kind, MODEL_A, MODEL_B, Table, corpus, recall_at};
use crate::support::{Options, TestServer};
use chatd::store::library_search::{Scope, keywords};

/// A server whose library embeds with provider_c's `model` at `embedder`, on the database of
/// `dir` (a server's, stopped) or a new one.
async fn server(
    embedder: &Embedder,
    model: &str,
    dir: Option<Arc<tempfile::TempDir>>,
) -> TestServer {
    TestServer::start_with(Options {
        token: Some(TOKEN.into()),
        dir,
        allow_private_networks: true,
        args: vec![
            "--provider-c-base-url".into(),
            embedder.url.clone(),
            "--provider-c-api-key".into(),
            "c-key".into(),
            "--chatd-embedding-model".into(),
            format!("provider_c/{model}"),
        ],
        ..Options::default()
    })
    .await
}

/// Uploads the first `n` documents of `corpus` and waits until each is ready: their ids by name.
async fn add_all(
    server: &TestServer,
    key: &str,
    corpus: &Corpus,
    n: usize,
) -> HashMap<String, String> {
    let mut ids = Vec::new();
    for doc in &corpus.docs[..n] {
        let (status, file) = upload(
            server,
            key,
            &doc.name,
            Some(doc.mime),
            doc.bytes.clone(),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{file}");
        ids.push((file["id"].as_str().unwrap().to_string(), doc.name.clone()));
    }
    for (id, name) in &ids {
        let file = settled(server, key, id).await;
        assert_eq!(file["status"], "ready", "{name}: {file}");
    }
    ids.into_iter().collect()
}

/// Waits until `model` (provider_c's) serves: the worker makes it serve once no chunk lacks
/// its vector.
async fn serving(server: &TestServer, model: &str) {
    let want = format!("provider_c/{model}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.store.embedding_serving().await.unwrap().as_deref() != Some(want.as_str()) {
        assert!(Instant::now() < deadline, "{want} never served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The names `file_search` answers `question` with, best first.
async fn found(server: &TestServer, key: &str, question: &str) -> Vec<String> {
    file_search(server, key, json!({"query": question}))
        .await
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

/// The questions of `kind`, each with the name of the document that answers it.
fn expected(corpus: &Corpus, kind: Kind) -> Vec<(String, String)> {
    corpus
        .questions
        .iter()
        .filter(|q| q.kind == kind)
        .map(|q| (q.text.clone(), corpus.docs[q.doc].name.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hybrid_search_finds_paraphrases_by_meaning_and_codes_by_their_words() {
    let corpus = corpus(210);
    let embedder = Embedder::start(Table::new()).await;
    let server = server(&embedder, MODEL_A, None).await;
    let (person, key) = add_person(&server, "ann", "member").await;
    let names = add_all(&server, &key, &corpus, 210).await;
    serving(&server, MODEL_A).await;
    // Each document is one chunk, embedded once, at upload, and nothing after.
    assert_eq!(embedder.inputs(), 210, "every chunk embedded once");
    let calls = embedder.calls();
    assert!(calls <= 210, "{calls} calls for 210 files");

    let model = format!("provider_c/{MODEL_A}");
    let scope = Scope {
        owner: &person,
        collection: None,
        file_ids: None,
    };
    let mut report = Vec::new();
    for kind in [Kind::Paraphrase, Kind::Code] {
        let questions = expected(&corpus, kind);
        let (mut hybrid, mut words, mut meaning) = (Vec::new(), Vec::new(), Vec::new());
        for (question, _) in &questions {
            hybrid.push(found(&server, &key, question).await);
            // Each half alone, through the store the tool searches.
            let by_words = server
                .store
                .search_library(scope, &keywords(question), 5)
                .await
                .unwrap();
            words.push(by_words.into_iter().map(|p| p.name).collect());
            let vector = corpus.table.embed(MODEL_A, question);
            let near = server
                .store
                .nearest_chunks(scope, &model, &vector, 5)
                .await
                .unwrap();
            meaning.push(
                near.into_iter()
                    .map(|n| names[&n.file_id].clone())
                    .collect(),
            );
        }
        let right: Vec<String> = questions.iter().map(|(_, name)| name.clone()).collect();
        report.push((
            kind,
            recall_at(&hybrid, &right, 5),
            recall_at(&words, &right, 5),
            recall_at(&meaning, &right, 5),
        ));
    }
    eprintln!("recall@5 (kind, hybrid, keywords, vectors): {report:?}");
    for (kind, hybrid, words, meaning) in report {
        assert!(hybrid >= 0.9, "{kind:?}: hybrid recall@5 {hybrid}");
        match kind {
            // No question shares a word with its document's fact.
            Kind::Paraphrase => assert!(words < 0.1 && meaning >= 0.9, "{words} {meaning}"),
            // A code has no meaning the embedder knows: only its words find it.
            Kind::Code => assert!(words >= 0.95 && meaning < 0.1, "{words} {meaning}"),
        }
    }
    // Exactly one embedding call per question: the question's, by the model that serves.
    let asked = corpus.questions.len();
    assert_eq!(embedder.calls(), calls + asked);
    assert!(embedder.models_seen().iter().all(|m| m == MODEL_A));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedder_that_is_down_holds_up_no_upload_and_the_vectors_follow() {
    let corpus = corpus(210);
    let embedder = Embedder::start(Table::new()).await;
    embedder.set_down(true);
    let server = server(&embedder, MODEL_A, None).await;
    let (_, key) = add_person(&server, "ann", "member").await;
    add_all(&server, &key, &corpus, 7).await;
    let paraphrase = &corpus.questions[0];
    let code = &corpus.questions[1];
    assert_eq!((paraphrase.kind, code.kind), (Kind::Paraphrase, Kind::Code));
    let first = corpus.docs[0].name.clone();
    // Ready, found by its code; its fact waits for its vector.
    assert_eq!(found(&server, &key, &code.text).await.first(), Some(&first));
    assert!(
        !found(&server, &key, &paraphrase.text)
            .await
            .contains(&first)
    );
    embedder.set_down(false);
    let from = embedder.inputs();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !found(&server, &key, &paraphrase.text)
        .await
        .contains(&first)
    {
        assert!(Instant::now() < deadline, "the vectors were never made");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The seven chunks were embedded once each when the embedder came back (the rest of what
    // it embedded is the question, asked while waiting).
    let made = embedder.inputs_seen()[from..]
        .iter()
        .filter(|text| **text != paraphrase.text)
        .count();
    assert_eq!(made, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_model_re_embeds_in_the_background_while_the_old_vectors_serve() {
    let corpus = corpus(210);
    let embedder = Embedder::start(Table::new()).await;
    let first = server(&embedder, MODEL_A, None).await;
    let (_, key) = add_person(&first, "ann", "member").await;
    add_all(&first, &key, &corpus, 14).await;
    serving(&first, MODEL_A).await;
    let paraphrase = &corpus.questions[2];
    let name = corpus.docs[1].name.clone();
    assert_eq!(
        found(&first, &key, &paraphrase.text).await.first(),
        Some(&name)
    );

    // The new model cannot embed yet: the old one answers, with its own vectors.
    embedder.refuse_model(Some(MODEL_B));
    let store_dir = first.dir.clone();
    first.stop().await;
    let second = server(&embedder, MODEL_B, Some(store_dir)).await;
    let before = embedder.models_seen().len();
    assert_eq!(
        found(&second, &key, &paraphrase.text).await.first(),
        Some(&name)
    );
    let asked = &embedder.models_seen()[before..];
    assert!(asked.contains(&MODEL_A.to_string()), "{asked:?}");
    assert_eq!(
        second.store.embedding_serving().await.unwrap().as_deref(),
        Some(format!("provider_c/{MODEL_A}").as_str())
    );

    // Once it can, every chunk gets its vector, then it serves and the old vectors go.
    embedder.refuse_model(None);
    let deadline = Instant::now() + Duration::from_secs(30);
    let new = format!("provider_c/{MODEL_B}");
    while second.store.embedding_serving().await.unwrap().as_deref() != Some(new.as_str()) {
        assert!(Instant::now() < deadline, "the new model never served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let before = embedder.models_seen().len();
    assert_eq!(
        found(&second, &key, &paraphrase.text).await.first(),
        Some(&name)
    );
    assert_eq!(embedder.models_seen()[before..], [MODEL_B.to_string()]);
    // The old vectors go once the new model serves.
    let mut db = second.raw_db().await;
    loop {
        let kept: Vec<(String, i64)> = db
            .rows(
                "SELECT model, COUNT(*) FROM library_vectors GROUP BY model",
                &[],
            )
            .await;
        if kept == [(new.clone(), 14)] {
            break;
        }
        assert!(Instant::now() < deadline, "old vectors kept: {kept:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A library past 2,000 chunks, where a word every chunk holds is common: a question of that
/// word and a rare one finds the rare one's chunk; one whose other word no chunk holds (a
/// typo) still finds chunks of the common word; the word alone is searched as asked. On
/// PostgreSQL the planner's count of the chunks is made first (ANALYZE), as autovacuum would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_word_most_chunks_hold_gives_way_to_rarer_ones() {
    let server = crate::people::token_server().await;
    let (_, key) = add_person(&server, "ann", "member").await;
    let mut text = String::new();
    for i in 0..2_300 {
        let mut paragraph = format!("alpha item{i}");
        if i == 1_234 {
            paragraph.push_str(" zebra");
        }
        while paragraph.len() < 900 {
            paragraph.push_str(&format!(" filler{}", i % 50));
        }
        text.push_str(&paragraph);
        text.push_str(".\n\n");
    }
    let (status, file) = upload(
        &server,
        &key,
        "big.txt",
        Some("text/plain"),
        text.into(),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{file}");
    let file = settled(&server, &key, file["id"].as_str().unwrap()).await;
    assert!(file["chunks"].as_i64().unwrap() > 2_000, "{file}");
    if crate::support::on_postgres() {
        server
            .raw_db()
            .await
            .execute("ANALYZE library_chunks", &[])
            .await;
    }
    let search = |query: &'static str| {
        let (server, key) = (&server, &key);
        async move {
            file_search(server, key, json!({"query": query}))
                .await
                .unwrap()
        }
    };
    let found = search("alpha zebra").await;
    assert!(
        found[0]["text"].as_str().unwrap().contains("zebra"),
        "{found:?}"
    );
    assert!(!search("alpha zebrq").await.is_empty());
    assert_eq!(search("alpha").await.len(), 8);
}
