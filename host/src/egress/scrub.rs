//! Keys never come back: the host removes every key of a plugin's grant from the response
//! headers and bodies it hands the plugin, so an upstream that echoes its request (an
//! `/anything` endpoint, an error that quotes the header) cannot show the plugin its key.
//! A key shorter than [`MIN_SCRUBBED`] bytes is left alone: it would match ordinary text.

use std::sync::Arc;

use memchr::memmem;

/// What a key is replaced with.
pub const REDACTED: &[u8] = b"[redacted]";
/// The shortest key scrubbed.
pub const MIN_SCRUBBED: usize = 8;

/// Removes keys from a body that arrives in pieces: a piece's end that could be the start of a
/// key is held back until the next piece shows whether it is.
#[derive(Debug, Default)]
pub struct Scrubber {
    keys: Arc<[Box<[u8]>]>,
    held: Vec<u8>,
}

impl Scrubber {
    pub fn new(keys: Arc<[Box<[u8]>]>) -> Self {
        Self {
            keys,
            held: Vec::new(),
        }
    }

    pub fn keys(&self) -> &[Box<[u8]>] {
        &self.keys
    }

    /// What of `chunk` can be handed on now.
    pub fn chunk(&mut self, chunk: Vec<u8>) -> Vec<u8> {
        if self.keys.is_empty() {
            return chunk;
        }
        let mut buf = std::mem::take(&mut self.held);
        buf.extend_from_slice(&chunk);
        let mut buf = scrub(&self.keys, buf);
        let keep = self.partial_key_at_end(&buf);
        self.held = buf.split_off(buf.len() - keep);
        buf
    }

    /// The body ended: what was held back.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.held)
    }

    /// The length of the longest end of `buf` that is the start of a key.
    fn partial_key_at_end(&self, buf: &[u8]) -> usize {
        let mut longest = 0;
        for key in self.keys.iter() {
            for len in (longest + 1..key.len().min(buf.len() + 1)).rev() {
                if buf.ends_with(&key[..len]) {
                    longest = len;
                    break;
                }
            }
        }
        longest
    }
}

/// `text` with every key replaced by [`REDACTED`].
pub fn scrub(keys: &[Box<[u8]>], mut text: Vec<u8>) -> Vec<u8> {
    for key in keys {
        if memmem::find(&text, key).is_none() {
            continue;
        }
        let mut out = Vec::with_capacity(text.len());
        let mut rest = &text[..];
        while let Some(at) = memmem::find(rest, key) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(REDACTED);
            rest = &rest[at + key.len()..];
        }
        out.extend_from_slice(rest);
        text = out;
    }
    text
}

/// A message with every key replaced (text in, text out).
pub fn text(keys: &[Box<[u8]>], text: String) -> String {
    match String::from_utf8(scrub(keys, text.into_bytes())) {
        Ok(text) => text,
        // A key cut at a character boundary cannot happen (both are UTF-8); stay safe anyway.
        Err(_) => "(message withheld)".into(),
    }
}

/// The keys of `secrets` worth scrubbing, deduplicated: each as it is and as it stands in a URL
/// (percent-encoded, with upper- and lower-case hex), the form an error quoting the request's URL
/// or an upstream echoing its query would show.
pub fn keys<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Arc<[Box<[u8]>]> {
    let mut keys: Vec<Box<[u8]>> = Vec::new();
    for secret in secrets {
        if secret.len() < MIN_SCRUBBED {
            continue;
        }
        let encoded = super::query::encode(secret);
        let lower = lower_hex(&encoded);
        for form in [secret.to_string(), encoded, lower] {
            if !keys.iter().any(|k| **k == *form.as_bytes()) {
                keys.push(form.into_bytes().into());
            }
        }
    }
    keys.into()
}

/// `%2B` as `%2b`: some servers write escapes in lower case.
fn lower_hex(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut hex_left = 0;
    for c in encoded.chars() {
        if c == '%' {
            hex_left = 2;
            out.push(c);
        } else if hex_left > 0 {
            hex_left -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_split_across_pieces_is_still_removed() {
        let keys = keys(["sk-secret-123", "short"]);
        assert_eq!(keys.len(), 1);
        let mut s = Scrubber::new(keys);
        let body = b"{\"auth\":\"Bearer sk-secret-123\",\"again\":\"sk-secret-123\"} sk-sec";
        let mut out = Vec::new();
        for piece in body.chunks(5) {
            out.extend(s.chunk(piece.to_vec()));
        }
        out.extend(s.finish());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"auth\":\"Bearer [redacted]\",\"again\":\"[redacted]\"} sk-sec"
        );
    }

    #[test]
    fn a_key_is_found_as_it_stands_in_a_url_too() {
        let keys = keys(["k+y/with=chars-9"]);
        let text = "url (http://h/?key=k%2By%2Fwith%3Dchars-9) or k%2by%2fwith%3dchars-9 or k+y/with=chars-9";
        assert_eq!(
            String::from_utf8(scrub(&keys, text.as_bytes().to_vec())).unwrap(),
            "url (http://h/?key=[redacted]) or [redacted] or [redacted]"
        );
        // A key with nothing to escape is one form.
        assert_eq!(super::keys(["plain-key-123"]).len(), 1);
    }

    #[test]
    fn without_keys_pieces_pass_as_they_are() {
        let mut s = Scrubber::default();
        assert_eq!(s.chunk(b"sk-secret-123".to_vec()), b"sk-secret-123");
        assert!(s.finish().is_empty());
    }
}
