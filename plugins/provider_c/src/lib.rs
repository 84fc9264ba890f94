//! chatd's bundled `provider_c` provider: an OpenAI-compatible chat completions API, xAI by
//! default (`PROVIDER_C_BASE_URL`, `https://api.x.ai/v1`). Turns go to
//! `POST {base}/chat/completions` with the host's tools; models come from `GET {base}/models`.
//! The host adds the key (`Authorization: Bearer …`) to requests to the base URL.
//!
//! The wire format lives in the shared `chat_completions` library (its
//! [`Standard`](chat_completions::Flavor::Standard) flavor); this crate only reads its setting
//! and exports the codec.

use chat_completions::Flavor;
use chatd_plugin_sdk::codec::{Codec, Decoder};
use chatd_plugin_sdk::host::PluginError;
use chatd_plugin_sdk::host::Request;
use chatd_plugin_sdk::provider::TurnRequest;

/// The config key the host gives the granted base URL under.
const BASE_URL: &str = "provider_c_base_url";

struct ProviderC;

impl Codec for ProviderC {
    fn list_models() -> Result<Vec<String>, PluginError> {
        chat_completions::list_models(&base_url()?)
    }

    fn start(request: TurnRequest) -> Result<(Request, Decoder), PluginError> {
        chat_completions::start(&base_url()?, &request, Flavor::Standard)
    }
}

/// The base URL without a trailing `/`; missing when the operator did not configure the service.
fn base_url() -> Result<String, PluginError> {
    chatd_plugin_sdk::provider::base_url(BASE_URL, "PROVIDER_C_BASE_URL")
}

chatd_plugin_sdk::export_codec_provider!(ProviderC);
