//! Plain text, Markdown and CSV: their own text, once checked to be text.

/// `content` as text: UTF-8 (a leading byte-order mark left out) with no NUL byte, which no
/// text file holds and every binary format does.
pub fn text(content: &[u8]) -> Result<String, String> {
    let content = content.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(content);
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
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_checked_not_parsed() {
        assert_eq!(
            text(b"\xEF\xBB\xBF# Title\n\nbody").unwrap(),
            "# Title\n\nbody"
        );
        let bad = text(b"ok \xff\xfe").unwrap_err();
        assert!(
            bad.contains("not UTF-8 text") && bad.contains("offset 3"),
            "{bad}"
        );
        let binary = text(b"PK\x03\x04\0").unwrap_err();
        assert!(binary.contains("NUL byte at offset 4"), "{binary}");
    }
}
