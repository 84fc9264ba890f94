//! `GET {base}/models`: the ids the Responses API can run a chat turn with, sorted.
//!
//! The list holds every model of the account, most of which are not chat models. An id is
//! dropped when its base model (for a fine-tune `ft:<base>:<org>:…`, the `<base>` part, so an
//! organisation's own suffix cannot hide or drop a model) contains one of [`EXCLUDED`]:
//!
//! * other endpoints: embeddings, moderation, speech (`whisper`, `tts`, `transcribe`), images and
//!   video (`dall-e`, `image`, `sora`);
//! * audio and realtime models (`audio`, `realtime`): Chat Completions or the Realtime API only;
//! * the search models (`gpt-4o-search-preview`, `gpt-5-search-api`…): Chat Completions only,
//!   the Responses API searches with its `web_search` tool instead;
//! * models that only work with a tool chatd does not offer: `deep-research` (needs
//!   `web_search_preview`, `file_search` or `mcp`) and `computer-use` (needs `computer_use`);
//! * legacy completion models: `instruct`, `babbage`, `davinci`.
//!
//! Everything else is kept, including fine-tunes of chat models, `chatgpt-*-latest`, `codex-*`
//! and the `o*-pro` models (which are Responses-only): a new family is listed until it proves
//! unusable, which is the safer mistake.

use chatd_plugin_sdk::host::PluginError;
use serde::Deserialize;

/// Parts of a base model id that mark a model a chat turn cannot use.
pub const EXCLUDED: &[&str] = &[
    "embedding",
    "moderation",
    "whisper",
    "tts",
    "transcribe",
    "dall-e",
    "image",
    "sora",
    "audio",
    "realtime",
    "search-preview",
    "search-api",
    "deep-research",
    "computer-use",
    "instruct",
    "babbage",
    "davinci",
];

#[derive(Deserialize)]
struct List {
    data: Vec<Model>,
}

#[derive(Deserialize)]
struct Model {
    id: String,
}

/// The usable ids of a `/models` body, sorted and without duplicates.
pub fn parse(body: &[u8]) -> Result<Vec<String>, PluginError> {
    let list: List = serde_json::from_slice(body).map_err(|e| {
        PluginError::MalformedResponse(format!("provider_a: unexpected model list: {e}"))
    })?;
    let mut ids: Vec<String> = list
        .data
        .into_iter()
        .map(|m| m.id)
        .filter(|id| usable(id))
        .collect();
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// Whether a chat turn can run on model `id` (see the module docs).
pub fn usable(id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    let base = match id.strip_prefix("ft:") {
        Some(rest) => rest.split(':').next().unwrap_or_default(),
        None => id.as_str(),
    };
    !base.trim().is_empty() && !EXCLUDED.iter().any(|part| base.contains(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_list_keeps_the_chat_models() {
        let body = include_str!(
            "../../../tests/fixtures/upstream/models_list/openai_list_models.response.json"
        );
        let ids = parse(body.as_bytes()).unwrap();
        let expected = [
            "chatgpt-4o-latest",
            "codex-mini-latest",
            "ft:gpt-3.5-turbo-0125:microsoft-openai-sdk-team::C4ZiCash:ckpt-step-80",
            "ft:gpt-3.5-turbo-0125:microsoft-openai-sdk-team::C4ZiCljE",
            "ft:gpt-3.5-turbo-0125:microsoft-openai-sdk-team::C4ZiCzLn:ckpt-step-90",
            "gpt-3.5-turbo",
            "gpt-3.5-turbo-0125",
            "gpt-3.5-turbo-1106",
            "gpt-3.5-turbo-16k",
            "gpt-4",
            "gpt-4-0125-preview",
            "gpt-4-0613",
            "gpt-4-1106-preview",
            "gpt-4-turbo",
            "gpt-4-turbo-2024-04-09",
            "gpt-4-turbo-preview",
            "gpt-4.1",
            "gpt-4.1-2025-04-14",
            "gpt-4.1-mini",
            "gpt-4.1-mini-2025-04-14",
            "gpt-4.1-nano",
            "gpt-4.1-nano-2025-04-14",
            "gpt-4o",
            "gpt-4o-2024-05-13",
            "gpt-4o-2024-08-06",
            "gpt-4o-2024-11-20",
            "gpt-4o-mini",
            "gpt-4o-mini-2024-07-18",
            "gpt-5",
            "gpt-5-2025-08-07",
            "gpt-5-chat-latest",
            "gpt-5-mini",
            "gpt-5-mini-2025-08-07",
            "gpt-5-nano",
            "gpt-5-nano-2025-08-07",
            "o1",
            "o1-2024-12-17",
            "o1-mini",
            "o1-mini-2024-09-12",
            "o1-pro",
            "o1-pro-2025-03-19",
            "o3",
            "o3-2025-04-16",
            "o3-mini",
            "o3-mini-2025-01-31",
            "o3-pro",
            "o3-pro-2025-06-10",
            "o4-mini",
            "o4-mini-2025-04-16",
        ];
        assert_eq!(ids, expected);
    }

    #[test]
    fn the_rule() {
        for dropped in [
            "text-embedding-3-large",
            "omni-moderation-latest",
            "whisper-1",
            "tts-1-hd",
            "gpt-4o-mini-tts",
            "gpt-4o-transcribe",
            "dall-e-3",
            "gpt-image-1",
            "sora-2",
            "gpt-4o-audio-preview",
            "gpt-audio",
            "gpt-realtime",
            "gpt-4o-search-preview",
            "gpt-5-search-api",
            "o3-deep-research",
            "computer-use-preview",
            "gpt-3.5-turbo-instruct",
            "babbage-002",
            "davinci-002",
            "ft:davinci-002:org::x",
            "",
        ] {
            assert!(!usable(dropped), "{dropped}");
        }
        for kept in [
            "gpt-5.2",
            "GPT-4O",
            "ft:gpt-4o-mini-2024-07-18:acme:audio-helper:abc",
            "codex-mini-latest",
        ] {
            assert!(usable(kept), "{kept}");
        }
    }

    #[test]
    fn a_body_without_data_is_malformed() {
        let body = include_str!(
            "../../../tests/fixtures/upstream/models_list/openai_retrieve_model.response.json"
        );
        assert!(matches!(
            parse(body.as_bytes()),
            Err(PluginError::MalformedResponse(_))
        ));
        assert_eq!(
            parse(br#"{"data":[{"id":"b"},{"id":"a"},{"id":"b"}]}"#).unwrap(),
            ["a", "b"]
        );
    }

    #[test]
    fn a_missing_model_error_gives_its_message() {
        let body = include_str!(
            "../../../tests/fixtures/upstream/models_list/openai_retrieve_model_404.response.json"
        );
        assert_eq!(
            chatd_plugin_sdk::host::error_message(body.as_bytes()).as_deref(),
            Some("The model 'fake_id' does not exist")
        );
    }
}
