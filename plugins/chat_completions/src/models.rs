//! `GET {base}/models`: the model ids of `data[].id`, sorted and without repeats.

use chatd_plugin_sdk::host::PluginError;

use crate::wire::ModelList;

pub fn parse(body: &[u8]) -> Result<Vec<String>, PluginError> {
    let list: ModelList = serde_json::from_slice(body).map_err(|e| {
        PluginError::MalformedResponse(format!("unexpected model list response: {e}"))
    })?;
    let mut ids: Vec<String> = list
        .data
        .into_iter()
        .filter_map(|model| model.id)
        .map(|id| id.trim().to_string())
        .filter(|id| !id.is_empty())
        .collect();
    ids.sort();
    ids.dedup();
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_list_gives_sorted_ids() {
        let ids = parse(include_bytes!(
            "../../../tests/fixtures/upstream/models_list/openai_list_models.response.json"
        ))
        .unwrap();
        assert_eq!(ids.len(), 96);
        assert_eq!(ids[0], "babbage-002");
        assert_eq!(ids[1], "chatgpt-4o-latest");
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids.iter().any(|id| id == "gpt-4o-mini"));
    }

    #[test]
    fn an_agent_servers_list_and_odd_entries() {
        let body = br#"{"object":"list","data":[{"id":"hermes-agent","object":"model","owned_by":"hermes"},{"object":"model"},{"id":" "},{"id":"hermes-agent"}]}"#;
        assert_eq!(parse(body).unwrap(), ["hermes-agent"]);
    }

    #[test]
    fn a_body_without_data_is_malformed() {
        let body = include_bytes!(
            "../../../tests/fixtures/upstream/models_list/openai_retrieve_model.response.json"
        );
        assert!(matches!(
            parse(body),
            Err(PluginError::MalformedResponse(_))
        ));
    }
}
