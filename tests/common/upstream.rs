//! The scripted upstreams the tests of the real binary run against (`web`, `telemetry`): the
//! recorded wire formats of `tests/fixtures/upstream`, varied to say what each test needs.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use serde_json::{Value, json};

const TEXT_STREAM: &str =
    include_str!("../fixtures/upstream/openai_chat/02_stream_text_include_usage.response.sse");
const TOOL_STREAM: &str =
    include_str!("../fixtures/upstream/openai_chat/01_stream_tool_call_include_usage.response.sse");
const ERROR_401: &str =
    include_str!("../fixtures/upstream/openai_chat/07_error_401_invalid_api_key.response.json");
const MODELS: &str =
    include_str!("../fixtures/upstream/models_list/openai_list_models.response.json");
const RESPONSES_TEXT: &str =
    include_str!("../fixtures/upstream/openai_responses/01_nonstream_text.response.json");

pub const COMPLETIONS: &str = "POST /chat/completions";

/// The recorded text stream, its words replaced by `pieces`: one SSE piece per text delta,
/// then the recording's finish, usage and `[DONE]` in one last piece.
pub fn text_pieces(pieces: &[&str]) -> Vec<Vec<u8>> {
    let events: Vec<&str> = TEXT_STREAM
        .split("\n\n")
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    let is_text = |e: &str| e.contains(r#""delta":{"content":""#) && !e.contains(r#""role""#);
    let first = events.iter().position(|e| is_text(e)).unwrap();
    let last = events.iter().rposition(|e| is_text(e)).unwrap();
    let template: Value = serde_json::from_str(events[first].trim_start_matches("data: ")).unwrap();
    let mut out: Vec<Vec<u8>> = vec![format!("{}\n\n", events[..first].join("\n\n")).into_bytes()];
    for piece in pieces {
        let mut chunk = template.clone();
        chunk["choices"][0]["delta"]["content"] = json!(piece);
        out.push(format!("data: {chunk}\n\n").into_bytes());
    }
    out.push(format!("{}\n\n", events[last + 1..].join("\n\n")).into_bytes());
    out
}

/// A text stream whose pieces come one after another (one network write each).
pub fn text_reply(pieces: &[&str]) -> Reply {
    Reply::sse("").paced(text_pieces(pieces), std::time::Duration::from_millis(5))
}

/// The recorded tool-call stream, calling chatd's web_search with `{"query":"UK"}`.
pub fn web_search_call() -> Reply {
    Reply::sse(
        &TOOL_STREAM
            .replace("get_capital", "web_search")
            .replace(r#""arguments":"country""#, r#""arguments":"query""#),
    )
}

pub fn upstream_401() -> Reply {
    Reply::text(401, "application/json", ERROR_401)
}

pub fn models() -> Reply {
    Reply::text(200, "application/json", MODELS)
}

/// Exa's /search with `n` results (FORMATS.md §4).
pub fn exa_results(n: usize) -> Value {
    let results: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "id": format!("doc-{i}"),
                "url": format!("https://site{i}.example/page"),
                "title": format!("Result {i}"),
                "publishedDate": "2026-01-02T00:00:00.000Z",
                "author": "Ann Author",
                "score": 0.5,
                "summary": format!("Summary of result {i}."),
            })
        })
        .collect();
    json!({"requestId": "search-req-1", "results": results})
}

/// Exa's /answer, citing the first result of [`exa_results`].
pub fn exa_answer(text: &str) -> Value {
    json!({
        "requestId": "answer-req-1",
        "answer": text,
        "citations": [
            {"id": "https://site0.example/page", "url": "https://site0.example/page",
             "title": "Result 0", "author": null, "publishedDate": "2026-01-02"}
        ]
    })
}

/// A Responses API reply whose text is `title` (the title model's answer).
pub fn titled(title: &str) -> Reply {
    let mut body: Value = serde_json::from_str(RESPONSES_TEXT).unwrap();
    for item in body["output"].as_array_mut().unwrap() {
        if item["type"] == "message" {
            item["content"][0]["text"] = json!(title);
        }
    }
    Reply::json(200, body)
}

/// The provider upstream (provider_c and engine_a) and the title upstream (provider_a, whose
/// model list fails, so provider_c is the page's default).
pub struct Upstreams {
    pub main: ScriptedUpstream,
    pub titles: ScriptedUpstream,
}

impl Upstreams {
    pub async fn start<'a>(routes: impl IntoIterator<Item = (&'a str, Reply)>) -> Self {
        let mut all: Vec<(&str, Reply)> = vec![("GET /models", models())];
        all.extend(routes);
        let main = ScriptedUpstream::start(all).await;
        let titles = ScriptedUpstream::start([
            (
                "GET /models",
                Reply::json(500, json!({"error": {"message": "listing is down"}})),
            ),
            ("POST /responses", titled("Greetings From London")),
        ])
        .await;
        Self { main, titles }
    }

    /// chatd's environment for these upstreams.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("PROVIDER_C_BASE_URL", self.main.url()),
            ("PROVIDER_C_API_KEY", "c-key".into()),
            ("ENGINE_A_BASE_URL", self.main.url()),
            ("ENGINE_A_API_KEY", "e-key".into()),
            ("PROVIDER_A_BASE_URL", self.titles.url()),
            ("PROVIDER_A_API_KEY", "a-key".into()),
        ]
    }
}
