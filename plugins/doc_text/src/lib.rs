//! chatd's bundled extractor: each format of the library's documents to text, inside the
//! sandbox (the `extractor` world imports only `log`). Every format's reader is bounded here as
//! well as by the host (memory, time): what a PDF stream or a DOCX's document may expand to,
//! how many pages or cells are read, how much text comes out; what calamine reads besides the
//! cells (shared strings) only by the host's memory cap. A document past a bound, damaged, or not
//! what its type says is refused with an error its owner can read; a trap (a bug, a stack
//! exhausted by nesting) fails that document alone, as every plugin call fails alone.

mod docx;
mod html;
mod pdf;
mod plain;
mod xlsx;

use chatd_plugin_sdk::export_extractor;
use chatd_plugin_sdk::extractor::{Extractor, PageText};
use chatd_plugin_sdk::host::PluginError;

/// The most text one document may make, in bytes (the host's bound too).
pub(crate) const MAX_TEXT_BYTES: usize = 32 << 20;
/// The most one compressed part (a PDF stream, a zip entry) may expand to.
pub(crate) const MAX_EXPANDED_BYTES: usize = 64 << 20;

const PDF: &str = "application/pdf";
const DOCX: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const FORMATS: [&str; 7] = [
    PDF,
    DOCX,
    XLSX,
    "text/csv",
    "text/html",
    "text/markdown",
    "text/plain",
];

struct Documents;

impl Extractor for Documents {
    fn formats() -> Vec<String> {
        FORMATS.iter().map(|f| f.to_string()).collect()
    }

    fn extract(media_type: String, content: Vec<u8>) -> Result<Vec<PageText>, PluginError> {
        let pages = match media_type.as_str() {
            PDF => pdf::pages(&content),
            DOCX => docx::text(&content).map(whole),
            XLSX => xlsx::text(&content).map(whole),
            "text/html" => html::text(&content).map(whole),
            "text/csv" | "text/markdown" | "text/plain" => plain::text(&content).map(whole),
            other => Err(format!("{other} is not a format this extractor reads")),
        }
        .map_err(PluginError::InvalidInput)?;
        let total: usize = pages.iter().map(|p| p.text.len()).sum();
        if total > MAX_TEXT_BYTES {
            return Err(PluginError::InvalidInput(too_much_text()));
        }
        Ok(pages)
    }
}

/// The whole text of a format without pages.
fn whole(text: String) -> Vec<PageText> {
    vec![PageText { page: None, text }]
}

pub(crate) fn too_much_text() -> String {
    format!(
        "its text is over {} MiB, the most one file may hold",
        MAX_TEXT_BYTES >> 20
    )
}

/// Text pushed within [`MAX_TEXT_BYTES`].
pub(crate) struct Bounded {
    pub text: String,
}

impl Bounded {
    pub fn new() -> Self {
        Self {
            text: String::new(),
        }
    }

    pub fn push(&mut self, more: &str) -> Result<(), String> {
        if self.text.len() + more.len() > MAX_TEXT_BYTES {
            return Err(too_much_text());
        }
        self.text.push_str(more);
        Ok(())
    }
}

/// Opens `content` as a zip file (DOCX and XLSX are), or says it is not one.
pub(crate) fn zip_archive<'a>(
    content: &'a [u8],
    what: &str,
) -> Result<zip::ZipArchive<std::io::Cursor<&'a [u8]>>, String> {
    if !content.starts_with(b"PK\x03\x04") {
        return Err(format!(
            "not a {what} file: it does not begin as a zip file does (is it what its type says?)"
        ));
    }
    zip::ZipArchive::new(std::io::Cursor::new(content))
        .map_err(|e| format!("not a readable {what} file: {e}"))
}

/// Entry `name` of `archive`, read to at most [`MAX_EXPANDED_BYTES`]: a zip bomb stops there.
pub(crate) fn zip_entry(
    archive: &mut zip::ZipArchive<std::io::Cursor<&[u8]>>,
    name: &str,
    what: &str,
) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let entry = archive
        .by_name(name)
        .map_err(|_| format!("not a {what} file: it has no {name}"))?;
    let mut out = Vec::new();
    entry
        .take(MAX_EXPANDED_BYTES as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("{name} cannot be read: {e}"))?;
    if out.len() > MAX_EXPANDED_BYTES {
        return Err(format!(
            "{name} expands past {} MiB, the most one part may (a zip bomb?)",
            MAX_EXPANDED_BYTES >> 20
        ));
    }
    Ok(out)
}

export_extractor!(Documents);
