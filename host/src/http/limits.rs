//! Length limits on the short texts a client stores: titles, queries, names, model ids and the
//! system prompt. Each is shown in every list row or sent with every model turn, so one huge
//! value would weigh on every later request; each is refused above its limit (400 naming the
//! field) rather than cut. Counted in characters (Unicode scalar values) as sent, surrounding
//! white space included (as the OpenAPI document's `maxLength` counts them); stored trimmed.
//! docs/api.md, "Length limits", lists them; the OpenAPI document gives them as `maxLength`.

use utoipa::openapi::schema::Schema;
use utoipa::openapi::{OpenApi, RefOr};

use super::error::{ApiError, ApiResult};

/// Chat and search titles.
pub const MAX_TITLE_CHARS: usize = 500;
/// Search queries.
pub const MAX_QUERY_CHARS: usize = 2_000;
/// A message's `name`.
pub const MAX_NAME_CHARS: usize = 256;
/// A model id (stored as a chat's initiated and last-used model).
pub const MAX_MODEL_CHARS: usize = 256;
/// A chat's `additionalSystemPrompt`, stored or one-off.
pub const MAX_SYSTEM_PROMPT_CHARS: usize = 32_000;

/// An optional text: trimmed, blank read as absent, at most `max` characters.
pub fn optional(value: Option<&str>, field: &str, max: usize) -> ApiResult<Option<String>> {
    let Some(value) = value else {
        return Ok(None);
    };
    at_most(value, field, max)?;
    Ok(Some(value.trim())
        .filter(|v| !v.is_empty())
        .map(str::to_string))
}

/// A text that, when given, must be non-blank: trimmed, at most `max` characters.
pub fn non_blank(value: Option<&str>, field: &str, max: usize) -> ApiResult<Option<String>> {
    match value {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => {
            Err(ApiError::invalid(field, "must be a non-blank string"))
        }
        Some(v) => optional(Some(v), field, max),
    }
}

/// Refuses `value` when it is longer than `max` characters.
pub fn at_most(value: &str, field: &str, max: usize) -> ApiResult<()> {
    // Bytes bound characters from above: most values are decided without counting.
    if value.len() > max && value.chars().count() > max {
        return Err(ApiError::invalid(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    Ok(())
}

/// Which request properties each limit applies to, as (schema, property, limit): the document
/// gets them from here, the handlers from the constants.
const LIMITED: &[(&str, &str, usize)] = &[
    ("CreateChatRequest", "title", MAX_TITLE_CHARS),
    ("CreateChatRequest", "model", MAX_MODEL_CHARS),
    (
        "CreateChatRequest",
        "additionalSystemPrompt",
        MAX_SYSTEM_PROMPT_CHARS,
    ),
    ("PatchChatRequest", "title", MAX_TITLE_CHARS),
    (
        "PatchChatRequest",
        "additionalSystemPrompt",
        MAX_SYSTEM_PROMPT_CHARS,
    ),
    ("MessageInput", "name", MAX_NAME_CHARS),
    ("AddMessageRequest", "name", MAX_NAME_CHARS),
    ("CompletionRequest", "model", MAX_MODEL_CHARS),
    (
        "CompletionRequest",
        "additionalSystemPrompt",
        MAX_SYSTEM_PROMPT_CHARS,
    ),
    ("CreateSearchRequest", "title", MAX_TITLE_CHARS),
    ("CreateSearchRequest", "query", MAX_QUERY_CHARS),
    ("RunSearchRequest", "title", MAX_TITLE_CHARS),
    ("RunSearchRequest", "query", MAX_QUERY_CHARS),
    ("SearchChatRequest", "title", MAX_TITLE_CHARS),
];

/// Writes the limits into the OpenAPI document as `maxLength`.
pub fn document(openapi: &mut OpenApi) {
    let Some(components) = openapi.components.as_mut() else {
        return;
    };
    for (schema, property, max) in LIMITED {
        let found = match components.schemas.get_mut(*schema) {
            Some(RefOr::T(Schema::Object(object))) => object.properties.get_mut(*property),
            _ => None,
        };
        match found {
            Some(RefOr::T(Schema::Object(object))) => object.max_length = Some(*max),
            _ => panic!("the OpenAPI document has no string property {property:?} in {schema}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_trimmed_and_counted_in_characters() {
        assert_eq!(
            optional(Some(" a b "), "title", 5).unwrap(),
            Some("a b".into())
        );
        // Counted as sent: white space around a value counts too.
        assert!(optional(Some(" a b "), "title", 4).is_err());
        assert_eq!(optional(Some(" \n "), "title", 3).unwrap(), None);
        assert_eq!(optional(None, "title", 3).unwrap(), None);
        // Three characters, six bytes: within a limit of three.
        assert_eq!(
            optional(Some("ééé"), "title", 3).unwrap(),
            Some("ééé".into())
        );
        let err = optional(Some("abcd"), "messages[2].name", 3).unwrap_err();
        assert_eq!(
            err.message(),
            "messages[2].name: must be at most 3 characters"
        );
    }

    #[test]
    fn non_blank_refuses_a_blank_value_but_not_an_absent_one() {
        assert_eq!(non_blank(None, "title", 3).unwrap(), None);
        let err = non_blank(Some("  "), "title", 3).unwrap_err();
        assert_eq!(err.message(), "title: must be a non-blank string");
        assert!(non_blank(Some("abcd"), "title", 3).is_err());
    }
}
