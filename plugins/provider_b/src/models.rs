//! `GET {base}/models?limit=1000`: the model ids, in the API's order (newest first). One page of
//! 1000 holds every model the API has ever listed, so `has_more` is not followed.

use chatd_plugin_sdk::host::PluginError;
use serde::Deserialize;

/// The query of the list request: the largest page the API gives.
pub const QUERY: &str = "limit=1000";

#[derive(Deserialize)]
struct List {
    data: Vec<Model>,
}

#[derive(Deserialize)]
struct Model {
    id: String,
}

/// The ids of a `/models` body, without duplicates.
pub fn parse(body: &[u8]) -> Result<Vec<String>, PluginError> {
    let list: List = serde_json::from_slice(body).map_err(|e| {
        PluginError::MalformedResponse(format!("provider_b: unexpected model list: {e}"))
    })?;
    let mut ids: Vec<String> = Vec::with_capacity(list.data.len());
    for model in list.data {
        if !model.id.trim().is_empty() && !ids.contains(&model.id) {
            ids.push(model.id);
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_page_gives_its_ids_in_order() {
        // The shape of the API reference's example (platform.claude.com/docs/en/api/models-list).
        let body = br#"{
            "data": [
                {"type": "model", "id": "claude-opus-4-6", "display_name": "Claude Opus 4.6",
                 "created_at": "2026-02-04T00:00:00Z", "max_input_tokens": 200000,
                 "max_tokens": 128000, "capabilities": {"thinking": {"supported": true}}},
                {"type": "model", "id": "claude-haiku-4-5-20251001", "display_name": "Claude Haiku 4.5",
                 "created_at": "2025-10-15T00:00:00Z"},
                {"type": "model", "id": "claude-3-haiku-20240307", "display_name": "Claude Haiku 3",
                 "created_at": "2024-03-07T00:00:00Z"}
            ],
            "has_more": false,
            "first_id": "claude-opus-4-6",
            "last_id": "claude-3-haiku-20240307"
        }"#;
        assert_eq!(
            parse(body).unwrap(),
            [
                "claude-opus-4-6",
                "claude-haiku-4-5-20251001",
                "claude-3-haiku-20240307"
            ]
        );
    }

    #[test]
    fn a_body_without_data_is_malformed() {
        assert!(matches!(
            parse(br#"{"type":"error","error":{"type":"api_error","message":"x"}}"#),
            Err(PluginError::MalformedResponse(_))
        ));
    }
}
