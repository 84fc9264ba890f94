//! chatd's bundled `provider_b` provider: the Anthropic Messages API (`POST {base}/messages`,
//! `GET {base}/models`, `anthropic-version: 2023-06-01`), offered to operators as the adapter
//! `messages`. It owns the wire format only: the base URL comes from its service, the key is
//! added by the host as `x-api-key` (its profile says so).
//!
//! Anatomy, as in every bundled provider:
//!
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

mod models;
mod request;
mod stream;
mod wire;

use chatd_plugin_sdk::codec::{
    Codec, Decoder, OptionKind, TuningKind, post_turn, turn_options, turn_tuning,
};
use chatd_plugin_sdk::host::{PluginError, Request};
use chatd_plugin_sdk::provider::{self, Profile, TurnRequest};

/// The API version every request names.
const API_VERSION: &str = "2023-06-01";

struct Plugin;

impl Codec for Plugin {
    fn profile() -> Profile {
        Profile {
            adapter: Some("messages".into()),
            key_header: Some("x-api-key".into()),
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
        provider::list_models(
            &format!("{base}/models?{}", models::QUERY),
            &[("anthropic-version", API_VERSION)],
            models::parse,
        )
    }

    fn start(request: TurnRequest) -> Result<(Request, Decoder), PluginError> {
        let base = provider::base_url()?;
        let upstream = post_turn(
            format!("{base}/messages"),
            &request::body(&request, &turn_options(), &turn_tuning())?,
            request.streaming,
        )
        .header("anthropic-version", API_VERSION);
        let decoder = Decoder::new(
            request.streaming,
            stream::Stream::new(),
            stream::parse_message,
        );
        Ok((upstream, decoder))
    }
}

chatd_plugin_sdk::export_codec_provider!(Plugin);
