//! What the model reads of a finished command, and the one-line summary the UI shows:
//!
//! ```text
//! exit status: 0
//! duration: 123 ms
//! stdout:
//! <stdout, at most 16,384 bytes>
//! [stdout cut: the command printed more]
//! stderr:
//! <stderr, at most 8,192 bytes>
//! ```
//!
//! The host caps the streams already; these smaller caps keep one call from filling the model's
//! context. Stderr gets less room: errors are usually at its end or short, while stdout is what
//! the command was run for.

use chatd_plugin_sdk::host::ssh::ExecOutput;

/// The most stdout the model reads, in bytes of UTF-8.
pub const MAX_STDOUT_BYTES: usize = 16 * 1024;
/// The most stderr the model reads, in bytes of UTF-8.
pub const MAX_STDERR_BYTES: usize = 8 * 1024;

/// The whole text for the model (no trailing newline).
pub fn for_model(output: &ExecOutput) -> String {
    let status = match output.exit_status {
        Some(code) => code.to_string(),
        None => "none (killed)".to_string(),
    };
    let mut out = format!(
        "exit status: {status}\nduration: {} ms\n",
        output.duration_ms
    );
    stream(
        &mut out,
        "stdout",
        &output.stdout,
        output.stdout_truncated,
        MAX_STDOUT_BYTES,
    );
    out.push('\n');
    stream(
        &mut out,
        "stderr",
        &output.stderr,
        output.stderr_truncated,
        MAX_STDERR_BYTES,
    );
    out
}

/// `<name>:` and the stream's text on the following lines, with a marker when it was cut here or
/// by the host (either way the model should know it did not see everything).
fn stream(out: &mut String, name: &str, bytes: &[u8], host_cut: bool, max_bytes: usize) {
    out.push_str(name);
    out.push_str(":\n");
    let cut_here = if bytes.is_empty() {
        out.push_str("(empty)");
        false
    } else {
        // Lossy: a command may print anything; invalid bytes become U+FFFD rather than failing.
        let text = String::from_utf8_lossy(bytes);
        let (text, cut_here) = cut(&text, max_bytes);
        // Most output ends with a newline; the section's own line break stands for it.
        out.push_str(text.strip_suffix('\n').unwrap_or(text));
        cut_here
    };
    if cut_here || host_cut {
        out.push_str(&format!("\n[{name} cut: the command printed more]"));
    }
}

/// At most `max_bytes` of `text`, cut at a character boundary; and whether anything was cut.
fn cut(text: &str, max_bytes: usize) -> (&str, bool) {
    if text.len() <= max_bytes {
        return (text, false);
    }
    (&text[..text.floor_char_boundary(max_bytes)], true)
}

/// The UI's one line: `<label> exited 0 in 1.2 s`, `<label> timed out after 120.0 s`, or
/// `<label> was ended by a signal after 3.4 s`.
pub fn summary(label: &str, output: &ExecOutput) -> String {
    let seconds = format!("{:.1}", output.duration_ms as f64 / 1000.0);
    if output.timed_out {
        format!("{label} timed out after {seconds} s")
    } else if let Some(code) = output.exit_status {
        format!("{label} exited {code} in {seconds} s")
    } else {
        format!("{label} was ended by a signal after {seconds} s")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A finished command's output, for tests here and in [`crate::exec`].
    pub(crate) fn output(exit_status: Option<i32>, stdout: &[u8], stderr: &[u8]) -> ExecOutput {
        ExecOutput {
            exit_status,
            stdout: stdout.to_vec(),
            stderr: stderr.to_vec(),
            stdout_truncated: false,
            stderr_truncated: false,
            timed_out: false,
            duration_ms: 123,
        }
    }

    #[test]
    fn the_full_format() {
        assert_eq!(
            for_model(&output(Some(0), b"hello\nworld\n", b"warning: x\n")),
            "exit status: 0\nduration: 123 ms\nstdout:\nhello\nworld\nstderr:\nwarning: x"
        );
        // Only one trailing newline stands for the section break; blank lines inside stay.
        assert_eq!(
            for_model(&output(Some(2), b"a\n\n", b"no newline")),
            "exit status: 2\nduration: 123 ms\nstdout:\na\n\nstderr:\nno newline"
        );
    }

    #[test]
    fn empty_streams_and_no_exit_status() {
        assert_eq!(
            for_model(&output(None, b"", b"")),
            "exit status: none (killed)\nduration: 123 ms\nstdout:\n(empty)\nstderr:\n(empty)"
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_not_refused() {
        let text = for_model(&output(Some(0), b"ok \xff\xfe end", b"\xc3"));
        assert!(text.contains("stdout:\nok \u{fffd}\u{fffd} end\nstderr:\n\u{fffd}"));
    }

    #[test]
    fn streams_are_capped_with_a_marker() {
        let big_out = vec![b'o'; MAX_STDOUT_BYTES + 1];
        let big_err = vec![b'e'; MAX_STDERR_BYTES + 1];
        let text = for_model(&output(Some(0), &big_out, &big_err));
        assert_eq!(
            text,
            format!(
                "exit status: 0\nduration: 123 ms\nstdout:\n{}\n[stdout cut: the command printed more]\nstderr:\n{}\n[stderr cut: the command printed more]",
                "o".repeat(MAX_STDOUT_BYTES),
                "e".repeat(MAX_STDERR_BYTES)
            )
        );
        // Exactly at the caps: nothing is cut, no marker.
        let text = for_model(&output(
            Some(0),
            &big_out[..MAX_STDOUT_BYTES],
            &big_err[..MAX_STDERR_BYTES],
        ));
        assert!(!text.contains("cut:"));
    }

    #[test]
    fn the_cap_falls_on_a_character_boundary() {
        // 'é' is two bytes: 16,383 of 'a' then 'é' crosses the cap, so the 'é' goes whole.
        let mut stdout = "a".repeat(MAX_STDOUT_BYTES - 1).into_bytes();
        stdout.extend_from_slice("éé".as_bytes());
        let text = for_model(&output(Some(0), &stdout, b""));
        assert!(text.contains(&format!(
            "stdout:\n{}\n[stdout cut: the command printed more]\nstderr:",
            "a".repeat(MAX_STDOUT_BYTES - 1)
        )));
        // Replacement characters count at their UTF-8 size (three bytes).
        let text = for_model(&output(Some(0), b"", &vec![0xff; MAX_STDERR_BYTES]));
        let shown = text.split("stderr:\n").nth(1).unwrap();
        let shown = shown
            .strip_suffix("\n[stderr cut: the command printed more]")
            .unwrap();
        assert_eq!(shown, "\u{fffd}".repeat(MAX_STDERR_BYTES / 3));
    }

    #[test]
    fn the_hosts_cut_is_marked_too() {
        let mut out = output(Some(0), b"partial\n", b"");
        out.stdout_truncated = true;
        out.stderr_truncated = true;
        assert_eq!(
            for_model(&out),
            "exit status: 0\nduration: 123 ms\nstdout:\npartial\n[stdout cut: the command printed more]\nstderr:\n(empty)\n[stderr cut: the command printed more]"
        );
    }

    #[test]
    fn summaries() {
        let mut out = output(Some(0), b"", b"");
        out.duration_ms = 1_234;
        assert_eq!(summary("`ls`", &out), "`ls` exited 0 in 1.2 s");
        out.exit_status = Some(-1);
        out.duration_ms = 50;
        assert_eq!(summary("codex", &out), "codex exited -1 in 0.1 s");
        out.exit_status = None;
        assert_eq!(
            summary("codex", &out),
            "codex was ended by a signal after 0.1 s"
        );
        out.timed_out = true;
        out.duration_ms = 120_000;
        assert_eq!(summary("codex", &out), "codex timed out after 120.0 s");
    }
}
