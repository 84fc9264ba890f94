//! Test component built against the released, frozen `chatd:plugin@0.1.0` (`wit/v0.1.0/`), as a
//! third party's plugin from before 0.1.1: `tests/api/wit_versions.rs` loads it into today's
//! host and calls each import it has (http, log, config). It carries no manifest, so the install
//! tests (`tests/api/plugins_install.rs`) can pack it with several.

wit_bindgen::generate!({
    path: "../../../wit/v0.1.0",
    world: "chatd:plugin/tool@0.1.0",
});

use chatd::plugin::http::{Method, Request, send};
use chatd::plugin::log::{Level, write};
// The world's `use` brings ToolOutput, PluginError and ToolSpec to the crate root.

struct Plugin;

impl Guest for Plugin {
    fn describe() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "get_text".into(),
            description: "GETs the URL in `url` and answers its body".into(),
            parameters_schema_json: r#"{"type":"object","properties":{"url":{"type":"string"}}}"#
                .into(),
        }]
    }

    fn invoke(_name: String, arguments_json: String) -> Result<ToolOutput, PluginError> {
        // The URL is the arguments' only string value; no JSON parser in this small plugin.
        let url = arguments_json
            .split('"')
            .nth(3)
            .ok_or_else(|| PluginError::InvalidInput("url: missing".into()))?;
        write(Level::Info, &format!("fetching {url}"));
        let response = send(&Request {
            method: Method::Get,
            url: url.into(),
            headers: Vec::new(),
            body: None,
            timeout_ms: Some(5_000),
            follow_redirects: None,
        })
        .map_err(|e| PluginError::Transport(format!("{e:?}")))?;
        let mut body = Vec::new();
        while let Some(chunk) = response
            .next_chunk()
            .map_err(|e| PluginError::Transport(format!("{e:?}")))?
        {
            body.extend(chunk);
        }
        let model = chatd::plugin::config::get("title_model").unwrap_or_default();
        Ok(ToolOutput {
            content: String::from_utf8_lossy(&body).into_owned(),
            summary: Some(format!(
                "status {}; title model {model:?}",
                response.status()
            )),
        })
    }
}

export!(Plugin);
