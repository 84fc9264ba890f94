//! engine_a: an Exa-style search API (`POST {base}/search`, `x-api-key` added by the host).
//! Content options go inside `contents` (top-level ones are a 400 there): a summary of each
//! page, and highlights as the fallback snippet. Only `results` is required of the answer;
//! every other field is optional, as the API's own SDKs treat them.

use chatd_plugin_sdk::host::{PluginError, Request};
use serde::Deserialize;

use crate::{Found, Hit};

/// Highlight characters asked per result.
const HIGHLIGHT_CHARS: u32 = 600;

pub fn search(base: &str, query: &str, count: u32) -> Result<Found, PluginError> {
    let response = request(base, query, count)
        .send()
        .map_err(chatd_plugin_sdk::transport_error)?
        .error_for_status()
        .map_err(|e| chatd_plugin_sdk::name_upstream(e, "engine_a"))?;
    let body = response.json()?;
    parse(body, count)
}

pub fn request(base: &str, query: &str, count: u32) -> Request {
    Request::post(format!("{base}/search"))
        .header("accept", "application/json")
        .json(&serde_json::json!({
            "query": query,
            "type": "auto",
            "numResults": count,
            "contents": {
                "summary": true,
                "highlights": { "maxCharacters": HIGHLIGHT_CHARS }
            }
        }))
}

/// The search response, as much of it as is used.
#[derive(Deserialize)]
struct Wire {
    results: Vec<WireResult>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireResult {
    url: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    published_date: Option<String>,
    #[serde(default)]
    author: Option<String>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    highlights: Option<Vec<String>>,
    #[serde(default)]
    text: Option<String>,
}

pub fn parse(body: serde_json::Value, count: u32) -> Result<Found, PluginError> {
    let wire: Wire = serde_json::from_value(body).map_err(|e| {
        PluginError::MalformedResponse(format!("engine_a: unexpected search response: {e}"))
    })?;
    let hits = wire
        .results
        .into_iter()
        .take(count as usize)
        .map(|r| {
            let snippet = [
                r.summary.filter(|s| !s.trim().is_empty()),
                r.highlights
                    .map(|h| h.join(" … "))
                    .filter(|s| !s.trim().is_empty()),
                r.text.filter(|s| !s.trim().is_empty()),
            ]
            .into_iter()
            .flatten()
            .next()
            .unwrap_or_default();
            Hit {
                title: r
                    .title
                    .filter(|t| !t.trim().is_empty())
                    .unwrap_or_else(|| r.url.clone()),
                url: r.url,
                published: r.published_date.filter(|d| !d.is_empty()),
                author: r.author.filter(|a| !a.trim().is_empty()),
                snippet,
            }
        })
        .collect();
    Ok(Found {
        hits,
        ..Found::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_response_becomes_hits() {
        // The shape of exa-py's documented example, with content fields as exa-js types them.
        let body = serde_json::json!({
            "requestId": "a78ebce717f4d712b6f8fe0d5d7753f8",
            "resolvedSearchType": "neural",
            "results": [
                {"title": "Adept: Useful General Intelligence", "id": "https://www.adept.ai/",
                 "url": "https://www.adept.ai/", "publishedDate": "2000-01-01", "author": null,
                 "summary": "Adept builds AI that acts.", "highlights": ["Useful general intelligence"],
                 "highlightScores": [0.4], "score": 0.2},
                {"id": "https://b.example/", "url": "https://b.example/", "title": null,
                 "highlights": ["one", "two"]},
                {"id": "https://c.example/", "url": "https://c.example/", "title": "C",
                 "text": "Full text"}
            ],
            "costDollars": {"total": 0.005}
        });
        let found = parse(body, 10).unwrap();
        assert_eq!(found.hits.len(), 3);
        assert_eq!(
            found.hits[0],
            Hit {
                title: "Adept: Useful General Intelligence".into(),
                url: "https://www.adept.ai/".into(),
                published: Some("2000-01-01".into()),
                author: None,
                snippet: "Adept builds AI that acts.".into(),
            }
        );
        assert_eq!(found.hits[1].title, "https://b.example/");
        assert_eq!(found.hits[1].snippet, "one … two");
        assert_eq!(found.hits[2].snippet, "Full text");
    }

    #[test]
    fn a_response_without_results_is_malformed() {
        match parse(serde_json::json!({"requestId": "x"}), 5) {
            Err(PluginError::MalformedResponse(why)) => assert!(why.contains("results"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_more_than_asked() {
        let body = serde_json::json!({"results": [
            {"url": "https://a/"}, {"url": "https://b/"}, {"url": "https://c/"}
        ]});
        assert_eq!(parse(body, 2).unwrap().hits.len(), 2);
    }
}
