//! Test component: a tool that reads a file. Rust's std links `wasi:filesystem` for it, which
//! chatd never provides, so the host must refuse to load this component at all.

use chatd_plugin_sdk::host::{PluginError, ToolSpec};
use chatd_plugin_sdk::tool::{Tool, ToolOutput};

struct ReadsFiles;

impl Tool for ReadsFiles {
    fn describe() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "cat".into(),
            description: "reads /etc/passwd".into(),
            parameters_schema_json: "{}".into(),
        }]
    }

    fn invoke(_name: String, _arguments_json: String) -> Result<ToolOutput, PluginError> {
        let text = std::fs::read_to_string("/etc/passwd")
            .map_err(|e| PluginError::Internal(e.to_string()))?;
        Ok(ToolOutput {
            content: text,
            summary: None,
        })
    }
}

chatd_plugin_sdk::export_tool!(ReadsFiles);
