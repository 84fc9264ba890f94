//! `file_search`: chatd's own tool, searching the caller's library (docs/files.md). It is
//! offered beside the plugins' and MCP servers' tools wherever they are (the chat loop,
//! `GET /v1/chat-tools`, `/mcp`, the front door's `chatd_tools`), bound to the person the
//! request is for ([`FileSearch`]), so it reaches their files only. A tool plugin named
//! `file_search` takes its place (a plugin's name wins: `enabled.rs`).
//!
//! Arguments `{query, collection?, fileIds?}`; answer `{passages: [{fileId, name, page?, chunk,
//! text, score}]}`, best first, at most [`MAX_PASSAGES`]. The arguments are checked here, by
//! hand, as a plugin checks its own: a mistake is the model's to read and correct.

use std::sync::{Arc, LazyLock};

use serde_json::{Map, Value, json};

use crate::library::Library;
use crate::plugins::worlds::provider::ToolSpec;
use crate::store::library_search::{Passage, Scope};

pub const NAME: &str = "file_search";
/// The most passages one call answers with.
pub const MAX_PASSAGES: u32 = 8;
/// The longest `query`, in characters.
pub const MAX_QUERY_CHARS: usize = 2_000;
/// The most `fileIds`.
pub const MAX_FILE_IDS: usize = 100;

pub const DESCRIPTION: &str = "Search the user's uploaded files (their library) for passages that \
answer a question. Returns the best passages with the file's name and, where the file has \
pages, the page. Cite what you use as (name, page N).";

/// The parameters' schema as text, written once: every request's offer names the tool, and a
/// tools-on request sends its spec upstream. Built per request it was over a quarter of
/// `prepare`'s CPU (BENCHMARKS.md, "The hop to SQLite's thread").
static SCHEMA: LazyLock<String> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for: a question or keywords; exact codes and names are matched as written.", "minLength": 1, "maxLength": MAX_QUERY_CHARS},
            "collection": {"type": "string", "description": "Only files of this collection."},
            "fileIds": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_FILE_IDS, "description": "Only these files."}
        },
        "required": ["query"],
        "additionalProperties": false
    })
    .to_string()
});

/// The tool as the model sees it.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_string(),
        description: DESCRIPTION.to_string(),
        parameters_schema_json: SCHEMA.clone(),
    }
}

/// `file_search` bound to one person's library.
#[derive(Clone)]
pub struct FileSearch {
    library: Arc<Library>,
    owner: String,
}

/// A call's arguments, checked.
#[derive(Debug, PartialEq)]
struct Arguments {
    query: String,
    collection: Option<String>,
    file_ids: Option<Vec<String>>,
}

impl FileSearch {
    pub fn new(library: Arc<Library>, owner: &str) -> Self {
        Self {
            library,
            owner: owner.to_string(),
        }
    }

    /// Runs one call: the answer's JSON text and a one-line summary, or what was wrong.
    pub async fn run(&self, arguments_json: &str) -> Result<(String, String), String> {
        let args = arguments(arguments_json).map_err(|e| format!("invalid arguments: {e}"))?;
        let scope = Scope {
            owner: &self.owner,
            collection: args.collection.as_deref(),
            file_ids: args.file_ids.as_deref(),
        };
        let found = self
            .library
            .search(scope, &args.query, MAX_PASSAGES)
            .await
            .map_err(|e| format!("the library could not be searched: {e}"))?;
        let summary = summary(&found);
        let passages: Vec<Value> = found.into_iter().map(passage).collect();
        Ok((json!({ "passages": passages }).to_string(), summary))
    }
}

fn passage(p: Passage) -> Value {
    let mut out = json!({
        "fileId": p.file_id,
        "name": p.name,
        "chunk": p.chunk,
        "text": p.text,
        "score": (p.score * 1e4).round() / 1e4,
    });
    if let Some(page) = p.page {
        out["page"] = json!(page);
    }
    out
}

/// "N passages from M files".
fn summary(found: &[Passage]) -> String {
    let mut files: Vec<&str> = found.iter().map(|p| p.file_id.as_str()).collect();
    files.sort_unstable();
    files.dedup();
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    format!(
        "{} from {}",
        plural(found.len(), "passage"),
        plural(files.len(), "file")
    )
}

/// The arguments of `text`, checked: a JSON object with a non-blank `query` of at most
/// [`MAX_QUERY_CHARS`] characters, and, when given (not null), a string `collection` and an
/// array of at most [`MAX_FILE_IDS`] strings `fileIds`; no other field.
fn arguments(text: &str) -> Result<Arguments, String> {
    let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(text) else {
        return Err("not a JSON object".into());
    };
    let query = match map.remove("query") {
        Some(Value::String(q)) if !q.trim().is_empty() => q,
        Some(Value::String(_)) | None | Some(Value::Null) => {
            return Err("query: required, a non-blank string".into());
        }
        Some(_) => return Err("query: must be a string".into()),
    };
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(format!(
            "query: must be at most {MAX_QUERY_CHARS} characters"
        ));
    }
    let collection = match map.remove("collection") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c),
        Some(_) => return Err("collection: must be a string".into()),
    };
    let file_ids = file_ids(&mut map)?;
    if let Some(field) = map.keys().next() {
        return Err(format!(
            "{field}: unknown field (the fields are query, collection and fileIds)"
        ));
    }
    Ok(Arguments {
        query,
        collection,
        file_ids,
    })
}

fn file_ids(map: &mut Map<String, Value>) -> Result<Option<Vec<String>>, String> {
    let items = match map.remove("fileIds") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("fileIds: must be an array of strings".into()),
    };
    if items.len() > MAX_FILE_IDS {
        return Err(format!("fileIds: must hold at most {MAX_FILE_IDS} ids"));
    }
    items
        .into_iter()
        .map(|item| match item {
            Value::String(id) => Ok(id),
            _ => Err("fileIds: must be an array of strings".to_string()),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_with_the_field_named() {
        assert_eq!(
            arguments(r#"{"query": "q", "collection": null, "fileIds": ["a", "b"]}"#),
            Ok(Arguments {
                query: "q".into(),
                collection: None,
                file_ids: Some(vec!["a".into(), "b".into()]),
            })
        );
        for (text, error) in [
            ("[]", "not a JSON object"),
            ("{}", "query: required"),
            (r#"{"query": "  "}"#, "query: required"),
            (r#"{"query": 3}"#, "query: must be a string"),
            (r#"{"query": "q", "collection": 1}"#, "collection: must be"),
            (
                r#"{"query": "q", "fileIds": "a"}"#,
                "fileIds: must be an array",
            ),
            (
                r#"{"query": "q", "fileIds": [1]}"#,
                "fileIds: must be an array",
            ),
            (r#"{"query": "q", "k": 5}"#, "k: unknown field"),
        ] {
            let got = arguments(text).unwrap_err();
            assert!(got.starts_with(error), "{text}: {got}");
        }
        let long = json!({"query": "x".repeat(MAX_QUERY_CHARS + 1)}).to_string();
        assert!(arguments(&long).unwrap_err().contains("at most 2000"));
        let many = json!({"query": "q", "fileIds": vec!["a"; MAX_FILE_IDS + 1]}).to_string();
        assert!(arguments(&many).unwrap_err().contains("at most 100 ids"));
    }

    #[test]
    fn the_spec_is_valid_json_schema_text() {
        let spec = spec();
        let schema: Value = serde_json::from_str(&spec.parameters_schema_json).unwrap();
        assert_eq!(schema["required"], json!(["query"]));
        assert_eq!(spec.name, NAME);
    }
}
