//! The text log's fields with every control and line-separator character escaped: what a
//! plugin, a guest or a remote peer wrote (a log capability's message, a plugin's stderr, an
//! error quoting an upstream) can neither start a line of its own nor rewrite the one it is in
//! (`\r`). The JSON log needs nothing of the kind: its encoder escapes them.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::{DefaultFields, Writer};

/// Whether `c` would break or rewrite a line: C0 and C1 controls (U+0085, the next-line
/// control, is C1), DEL, and the line and paragraph separators.
fn breaks_lines(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}

/// `text` with each such character written as an escape (`\n`, `\r`, `\t`, else `\u{b}`).
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(breaks_lines) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\t' => escaped.push_str("\\t"),
            c if breaks_lines(c) => {
                let _ = write!(escaped, "\\u{{{:x}}}", c as u32);
            }
            c => escaped.push(c),
        }
    }
    Cow::Owned(escaped)
}

/// The text log's field formatter: the default one's words, escaped ([`escape_controls`]).
/// Fields are written without colours, so nothing a guest wrote reaches a terminal as one.
#[derive(Debug, Default)]
pub struct EscapedFields;

impl<'writer> FormatFields<'writer> for EscapedFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut plain = String::new();
        DefaultFields::new().format_fields(Writer::new(&mut plain), fields)?;
        writer.write_str(&escape_controls(&plain))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_and_line_separator_is_escaped() {
        assert_eq!(
            escape_controls("a\rINFO forged\nb\tc\x0bd\x0ce\u{85}f\u{2028}g\u{2029}h\x1b[2Ki\x7f"),
            "a\\rINFO forged\\nb\\tc\\u{b}d\\u{c}e\\u{85}f\\u{2028}g\\u{2029}h\\u{1b}[2Ki\\u{7f}"
        );
        assert!(matches!(
            escape_controls("plain é"),
            Cow::Borrowed("plain é")
        ));
    }
}
