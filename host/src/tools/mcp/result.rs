//! What chatd makes of an MCP server's tools and answers: the names the models see, and a
//! `tools/call` result as the text a tool message holds.
//!
//! A result's parts, in order: text as it is; an image or audio part as one line naming its
//! type and size (the bytes go nowhere: no model, no client, no file); a resource link as a
//! line with its name and URI (shown, never fetched); an embedded resource as its URI and its
//! text, or a line for a binary one. With no text part, `structuredContent` is the text, as
//! compact JSON (the spec asks servers to send both; when they do, the text part is what the
//! server meant for a reader). `isError` makes the call a failed one, with that text as its
//! error. The whole is cut at [`MAX_RESULT_CHARS`], and the server's key is scrubbed once more
//! after JSON decoding (an escaped echo, `\u0073k-…`, passes the byte-level scrubber).

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::egress::scrub;

/// The longest text a result gives the model, in characters.
pub const MAX_RESULT_CHARS: usize = 100_000;
/// The longest tool name every provider accepts (`[A-Za-z0-9_-]{1,64}`).
const MAX_NAME: usize = 64;

/// The name models and clients see for `tool` of server `server`: `mcp__SERVER__TOOL`, with
/// every character outside `[A-Za-z0-9_-]` as `_`; a name over 64 characters keeps its start
/// and ends with 8 hex digits of the SHA-256 of the original, so two long names stay apart.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("mcp__{server}__{clean}");
    if name.len() <= MAX_NAME && clean == tool {
        return name;
    }
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let tag: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let keep = name.len().min(MAX_NAME - tag.len() - 1);
    format!("{}_{tag}", &name[..keep])
}

/// A call's result as chatd uses it.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    pub text: String,
    pub is_error: bool,
}

/// `result` (a `CallToolResult` as JSON) as text, with `keys` scrubbed.
pub fn outcome(result: &Value, keys: &[Box<[u8]>]) -> Outcome {
    let mut parts: Vec<String> = Vec::new();
    let mut any_text = false;
    for part in result["content"].as_array().into_iter().flatten() {
        let (line, is_text) = describe(part);
        any_text |= is_text;
        parts.push(line);
    }
    if !any_text && let Some(structured) = result.get("structuredContent") {
        parts.insert(0, structured.to_string());
    }
    let text = parts.join("\n\n");
    let text = scrub::text(keys, text);
    Outcome {
        text: cut(&text),
        is_error: result["isError"].as_bool().unwrap_or(false),
    }
}

/// One content part as text, and whether it was text.
fn describe(part: &Value) -> (String, bool) {
    let kind = part["type"].as_str().unwrap_or("");
    let mime = part["mimeType"].as_str().unwrap_or("unknown type");
    match kind {
        "text" => (part["text"].as_str().unwrap_or("").to_string(), true),
        "image" | "audio" => (
            format!(
                "[{kind}: {mime}, {} bytes, not shown]",
                decoded_len(&part["data"])
            ),
            false,
        ),
        "resource_link" => (
            format!(
                "[resource link: {} <{}>]",
                part["name"].as_str().unwrap_or("unnamed"),
                part["uri"].as_str().unwrap_or("")
            ),
            false,
        ),
        "resource" => {
            let resource = &part["resource"];
            let uri = resource["uri"].as_str().unwrap_or("");
            match resource["text"].as_str() {
                Some(text) => (format!("[resource <{uri}>]\n{text}"), true),
                None => (
                    format!(
                        "[resource <{uri}>: {}, {} bytes, not shown]",
                        resource["mimeType"].as_str().unwrap_or("unknown type"),
                        decoded_len(&resource["blob"])
                    ),
                    false,
                ),
            }
        }
        other => (format!("[{} content, not shown]", cut_label(other)), false),
    }
}

/// The size of base64 `data` once decoded (without decoding it).
fn decoded_len(data: &Value) -> usize {
    let text = data.as_str().unwrap_or("");
    let padding = text.bytes().rev().take_while(|b| *b == b'=').count();
    (text.len() / 4 * 3).saturating_sub(padding)
}

fn cut_label(kind: &str) -> String {
    let kind: String = kind
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(32)
        .collect();
    if kind.is_empty() {
        "unknown".into()
    } else {
        kind
    }
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_RESULT_CHARS) {
        Some((end, _)) => format!(
            "{}\n[cut: the result is longer than {MAX_RESULT_CHARS} characters]",
            &text[..end]
        ),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_carry_server_and_tool_and_fit_every_provider() {
        assert_eq!(
            tool_name("github", "search_issues"),
            "mcp__github__search_issues"
        );
        let dotted = tool_name("fs", "files.read");
        assert!(dotted.starts_with("mcp__fs__files_read_"), "{dotted}");
        assert_ne!(dotted, tool_name("fs", "files/read"));
        let long = tool_name("server", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert_ne!(long, tool_name("server", &"x".repeat(101)));
        for name in [dotted, long] {
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
        }
    }

    #[test]
    fn parts_become_text_and_binary_parts_a_line() {
        let result = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource_link", "name": "readme", "uri": "file:///r.md"},
            {"type": "resource", "resource": {"uri": "mem://a", "text": "inline"}},
            {"type": "resource", "resource": {"uri": "mem://b", "mimeType": "application/pdf", "blob": "AAAAAA=="}},
            {"type": "<script>", "x": 1}
        ]});
        let out = outcome(&result, &[]);
        assert_eq!(
            out.text,
            "hello\n\n[image: image/png, 3 bytes, not shown]\n\n[resource link: readme <file:///r.md>]\n\n[resource <mem://a>]\ninline\n\n[resource <mem://b>: application/pdf, 4 bytes, not shown]\n\n[script content, not shown]"
        );
        assert!(!out.is_error);
    }

    #[test]
    fn structured_content_stands_in_for_missing_text_and_is_error_fails_the_call() {
        let out = outcome(
            &json!({"content": [], "structuredContent": {"sum": 3}}),
            &[],
        );
        assert_eq!(out.text, r#"{"sum":3}"#);
        let both = outcome(
            &json!({"content": [{"type": "text", "text": "3"}], "structuredContent": {"sum": 3}}),
            &[],
        );
        assert_eq!(both.text, "3");
        let failed = outcome(
            &json!({"content": [{"type": "text", "text": "no such repo"}], "isError": true}),
            &[],
        );
        assert_eq!(
            failed,
            Outcome {
                text: "no such repo".into(),
                is_error: true
            }
        );
    }

    #[test]
    fn a_decoded_echo_of_the_key_is_scrubbed_and_long_results_are_cut() {
        let keys = scrub::keys(["sk-secret-123"]);
        let out = outcome(
            &json!({"content": [{"type": "text", "text": "auth: Bearer sk-secret-123"}]}),
            &keys,
        );
        assert_eq!(out.text, "auth: Bearer [redacted]");
        let long = outcome(
            &json!({"content": [{"type": "text", "text": "é".repeat(MAX_RESULT_CHARS + 5)}]}),
            &[],
        );
        assert!(long.text.ends_with("characters]"));
        assert_eq!(
            long.text.chars().filter(|c| *c == 'é').count(),
            MAX_RESULT_CHARS
        );
    }
}
