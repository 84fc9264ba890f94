//! The upstream's JSON, as much of it as is kept, and its parsing. Tolerant, as the API's own
//! SDKs are: unknown fields are ignored, and of a search response only `results` (an array) is
//! required; of an answer response only `answer`. A field of the wrong type reads as absent, so
//! one odd field never costs the whole response (the API adds and renames fields freely).

use chatd_plugin_sdk::host::PluginError;
use serde::{Deserialize, Deserializer};
use serde_json::{Number, Value};

/// A `POST /search` response.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchBody {
    #[serde(default)]
    pub(crate) request_id: Lenient<String>,
    pub(crate) results: Vec<Lenient<WireResult>>,
}

/// A `POST /answer` response.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AnswerBody {
    #[serde(default)]
    pub(crate) request_id: Lenient<String>,
    /// A string, or an object when an output schema was asked for.
    pub(crate) answer: Value,
    #[serde(default)]
    pub(crate) citations: Lenient<Vec<Lenient<WireResult>>>,
}

/// A search result, or a citation (the API sends citations as search results).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct WireResult {
    pub(crate) id: Lenient<String>,
    pub(crate) url: Lenient<String>,
    pub(crate) title: Lenient<String>,
    pub(crate) published_date: Lenient<String>,
    pub(crate) author: Lenient<String>,
    pub(crate) score: Lenient<Number>,
    pub(crate) text: Lenient<String>,
    pub(crate) highlights: Lenient<Vec<String>>,
    pub(crate) summary: Lenient<String>,
    pub(crate) image: Lenient<String>,
    pub(crate) favicon: Lenient<String>,
}

/// A value that is `None` when absent, null, or not of the expected type.
#[derive(Debug)]
pub(crate) struct Lenient<T>(pub(crate) Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(Self(serde_json::from_value(value).ok()))
    }
}

/// Parses a `POST /search` response body.
pub(crate) fn parse_search(body: &[u8]) -> Result<SearchBody, PluginError> {
    serde_json::from_slice(body).map_err(|e| {
        PluginError::MalformedResponse(format!("engine_a: unexpected search response: {e}"))
    })
}

/// Parses a `POST /answer` response body.
pub(crate) fn parse_answer(body: &[u8]) -> Result<AnswerBody, PluginError> {
    let malformed = |why: String| {
        PluginError::MalformedResponse(format!("engine_a: unexpected answer response: {why}"))
    };
    let parsed: AnswerBody = serde_json::from_slice(body).map_err(|e| malformed(e.to_string()))?;
    if parsed.answer.is_null() {
        return Err(malformed("`answer` is null".into()));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn malformed(result: Result<impl std::fmt::Debug, PluginError>) -> String {
        match result {
            Err(PluginError::MalformedResponse(why)) => why,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_results_is_required() {
        let body = parse_search(br#"{"results": []}"#).unwrap();
        assert!(body.request_id.0.is_none());
        assert!(body.results.is_empty());
    }

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        let body = parse_search(
            br#"{"requestId": 7, "results": [
                {"url": "https://a.example/", "title": 3, "score": "high", "highlights": "x"},
                null
            ]}"#,
        )
        .unwrap();
        assert!(body.request_id.0.is_none());
        let first = body.results[0].0.as_ref().unwrap();
        assert_eq!(first.url.0.as_deref(), Some("https://a.example/"));
        assert!(first.title.0.is_none() && first.score.0.is_none());
        assert!(first.highlights.0.is_none());
        assert!(body.results[1].0.is_none());
    }

    #[test]
    fn a_search_body_that_is_not_json_or_lacks_results_is_malformed() {
        for body in [
            &b"<html>bad gateway</html>"[..],
            br#"{"requestId": "x"}"#,
            br#"{"results": {"url": "https://a/"}}"#,
            b"[]",
        ] {
            let why = malformed(parse_search(body));
            assert!(
                why.starts_with("engine_a: unexpected search response: "),
                "{why}"
            );
        }
        assert!(malformed(parse_search(br#"{"requestId": "x"}"#)).contains("results"));
    }

    #[test]
    fn an_answer_body_without_an_answer_is_malformed() {
        for body in [
            &b"not json"[..],
            br#"{"citations": []}"#,
            br#"{"answer": null, "citations": []}"#,
        ] {
            let why = malformed(parse_answer(body));
            assert!(
                why.starts_with("engine_a: unexpected answer response: "),
                "{why}"
            );
        }
    }
}
