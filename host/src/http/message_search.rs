//! `GET /v1/message-search`: the messages of users and assistants, in every chat, whose text
//! holds every word of `q` (whole words), newest first, a page at a time. The words are the
//! query's runs of letters and digits, lower-cased; the index is each store's own
//! (`store/sqlite/message_search.rs`, `store/postgres/message_search.rs`).

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::error::{ApiError, ApiQuery, ApiResult, ErrorBody};
use crate::people::Caller;
use crate::store::MessageHit;
use crate::vocabulary::{Role, to_millis};

/// The longest `q`, in characters.
pub const MAX_QUERY_CHARS: usize = 200;
/// The most words of `q` that are searched for; the rest are ignored.
pub const MAX_WORDS: usize = 8;
/// A page's size when `limit` is not given, and the most it may be.
pub const DEFAULT_HITS: u32 = 20;
pub const MAX_HITS: u32 = 100;
/// A snippet's length around the first word found, in characters.
const BEFORE: usize = 60;
const AFTER: usize = 140;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MessageSearchQuery {
    /// The words to find (1 to 200 characters, with at least one letter or digit).
    #[param(required = true, min_length = 1, max_length = 200)]
    pub q: Option<String>,
    /// How many hits (1 to 100, default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
    /// The `nextCursor` of the page before.
    #[param(min_length = 1, max_length = 64, pattern = "^[0-9A-Za-z-]+$")]
    pub cursor: Option<String>,
}

/// A message that holds every word.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageSearchHit {
    pub chat_id: String,
    pub chat_title: Option<String>,
    pub message_id: String,
    #[schema(value_type = String)]
    pub role: Role,
    pub created_at: String,
    /// The message's text around the first word found (about 200 characters, white space
    /// collapsed, `…` where it was cut).
    pub snippet: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageSearchResponse {
    pub hits: Vec<MessageSearchHit>,
    /// The cursor of the next page; null on the last one.
    pub next_cursor: Option<String>,
}

#[utoipa::path(get, path = "/message-search", tag = "chats", params(MessageSearchQuery),
    responses((status = 200, body = MessageSearchResponse), (status = 400, body = ErrorBody)))]
pub async fn search_messages(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<MessageSearchQuery>,
) -> ApiResult<Json<MessageSearchResponse>> {
    let raw = query.q.as_deref().unwrap_or("");
    let text = raw.trim();
    if text.is_empty() {
        return Err(ApiError::bad_request("q: required, the words to find"));
    }
    // As sent, white space included, as the document's maxLength counts.
    if raw.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::bad_request(format!(
            "q: at most {MAX_QUERY_CHARS} characters"
        )));
    }
    let found = words(text);
    if found.is_empty() {
        return Err(ApiError::bad_request("q: needs a letter or a digit"));
    }
    let limit = query.limit.unwrap_or(DEFAULT_HITS);
    if !(1..=MAX_HITS).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit: must be from 1 to {MAX_HITS}"
        )));
    }
    let cursor = query.cursor.as_deref();
    if cursor.is_some_and(|c| {
        c.is_empty() || c.len() > 64 || !c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    }) {
        return Err(invalid_cursor());
    }
    let Some(mut hits) = state
        .store
        .search_messages(&found, limit + 1, cursor, caller.owner())
        .await?
    else {
        return Err(invalid_cursor());
    };
    let next_cursor = (hits.len() > limit as usize).then(|| {
        hits.truncate(limit as usize);
        hits.last().map(|h| h.position.clone())
    });
    Ok(Json(MessageSearchResponse {
        hits: hits.into_iter().map(|h| hit(h, &found)).collect(),
        next_cursor: next_cursor.flatten(),
    }))
}

fn invalid_cursor() -> ApiError {
    ApiError::bad_request("cursor: not a cursor this server gave (use nextCursor)")
}

fn hit(h: MessageHit, words: &[String]) -> MessageSearchHit {
    MessageSearchHit {
        snippet: snippet(&h.content, words),
        chat_id: h.chat_id,
        chat_title: h.chat_title,
        message_id: h.message_id,
        role: h.role,
        created_at: to_millis(&h.created_at),
    }
}

/// The query's words: its runs of letters and digits, lower-cased, each once, at most
/// [`MAX_WORDS`] of them, each at most 64 characters.
pub fn words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let word: String = word.to_lowercase().chars().take(64).collect();
        if !out.contains(&word) {
            out.push(word);
        }
        if out.len() == MAX_WORDS {
            break;
        }
    }
    out
}

/// About [`BEFORE`] + [`AFTER`] characters of `content` around the first of `words` found
/// (compared lower-cased, character by character), white space collapsed; the start of the
/// text when none is found as written (the index also matches without diacritics).
pub fn snippet(content: &str, words: &[String]) -> String {
    let chars: Vec<char> = content.chars().collect();
    let lower: Vec<char> = chars
        .iter()
        .map(|c| c.to_lowercase().next().unwrap_or(*c))
        .collect();
    let at = words
        .iter()
        .filter_map(|w| {
            let w: Vec<char> = w.chars().collect();
            lower
                .windows(w.len())
                .position(|window| window == w.as_slice())
        })
        .min()
        .unwrap_or(0);
    let start = at.saturating_sub(BEFORE);
    let end = (at + AFTER).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let mut space = false;
    for &c in &chars[start..end] {
        if c.is_whitespace() {
            space = !out.is_empty() && !out.ends_with('…');
        } else {
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
    }
    if end < chars.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_runs_of_letters_and_digits() {
        assert_eq!(
            words("Rust's  ownership, 2024!"),
            ["rust", "s", "ownership", "2024"]
        );
        assert_eq!(words("Café CAFÉ café"), ["café"]);
        assert!(words("!!! ...").is_empty());
        assert_eq!(words(&"a ".repeat(50)), ["a"]);
        assert_eq!(words("a b c d e f g h i j").len(), MAX_WORDS);
    }

    #[test]
    fn a_snippet_is_cut_around_the_first_word_found() {
        let text = format!("{}Needle here\n\n{}", "x ".repeat(100), "y ".repeat(100));
        let s = snippet(&text, &["needle".to_string()]);
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("Needle here y"), "{s}");
        assert!(s.chars().count() <= BEFORE + AFTER + 2, "{s}");
        assert_eq!(snippet("short text", &["zzz".to_string()]), "short text");
        assert_eq!(snippet("", &["a".to_string()]), "");
    }
}
