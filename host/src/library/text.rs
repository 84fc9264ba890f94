//! A file's text, by format. The text formats (plain text, Markdown, CSV) are their own text
//! once checked to be UTF-8 text: nothing is parsed. The formats that need a parser (PDF,
//! DOCX, XLSX, HTML) are parsed only inside the sandbox, by an extractor plugin; until this
//! version has one, such a file fails with an error that says so, and nothing of it is parsed
//! in chatd's own process (docs/files.md, "Formats").

use super::chunks::PageText;
use super::formats::Format;

/// The most bytes of text one file may make (its chunks are stored in the database).
pub const MAX_TEXT_BYTES: usize = 32 << 20;

/// The pages of `content` read as `format`, or why it cannot be read (the file's `error`).
pub fn text_of(format: Format, content: &[u8]) -> Result<Vec<PageText>, String> {
    match format {
        Format::Text | Format::Markdown | Format::Csv => plain(content).map(|text| {
            vec![PageText {
                page: None,
                text: text.to_string(),
            }]
        }),
        Format::Pdf | Format::Docx | Format::Xlsx | Format::Html => Err(format!(
            "{} files are not read yet: this version of chatd has no sandboxed extractor for \
             them (docs/files.md, \"Formats\")",
            format.mime_type()
        )),
    }
}

/// `content` as text: UTF-8 (a leading byte-order mark left out) with no NUL byte, which no
/// text file holds and every binary format does.
fn plain(content: &[u8]) -> Result<&str, String> {
    let content = content.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(content);
    if content.len() > MAX_TEXT_BYTES {
        return Err(format!(
            "the text is over {} MiB, the most one file may hold",
            MAX_TEXT_BYTES >> 20
        ));
    }
    let text = std::str::from_utf8(content).map_err(|e| {
        format!(
            "not UTF-8 text: invalid bytes at offset {} (is it what its type says?)",
            e.valid_up_to()
        )
    })?;
    if let Some(at) = text.find('\0') {
        return Err(format!(
            "not text: a NUL byte at offset {at} (is it what its type says?)"
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_checked_not_parsed() {
        let pages = text_of(Format::Markdown, b"\xEF\xBB\xBF# Title\n\nbody").unwrap();
        assert_eq!(pages[0].text, "# Title\n\nbody");
        assert_eq!(pages[0].page, None);
        let bad = text_of(Format::Text, b"ok \xff\xfe").unwrap_err();
        assert!(
            bad.contains("not UTF-8 text") && bad.contains("offset 3"),
            "{bad}"
        );
        let binary = text_of(Format::Csv, b"%PDF-1.7\0\0").unwrap_err();
        assert!(binary.contains("NUL byte at offset 8"), "{binary}");
        let pdf = text_of(Format::Pdf, b"%PDF-1.7").unwrap_err();
        assert!(
            pdf.contains("application/pdf files are not read yet"),
            "{pdf}"
        );
    }
}
