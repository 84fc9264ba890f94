//! HTML: rendered to text by html2text (html5ever's parser, as a browser parses), links and
//! images left out, lines as wide as their paragraphs.

use crate::MAX_TEXT_BYTES;

/// The text of an HTML document.
pub fn text(content: &[u8]) -> Result<String, String> {
    let text = html2text::config::plain_no_decorate()
        .allow_width_overflow()
        .string_from_read(content, 10_000)
        .map_err(|e| format!("the HTML cannot be read: {e}"))?;
    if text.len() > MAX_TEXT_BYTES {
        return Err(crate::too_much_text());
    }
    Ok(text)
}
