//! chatd's bundled `search_engine_a` search backend: engine_a, an Exa-style API
//! (`POST {base}/search`, `POST {base}/answer`). It owns the wire format only: the base URL
//! comes from the operator's `ENGINE_A_BASE_URL`, the `x-api-key` header is added by the host.
//!
//! Anatomy, as in every bundled plugin:
//!
//! * [`request`]: the upstream bodies (pure);
//! * [`wire`]: the upstream's JSON (private serde types, tolerant) and its parsing (pure);
//! * [`items`]: conversion to the items the host stores (pure);
//! * here: the glue that sends the requests, and the naming of upstream errors.

mod items;
mod request;
mod wire;

use chatd_plugin_sdk::host::{PluginError, Request, config};
use chatd_plugin_sdk::search::{AnswerResponse, Search, SearchRequest, SearchResponse};
use serde_json::Value;

/// The setting holding the granted base URL.
const BASE_URL: &str = "engine_a_base_url";

struct SearchEngineA;

impl Search for SearchEngineA {
    fn search(request: SearchRequest) -> Result<SearchResponse, PluginError> {
        let body = post("search", &request::search_body(&request))?;
        Ok(items::search_response(wire::parse_search(&body)?))
    }

    fn answer(query: String) -> Result<AnswerResponse, PluginError> {
        let body = post("answer", &request::answer_body(&query))?;
        Ok(items::answer_response(wire::parse_answer(&body)?))
    }
}

/// Sends `body` to `{base}/{path}`; the raw response body of a 2xx answer.
fn post(path: &str, body: &Value) -> Result<Vec<u8>, PluginError> {
    Request::post(request::endpoint(&base_url()?, path))
        .header("accept", "application/json")
        .json(body)
        .send()
        .map_err(chatd_plugin_sdk::transport_error)?
        .error_for_status()
        .map_err(|e| chatd_plugin_sdk::name_upstream(e, "engine_a"))?
        .bytes()
        .map_err(chatd_plugin_sdk::transport_error)
}

/// The granted base URL; missing means the operator did not configure engine_a.
fn base_url() -> Result<String, PluginError> {
    config::get(BASE_URL).ok_or_else(|| {
        PluginError::InvalidInput(format!(
            "{} is not configured",
            BASE_URL.to_ascii_uppercase()
        ))
    })
}

chatd_plugin_sdk::export_search!(SearchEngineA);

#[cfg(test)]
mod tests {
    use super::*;
    use chatd_plugin_sdk::host::UpstreamError;

    #[test]
    fn upstream_errors_name_the_engine() {
        // The message error_for_status takes from an Exa error body's `error`.
        let named = chatd_plugin_sdk::name_upstream(
            PluginError::Upstream(UpstreamError {
                status: 401,
                message: "Invalid API key".into(),
            }),
            "engine_a",
        );
        match named {
            PluginError::Upstream(e) => {
                assert_eq!(e.status, 401);
                assert_eq!(e.message, "engine_a: Invalid API key");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn other_errors_are_left_alone() {
        match chatd_plugin_sdk::name_upstream(PluginError::Transport("reset".into()), "engine_a") {
            PluginError::Transport(why) => assert_eq!(why, "reset"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_error_body_message_is_the_exa_error_field() {
        // What error_for_status reads from the documented Exa error body.
        let body = br#"{"requestId":"r1","error":"Invalid API key","tag":"INVALID_API_KEY"}"#;
        assert_eq!(
            chatd_plugin_sdk::host::error_message(body).as_deref(),
            Some("Invalid API key")
        );
    }
}
