//! The hidden `system` message that seeds a chat started from a search: the query, the answer
//! with its citations, and the top results, as plain text a model reads well.
//!
//! Bounded, because it is sent with every completion of that chat: a few results with short
//! snippets, a capped answer, and a cap on the whole. Result items are read loosely (they are
//! whatever the search plugin kept): a missing field is skipped, never an error.

use serde_json::Value;

use crate::store::SearchDetailRecord;

/// Results quoted (the engine ranks them; the rest add length more than knowledge).
pub const MAX_RESULTS: usize = 8;
/// Citations listed.
pub const MAX_CITATIONS: usize = 10;
/// Characters of each result's snippet.
pub const SNIPPET_CHARS: usize = 500;
/// Characters of the answer.
pub const ANSWER_CHARS: usize = 6_000;
/// Characters of the whole message.
pub const MAX_CHARS: usize = 16_000;

/// What marks text that was cut.
const CUT: &str = " […]";

/// `metadata.kind` of the seed message (clients hide it; it is `metadata.hidden` too).
pub const SEED_KIND: &str = "search_context";

/// The seed message's text.
pub fn seed_text(search: &SearchDetailRecord) -> String {
    let mut text = String::from(
        "Context from a web search the user ran before this chat. Use it to answer, and cite \
         sources by URL.\n",
    );
    if let Some(query) = &search.search.query {
        text.push_str(&format!("\nQuery: {query}\n"));
    }
    match (&search.answer_text, &search.answer_error) {
        (Some(answer), _) if !answer.trim().is_empty() => {
            text.push_str(&format!(
                "\nAnswer:\n{}\n",
                cut(answer.trim(), ANSWER_CHARS)
            ));
        }
        (_, Some(error)) => text.push_str(&format!("\nAnswer: none (it failed: {error})\n")),
        _ => text.push_str("\nAnswer: none\n"),
    }
    let citations: Vec<String> = search
        .answer_citations
        .iter()
        .take(MAX_CITATIONS)
        .filter_map(|c| line(c).map(|(title, url)| format!("- {title} — {url}")))
        .collect();
    if !citations.is_empty() {
        text.push_str(&format!("\nCitations:\n{}\n", citations.join("\n")));
    }
    let results: Vec<String> = search
        .results
        .iter()
        .filter_map(result_entry)
        .take(MAX_RESULTS)
        .enumerate()
        .map(|(i, entry)| format!("{}. {entry}", i + 1))
        .collect();
    match (&search.error, results.is_empty()) {
        (_, false) => text.push_str(&format!("\nTop results:\n{}\n", results.join("\n"))),
        (Some(error), true) => {
            text.push_str(&format!("\nResults: none (the search failed: {error})\n"))
        }
        (None, true) => text.push_str("\nResults: none\n"),
    }
    cut(text.trim_end(), MAX_CHARS)
}

/// A result as a few lines: title and URL, date and author when known, a snippet.
fn result_entry(item: &Value) -> Option<String> {
    let (title, url) = line(item)?;
    let mut entry = format!("{title} — {url}");
    let about: Vec<&str> = ["publishedDate", "author"]
        .iter()
        .filter_map(|key| str_field(item, key))
        .collect();
    if !about.is_empty() {
        entry.push_str(&format!("\n   {}", about.join(" · ")));
    }
    let snippet = str_field(item, "summary")
        .map(str::to_string)
        .or_else(|| {
            let highlights: Vec<&str> = item
                .get("highlights")?
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .collect();
            (!highlights.is_empty()).then(|| highlights.join(" … "))
        })
        .or_else(|| str_field(item, "text").map(str::to_string));
    if let Some(snippet) = snippet {
        let flat = snippet.split_whitespace().collect::<Vec<_>>().join(" ");
        entry.push_str(&format!("\n   {}", cut(&flat, SNIPPET_CHARS)));
    }
    Some(entry)
}

/// An item's title (its URL when it has none) and URL; `None` without a URL.
fn line(item: &Value) -> Option<(String, String)> {
    let url = str_field(item, "url")?;
    let title = str_field(item, "title").unwrap_or(url);
    Some((title.to_string(), url.to_string()))
}

fn str_field<'a>(item: &'a Value, key: &str) -> Option<&'a str> {
    item.get(key)?
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// `text` cut to `max` characters, marked when cut.
fn cut(text: &str, max: usize) -> String {
    match text
        .char_indices()
        .nth(max.saturating_sub(CUT.chars().count()))
    {
        Some((at, _)) if text.chars().count() > max => format!("{}{CUT}", &text[..at]),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SearchRecord;
    use serde_json::json;

    fn detail(results: Vec<Value>, answer: Option<&str>) -> SearchDetailRecord {
        SearchDetailRecord {
            search: SearchRecord {
                id: "s".into(),
                title: None,
                query: Some("rust async".into()),
                created_at: "2026-11-22T00:00:00.000Z".into(),
                updated_at: "2026-11-22T00:00:00.000Z".into(),
                starred_at: None,
                has_output: true,
            },
            request_id: Some("r".into()),
            latency_ms: Some(5),
            error: None,
            results,
            answer_text: answer.map(str::to_string),
            answer_request_id: None,
            answer_citations: vec![
                json!({"url": "https://tokio.rs/", "title": "Tokio"}),
                json!({"title": "no url"}),
            ],
            answer_error: None,
        }
    }

    #[test]
    fn holds_query_answer_citations_and_results() {
        let text = seed_text(&detail(
            vec![
                json!({"url": "https://a.example/", "title": "A", "publishedDate": "2026-01-02",
                       "author": "Ann", "summary": "About  A.\nMore.", "text": "ignored"}),
                json!({"url": "https://b.example/", "highlights": ["one", " ", "two"]}),
                json!({"title": "no url is skipped"}),
                json!({"url": "https://c.example/", "title": "C", "text": "Full text"}),
            ],
            Some("Tokio is a runtime."),
        ));
        assert!(text.contains("Query: rust async"), "{text}");
        assert!(text.contains("Answer:\nTokio is a runtime."), "{text}");
        assert!(
            text.contains("Citations:\n- Tokio — https://tokio.rs/\n"),
            "{text}"
        );
        assert!(!text.contains("no url"), "{text}");
        assert!(
            text.contains("1. A — https://a.example/\n   2026-01-02 · Ann\n   About A. More."),
            "{text}"
        );
        assert!(
            text.contains("2. https://b.example/ — https://b.example/\n   one … two"),
            "{text}"
        );
        assert!(
            text.contains("3. C — https://c.example/\n   Full text"),
            "{text}"
        );
    }

    #[test]
    fn is_bounded() {
        let long = "word ".repeat(5_000);
        let results = (0..50)
            .map(
                |i| json!({"url": format!("https://{i}.example/"), "title": long, "summary": long}),
            )
            .collect();
        let text = seed_text(&detail(results, Some(&long)));
        assert!(
            text.chars().count() <= MAX_CHARS,
            "{}",
            text.chars().count()
        );
        assert!(text.ends_with(CUT));
        let answer = &text[text.find("Answer:\n").unwrap()..];
        assert!(answer.find(CUT).unwrap() <= ANSWER_CHARS + 10);
    }

    #[test]
    fn says_what_failed() {
        let mut search = detail(vec![], None);
        search.answer_error = Some("upstream answered 500: boom".into());
        search.error = Some("upstream answered 429: slow down".into());
        let text = seed_text(&search);
        assert!(text.contains("Answer: none (it failed: upstream answered 500: boom)"));
        assert!(
            text.contains("Results: none (the search failed: upstream answered 429: slow down)")
        );
    }

    #[test]
    fn cut_marks_and_respects_char_boundaries() {
        assert_eq!(cut("short", 10), "short");
        let cut_text = cut("ééééééééééééééé", 8);
        assert_eq!(cut_text.chars().count(), 8);
        assert!(cut_text.ends_with(CUT));
    }
}
