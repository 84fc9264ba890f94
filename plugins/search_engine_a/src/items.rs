//! Conversion of the parsed responses to what the host stores: each result or citation becomes
//! one JSON object with camelCase keys. Always `id` (the upstream's, else the URL), `url` and
//! `title` (string or null); the other kept fields only when the upstream gave them. Anything
//! else (scores per highlight, costs, subpages, extras…) is dropped: the host persists these
//! items and documents their shape, so it must not depend on what the upstream adds.

use chatd_plugin_sdk::search::{AnswerResponse, SearchResponse};
use serde::Serialize;
use serde_json::{Number, Value};

use crate::wire::{AnswerBody, Lenient, SearchBody, WireResult};

/// One stored result or citation (field order is the JSON's).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Item {
    id: String,
    url: String,
    title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    published_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    highlights: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    favicon: Option<String>,
}

impl Item {
    /// `None` for a result without a usable URL: there is nothing to link or cite.
    fn from_wire(result: WireResult) -> Option<Self> {
        let url = result.url.0.filter(|u| !u.trim().is_empty())?;
        Some(Self {
            id: result
                .id
                .0
                .filter(|id| !id.trim().is_empty())
                .unwrap_or_else(|| url.clone()),
            url,
            title: result.title.0,
            published_date: result.published_date.0,
            author: result.author.0,
            score: result.score.0,
            text: result.text.0,
            highlights: result.highlights.0,
            summary: result.summary.0,
            image: result.image.0,
            favicon: result.favicon.0,
        })
    }
}

/// The items of a list of results, as JSON array text; unusable results are skipped.
fn items_json(results: Vec<Lenient<WireResult>>) -> String {
    let items: Vec<Item> = results
        .into_iter()
        .filter_map(|r| r.0.and_then(Item::from_wire))
        .collect();
    serde_json::to_string(&items).expect("items serialize")
}

pub(crate) fn search_response(body: SearchBody) -> SearchResponse {
    SearchResponse {
        request_id: body.request_id.0,
        results_json: items_json(body.results),
    }
}

pub(crate) fn answer_response(body: AnswerBody) -> AnswerResponse {
    let text = match body.answer {
        Value::String(text) => text,
        // A structured answer (outputSchema) is kept whole, as compact JSON text.
        structured => structured.to_string(),
    };
    AnswerResponse {
        request_id: body.request_id.0,
        text,
        citations_json: items_json(body.citations.0.unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{parse_answer, parse_search};
    use serde_json::json;

    fn results(body: &str) -> (Option<String>, Value) {
        let response = search_response(parse_search(body.as_bytes()).unwrap());
        let items = serde_json::from_str(&response.results_json).unwrap();
        (response.request_id, items)
    }

    #[test]
    fn the_documented_example() {
        // exa-py docs/python-sdk-specification.mdx, `search` "Return Example".
        let (request_id, items) = results(
            r#"{"autopromptString":"...","results":[{"title":"Adept: Useful General Intelligence","id":"https://www.adept.ai/","url":"https://www.adept.ai/","publishedDate":"2000-01-01","author":null}],"requestId":"a78ebce717f4d712b6f8fe0d5d7753f8"}"#,
        );
        assert_eq!(
            request_id.as_deref(),
            Some("a78ebce717f4d712b6f8fe0d5d7753f8")
        );
        assert_eq!(
            items,
            json!([{
                "id": "https://www.adept.ai/",
                "url": "https://www.adept.ai/",
                "title": "Adept: Useful General Intelligence",
                "publishedDate": "2000-01-01"
            }])
        );
    }

    #[test]
    fn a_full_result_keeps_its_fields_and_drops_the_rest() {
        let body = json!({
            "requestId": "r1",
            "resolvedSearchType": "neural",
            "costDollars": {"total": 0.005},
            "searchTime": 812,
            "results": [{
                "id": "exa-7", "url": "https://a.example/post", "title": "A post",
                "publishedDate": "2025-03-01T00:00:00.000Z", "author": "Ada", "score": 0.83,
                "text": "Full text", "highlights": ["one", "two"], "highlightScores": [0.5, 0.4],
                "summary": "A summary", "image": "https://a.example/i.png",
                "favicon": "https://a.example/f.ico", "subpages": [{"url": "https://a.example/x"}],
                "extras": {"links": ["https://b.example/"]}, "entities": [{"type": "company"}],
                "crawlDate": "2025-03-02"
            }]
        });
        let (request_id, items) = results(&body.to_string());
        assert_eq!(request_id.as_deref(), Some("r1"));
        assert_eq!(
            items,
            json!([{
                "id": "exa-7", "url": "https://a.example/post", "title": "A post",
                "publishedDate": "2025-03-01T00:00:00.000Z", "author": "Ada", "score": 0.83,
                "text": "Full text", "highlights": ["one", "two"], "summary": "A summary",
                "image": "https://a.example/i.png", "favicon": "https://a.example/f.ico"
            }])
        );
    }

    #[test]
    fn missing_fields_leave_id_url_and_a_null_title() {
        let (request_id, items) = results(r#"{"results": [{"url": "https://b.example/"}]}"#);
        assert_eq!(request_id, None);
        assert_eq!(
            items,
            json!([{"id": "https://b.example/", "url": "https://b.example/", "title": null}])
        );
    }

    #[test]
    fn results_without_a_usable_url_are_skipped() {
        let (_, items) = results(
            r#"{"results": [
                {"id": "1", "title": "no url"}, {"id": "2", "url": null}, {"id": "3", "url": ""},
                {"id": "4", "url": 42}, "not an object", {"id": "5", "url": "https://c.example/"}
            ]}"#,
        );
        assert_eq!(
            items,
            json!([{"id": "5", "url": "https://c.example/", "title": null}])
        );
    }

    #[test]
    fn an_answer_as_text_with_citations() {
        let body = json!({
            "requestId": "8e62fc40",
            "answer": "Paris is the capital of France.",
            "citations": [
                {"id": "https://en.wikipedia.org/wiki/Paris", "url": "https://en.wikipedia.org/wiki/Paris",
                 "title": "Paris - Wikipedia", "author": null, "publishedDate": "2024-01-01",
                 "text": "Paris is…", "favicon": "https://en.wikipedia.org/favicon.ico"},
                {"title": "no url"}
            ],
            "costDollars": {"total": 0.005}
        });
        let response = answer_response(parse_answer(body.to_string().as_bytes()).unwrap());
        assert_eq!(response.request_id.as_deref(), Some("8e62fc40"));
        assert_eq!(response.text, "Paris is the capital of France.");
        assert_eq!(
            serde_json::from_str::<Value>(&response.citations_json).unwrap(),
            json!([{
                "id": "https://en.wikipedia.org/wiki/Paris", "url": "https://en.wikipedia.org/wiki/Paris",
                "title": "Paris - Wikipedia", "publishedDate": "2024-01-01", "text": "Paris is…",
                "favicon": "https://en.wikipedia.org/favicon.ico"
            }])
        );
    }

    #[test]
    fn a_structured_answer_is_compact_json_text() {
        let body = br#"{"answer": { "city": "Paris",  "population": 2102650 }, "citations": []}"#;
        let response = answer_response(parse_answer(body).unwrap());
        assert_eq!(response.request_id, None);
        assert_eq!(
            serde_json::from_str::<Value>(&response.text).unwrap(),
            json!({"city": "Paris", "population": 2102650})
        );
        assert!(!response.text.contains(' '), "{}", response.text);
    }

    #[test]
    fn citations_default_to_empty() {
        for body in [
            &br#"{"answer": "yes"}"#[..],
            br#"{"answer": "yes", "citations": null}"#,
        ] {
            let response = answer_response(parse_answer(body).unwrap());
            assert_eq!(response.text, "yes");
            assert_eq!(response.citations_json, "[]");
        }
    }
}
