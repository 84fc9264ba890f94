//! chatd's bundled `provider_agent` provider: an agent server with an OpenAI-compatible chat
//! completions API, such as Hermes Agent's (`AGENT_API_BASE_URL`, `http://127.0.0.1:8642/v1` by
//! default), offered to operators as the adapter `agent`. Turns go to
//! `POST {base}/chat/completions`, models come from `GET {base}/models`; the host adds
//! `AGENT_API_KEY` (`Authorization: Bearer …`) when one is set.
//!
//! The agent runs its own tools, so its profile declines the host's: the host sends none, and
//! this provider passes only the agent's text (and usage) on: its progress events
//! (`event: hermes.tool.progress` …) and any tool-call deltas are dropped. It honours no turn
//! options (`top_p`, `stop`, `tool_choice`, `response_format`; the agent decides its own), so
//! the host refuses them for it. The wire format lives
//! in the shared `chat_completions` library (its [`Agent`](chat_completions::Flavor::Agent)
//! flavor); this crate only declares itself and exports the codec.

use chat_completions::Flavor;
use chatd_plugin_sdk::codec::{Codec, Decoder, no_turn_options, no_turn_tuning};
use chatd_plugin_sdk::host::PluginError;
use chatd_plugin_sdk::host::Request;
use chatd_plugin_sdk::provider::{self, Profile, TurnRequest};

struct ProviderAgent;

impl Codec for ProviderAgent {
    fn profile() -> Profile {
        Profile {
            adapter: Some("agent".into()),
            tools: false,
            ..Profile::default()
        }
    }

    fn list_models() -> Result<Vec<String>, PluginError> {
        chat_completions::list_models(&provider::base_url()?)
    }

    fn start(request: TurnRequest) -> Result<(Request, Decoder), PluginError> {
        // It honours no turn options or tuning (the agent server decides its own sampling and
        // tools), so the host sends it none.
        let base = provider::base_url()?;
        chat_completions::start(
            &base,
            &request,
            &no_turn_options(),
            &no_turn_tuning(),
            Flavor::Agent,
        )
    }
}

chatd_plugin_sdk::export_codec_provider!(ProviderAgent);
