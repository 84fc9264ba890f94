//! The formats a library file may be: the one place that lists them, with the names a browser
//! or a client may give them. An upload is refused only for a declared type outside this list
//! (its bytes are not looked at here: content that is not what it says fails at processing).

/// A format the library takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Pdf,
    Docx,
    Xlsx,
    Csv,
    Html,
    Markdown,
    Text,
}

/// Each format: its media type, then the file name endings that mean it.
const FORMATS: &[(Format, &str, &[&str])] = &[
    (Format::Pdf, "application/pdf", &["pdf"]),
    (
        Format::Docx,
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        &["docx"],
    ),
    (
        Format::Xlsx,
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        &["xlsx"],
    ),
    (Format::Csv, "text/csv", &["csv"]),
    (Format::Html, "text/html", &["html", "htm"]),
    (Format::Markdown, "text/markdown", &["md", "markdown"]),
    (Format::Text, "text/plain", &["txt", "text"]),
];

/// Types that say nothing of the content: the name's ending decides then.
const UNSAID: [&str; 2] = ["application/octet-stream", ""];

/// Other names systems give a format, each taken only with one of the format's endings:
/// browsers on Windows send a `.csv` as Excel's type (which a `.xls` has too, and is not read).
const ALIASES: &[(&str, Format)] = &[
    ("application/vnd.ms-excel", Format::Csv),
    ("application/csv", Format::Csv),
    ("text/x-csv", Format::Csv),
    ("text/comma-separated-values", Format::Csv),
    ("text/x-markdown", Format::Markdown),
    ("application/xhtml+xml", Format::Html),
];

impl Format {
    /// The format of an upload: its declared media type (parameters such as `charset` left
    /// out; an alias with its format's ending), or, when that says nothing, its name's ending.
    /// `None`: not a format the library takes.
    pub fn declared(content_type: Option<&str>, name: &str) -> Option<Format> {
        let media = content_type
            .and_then(|t| t.split(';').next())
            .map(|t| t.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let by_ending = Self::by_ending(name);
        if UNSAID.contains(&media.as_str()) {
            return by_ending;
        }
        if let Some((format, _, _)) = FORMATS.iter().find(|(_, m, _)| *m == media) {
            return Some(*format);
        }
        ALIASES
            .iter()
            .find(|(alias, format)| *alias == media && by_ending == Some(*format))
            .map(|(_, format)| *format)
    }

    /// The format a name's ending means.
    fn by_ending(name: &str) -> Option<Format> {
        let ending = name.rsplit_once('.')?.1.to_ascii_lowercase();
        FORMATS
            .iter()
            .find(|(_, _, endings)| endings.contains(&ending.as_str()))
            .map(|(f, _, _)| *f)
    }

    pub fn mime_type(self) -> &'static str {
        FORMATS
            .iter()
            .find(|(f, _, _)| *f == self)
            .map(|(_, m, _)| *m)
            .expect("every format is listed")
    }

    /// Every media type taken, for the refusal's message and the docs.
    pub fn listed() -> String {
        FORMATS
            .iter()
            .map(|(_, m, _)| *m)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_type_decides_else_the_name() {
        assert_eq!(
            Format::declared(Some("application/pdf"), "x.txt"),
            Some(Format::Pdf)
        );
        assert_eq!(
            Format::declared(Some("Text/Plain; charset=utf-8"), "x"),
            Some(Format::Text)
        );
        assert_eq!(
            Format::declared(Some("application/octet-stream"), "Report.DOCX"),
            Some(Format::Docx)
        );
        assert_eq!(Format::declared(None, "notes.md"), Some(Format::Markdown));
        assert_eq!(Format::declared(Some("image/png"), "x.pdf"), None);
        assert_eq!(
            Format::declared(Some("application/vnd.ms-excel"), "data.CSV"),
            Some(Format::Csv)
        );
        assert_eq!(
            Format::declared(Some("application/vnd.ms-excel"), "old.xls"),
            None
        );
        assert_eq!(
            Format::declared(Some("text/x-markdown"), "a.md"),
            Some(Format::Markdown)
        );
        assert_eq!(Format::declared(None, "archive.zip"), None);
        assert_eq!(Format::declared(None, "no-ending"), None);
        for (format, mime, _) in FORMATS {
            assert_eq!(format.mime_type(), *mime);
        }
    }
}
