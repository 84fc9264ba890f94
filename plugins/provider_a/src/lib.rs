//! chatd's bundled `provider_a` provider: the OpenAI Responses API (`POST {base}/responses`,
//! `GET {base}/models`). It owns the wire format only: the base URL comes from the operator's
//! setting, the `Authorization: Bearer` key is added by the host.
//!
//! Anatomy, as in every bundled provider:
//!
//! * [`config`]: the base URL setting;
//! * [`request`]: the upstream body from a turn request (pure);
//! * [`wire`]: the upstream's JSON (private serde types);
//! * [`stream`]: the parsers, streamed (one server-sent event at a time) and whole, producing the
//!   turn's events and finish reason (pure);
//! * [`models`]: the model list and which ids are kept;
//! * here: the request of a turn and the decoder of its answer (the host sends the one and
//!   feeds the other), and the model list's request.
//!
//! Tool loops keep their state upstream: a turn that may be continued is stored (`store: true`)
//! and its response id is emitted as the continuation; the next turn names it as
//! `previous_response_id` and sends only the tool results, so reasoning items carry over.

mod config;
mod models;
mod request;
mod stream;
mod wire;

use chatd_plugin_sdk::codec::{Codec, Decoder};
use chatd_plugin_sdk::host::{PluginError, Request};
use chatd_plugin_sdk::provider::TurnRequest;
use chatd_plugin_sdk::transport_error;

struct Plugin;

impl Codec for Plugin {
    fn list_models() -> Result<Vec<String>, PluginError> {
        let base = config::base_url()?;
        let body = Request::get(format!("{base}/models"))
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
        let upstream = Request::post(format!("{base}/responses"))
            .header("accept", accept)
            .json(&body);
        let may_continue = request.may_continue;
        let decoder = Decoder::new(
            request.streaming,
            stream::Stream::new(may_continue),
            move |body| stream::parse_response(body, may_continue),
        );
        Ok((upstream, decoder))
    }
}

chatd_plugin_sdk::export_codec_provider!(Plugin);
