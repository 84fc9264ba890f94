//! chatd's bundled `provider_c` provider: an OpenAI-compatible chat completions API, xAI by
//! default (`PROVIDER_C_BASE_URL`, `https://api.x.ai/v1`), offered to operators as the adapter
//! `chat_completions` (Groq, OpenRouter, vLLM, Ollama…). Turns go to
//! `POST {base}/chat/completions` with the host's tools; models come from `GET {base}/models`;
//! the library's embeddings from `POST {base}/embeddings`.
//! The host adds the key (`Authorization: Bearer …`) to requests to the base URL.
//!
//! The wire format lives in the shared `chat_completions` library (its
//! [`Standard`](chat_completions::Flavor::Standard) flavor); this crate only declares itself
//! and exports the codec.

use chat_completions::Flavor;
use chatd_plugin_sdk::codec::{
    Codec, Decoder, Embedded, OptionKind, TuningKind, turn_options, turn_tuning,
};
use chatd_plugin_sdk::host::PluginError;
use chatd_plugin_sdk::host::Request;
use chatd_plugin_sdk::provider::{self, Profile, TurnRequest};

struct ProviderC;

impl Codec for ProviderC {
    fn profile() -> Profile {
        Profile {
            adapter: Some("chat_completions".into()),
            tool_instruction: true,
            ..Profile::default()
        }
    }

    fn honoured() -> Vec<OptionKind> {
        chat_completions::HONOURED.to_vec()
    }

    fn tuned() -> Vec<TuningKind> {
        chat_completions::TUNED.to_vec()
    }

    fn list_models() -> Result<Vec<String>, PluginError> {
        chat_completions::list_models(&provider::base_url()?)
    }

    fn start(request: TurnRequest) -> Result<(Request, Decoder), PluginError> {
        let base = provider::base_url()?;
        chat_completions::start(
            &base,
            &request,
            &turn_options(),
            &turn_tuning(),
            Flavor::Standard,
        )
    }

    fn embed(model: String, inputs: Vec<String>) -> Result<Embedded, PluginError> {
        chat_completions::embeddings::embed(&provider::base_url()?, &model, &inputs)
    }
}

chatd_plugin_sdk::export_codec_provider!(ProviderC);
