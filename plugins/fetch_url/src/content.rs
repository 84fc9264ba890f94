//! What a body is, and how to read it as text.
//!
//! The declared Content-Type decides, with sniffing only where it says nothing useful (missing,
//! or `application/octet-stream`), as browsers do. A body with NUL bytes near its start is
//! binary whatever it claims. The charset: the Content-Type's, else a byte-order mark, else (for
//! HTML) a `<meta>` declaration in the first 1024 bytes, else UTF-8 when the bytes are valid
//! UTF-8, else windows-1252 (the web's legacy default). Decoding is encoding_rs, the WHATWG
//! Encoding Standard's implementation.

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

#[derive(Debug, PartialEq, Eq)]
pub enum Kind {
    Html,
    Text,
    /// Refused; says what it is (the MIME type, or "binary data").
    Binary(String),
}

/// The bytes looked at when sniffing.
const SNIFF_BYTES: usize = 1024;

pub fn classify(content_type: Option<&str>, body: &[u8]) -> Kind {
    let mime = content_type
        .and_then(|ct| ct.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty());
    let head = &body[..body.len().min(SNIFF_BYTES)];
    let looks_binary = head.contains(&0) && Encoding::for_bom(head).is_none();
    let kind = match mime.as_deref() {
        Some("text/html" | "application/xhtml+xml") => Kind::Html,
        None | Some("application/octet-stream") => {
            if looks_binary {
                return Kind::Binary("binary data".into());
            }
            if looks_like_html(head) {
                Kind::Html
            } else {
                Kind::Text
            }
        }
        Some(m) if is_text(m) => Kind::Text,
        Some(m) => return Kind::Binary(m.to_string()),
    };
    if looks_binary {
        return Kind::Binary(format!(
            "binary data (declared {})",
            mime.unwrap_or_default()
        ));
    }
    kind
}

fn is_text(mime: &str) -> bool {
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
                | "application/x-ndjson"
        )
}

fn looks_like_html(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let text = text.trim_start_matches('\u{feff}').trim_start();
    [
        "<!doctype html",
        "<html",
        "<head",
        "<body",
        "<title",
        "<meta",
        "<!--",
    ]
    .iter()
    .any(|tag| text.starts_with(tag))
}

/// The body as text, in its charset (see the module docs for the order of evidence).
pub fn decode(content_type: Option<&str>, body: &[u8], html: bool) -> String {
    let declared = content_type
        .and_then(charset_param)
        .and_then(Encoding::for_label);
    let encoding = declared
        .or_else(|| Encoding::for_bom(body).map(|(e, _)| e))
        .or_else(|| if html { meta_charset(body) } else { None })
        .unwrap_or_else(|| {
            if std::str::from_utf8(body).is_ok() || cut_utf8_tail_ok(body) {
                UTF_8
            } else {
                WINDOWS_1252
            }
        });
    // `decode` lets a byte-order mark override the label, as the standard says.
    encoding.decode(body).0.into_owned()
}

/// A body cut at the byte cap may end inside a UTF-8 sequence; that alone is not a reason to
/// call the page windows-1252.
fn cut_utf8_tail_ok(body: &[u8]) -> bool {
    match std::str::from_utf8(body) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none() && body.len() - e.valid_up_to() < 4,
    }
}

fn charset_param(content_type: &str) -> Option<&[u8]> {
    content_type.split(';').skip(1).find_map(|param| {
        let (key, value) = param.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']).as_bytes())
    })
}

/// The HTML prescan, simplified: the first `charset=` inside a `<meta …>` tag of the first
/// 1024 bytes (covers `<meta charset="…">` and the `http-equiv` form). A UTF-16 label there is
/// read as UTF-8, as the standard says (the bytes are ASCII-compatible if the meta was found).
fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = &body[..body.len().min(SNIFF_BYTES)];
    let lower: Vec<u8> = head.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = find(&lower[from..], b"<meta") {
        let start = from + at;
        let end = find(&lower[start..], b">").map_or(lower.len(), |e| start + e);
        let tag = &lower[start..end];
        if let Some(c) = find(tag, b"charset") {
            let rest = &tag[c + b"charset".len()..];
            let rest = rest.trim_ascii_start();
            if let Some(value) = rest.strip_prefix(b"=") {
                let value = value.trim_ascii_start();
                let value = value
                    .strip_prefix(b"\"")
                    .or_else(|| value.strip_prefix(b"'"))
                    .unwrap_or(value);
                let len = value
                    .iter()
                    .position(|b| {
                        matches!(b, b'"' | b'\'' | b';' | b'/' | b'>') || b.is_ascii_whitespace()
                    })
                    .unwrap_or(value.len());
                if let Some(encoding) = Encoding::for_label(&value[..len]) {
                    return Some(
                        if encoding == encoding_rs::UTF_16LE || encoding == encoding_rs::UTF_16BE {
                            UTF_8
                        } else {
                            encoding
                        },
                    );
                }
            }
        }
        from = end;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_type_decides_and_sniffing_fills_in() {
        assert_eq!(
            classify(Some("text/html; charset=utf-8"), b"hi"),
            Kind::Html
        );
        assert_eq!(classify(Some("TEXT/PLAIN"), b"hi"), Kind::Text);
        assert_eq!(classify(Some("application/json"), b"{}"), Kind::Text);
        assert_eq!(classify(Some("application/ld+json"), b"{}"), Kind::Text);
        assert_eq!(classify(None, b"  <!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(
            classify(Some("application/octet-stream"), b"plain words"),
            Kind::Text
        );
        assert_eq!(
            classify(Some("image/png"), b"\x89PNG\r\n"),
            Kind::Binary("image/png".into())
        );
        assert_eq!(
            classify(Some("application/pdf"), b"%PDF-1.7"),
            Kind::Binary("application/pdf".into())
        );
        assert_eq!(
            classify(None, b"\x00\x01\x02"),
            Kind::Binary("binary data".into())
        );
        assert_eq!(
            classify(Some("text/plain"), b"ab\x00cd"),
            Kind::Binary("binary data (declared text/plain)".into())
        );
        // UTF-16 text has NUL bytes but a byte-order mark: it is text.
        assert_eq!(
            classify(Some("text/plain"), b"\xff\xfeh\x00i\x00"),
            Kind::Text
        );
    }

    #[test]
    fn charsets_come_from_the_header_the_bom_the_meta_or_the_bytes() {
        // "café" in windows-1252, declared in the header.
        assert_eq!(
            decode(Some("text/plain; charset=ISO-8859-1"), b"caf\xe9", false),
            "café"
        );
        // Shift_JIS declared in a meta tag only.
        let sjis = b"<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\"></head>\x93\xfa\x96\x7b";
        assert!(decode(Some("text/html"), sjis, true).ends_with("日本"));
        let meta = b"<meta charset='windows-1251'><p>\xcf\xf0\xe8\xe2\xe5\xf2";
        assert!(decode(None, meta, true).ends_with("Привет"));
        // A BOM wins over a wrong label.
        assert_eq!(
            decode(
                Some("text/plain; charset=latin1"),
                b"\xef\xbb\xbfcaf\xc3\xa9",
                false
            ),
            "café"
        );
        // Nothing declared: UTF-8 when valid, else windows-1252.
        assert_eq!(decode(None, "naïve".as_bytes(), false), "naïve");
        assert_eq!(decode(None, b"na\xefve", false), "naïve");
        // A UTF-8 body cut inside a character is still UTF-8.
        assert_eq!(
            decode(None, b"caf\xc3\xa9 caf\xc3", false),
            "café caf\u{fffd}"
        );
        // The meta is only looked for in HTML.
        assert_eq!(
            decode(None, b"<meta charset=koi8-r>ok", false),
            "<meta charset=koi8-r>ok"
        );
    }
}
