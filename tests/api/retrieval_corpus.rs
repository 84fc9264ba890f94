//! A corpus for measuring the library's retrieval, with the embedding model that reads it.
//!
//! No embedding model can be downloaded here, so the model is a table made with the corpus:
//! each concept has two words that no stemmer relates, one that the documents use and one that
//! the questions use ("automobile", "car"). A document states one fact of three concepts in its
//! words; its paraphrase asks for it in the others. Keywords cannot link the two: no word of a
//! question shares a stem with any document's word (checked against SQLite's porter and
//! PostgreSQL's `english` when the lists were written; the tests below check what needs no
//! stemmer). The mock embedder puts both words of a concept on one dimension, so a paraphrase
//! is found by vectors alone. Each document also holds a code (`QX-5521`) whose pieces are in no
//! other document and in no concept: found by keywords alone, as its question's vector is
//! orthogonal to every document's.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::documents::{docx, pdf, xlsx};

/// The model whose space is the table's as it is.
pub const MODEL_A: &str = "concepts-a";
/// The model whose space is the table's turned by seven dimensions: its vectors cannot be
/// compared with [`MODEL_A`]'s.
pub const MODEL_B: &str = "concepts-b";
/// The most documents [`corpus`] makes: each needs a code of its own.
pub const MAX_DOCS: usize = LETTERS.len() * LETTERS.len();

/// Each concept, comma-separated: the documents' word, then the questions' word. No word is in
/// two concepts, begins another, or shares a stem with a word on the other side.
const CONCEPTS: &str = "\
    automobile car, salary wage, physician doctor, purchase buy, residence home, \
    attorney lawyer, infant baby, canine dog, feline cat, garment clothes, pupil student, \
    vessel ship, beverage drink, illness disease, journey trip, inquiry query, \
    meadow field, currency money, lumber wood, pharmacy chemist, shore beach, blaze fire, \
    ocean sea, river stream, forest grove, grain cereal, chef cook, author writer, \
    spouse husband, tutor teacher, sofa couch, rubbish trash, pasta noodle, lorry truck, \
    autumn fall, biscuit cracker, holiday vacation, luggage baggage, elevator lift, \
    trousers pants, rabbit bunny, boulder rock, sailor mariner, cellar basement, \
    lantern lamp, photograph picture, chauffeur driver, pistol gun, ballot vote, \
    wharf dock, tariff levy, crimson red, lawn grass, banquet feast, novel book, \
    remedy cure, thief robber, summit peak, jail prison, bicycle bike";

/// A document's fact: `{a}`, `{b}`, `{c}` are its concepts' document words.
const FACTS: [&str; 6] = [
    "The committee noted that the {a} {b} rule changed for every {c} last spring.",
    "According to the board, each {a} now needs a {b} form signed by the {c} before approval.",
    "Our team agreed that the {a} budget covers the {b} and the {c} until further notice.",
    "In the pilot study the {a} was measured against the {b} with one {c} per group.",
    "The new guideline says a {a} must travel with the {b} whenever a {c} joins.",
    "Staff were told that {a} costs rise when the {b} and the {c} share a single account.",
];

/// Words many documents share, so that a keyword search has noise to rank.
const FILLER: [&str; 5] = [
    "Quarterly report from the regional office, filed by the records team.",
    "This summary was prepared for the annual review and shared with all staff.",
    "Please keep this page with the other office records until the quarterly review.",
    "Copies went to the regional office and the records team after the meeting.",
    "The annual report lists this item among several others from the same office.",
];

const CODE_LINES: [&str; 4] = [
    "Reference {code}.",
    "Filed under {code}.",
    "Case number {code} applies.",
    "Tracking label {code}.",
];

/// A paraphrase: `{a}`, `{b}`, `{c}` are the concepts' question words. No other word here is in
/// any document.
const QUESTIONS: [&str; 5] = [
    "Which entry mentions {a}, {b} or {c}?",
    "What do we know about {a} {b} {c}?",
    "Tell me anything regarding {a} plus {b} plus {c}.",
    "Where would I find something concerning {a}, {b}, {c}?",
    "Is there anything about {a} or {b} or {c}?",
];

const CODE_QUESTIONS: [&str; 4] = [
    "Where is {code} mentioned?",
    "Which entry cites {code}?",
    "Find {code}.",
    "What about {code}?",
];

/// A code's letters: two consonants (no `y`, no `m`), never a word.
const LETTERS: &[u8; 19] = b"bcdfghjklnpqrstvwxz";

const PDF: &str = "application/pdf";
const DOCX: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

/// A file of the corpus. `text` is what it says: its bytes for the text formats, its page's,
/// paragraphs' or cells' text joined by newlines for the others.
#[derive(Clone, Debug)]
pub struct Doc {
    pub name: String,
    pub mime: &'static str,
    pub bytes: Vec<u8>,
    pub text: String,
    pub code: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The document's fact in the questions' words: found by vectors, not by keywords.
    Paraphrase,
    /// The document's code: found by keywords, not by vectors.
    Code,
}

/// A question and the index of the document that answers it.
#[derive(Clone, Debug)]
pub struct Question {
    pub text: String,
    pub doc: usize,
    pub kind: Kind,
}

#[derive(Clone, Debug)]
pub struct Corpus {
    pub docs: Vec<Doc>,
    /// Two per document, in its order: its paraphrase, then its code.
    pub questions: Vec<Question>,
    pub table: Table,
}

/// The concept table, and the embedding model made of it.
#[derive(Clone, Debug)]
pub struct Table {
    concepts: Vec<(&'static str, &'static str)>,
}

impl Default for Table {
    fn default() -> Self {
        Self::new()
    }
}

impl Table {
    pub fn new() -> Self {
        let concepts = CONCEPTS.split(',').map(|pair| {
            let (doc, question) = pair.trim().split_once(' ').expect("two words");
            (doc, question)
        });
        Self {
            concepts: concepts.collect(),
        }
    }

    /// The number of concepts; a vector has one dimension more.
    pub fn len(&self) -> usize {
        self.concepts.len()
    }

    /// The concept `word` (lowercase) is either word of.
    fn concept(&self, word: &str) -> Option<usize> {
        self.concepts
            .iter()
            .position(|&(doc, question)| doc == word || question == word)
    }

    /// `text` in `model`'s space, of unit length: one dimension per concept, counting the words
    /// of it that `text` holds, and a last one that is 1 only when it holds none (so such a
    /// text is orthogonal to every other, and never NaN). [`MODEL_B`] turns the dimensions by
    /// seven; any other model leaves them.
    pub fn embed(&self, model: &str, text: &str) -> Vec<f32> {
        let dims = self.len() + 1;
        let mut vector = vec![0.0f32; dims];
        for word in words(text) {
            if let Some(k) = self.concept(&word) {
                vector[k] += 1.0;
            }
        }
        if vector.iter().all(|x| *x == 0.0) {
            vector[dims - 1] = 1.0;
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        for x in &mut vector {
            *x /= norm;
        }
        if model == MODEL_B {
            vector.rotate_right(7 % dims);
        }
        vector
    }
}

/// `text`'s words: runs of letters and digits, lowercased, as the keyword search cuts them.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// A small linear congruential generator: the corpus is the same on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// `n` facts of three of `k` concepts, no pair of concepts in two facts (so two facts share at
/// most one concept, and each is nearest its own paraphrase): a greedy packing of random
/// triples from a fixed seed (it finds over 500 of the 60 concepts).
fn facts(k: usize, n: usize) -> Vec<[usize; 3]> {
    let mut used = vec![false; k * k];
    let mut rng = Lcg(0x5EED_2026);
    let mut facts = Vec::with_capacity(n);
    let mut tries = 0;
    while facts.len() < n {
        tries += 1;
        assert!(tries < 1_000_000, "only {} facts found", facts.len());
        let mut t = [rng.below(k), rng.below(k), rng.below(k)];
        t.sort_unstable();
        let pairs = [(t[0], t[1]), (t[0], t[2]), (t[1], t[2])];
        if t[0] == t[1] || t[1] == t[2] || pairs.iter().any(|&(a, b)| used[a * k + b]) {
            continue;
        }
        for (a, b) in pairs {
            used[a * k + b] = true;
        }
        facts.push(t);
    }
    facts
}

/// Document `i`'s code: letters and number both of it alone (`113` is prime to 361, `7919`
/// to 9000).
fn code(i: usize) -> String {
    let n = LETTERS.len();
    let pair = (i * 113 + 17) % (n * n);
    let first = LETTERS[pair / n].to_ascii_uppercase() as char;
    let second = LETTERS[pair % n].to_ascii_uppercase() as char;
    format!("{first}{second}-{}", 1000 + (i * 7919 + 3301) % 9000)
}

fn fill(template: &str, [a, b, c]: [&str; 3]) -> String {
    template
        .replace("{a}", a)
        .replace("{b}", b)
        .replace("{c}", c)
}

/// Document `i`, in the format its index picks, saying `fact`, `filler` and `code_line`, all
/// in one chunk (a PDF's on its one page: a chunk never spans two).
fn document(i: usize, fact: &str, filler: &str, code_line: &str, code: String) -> Doc {
    let name = |ending: &str| format!("doc-{i:03}.{ending}");
    let doc = |ending: &str, mime: &'static str, bytes: Vec<u8>, text: String| Doc {
        name: name(ending),
        mime,
        bytes,
        text,
        code: code.clone(),
    };
    let plain = |ending: &str, mime: &'static str, text: String| {
        doc(ending, mime, text.clone().into_bytes(), text)
    };
    match i % 7 {
        0 => plain(
            "txt",
            "text/plain",
            format!("{fact}\n\n{filler}\n\n{code_line}\n"),
        ),
        1 => plain(
            "md",
            "text/markdown",
            format!("# Internal memo\n\n{fact}\n\n{filler}\n\n{code_line}\n"),
        ),
        2 => plain(
            "csv",
            "text/csv",
            format!(
                "section,text\nfact,\"{fact}\"\nnote,\"{filler}\"\nreference,\"{code_line}\"\n"
            ),
        ),
        3 => plain(
            "html",
            "text/html",
            format!(
                "<!DOCTYPE html>\n<html><head><title>Internal memo</title></head><body>\n\
                 <p>{fact}</p>\n<p>{filler}</p>\n<p>{code_line}</p>\n</body></html>\n"
            ),
        ),
        4 => {
            let page = format!("{fact} {filler} {code_line}");
            let bytes = pdf(&[page.as_str()]);
            doc("pdf", PDF, bytes, page)
        }
        5 => {
            let paragraphs = ["Internal memo", fact, filler, code_line];
            doc("docx", DOCX, docx(&paragraphs), paragraphs.join("\n"))
        }
        _ => {
            let rows = vec![
                vec!["Topic", "Detail"],
                vec!["Fact", fact],
                vec!["Note", filler],
                vec!["Reference", code_line],
            ];
            let cells: Vec<String> = rows.iter().map(|row| row.join("\t")).collect();
            let text = format!("Memo\n{}", cells.join("\n"));
            doc("xlsx", XLSX, xlsx("Memo", &rows), text)
        }
    }
}

/// `n` documents (at most [`MAX_DOCS`]) and their questions, the same on every call: document
/// `i` is `doc-iii.*`, its format the `i % 7`th of txt, md, csv, html, pdf, docx, xlsx.
pub fn corpus(n: usize) -> Corpus {
    assert!(
        n <= MAX_DOCS,
        "at most {MAX_DOCS} documents have codes of their own"
    );
    let table = Table::new();
    let mut docs = Vec::with_capacity(n);
    let mut questions = Vec::with_capacity(2 * n);
    for (i, fact) in facts(table.len(), n).into_iter().enumerate() {
        // The concepts in another order in the question than in the document.
        let doc_word = |s: usize| table.concepts[fact[(i + s) % 3]].0;
        let question_word = |s: usize| table.concepts[fact[(i + 2 * s + 1) % 3]].1;
        let sentence = fill(
            FACTS[i % FACTS.len()],
            [doc_word(0), doc_word(1), doc_word(2)],
        );
        let code = code(i);
        let code_line = CODE_LINES[(i / 3) % CODE_LINES.len()].replace("{code}", &code);
        let filler = FILLER[i % FILLER.len()];
        docs.push(document(i, &sentence, filler, &code_line, code.clone()));
        questions.push(Question {
            text: fill(
                QUESTIONS[i % QUESTIONS.len()],
                [question_word(0), question_word(1), question_word(2)],
            ),
            doc: i,
            kind: Kind::Paraphrase,
        });
        questions.push(Question {
            text: CODE_QUESTIONS[i % CODE_QUESTIONS.len()].replace("{code}", &code),
            doc: i,
            kind: Kind::Code,
        });
    }
    Corpus {
        docs,
        questions,
        table,
    }
}

/// The share of questions whose `expected` name is among the first `k` distinct names of its
/// list in `found` (a file found in several chunks counts once, where it first ranks).
pub fn recall_at(found: &[Vec<String>], expected: &[String], k: usize) -> f64 {
    assert_eq!(
        found.len(),
        expected.len(),
        "one list of names per question"
    );
    if expected.is_empty() {
        return 0.0;
    }
    let hits = found
        .iter()
        .zip(expected)
        .filter(|&(names, want)| {
            let mut distinct: Vec<&String> = Vec::new();
            for name in names {
                if !distinct.contains(&name) {
                    distinct.push(name);
                }
            }
            distinct.iter().take(k).any(|name| *name == want)
        })
        .count();
    hits as f64 / expected.len() as f64
}

/// A mock of an OpenAI-compatible embeddings service, embedding with a [`Table`].
pub struct Embedder {
    /// `http://127.0.0.1:PORT`, to which a client adds `/embeddings`.
    pub url: String,
    shared: Arc<Shared>,
}

struct Shared {
    table: Table,
    calls: AtomicUsize,
    down: AtomicBool,
    inputs: Mutex<Vec<String>>,
    /// The model of each call, in order.
    models: Mutex<Vec<String>>,
    /// A model answered 503 while set (the others answer).
    refused: Mutex<Option<String>>,
}

impl Embedder {
    pub async fn start(table: Table) -> Self {
        let shared = Arc::new(Shared {
            table,
            calls: AtomicUsize::new(0),
            down: AtomicBool::new(false),
            inputs: Mutex::new(Vec::new()),
            models: Mutex::new(Vec::new()),
            refused: Mutex::new(None),
        });
        let app = Router::new()
            .route("/embeddings", post(embeddings))
            .route("/models", get(models))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { url, shared }
    }

    /// The `POST /embeddings` requests received, refused ones too.
    pub fn calls(&self) -> usize {
        self.shared.calls.load(Ordering::SeqCst)
    }

    /// The texts embedded so far (those of refused requests not counted).
    pub fn inputs(&self) -> usize {
        self.shared.inputs.lock().unwrap().len()
    }

    /// The texts embedded so far, in the order received.
    pub fn inputs_seen(&self) -> Vec<String> {
        self.shared.inputs.lock().unwrap().clone()
    }

    /// While down, every `POST /embeddings` is answered 503, as an overloaded service does.
    pub fn set_down(&self, down: bool) {
        self.shared.down.store(down, Ordering::SeqCst);
    }

    /// While set, calls for `model` alone are answered 503.
    pub fn refuse_model(&self, model: Option<&str>) {
        *self.shared.refused.lock().unwrap() = model.map(str::to_string);
    }

    /// The model each call named, in order (calls whose body named none not counted).
    pub fn models_seen(&self) -> Vec<String> {
        self.shared.models.lock().unwrap().clone()
    }
}

/// OpenAI's error body.
fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
    (status, Json(body)).into_response()
}

fn invalid(message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, "invalid_request_error", message)
}

/// `POST /embeddings`: `{"model", "input": string or [string], "encoding_format"?: "float"}`.
/// The body is read by hand, so that any fault in it is OpenAI's 400 rather than axum's.
async fn embeddings(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    shared.calls.fetch_add(1, Ordering::SeqCst);
    if shared.down.load(Ordering::SeqCst) {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "embedder is down",
        );
    }
    let request: Value = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return invalid(&format!("the body is not JSON: {e}")),
    };
    let Some(model) = request["model"].as_str() else {
        return invalid("'model' must be a string");
    };
    shared.models.lock().unwrap().push(model.to_string());
    if shared.refused.lock().unwrap().as_deref() == Some(model) {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "this model is down",
        );
    }
    let texts: Option<Vec<String>> = match &request["input"] {
        Value::String(text) => Some(vec![text.clone()]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| item.as_str().map(str::to_string))
            .collect(),
        _ => None,
    };
    let Some(texts) = texts else {
        return invalid("'input' must be a string or a non-empty array of strings");
    };
    match request.get("encoding_format") {
        None | Some(Value::Null) => {}
        Some(format) if format.as_str() == Some("float") => {}
        Some(_) => return invalid("'encoding_format' must be \"float\""),
    }
    let tokens: usize = texts.iter().map(|text| words(text).len()).sum();
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(index, text)| {
            json!({"object": "embedding", "index": index,
                   "embedding": shared.table.embed(model, text)})
        })
        .collect();
    shared.inputs.lock().unwrap().extend(texts);
    let body = json!({"object": "list", "data": data, "model": model,
                      "usage": {"prompt_tokens": tokens, "total_tokens": tokens}});
    Json(body).into_response()
}

async fn models() -> Json<Value> {
    let model = |id: &str| json!({"id": id, "object": "model", "created": 0, "owned_by": "test"});
    Json(json!({"object": "list", "data": [model(MODEL_A), model(MODEL_B)]}))
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Whether two words begin alike for five letters (an inflection a stemmer may merge).
fn alike(a: &str, b: &str) -> bool {
    a.get(..5).is_some_and(|p| b.get(..5) == Some(p))
}

#[test]
fn no_word_of_a_question_is_in_a_document() {
    let table = Table::new();
    let mut all: Vec<&str> = table.concepts.iter().flat_map(|&(d, q)| [d, q]).collect();
    for a in &all {
        assert!(a.bytes().all(|b| b.is_ascii_lowercase()), "{a}");
        for b in &all {
            assert!(a == b || !b.starts_with(*a), "{a} begins {b}");
        }
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 2 * table.len(), "a word in two concepts");

    let made = corpus(210);
    let in_documents: HashSet<String> = made.docs.iter().flat_map(|d| words(&d.text)).collect();
    for &(_, question_word) in &table.concepts {
        assert!(!in_documents.contains(question_word), "{question_word}");
    }
    for question in &made.questions {
        let code = words(&made.docs[question.doc].code);
        for word in words(&question.text) {
            if code.contains(&word) {
                continue;
            }
            assert!(
                !in_documents.contains(&word) && !in_documents.iter().any(|d| alike(d, &word)),
                "{word:?} of {:?} is in a document",
                question.text
            );
        }
    }
}

#[test]
fn each_document_states_its_own_fact_and_code_in_one_small_chunk() {
    let made = corpus(210);
    let again = corpus(210);
    let mut holders: HashMap<String, usize> = HashMap::new();
    for doc in &made.docs {
        for word in words(&doc.text).into_iter().collect::<HashSet<_>>() {
            *holders.entry(word).or_default() += 1;
        }
    }
    let facts: Vec<Vec<usize>> = made
        .docs
        .iter()
        .map(|doc| {
            let mut found: Vec<usize> = words(&doc.text)
                .iter()
                .filter_map(|w| made.table.concept(w))
                .collect();
            found.sort_unstable();
            found
        })
        .collect();
    let names: HashSet<&str> = made.docs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names.len(), 210);
    for (i, (doc, fact)) in made.docs.iter().zip(&facts).enumerate() {
        assert!(
            fact.len() == 3 && fact[0] < fact[1] && fact[1] < fact[2],
            "{}",
            doc.text
        );
        for (j, other) in facts.iter().enumerate().skip(i + 1) {
            let shared = fact.iter().filter(|k| other.contains(k)).count();
            assert!(shared <= 1, "documents {i} and {j} share {shared} concepts");
        }
        assert!(doc.text.chars().count() < 1000, "{}", doc.text);
        let ending = match doc.mime {
            "text/plain" => "txt",
            "text/markdown" => "md",
            "text/csv" => "csv",
            "text/html" => "html",
            PDF => "pdf",
            DOCX => "docx",
            _ => "xlsx",
        };
        assert_eq!(doc.name, format!("doc-{i:03}.{ending}"));
        if doc.mime == PDF {
            let plain = doc.text.is_ascii() && !doc.text.contains(['(', ')', '\\']);
            assert!(plain && doc.text.len() < 300, "{}", doc.text);
        }
        let pieces = words(&doc.code);
        assert_eq!(pieces.len(), 2, "{}", doc.code);
        for piece in &pieces {
            assert_eq!(holders.get(piece), Some(&1), "{piece} of {}", doc.code);
            assert!(made.table.concept(piece).is_none());
        }
        let same = &again.docs[i];
        assert!(doc.bytes == same.bytes && doc.text == same.text && doc.code == same.code);
    }
    let asked = |c: &Corpus| {
        c.questions
            .iter()
            .map(|q| q.text.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(asked(&made), asked(&again));
    assert_eq!(made.questions.len(), 420);
}

#[test]
fn embeddings_are_unit_deterministic_and_of_their_model() {
    let table = Table::new();
    let dims = table.len() + 1;
    for text in [
        "",
        "Nothing here",
        "AUTOMOBILE car",
        "salary, wage; physician",
    ] {
        for model in [MODEL_A, MODEL_B, "other"] {
            let vector = table.embed(model, text);
            assert_eq!(vector.len(), dims);
            assert!(
                (dot(&vector, &vector).sqrt() - 1.0).abs() < 1e-5,
                "{text:?}"
            );
            assert_eq!(vector, table.embed(model, text));
        }
    }
    assert_eq!(table.embed(MODEL_A, "Nothing here")[dims - 1], 1.0);
    assert_eq!(table.embed(MODEL_A, "AUTOMOBILE car")[0], 1.0);
    let a = table.embed(MODEL_A, "salary, wage; physician");
    let b = table.embed(MODEL_B, "salary, wage; physician");
    assert_eq!(a, table.embed("other", "salary, wage; physician"));
    assert_ne!(a, b);
    for (k, x) in a.iter().enumerate() {
        assert_eq!(b[(k + 7) % dims], *x);
    }
}

#[test]
fn each_paraphrase_is_nearest_its_document_and_a_code_near_none() {
    let made = corpus(210);
    for model in [MODEL_A, MODEL_B] {
        let docs: Vec<Vec<f32>> = made
            .docs
            .iter()
            .map(|d| made.table.embed(model, &d.text))
            .collect();
        for question in &made.questions {
            let asked = made.table.embed(model, &question.text);
            let cosines: Vec<f32> = docs.iter().map(|d| dot(&asked, d)).collect();
            match question.kind {
                Kind::Paraphrase => {
                    let own = cosines[question.doc];
                    assert!(own > 0.99, "{:?}: {own}", question.text);
                    let nearest_other = cosines
                        .iter()
                        .enumerate()
                        .filter(|&(j, _)| j != question.doc)
                        .map(|(_, c)| *c)
                        .fold(0.0f32, f32::max);
                    assert!(nearest_other < own - 0.5, "{:?}", question.text);
                }
                Kind::Code => assert!(cosines.iter().all(|c| *c == 0.0), "{}", question.text),
            }
        }
    }
}

#[test]
fn recall_counts_each_file_once_where_it_first_ranks() {
    let lists: [&[&str]; 3] = [&["a", "a", "b"], &["c", "d"], &[]];
    let found: Vec<Vec<String>> = lists
        .iter()
        .map(|l| l.iter().map(|n| n.to_string()).collect())
        .collect();
    let expected = ["b", "x", "a"].map(String::from);
    assert_eq!(recall_at(&found, &expected, 2), 1.0 / 3.0);
    assert_eq!(recall_at(&found, &expected, 1), 0.0);
    assert_eq!(recall_at(&[], &[], 5), 0.0);
}

#[tokio::test]
async fn the_mock_embedder_answers_as_openai_does() {
    let table = Table::new();
    let embedder = Embedder::start(table.clone()).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let post = |body: String| {
        client
            .post(format!("{}/embeddings", embedder.url))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let texts = ["automobile salary", "car"];
    let request = json!({"model": MODEL_B, "input": texts, "encoding_format": "float"});
    let res = post(request.to_string()).await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["object"], "list");
    assert_eq!(body["model"], MODEL_B);
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": 3, "total_tokens": 3})
    );
    assert_eq!(body["data"].as_array().unwrap().len(), 2);
    for (index, text) in texts.into_iter().enumerate() {
        let item = &body["data"][index];
        assert_eq!(item["object"], "embedding");
        assert_eq!(item["index"], index);
        let got: Vec<f32> = serde_json::from_value(item["embedding"].clone()).unwrap();
        let want = table.embed(MODEL_B, text);
        assert_eq!(got.len(), want.len());
        assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-6));
    }
    let res = post(json!({"model": MODEL_A, "input": "physician"}).to_string())
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);

    let refused = [
        "not json".to_string(),
        json!({"model": MODEL_A}).to_string(),
        json!({"input": "car"}).to_string(),
        json!({"model": MODEL_A, "input": [1, 2]}).to_string(),
        json!({"model": MODEL_A, "input": "car", "encoding_format": "base64"}).to_string(),
    ];
    for body in refused {
        let res = post(body.clone()).await.unwrap();
        assert_eq!(res.status().as_u16(), 400, "{body}");
        let answer: Value = res.json().await.unwrap();
        let error = &answer["error"];
        assert_eq!(error["type"], "invalid_request_error", "{answer}");
        assert!(
            error["message"].is_string() && error["param"].is_null() && error["code"].is_null()
        );
    }

    embedder.set_down(true);
    let res = post(json!({"model": MODEL_A, "input": "car"}).to_string())
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 503);
    let answer: Value = res.json().await.unwrap();
    assert_eq!(answer["error"]["message"], "embedder is down");
    assert_eq!(answer["error"]["type"], "server_error");
    embedder.set_down(false);
    assert_eq!(embedder.calls(), 8);
    assert_eq!(embedder.inputs(), 3);
    assert_eq!(
        embedder.inputs_seen(),
        ["automobile salary", "car", "physician"]
    );

    let res = client
        .get(format!("{}/models", embedder.url))
        .send()
        .await
        .unwrap();
    let listed: Value = res.json().await.unwrap();
    assert_eq!(listed["object"], "list");
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [MODEL_A, MODEL_B]);
}
