//! {{name}}: a chatd tool plugin. `describe` lists its tools, `invoke` runs one; manifest.json
//! travels inside the component (`embed_manifest!`), so the built `.wasm` is the whole plugin.

use chatd_plugin_sdk::host::{PluginError, ToolSpec};
use chatd_plugin_sdk::json;
use chatd_plugin_sdk::tool::{Tool, ToolOutput};

chatd_plugin_sdk::embed_manifest!("../manifest.json");

struct Plugin;

impl Tool for Plugin {
    fn describe() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "{{name}}".into(),
            description: "Counts the words of a text.".into(),
            parameters_schema_json: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#.into(),
        }]
    }

    fn invoke(name: String, arguments_json: String) -> Result<ToolOutput, PluginError> {
        if name != "{{name}}" {
            return Err(chatd_plugin_sdk::unsupported(&format!("the tool {name:?}")));
        }
        let args = json::parse_object(&arguments_json)?;
        let text = json::required_str(&args, "text")?;
        let words = text.split_whitespace().count();
        Ok(ToolOutput {
            content: format!("{words} words"),
            summary: None,
        })
    }
}

chatd_plugin_sdk::export_tool!(Plugin);

/// Run natively with `cargo test`: the harness stands in for chatd (scripted HTTP replies,
/// settings, the log).
#[cfg(test)]
mod tests {
    use chatd_plugin_sdk::harness::Harness;

    #[test]
    fn counts_words() {
        let ran = Harness::new().invoke::<super::Plugin>("{{name}}", r#"{"text":"one two three"}"#);
        assert_eq!(ran.value.unwrap().content, "3 words");
        assert!(ran.requests.is_empty());
    }

    #[test]
    fn refuses_arguments_without_text() {
        let ran = Harness::new().invoke::<super::Plugin>("{{name}}", r#"{"words":1}"#);
        assert!(ran.value.is_err());
    }
}
