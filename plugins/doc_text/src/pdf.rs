//! PDF: lopdf's parser, each page's text in order. Loading bounds what each object or
//! cross-reference stream may decompress to, and extraction what each page's content may: a
//! PDF that expands to gigabytes stops at [`MAX_EXPANDED_BYTES`]. At most [`MAX_PAGES`] pages.

use chatd_plugin_sdk::extractor::PageText;
use lopdf::{Document, LoadOptions};

use crate::{Bounded, MAX_EXPANDED_BYTES};

/// The most pages read.
pub const MAX_PAGES: usize = 10_000;

/// Each page's text, 1-based.
pub fn pages(content: &[u8]) -> Result<Vec<PageText>, String> {
    let head = &content[..content.len().min(1024)];
    if !head.windows(5).any(|w| w == b"%PDF-") {
        return Err(
            "not a PDF file: it has no %PDF- header (is it what its type says?)".to_string(),
        );
    }
    let options = LoadOptions::with_max_decompressed_size(MAX_EXPANDED_BYTES);
    let document = Document::load_mem_with_options(content, options)
        .map_err(|e| format!("the PDF cannot be read: {}", reason(&e)))?;
    if document.is_encrypted() {
        return Err("the PDF is encrypted: save it without a password and add it again".into());
    }
    let numbers: Vec<u32> = document.get_pages().keys().copied().collect();
    if numbers.len() > MAX_PAGES {
        return Err(format!(
            "it has {} pages; at most {MAX_PAGES} are read",
            numbers.len()
        ));
    }
    let mut total = Bounded::new();
    let mut out = Vec::with_capacity(numbers.len());
    for number in numbers {
        let text = document
            .extract_text_with_limit(&[number], MAX_EXPANDED_BYTES)
            .map_err(|e| format!("page {number} cannot be read: {}", reason(&e)))?;
        total.push(&text)?;
        out.push(PageText {
            page: Some(number),
            text: paragraphs(&text),
        });
    }
    Ok(out)
}

/// lopdf's reason, with the decompression error's own (its `Display` hides it), and what it
/// means when a stream passed the limit.
fn reason(error: &lopdf::Error) -> String {
    match error {
        lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { .. }) => format!(
            "a stream expands past {} MiB, the most one may (a decompression bomb?)",
            MAX_EXPANDED_BYTES >> 20
        ),
        lopdf::Error::Decompress(inner) => format!("a stream cannot be decompressed: {inner}"),
        other => other.to_string(),
    }
}

/// lopdf ends each text line with a newline; lines are kept, and a blank line stays a
/// paragraph's end.
fn paragraphs(text: &str) -> String {
    text.trim().to_string()
}
