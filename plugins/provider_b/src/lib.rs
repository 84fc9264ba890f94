//! chatd's bundled `provider_b` provider: the Anthropic Messages API (`POST {base}/messages`,
//! `GET {base}/models`, `anthropic-version: 2023-06-01`). It owns the wire format only: the base
//! URL comes from the operator's setting, the `x-api-key` header is added by the host.
//!
//! Anatomy, as in every bundled provider:
//!
//! * [`config`]: the base URL setting;
//! * [`request`]: the upstream body from a turn request (pure);
//! * [`wire`]: the upstream's JSON (private serde types);
//! * [`stream`]: the parsers, streamed (one server-sent event at a time) and whole, producing the
//!   turn's events and finish reason (pure);
//! * [`models`]: the model list;
//! * here: the glue that sends the request and hands each event to the host.
//!
//! The API keeps no state between calls: every turn sends the whole transcript, tool calls and
//! results included, so this provider never emits a continuation.

mod config;
mod models;
mod request;
mod stream;
mod wire;

use chatd_plugin_sdk::host::{PluginError, Request, Response};
use chatd_plugin_sdk::provider::{Provider, TurnOutcome, TurnRequest, deliver, emit, relay};
use chatd_plugin_sdk::transport_error;

/// The API version every request names.
const API_VERSION: &str = "2023-06-01";

struct Plugin;

impl Provider for Plugin {
    fn list_models() -> Result<Vec<String>, PluginError> {
        let base = config::base_url()?;
        let body = Request::get(format!("{base}/models?{}", models::QUERY))
            .header("anthropic-version", API_VERSION)
            .header("accept", "application/json")
            .send()
            .map_err(transport_error)?
            .error_for_status()?
            .bytes()
            .map_err(transport_error)?;
        models::parse(&body)
    }

    fn turn(request: TurnRequest) -> Result<TurnOutcome, PluginError> {
        let base = config::base_url()?;
        let body = request::body(&request)?;
        let accept = if request.streaming {
            "text/event-stream"
        } else {
            "application/json"
        };
        let response = Request::post(format!("{base}/messages"))
            .header("anthropic-version", API_VERSION)
            .header("accept", accept)
            .json(&body)
            .send()
            .map_err(transport_error)?
            .error_for_status()?;
        if request.streaming {
            relay(response.events(), stream::Stream::new(), emit)
        } else {
            whole(response)
        }
    }
}

/// Not streaming: the whole body is parsed, then its events go to the host.
fn whole(response: Response) -> Result<TurnOutcome, PluginError> {
    let body = response.text()?;
    let (events, finish) = stream::parse_message(&body)?;
    Ok(deliver(&events, finish, body, emit))
}

chatd_plugin_sdk::export_provider!(Plugin);
