//! The upstream URLs and request bodies: `POST {base}/search` from a [`SearchRequest`], and
//! `POST {base}/answer` from a query. Content options go inside `contents`: the API refuses
//! top-level `text`, `highlights` or `summary` with a 400.

use chatd_plugin_sdk::search::SearchRequest;
use serde_json::{Map, Value, json};

/// The search type when the request names none (the API's own default).
const DEFAULT_SEARCH_TYPE: &str = "auto";
/// Results when the request does not say (the API's own default).
const DEFAULT_NUM_RESULTS: u32 = 10;
/// Page text characters asked per result. The text is stored with every result, so it is
/// bounded; 2,000 characters are enough to quote from, not a copy of the page.
const TEXT_MAX_CHARS: u32 = 2_000;
/// Highlight characters asked per result: a snippet, kept short for the same reason.
const HIGHLIGHT_MAX_CHARS: u32 = 600;

/// `{base}/{path}`; a base URL ending in `/` must not make `//search`.
pub(crate) fn endpoint(base: &str, path: &str) -> String {
    format!("{}/{path}", base.trim_end_matches('/'))
}

/// The body of `POST {base}/search`.
pub(crate) fn search_body(request: &SearchRequest) -> Value {
    let mut body = Map::new();
    body.insert("query".into(), request.query.clone().into());
    body.insert(
        "type".into(),
        request
            .search_type
            .as_deref()
            .unwrap_or(DEFAULT_SEARCH_TYPE)
            .into(),
    );
    body.insert(
        "numResults".into(),
        request.num_results.unwrap_or(DEFAULT_NUM_RESULTS).into(),
    );
    // Absent is the API's "no filter"; an empty list is never sent, so it cannot be misread.
    if !request.include_domains.is_empty() {
        body.insert(
            "includeDomains".into(),
            request.include_domains.clone().into(),
        );
    }
    if !request.exclude_domains.is_empty() {
        body.insert(
            "excludeDomains".into(),
            request.exclude_domains.clone().into(),
        );
    }
    body.insert(
        "contents".into(),
        json!({
            "text": { "maxCharacters": TEXT_MAX_CHARS },
            "highlights": { "maxCharacters": HIGHLIGHT_MAX_CHARS },
            "summary": true
        }),
    );
    Value::Object(body)
}

/// The body of `POST {base}/answer`. Citations without their full text: the answer cites
/// pages, it does not carry them.
pub(crate) fn answer_body(query: &str) -> Value {
    json!({ "query": query, "text": false })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> SearchRequest {
        SearchRequest {
            query: "rust wasm components".into(),
            search_type: None,
            num_results: None,
            include_domains: Vec::new(),
            exclude_domains: Vec::new(),
        }
    }

    #[test]
    fn a_full_search_body() {
        let body = search_body(&SearchRequest {
            search_type: Some("deep".into()),
            num_results: Some(25),
            include_domains: vec!["docs.rs".into(), "*.rust-lang.org".into()],
            exclude_domains: vec!["example.com".into()],
            ..request()
        });
        assert_eq!(
            body,
            json!({
                "query": "rust wasm components",
                "type": "deep",
                "numResults": 25,
                "includeDomains": ["docs.rs", "*.rust-lang.org"],
                "excludeDomains": ["example.com"],
                "contents": {
                    "text": { "maxCharacters": 2000 },
                    "highlights": { "maxCharacters": 600 },
                    "summary": true
                }
            })
        );
    }

    #[test]
    fn defaults_and_no_empty_domain_lists() {
        let body = search_body(&request());
        assert_eq!(body["type"], "auto");
        assert_eq!(body["numResults"], 10);
        let object = body.as_object().unwrap();
        assert!(!object.contains_key("includeDomains"), "{body}");
        assert!(!object.contains_key("excludeDomains"), "{body}");
    }

    #[test]
    fn content_options_are_nested_never_top_level() {
        let body = search_body(&request());
        for key in ["text", "highlights", "summary"] {
            assert!(body.get(key).is_none(), "top-level {key}: {body}");
            assert!(
                body["contents"].get(key).is_some(),
                "contents.{key}: {body}"
            );
        }
    }

    #[test]
    fn the_answer_body() {
        assert_eq!(
            answer_body("capital of France?"),
            json!({ "query": "capital of France?", "text": false })
        );
    }

    #[test]
    fn endpoints_have_one_slash() {
        assert_eq!(
            endpoint("http://x.test/v1", "search"),
            "http://x.test/v1/search"
        );
        assert_eq!(
            endpoint("http://x.test/v1/", "answer"),
            "http://x.test/v1/answer"
        );
    }
}
