//! Title suggestion: a one-line title of about four words from the first message, by the operator's
//! small model (TITLE_MODEL) of the title provider (`plugins::builtin::TITLE_PROVIDER`). The
//! model's answer is cleaned up (quotes, a `Title:` label, markdown, a final period) and bounded,
//! whatever it wrote.

use std::sync::Arc;

use super::completion::Completion;
use super::failure::CompletionError;
use super::history::text_message;
use super::sink::Sink;
use crate::plugins::loading::load::Plugin;
use crate::plugins::worlds::provider as wit;

/// How much of the message the title model reads.
pub const MAX_INPUT_CHARS: usize = 4_000;
/// The output tokens a title is taken to need, for a budget's hold (a title is a line).
pub const MAX_OUTPUT_TOKENS: u64 = 64;
/// The most words a stored title keeps.
const MAX_WORDS: usize = 8;
/// The most characters a stored title keeps.
const MAX_CHARS: usize = 80;

const INSTRUCTION: &str = "Write a title of about 4 words for a chat that starts with the \
    user's message below. Answer with the title only: one line, no quotes, no final period.";

/// Asks the model for a title; `Ok(None)` when it answered nothing usable.
pub async fn suggest(
    provider: &str,
    plugin: Arc<Plugin>,
    model: &str,
    content: &str,
    spender: Option<Arc<crate::usage::Spender>>,
) -> Result<Option<String>, CompletionError> {
    let input: String = content.chars().take(MAX_INPUT_CHARS).collect();
    let mut completion = Completion {
        provider: provider.to_string(),
        model: model.to_string(),
        plugin,
        messages: vec![
            text_message(wit::Role::System, INSTRUCTION),
            text_message(wit::Role::User, &input),
        ],
        tools: Vec::new(),
        temperature: None,
        max_tokens: None,
        asks: std::sync::Arc::new(crate::plugins::worlds::provider::no_asks()),
        tuning_asked: crate::plugins::worlds::provider::turn_tuning::none(),
        streaming: false,
        client_tools: Vec::new(),
        max_rounds: 0,
        // The operator's TITLE_MODEL.
        listed: true,
        // One try: a title is a convenience the client waits for, not a reply to keep.
        retry: crate::config::retry::RetryPolicy {
            attempts: 1,
            ..Default::default()
        },
        fallback: None,
        container: None,
        spender,
    };
    let sink = Sink::default();
    let finished = completion.run(&sink).await?;
    Ok(clean(&finished.text))
}

/// The first non-empty line, without labels, quotes, markdown and a final period, at most
/// [`MAX_WORDS`] words and [`MAX_CHARS`] characters.
pub fn clean(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line
        .strip_prefix("Title:")
        .or_else(|| line.strip_prefix("title:"))
        .unwrap_or(line);
    let line = line.trim_matches(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '"' | '\'' | '“' | '”' | '‘' | '’' | '*' | '#' | '`' | '.'
            )
    });
    let words: Vec<&str> = line.split_whitespace().take(MAX_WORDS).collect();
    let mut title = words.join(" ");
    if let Some((end, _)) = title.char_indices().nth(MAX_CHARS) {
        title.truncate(end);
        title = title.trim_end().to_string();
    }
    (!title.is_empty()).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn titles_are_cleaned_and_bounded() {
        assert_eq!(
            clean("\n  \"Rust Async Basics.\"\nmore").as_deref(),
            Some("Rust Async Basics")
        );
        assert_eq!(
            clean("Title: **Planning a Trip**").as_deref(),
            Some("Planning a Trip")
        );
        assert_eq!(
            clean("one two three four five six seven eight nine ten").as_deref(),
            Some("one two three four five six seven eight")
        );
        assert_eq!(clean(" \n \"\" "), None);
    }
}
