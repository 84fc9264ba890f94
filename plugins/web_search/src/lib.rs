//! chatd's bundled `web_search` tool. The engine is the operator's choice
//! (`chat_web_search_engine`): `engine_a`, an Exa-style search API ([`engine_a`]), or
//! `engine_b`, a SearXNG instance with JSON output enabled ([`engine_b`]). Either way the model
//! gets the same ranked list ([`render`]): title, URL, date, and a summary or snippet per result.
//!
//! Anatomy, as in every bundled plugin: arguments → request building → private wire types →
//! conversion to [`Hit`]s → rendering; each engine module has its tests on recorded or documented
//! shapes, and `tests/api/bundled_tools.rs` runs the compiled component against mock upstreams.

mod engine_a;
mod engine_b;
mod render;

use chatd_plugin_sdk::host::{PluginError, ToolSpec, config};
use chatd_plugin_sdk::json::{optional_u64, parse_object, required_str};
use chatd_plugin_sdk::tool::{Tool, ToolOutput};

/// Results when the model does not say.
const DEFAULT_RESULTS: u32 = 8;
/// The most results one call may ask for.
const MAX_RESULTS: u32 = 20;
/// The longest query passed on.
const MAX_QUERY_CHARS: usize = 2_000;

/// One ranked result, whatever the engine.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub published: Option<String>,
    pub author: Option<String>,
    /// A summary or snippet of the page.
    pub snippet: String,
}

/// What an engine found.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Found {
    pub hits: Vec<Hit>,
    /// Direct answers some engines give besides results.
    pub answers: Vec<String>,
    /// Why results may be missing (engines that did not answer), for the model.
    pub notes: Vec<String>,
}

struct WebSearch;

impl Tool for WebSearch {
    fn describe() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "web_search".into(),
            description: "Search the web. Returns ranked results, each with its title, URL, \
                          publication date when known, and a summary or snippet. Use it for \
                          current events and facts you are not sure of, and to find pages to \
                          read in full with fetch_url."
                .into(),
            parameters_schema_json: serde_json::json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What to search for, as you would type it into a search engine."
                    },
                    "numResults": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_RESULTS,
                        "description": format!("How many results to return (default {DEFAULT_RESULTS}).")
                    }
                },
                "required": ["query"],
                "additionalProperties": false
            })
            .to_string(),
        }]
    }

    fn invoke(name: String, arguments_json: String) -> Result<ToolOutput, PluginError> {
        if name != "web_search" {
            return Err(chatd_plugin_sdk::unsupported(&format!("the tool {name:?}")));
        }
        let args = parse_object(&arguments_json)?;
        let query = required_str(&args, "query")?.trim();
        if query.is_empty() {
            return Err(PluginError::InvalidInput("query: must not be blank".into()));
        }
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(PluginError::InvalidInput(format!(
                "query: must be at most {MAX_QUERY_CHARS} characters"
            )));
        }
        let count = match optional_u64(&args, "numResults")? {
            None => DEFAULT_RESULTS,
            Some(n) if (1..=u64::from(MAX_RESULTS)).contains(&n) => n as u32,
            Some(_) => {
                return Err(PluginError::InvalidInput(format!(
                    "numResults: must be from 1 to {MAX_RESULTS}"
                )));
            }
        };
        let engine = config::get("chat_web_search_engine").unwrap_or_else(|| "engine_a".into());
        let found = match engine.as_str() {
            "engine_a" => engine_a::search(&base_url("engine_a_base_url")?, query, count)?,
            "engine_b" => engine_b::search(&base_url("engine_b_base_url")?, query, count)?,
            other => {
                return Err(PluginError::InvalidInput(format!(
                    "chat_web_search_engine: unknown engine {other:?}"
                )));
            }
        };
        Ok(ToolOutput {
            content: render::for_model(query, &found),
            summary: Some(render::summary(query, &found)),
        })
    }
}

/// A granted base URL; missing means the operator did not configure that engine.
fn base_url(key: &str) -> Result<String, PluginError> {
    config::get(key).ok_or_else(|| {
        PluginError::InvalidInput(format!("{} is not configured", key.to_ascii_uppercase()))
    })
}

chatd_plugin_sdk::export_tool!(WebSearch);
