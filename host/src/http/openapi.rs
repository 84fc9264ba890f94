//! What the derived OpenAPI document cannot say by itself, written into it here, once, so that a
//! client generated from `/openapi.json` (and a schema-driven fuzzer) sees the rules the handlers
//! enforce: the 401 of every route behind the token, bodies that may be left out, the bounds,
//! patterns and sizes of fields, the `Last-Event-ID` format. `schemathesis` in `.ci/run` checks
//! the result against the running server.

use serde_json::{Value, json};

use super::middleware::is_open;

/// A string with at least one character that is not white space, as Rust's `str::trim` counts
/// white space (Unicode's White_Space property); the handlers' "non-blank".
pub const NON_BLANK: &str = "[^\\t\\n\\u000B\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]";

/// A string of white space only (or empty), as `str::trim` counts it: [`NON_BLANK`]'s
/// complement, spelled out (schema tools handle a pattern better than a `not`).
pub const BLANK: &str = "^[\\t\\n\\u000B\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$";

/// A `Last-Event-ID` chatd accepts: `<run>-<position>`, or a bare position (older chatd); a
/// position of at most 19 digits, as `runlog::EventId::parse` reads it into a `u64`.
pub const EVENT_ID: &str = "^([0-9A-Fa-f]{8}-)?[0-9]{1,19}$";

/// An image attachment's `dataUrl` as the attachment policy accepts it: a PNG or JPEG whose
/// first bytes, base64-encoded, are the format's signature (PNG's eight: `iVBORw0KGg`, then `o=`
/// when that is all, else a character of `o`–`r`; JPEG's three: `/9j/`), in canonical padded
/// base64 (what the `base64` crate's standard engine decodes: whole groups of four, no stray
/// bits in the last character before the padding).
pub const IMAGE_DATA_URL: &str = concat!(
    "^data:image/(?:png;base64,iVBORw0KGg(?:o=|[o-r][A-Za-z0-9+/]",
    "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?)",
    "|jpe?g;base64,/9j/",
    "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?)$"
);

/// Merged into the schema at each JSON pointer (objects key by key, the rest replaced).
fn rules() -> Vec<(&'static str, Value)> {
    vec![
        (
            "/components/schemas/CompletionRequest/properties/model",
            json!({"pattern": NON_BLANK}),
        ),
        (
            "/components/schemas/CompletionRequest/properties/messages",
            json!({"minItems": 1}),
        ),
        (
            "/components/schemas/CompletionRequest/properties/maxTokens",
            json!({"minimum": 1, "maximum": 1_000_000}),
        ),
        (
            "/components/schemas/CompletionRequest/properties/temperature",
            json!({"minimum": 0, "maximum": 2}),
        ),
        (
            "/components/schemas/PatchChatRequest/properties/title",
            json!({"type": "string", "pattern": NON_BLANK}),
        ),
        (
            "/components/schemas/PatchChatRequest/properties/enabledTools",
            json!({"type": "array"}),
        ),
        (
            "/components/schemas/SuggestTitleRequest/properties/content",
            json!({"pattern": NON_BLANK}),
        ),
        (
            "/components/schemas/SearchChatRequest/properties/title",
            json!({"pattern": NON_BLANK}),
        ),
        (
            "/components/schemas/RunSearchRequest/properties/title",
            json!({"pattern": NON_BLANK}),
        ),
        (
            "/components/schemas/RunSearchRequest/properties/query",
            json!({"pattern": NON_BLANK}),
        ),
        (
            "/components/schemas/RunSearchRequest/properties/includeDomains",
            domains(),
        ),
        (
            "/components/schemas/RunSearchRequest/properties/excludeDomains",
            domains(),
        ),
        (
            "/components/schemas/AttachmentInput/oneOf/1/properties/sizeBytes",
            json!({"maximum": crate::attachments::MAX_TEXT_SOURCE_BYTES}),
        ),
        (
            "/components/schemas/AttachmentInput/oneOf/1/properties/text",
            json!({"maxLength": crate::attachments::MAX_TEXT_CHARS}),
        ),
        (
            "/components/schemas/MessageInput/properties/attachments",
            json!({"maxItems": crate::attachments::MAX_ATTACHMENTS_PER_MESSAGE}),
        ),
        (
            "/components/schemas/AddMessageRequest/properties/attachments",
            json!({"maxItems": crate::attachments::MAX_ATTACHMENTS_PER_MESSAGE}),
        ),
        (
            "/components/schemas/AttachmentInput/oneOf/0/properties/dataUrl",
            json!({"pattern": IMAGE_DATA_URL}),
        ),
        // A claimed `mimeType` agrees with the data.
        (
            "/components/schemas/AttachmentInput/oneOf/0",
            json!({"anyOf": [
                {"properties": {
                    "mimeType": {"enum": ["image/png", null]},
                    "dataUrl": {"pattern": "^data:image/png;"},
                }},
                {"properties": {
                    "mimeType": {"enum": ["image/jpeg", "image/jpg", null]},
                    "dataUrl": {"pattern": "^data:image/jpe?g;"},
                }},
            ]}),
        ),
        // A tool message carries no attachment (`chats::new_message`).
        (
            "/components/schemas/MessageInput",
            no_attachments_on_tool_messages(),
        ),
        (
            "/components/schemas/AddMessageRequest",
            no_attachments_on_tool_messages(),
        ),
        // An image's `sizeBytes` is ignored: any whole number from 0 fits in a `u64`.
        (
            "/components/schemas/AttachmentInput/oneOf/0/properties/sizeBytes",
            json!({"format": "uint64", "maximum": u64::MAX}),
        ),
        // `chat::history::has_user_turn`: a user message with text or an attachment.
        (
            "/components/schemas/CompletionRequest/properties/messages",
            json!({"contains": {
                "type": "object",
                "required": ["role"],
                "properties": {"role": {"const": "user"}},
                "anyOf": [
                    {"required": ["content"], "properties": {"content": {"pattern": NON_BLANK}}},
                    {"required": ["attachments"], "properties": {"attachments": {"type": "array", "minItems": 1}}},
                ],
            }}),
        ),
        // `provider` and `model` together or neither (a blank model counts as none).
        (
            "/components/schemas/CreateChatRequest",
            json!({"anyOf": [
                {"properties": {
                    "provider": {"type": "null"},
                    "model": {"anyOf": [{"type": "null"}, {"type": "string", "pattern": BLANK}]},
                }},
                {"required": ["provider", "model"], "properties": {
                    "provider": {"type": "string"},
                    "model": {"type": "string", "pattern": NON_BLANK},
                }},
            ]}),
        ),
    ]
}

fn no_attachments_on_tool_messages() -> Value {
    json!({"anyOf": [
        {"properties": {"role": {"enum": ["system", "user", "assistant"]}}},
        {"properties": {"attachments": {"anyOf": [{"type": "null"}, {"type": "array", "maxItems": 0}]}}},
    ]})
}

/// What depends on the providers serving now: the ones a completion, or a new chat, may name.
pub fn for_server(doc: &mut Value, providers: &[&str]) {
    let provider = json!({
        "type": "string",
        "enum": providers,
        "description": "A provider this server has (GET /v1/models lists them).",
    });
    doc["components"]["schemas"]["CompletionRequest"]["properties"]["provider"] = provider.clone();
    let create = &mut doc["components"]["schemas"]["CreateChatRequest"];
    create["properties"]["provider"] = json!({"anyOf": [{"type": "null"}, provider.clone()]});
    if let Some(together) = create.pointer_mut("/anyOf/1/properties/provider") {
        *together = provider;
    }
}

fn domains() -> Value {
    json!({
        "maxItems": super::search_runs::MAX_DOMAINS,
        "items": {
            "type": "string",
            "pattern": NON_BLANK,
            "maxLength": super::search_runs::MAX_DOMAIN_CHARS,
        },
    })
}

/// Applies every rule to `doc`, the document as JSON.
pub fn refine(doc: &mut Value) {
    for (pointer, rule) in rules() {
        let target = doc
            .pointer_mut(pointer)
            .unwrap_or_else(|| panic!("the OpenAPI document has no {pointer}"));
        merge(target, rule);
    }
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for operation in item.values_mut() {
            refine_operation(path, operation);
        }
    }
}

fn refine_operation(path: &str, operation: &mut Value) {
    let Some(responses) = operation.get("responses").cloned() else {
        return;
    };
    let error = |description: &str| {
        json!({
            "description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        })
    };
    let mut add = |status: &str, description: &str| {
        if responses.get(status).is_none() {
            operation["responses"][status] = error(description);
        }
    };
    if !is_open(path) {
        add(
            "401",
            "in token mode, a missing or wrong `Authorization: Bearer` token",
        );
    }
    if path.contains('{') {
        add(
            "400",
            "a path parameter that is not valid UTF-8 once percent-decoded",
        );
    }
    // A body whose every field is optional may be left out: it counts as `{}`.
    if let Some(body) = operation.get_mut("requestBody") {
        let schema = &body["content"]["application/json"]["schema"];
        let nothing_required = schema.get("$ref").is_some_and(|r| {
            r.as_str()
                .is_some_and(|r| OPTIONAL_BODIES.iter().any(|name| r.ends_with(name)))
        });
        if nothing_required {
            body["required"] = json!(false);
        }
    }
    // A stream with `persist: false` has no chat (`completions::stream`).
    if path.ends_with("/chat-completions/stream") {
        operation["requestBody"]["content"]["application/json"]["schema"] = json!({
            "allOf": [{"$ref": "#/components/schemas/CompletionRequest"}],
            "anyOf": [
                {"properties": {"persist": {"enum": [true, null]}}},
                {"properties": {"chatId": {"type": "null"}}},
            ],
        });
    }
    if let Some(parameters) = operation
        .get_mut("parameters")
        .and_then(Value::as_array_mut)
    {
        for parameter in parameters {
            if parameter["name"] == "Last-Event-ID" {
                parameter["schema"] = json!({"type": "string", "pattern": EVENT_ID});
            }
        }
    }
}

/// The request bodies with no required field.
const OPTIONAL_BODIES: &[&str] = &[
    "/CreateChatRequest",
    "/PatchChatRequest",
    "/CreateSearchRequest",
    "/RunSearchRequest",
    "/SearchChatRequest",
    "/PatchUserRequest",
];

/// JSON merge: objects key by key, anything else replaced.
fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                match target.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        target.insert(key, value);
                    }
                }
            }
        }
        (target, patch) => *target = patch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_blank_is_what_trim_leaves_something_of() {
        // Every character Rust's `trim` drops is in the pattern's excluded set...
        let white: Vec<char> = (0..=0x3000u32)
            .filter_map(char::from_u32)
            .filter(|c| c.is_whitespace())
            .collect();
        assert_eq!(white.len(), 25);
        for c in white {
            let code = format!("{:04X}", c as u32);
            let listed = NON_BLANK.contains(&format!("\\u{code}"))
                || matches!(c, '\t' | '\n' | '\u{c}' | '\r' | ' ')
                || ('\u{2000}'..='\u{200A}').contains(&c);
            assert!(listed, "U+{code} is white space but not in NON_BLANK");
        }
        // ...and nothing else: every `\uXXXX` the set names is white space (the ranges' ends
        // included), and so are its plain members.
        for escape in NON_BLANK.split("\\u").skip(1) {
            let code = u32::from_str_radix(&escape[..4], 16).unwrap();
            let c = char::from_u32(code).unwrap();
            assert!(
                c.is_whitespace(),
                "U+{code:04X} is in NON_BLANK but not white space"
            );
        }
        let plain = NON_BLANK
            .replace("\\t", "")
            .replace("\\n", "")
            .replace("\\f", "");
        let plain = plain.replace("\\r", "");
        let plain: String = plain
            .split("\\u")
            .map(|s| s.get(4..).unwrap_or(s))
            .collect();
        assert_eq!(
            plain, "[^ -]",
            "only the space and the range's dash are plain"
        );
    }

    #[test]
    fn blank_is_the_complement_of_non_blank() {
        assert_eq!(BLANK, format!("^{}*$", NON_BLANK.replacen("[^", "[", 1)));
    }

    #[test]
    fn merge_keys_objects_and_replaces_the_rest() {
        let mut doc = json!({"a": {"type": ["string", "null"], "maxLength": 3}});
        merge(&mut doc["a"], json!({"type": "string", "pattern": "x"}));
        assert_eq!(
            doc,
            json!({"a": {"type": "string", "maxLength": 3, "pattern": "x"}})
        );
    }
}
