//! The `log` capability: every plugin may write to the host's log, tagged with its id, within
//! limits decided here ([`grant`]): one line per message (a plugin cannot forge lines of the
//! host's log), each capped in length, and a number of lines per call.
//!
//! - [`host`]: the WIT `log` interface.

pub mod host;

use crate::telemetry::text::escape_controls;

/// The longest log message kept, in characters.
pub const MAX_LOG_CHARS: usize = 2_000;
/// Log lines one call may write; the rest are dropped (one line says so).
pub const MAX_LOG_LINES: usize = 1_000;

/// What a plugin may write to the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogGrant {
    pub max_lines: usize,
    pub max_chars: usize,
}

/// Every plugin logs, within the same limits.
pub fn grant() -> LogGrant {
    LogGrant {
        max_lines: MAX_LOG_LINES,
        max_chars: MAX_LOG_CHARS,
    }
}

/// `message` as one line of at most `max_chars` characters: every control and line-separator
/// character escaped (`telemetry::text`, which also escapes the whole text log), a cut marked
/// with `…`.
pub fn one_line(message: &str, max_chars: usize) -> String {
    let cut = message.chars().count() > max_chars;
    let line: String = message.chars().take(max_chars).collect();
    let mut line = escape_controls(&line).into_owned();
    if cut {
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_one_bounded_line() {
        assert_eq!(one_line("a\nINFO forged\r", 100), "a\\nINFO forged\\r");
        assert_eq!(
            one_line("a\x0bb\x0cc\u{85}d\u{2028}e\u{2029}", 100),
            "a\\u{b}b\\u{c}c\\u{85}d\\u{2028}e\\u{2029}"
        );
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("", 3), "");
    }
}
