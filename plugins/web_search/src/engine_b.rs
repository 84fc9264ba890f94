//! engine_b: a SearXNG instance (`GET {base}/search?q=…&format=json`). JSON output must be
//! enabled in the instance's settings (`search.formats`); otherwise it answers 403, which is
//! reported as such. Results come ranked; only `url` is guaranteed per result, answers are
//! strings on older instances and objects on newer ones.

use chatd_plugin_sdk::host::{PluginError, Request, UpstreamError};
use serde::Deserialize;
use serde_json::Value;

use crate::{Found, Hit};

pub fn search(base: &str, query: &str, count: u32) -> Result<Found, PluginError> {
    let response = request(base, query)?
        .send()
        .map_err(chatd_plugin_sdk::transport_error)?;
    if response.status() == 403 {
        return Err(PluginError::Upstream(UpstreamError {
            status: 403,
            message: "engine_b: the SearXNG instance refuses format=json; enable json in \
                      search.formats of its settings.yml"
                .into(),
        }));
    }
    let response = response
        .error_for_status()
        .map_err(|e| chatd_plugin_sdk::name_upstream(e, "engine_b"))?;
    parse(response.json()?, count)
}

pub fn request(base: &str, query: &str) -> Result<Request, PluginError> {
    let mut url = url::Url::parse(&format!("{}/search", base.trim_end_matches('/')))
        .map_err(|e| PluginError::InvalidInput(format!("ENGINE_B_BASE_URL: {e}")))?;
    url.query_pairs_mut()
        .append_pair("q", query)
        .append_pair("format", "json");
    Ok(Request::get(url.as_str()).header("accept", "application/json"))
}

#[derive(Deserialize)]
struct Wire {
    results: Vec<Value>,
    #[serde(default)]
    answers: Vec<Value>,
    #[serde(default)]
    unresponsive_engines: Vec<Value>,
}

pub fn parse(body: Value, count: u32) -> Result<Found, PluginError> {
    let wire: Wire = serde_json::from_value(body).map_err(|e| {
        PluginError::MalformedResponse(format!("engine_b: unexpected SearXNG response: {e}"))
    })?;
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let hits = wire
        .results
        .iter()
        .filter_map(|r| {
            let url = text(r, "url")?;
            Some(Hit {
                title: text(r, "title").unwrap_or_else(|| url.clone()),
                published: text(r, "publishedDate"),
                author: text(r, "author"),
                snippet: text(r, "content").unwrap_or_default(),
                url,
            })
        })
        .take(count as usize)
        .collect();
    let answers = wire
        .answers
        .iter()
        .filter_map(|a| match a {
            Value::String(s) => Some(s.trim().to_string()),
            other => text(other, "answer"),
        })
        .filter(|a| !a.is_empty())
        .collect();
    let notes = if wire.unresponsive_engines.is_empty() {
        Vec::new()
    } else {
        let engines: Vec<String> = wire
            .unresponsive_engines
            .iter()
            .map(|e| match e {
                Value::Array(pair) => pair
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(": "),
                other => other.to_string(),
            })
            .collect();
        vec![format!(
            "engines that did not answer: {}",
            engines.join(", ")
        )]
    };
    Ok(Found {
        hits,
        answers,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURE: &str = include_str!(
        "../../../tests/fixtures/upstream/searxng/search_format_json.lobechat_capture.RECONSTRUCTED.json"
    );

    #[test]
    fn the_recorded_response_becomes_ranked_hits_and_answers() {
        let found = parse(serde_json::from_str(CAPTURE).unwrap(), 5).unwrap();
        assert_eq!(found.hits.len(), 5);
        assert_eq!(
            found.hits[0].url,
            "https://www.bilibili.com/video/BV1Nt4y1D7pW/"
        );
        assert_eq!(
            found.hits[0].title,
            "【何同学】我拍了一张600万人的合影..._哔哩哔哩_bilibili"
        );
        assert!(found.hits[0].snippet.starts_with("老师好我叫何同学"));
        assert_eq!(found.answers.len(), 1);
        assert!(found.notes.is_empty());
        let all = parse(serde_json::from_str(CAPTURE).unwrap(), 100).unwrap();
        assert_eq!(all.hits.len(), 43);
    }

    #[test]
    fn current_answers_are_objects_and_unresponsive_engines_are_noted() {
        let body = serde_json::json!({
            "query": "q",
            "results": [{"url": "https://a.example/", "title": "", "content": "snippet",
                         "publishedDate": "2026-05-01T00:00:00"}],
            "answers": [{"url": null, "engine": "x", "answer": "42", "template": "answer/legacy.html"}],
            "unresponsive_engines": [["google", "timeout"], ["brave", "Suspended: too many requests"]]
        });
        let found = parse(body, 5).unwrap();
        assert_eq!(found.hits[0].title, "https://a.example/");
        assert_eq!(
            found.hits[0].published.as_deref(),
            Some("2026-05-01T00:00:00")
        );
        assert_eq!(found.answers, ["42"]);
        assert_eq!(
            found.notes,
            ["engines that did not answer: google: timeout, brave: Suspended: too many requests"]
        );
    }

    #[test]
    fn the_query_is_encoded_into_the_url() {
        // Only the URL building is checked natively; sending needs the host.
        let mut url = url::Url::parse("http://searx.lan:8080/base/search").unwrap();
        url.query_pairs_mut()
            .append_pair("q", "rust & wasm?")
            .append_pair("format", "json");
        assert_eq!(
            url.as_str(),
            "http://searx.lan:8080/base/search?q=rust+%26+wasm%3F&format=json"
        );
    }
}
