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
//! * here: the glue that sends the request and hands each event to the host.
//!
//! Tool loops keep their state upstream: a turn that may be continued is stored (`store: true`)
//! and its response id is emitted as the continuation; the next turn names it as
//! `previous_response_id` and sends only the tool results, so reasoning items carry over.

mod config;
mod models;
mod request;
mod stream;
mod wire;

use chatd_plugin_sdk::host::{PluginError, Request, Response};
use chatd_plugin_sdk::provider::{FinishReason, Provider, TurnOutcome, TurnRequest, emit};
use chatd_plugin_sdk::transport_error;

struct Plugin;

impl Provider for Plugin {
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

    fn turn(request: TurnRequest) -> Result<TurnOutcome, PluginError> {
        let base = config::base_url()?;
        let body = request::body(&request)?;
        let accept = if request.streaming {
            "text/event-stream"
        } else {
            "application/json"
        };
        let response = Request::post(format!("{base}/responses"))
            .header("accept", accept)
            .json(&body)
            .send()
            .map_err(transport_error)?
            .error_for_status()?;
        if request.streaming {
            relay(response, stream::Stream::new(request.may_continue))
        } else {
            whole(response, request.may_continue)
        }
    }
}

/// Streams: each event goes to the host as soon as it is parsed.
fn relay(response: Response, mut stream: stream::Stream) -> Result<TurnOutcome, PluginError> {
    for event in response.events() {
        let event = event.map_err(transport_error)?;
        for turn_event in stream.feed(&event.event, &event.data)? {
            if !emit(&turn_event) {
                return Ok(cancelled());
            }
        }
        if let Some(finish) = stream.finished() {
            return Ok(TurnOutcome {
                finish,
                raw_json: None,
            });
        }
    }
    let finish = stream.end()?;
    Ok(TurnOutcome {
        finish,
        raw_json: None,
    })
}

/// Not streaming: the whole body is parsed, then its events go to the host.
fn whole(response: Response, may_continue: bool) -> Result<TurnOutcome, PluginError> {
    let bytes = response.bytes().map_err(transport_error)?;
    let body = String::from_utf8(bytes).map_err(|_| {
        PluginError::MalformedResponse("provider_a: the response body is not UTF-8".into())
    })?;
    let (events, finish) = stream::parse_response(&body, may_continue)?;
    for event in &events {
        if !emit(event) {
            return Ok(cancelled());
        }
    }
    Ok(TurnOutcome {
        finish,
        raw_json: Some(body),
    })
}

/// The outcome returned when the host cancelled the run (`emit` answered `false`): nobody reads
/// it, the upstream is simply no longer read.
fn cancelled() -> TurnOutcome {
    TurnOutcome {
        finish: FinishReason::Other,
        raw_json: None,
    }
}

chatd_plugin_sdk::export_provider!(Plugin);
