//! The search stream's non-terminal events, shaped as the contract's "Search stream events"
//! table. Like the chat stream's events ([`crate::chat::events`]), they are serialized by the
//! run that outlives its request; the terminal `done` carries the HTTP layer's `SearchDetail`
//! and is built there.

use serde_json::{Value, json};

use super::Answer;

#[derive(Clone, Debug, PartialEq)]
pub enum SearchEvent {
    /// `search_results`: the ranked results, as the plugin returned them.
    Results {
        request_id: Option<String>,
        results: Vec<Value>,
    },
    /// `search_error`: the search part failed.
    SearchError(String),
    /// `answer`: the generated answer and its citations.
    Answer(Answer),
    /// `answer_error`: the answer part failed.
    AnswerError(String),
}

impl SearchEvent {
    pub fn name(&self) -> &'static str {
        match self {
            SearchEvent::Results { .. } => "search_results",
            SearchEvent::SearchError(_) => "search_error",
            SearchEvent::Answer(_) => "answer",
            SearchEvent::AnswerError(_) => "answer_error",
        }
    }

    /// The event's `data`, one line of JSON.
    pub fn data(&self) -> String {
        match self {
            SearchEvent::Results {
                request_id,
                results,
            } => json!({ "requestId": request_id, "results": results }),
            SearchEvent::SearchError(error) | SearchEvent::AnswerError(error) => {
                json!({ "error": error })
            }
            SearchEvent::Answer(answer) => json!({
                "answerText": answer.text,
                "answerRequestId": answer.request_id,
                "answerCitations": answer.citations,
            }),
        }
        .to_string()
    }
}

/// The terminal `error` event's data: `{ message }` (no `type`, unlike the chat stream's).
pub fn error_data(message: &str) -> String {
    json!({ "message": message }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_have_the_contract_shapes() {
        let results = SearchEvent::Results {
            request_id: None,
            results: vec![json!({"url": "https://a/"})],
        };
        assert_eq!(results.name(), "search_results");
        assert_eq!(
            serde_json::from_str::<Value>(&results.data()).unwrap(),
            json!({"requestId": null, "results": [{"url": "https://a/"}]})
        );
        let answer = SearchEvent::Answer(Answer {
            text: "t".into(),
            request_id: Some("r".into()),
            citations: vec![],
        });
        assert_eq!(answer.name(), "answer");
        assert_eq!(
            serde_json::from_str::<Value>(&answer.data()).unwrap(),
            json!({"answerText": "t", "answerRequestId": "r", "answerCitations": []})
        );
        let failed = SearchEvent::AnswerError("x".into());
        assert_eq!(failed.name(), "answer_error");
        assert_eq!(failed.data(), r#"{"error":"x"}"#);
        assert_eq!(SearchEvent::SearchError("y".into()).name(), "search_error");
        assert_eq!(error_data("m"), r#"{"message":"m"}"#);
    }
}
