//! A file's text, by its format: made only inside the sandbox, by the extractor plugin that
//! reads its media type (`Snapshot::extractor`: an operator's replaces the bundled one), under
//! that plugin's memory and time limits. What comes back is checked again here: at most
//! [`MAX_TEXT_BYTES`] of text, pages numbered from 1. A document the extractor refuses, or a
//! call that traps or runs out of time, is the file's `error`, bounded; nothing else is harmed.

use crate::plugins::failure::{describe_call_error, describe_plugin_error};
use crate::plugins::loading::plugin_host::PluginHost;
use crate::plugins::worlds::extractor::PluginError;

use super::chunks::PageText;

/// The most bytes of text one file may make (its chunks are stored in the database).
pub const MAX_TEXT_BYTES: usize = 32 << 20;
/// The most characters of an extractor's reason kept as a file's `error`.
const MAX_ERROR_CHARS: usize = 500;

/// The pages of `content`, a document of `mime_type`, or why it cannot be read (the file's
/// `error`).
pub async fn text_of(
    plugins: &PluginHost,
    mime_type: &str,
    content: Vec<u8>,
) -> Result<Vec<PageText>, String> {
    let snapshot = plugins.snapshot();
    let Some(plugin) = snapshot.extractor(mime_type) else {
        return Err(format!(
            "no extractor plugin reads {mime_type} (docs/files.md, \"Formats\")"
        ));
    };
    let extractor = plugin.as_extractor().expect("an extractor");
    let id = plugin.id();
    let pages = match extractor.extract(mime_type, content).await {
        Ok(Ok(pages)) => pages,
        Ok(Err(PluginError::InvalidInput(why))) => return Err(bounded(why)),
        Ok(Err(other)) => {
            return Err(bounded(format!(
                "the extractor {id} failed: {}",
                describe_plugin_error(&other)
            )));
        }
        Err(stopped) => {
            return Err(bounded(format!(
                "the extractor {id} stopped: {}",
                describe_call_error(&stopped)
            )));
        }
    };
    checked(id, pages.into_iter().map(|p| (p.page, p.text)).collect())
}

/// `pages` as the library keeps them, if within the bounds: at most [`MAX_TEXT_BYTES`] in all,
/// pages numbered from 1; U+0000 (which PostgreSQL's text cannot hold, and which is no word)
/// as a space.
fn checked(id: &str, pages: Vec<(Option<u32>, String)>) -> Result<Vec<PageText>, String> {
    let total: usize = pages.iter().map(|(_, text)| text.len()).sum();
    if total > MAX_TEXT_BYTES {
        return Err(format!(
            "its text is over {} MiB, the most one file may hold",
            MAX_TEXT_BYTES >> 20
        ));
    }
    if pages.iter().any(|(page, _)| *page == Some(0)) {
        return Err(format!(
            "the extractor {id} numbered a page 0 (pages are numbered from 1)"
        ));
    }
    Ok(pages
        .into_iter()
        .map(|(page, text)| PageText {
            page,
            text: if text.contains('\0') {
                text.replace('\0', " ")
            } else {
                text
            },
        })
        .collect())
}

/// `why`, at most [`MAX_ERROR_CHARS`] characters, control characters as spaces.
fn bounded(why: String) -> String {
    why.chars()
        .take(MAX_ERROR_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_comes_back_is_checked() {
        let ok = checked("x", vec![(Some(1), "a".into()), (None, "b\0c".into())]).unwrap();
        assert_eq!(ok[0].page, Some(1));
        assert_eq!(ok[1].text, "b c");
        let zero = checked("x", vec![(Some(0), "a".into())]).unwrap_err();
        assert!(zero.contains("page 0"), "{zero}");
        let big = checked("x", vec![(None, "a".repeat(MAX_TEXT_BYTES + 1))]).unwrap_err();
        assert!(big.contains("over 32 MiB"), "{big}");
        assert_eq!(bounded("a\nb".repeat(400)).chars().count(), MAX_ERROR_CHARS);
        assert!(!bounded("a\nb".into()).contains('\n'));
    }
}
