//! chatd's bundled `provider_a` provider: the OpenAI Responses API (`POST {base}/responses`,
//! `GET {base}/models`), offered to operators as the adapter `responses`. It owns the wire format
//! only: the base URL comes from its service, the `Authorization: Bearer` key is added by the host.
//!
//! Anatomy, as in every bundled provider:
//!
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

mod models;
mod request;
mod stream;
mod wire;

use chatd_plugin_sdk::codec::{
    Codec, Decoder, OptionKind, TuningKind, post_turn, turn_options, turn_tuning,
};
use chatd_plugin_sdk::host::{PluginError, Request};
use chatd_plugin_sdk::provider::{self, Profile, TurnRequest};

struct Plugin;

impl Codec for Plugin {
    fn profile() -> Profile {
        Profile {
            adapter: Some("responses".into()),
            tool_instruction: true,
            ..Profile::default()
        }
    }

    fn honoured() -> Vec<OptionKind> {
        request::HONOURED.to_vec()
    }

    fn tuned() -> Vec<TuningKind> {
        request::TUNED.to_vec()
    }

    fn list_models() -> Result<Vec<String>, PluginError> {
        let base = provider::base_url()?;
        provider::list_models(&format!("{base}/models"), &[], models::parse)
    }

    fn start(request: TurnRequest) -> Result<(Request, Decoder), PluginError> {
        let base = provider::base_url()?;
        let upstream = post_turn(
            format!("{base}/responses"),
            &request::body(&request, &turn_options(), &turn_tuning())?,
            request.streaming,
        );
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
