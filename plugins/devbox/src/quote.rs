//! POSIX shell quoting of one word, so text from the model reaches the remote program as exactly
//! one argument, whatever it contains.

/// `text` as a single-quoted shell word. Inside single quotes a POSIX shell gives no character a
/// special meaning (`$`, backticks, `\`, newlines are literal), and a single quote cannot be
/// escaped; so each `'` closes the quote, adds an escaped `\'`, and reopens it: `'\''`.
pub fn word(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::word;

    #[test]
    fn plain_and_empty_words() {
        assert_eq!(word("ls"), "'ls'");
        assert_eq!(word("a b"), "'a b'");
        // An empty argument must still be one argument.
        assert_eq!(word(""), "''");
    }

    #[test]
    fn single_quotes_are_closed_escaped_and_reopened() {
        assert_eq!(word("it's"), r"'it'\''s'");
        assert_eq!(word("'"), r"''\'''");
        assert_eq!(word("''"), r"''\'''\'''");
    }

    #[test]
    fn everything_else_is_literal() {
        assert_eq!(word("echo $HOME"), "'echo $HOME'");
        assert_eq!(word("echo `id` $(id)"), "'echo `id` $(id)'");
        assert_eq!(word("a\nb\r\n"), "'a\nb\r\n'");
        assert_eq!(
            word(r#"say "hi" \n; rm -rf / & | > <"#),
            r#"'say "hi" \n; rm -rf / & | > <'"#
        );
        assert_eq!(word("ünï ✓"), "'ünï ✓'");
    }

    #[test]
    fn a_real_shell_reads_back_the_exact_text() {
        // What matters is what a shell makes of the word; ask one (skipped where there is none).
        if !std::path::Path::new("/bin/sh").exists() {
            return;
        }
        for text in [
            "",
            "it's",
            "'",
            "$HOME `id` $(id) \\ \"q\"",
            "a\nb\n",
            "* ? [a] ~ # ; &",
            "ünï",
        ] {
            let out = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("printf %s {}", word(text)))
                .output()
                .unwrap();
            assert!(out.status.success(), "{text:?}");
            assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
        }
    }
}
