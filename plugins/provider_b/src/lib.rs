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
//! * here: the request of a turn and the decoder of its answer (the host sends the one and
//!   feeds the other), and the model list's request.
//!
//! The API keeps no state between calls: every turn sends the whole transcript, tool calls and
//! results included, so this provider never emits a continuation.

mod config;
mod models;
mod request;
mod stream;
mod wire;

use chatd_plugin_sdk::codec::{Codec, Decoder};
use chatd_plugin_sdk::host::{PluginError, Request};
use chatd_plugin_sdk::provider::TurnRequest;
use chatd_plugin_sdk::transport_error;

/// The API version every request names.
const API_VERSION: &str = "2023-06-01";

struct Plugin;

impl Codec for Plugin {
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

    fn start(request: TurnRequest) -> Result<(Request, Decoder), PluginError> {
        let base = config::base_url()?;
        let body = request::body(&request)?;
        let accept = if request.streaming {
            "text/event-stream"
        } else {
            "application/json"
        };
        let upstream = Request::post(format!("{base}/messages"))
            .header("anthropic-version", API_VERSION)
            .header("accept", accept)
            .json(&body);
        let decoder = Decoder::new(
            request.streaming,
            stream::Stream::new(),
            stream::parse_message,
        );
        Ok((upstream, decoder))
    }
}

chatd_plugin_sdk::export_codec_provider!(Plugin);
