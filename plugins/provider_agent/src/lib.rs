//! chatd's bundled `provider_agent` provider: an agent server with an OpenAI-compatible chat
//! completions API, such as Hermes Agent's (`AGENT_API_BASE_URL`, `http://127.0.0.1:8642/v1` by
//! default). Turns go to `POST {base}/chat/completions`, models come from `GET {base}/models`;
//! the host adds `AGENT_API_KEY` (`Authorization: Bearer …`) when one is set.
//!
//! The agent runs its own tools, so this provider never sends the host's tools and passes only
//! the agent's text (and usage) on: its progress events (`event: hermes.tool.progress` …) and
//! any tool-call deltas are dropped. The wire format lives in the shared `chat_completions`
//! library (its [`Agent`](chat_completions::Flavor::Agent) flavor); this crate only reads its
//! setting and exports the codec.

use chat_completions::Flavor;
use chatd_plugin_sdk::codec::{Codec, Decoder};
use chatd_plugin_sdk::host::PluginError;
use chatd_plugin_sdk::host::Request;
use chatd_plugin_sdk::provider::TurnRequest;

/// The config key the host gives the granted base URL under.
const BASE_URL: &str = "agent_api_base_url";

struct ProviderAgent;

impl Codec for ProviderAgent {
    fn list_models() -> Result<Vec<String>, PluginError> {
        chat_completions::list_models(&base_url()?)
    }

    fn start(request: TurnRequest) -> Result<(Request, Decoder), PluginError> {
        chat_completions::start(&base_url()?, &request, Flavor::Agent)
    }
}

/// The base URL without a trailing `/`; missing when the operator did not configure the service.
fn base_url() -> Result<String, PluginError> {
    chatd_plugin_sdk::provider::base_url(BASE_URL, "AGENT_API_BASE_URL")
}

chatd_plugin_sdk::export_codec_provider!(ProviderAgent);
