//! A session's stdout and stderr as the host keeps them: the first characters up to a cap, the
//! rest counted and dropped as they arrive. The cap is the host's, whatever the guest does (a
//! `sys.stdout` replaced, its attributes changed, `os.write(1, …)`), and it bounds what the host
//! holds while the guest writes, not only what is stored: a gigabyte printed costs time, never
//! memory (`tests/api/python.rs::output_is_capped_by_the_host_whatever_the_code_does`).
//!
//! Characters are UTF-8 characters, counted by their first bytes (`bytecount::num_chars`, as
//! here), so the count needs no decoding; bytes that are not UTF-8 are kept as they come and read
//! as U+FFFD.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi_io::async_trait;
use wasmtime_wasi_io::poll::Pollable;
use wasmtime_wasi_io::streams::{OutputStream, StreamResult};

/// What one write may carry; the guest loops for more (WASI's own `blocking-write-and-flush`
/// carries at most 4096 bytes).
const WRITE_PERMIT: usize = 1 << 20;

/// One output stream of a session, kept up to `limit` characters per call. Cheap to clone: the
/// clones share what was written (the WASI context holds one, the host another).
#[derive(Clone, Debug)]
pub struct Capture {
    inner: Arc<Mutex<Kept>>,
}

/// What a call wrote to one stream: the characters kept, and how many more were dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Captured {
    pub text: String,
    pub dropped_chars: u64,
}

#[derive(Debug)]
struct Kept {
    limit: usize,
    bytes: Vec<u8>,
    chars: usize,
    dropped_chars: u64,
    /// How many more continuation bytes the character being kept may take (a character is at
    /// most 4 bytes, so what is held stays within 4 × `limit`, whatever bytes come).
    pending: u8,
}

fn is_first_byte(b: u8) -> bool {
    b & 0xC0 != 0x80
}

/// The continuation bytes a UTF-8 character starting with `b` has; none for a byte that starts
/// no character (it is a character of its own, read as U+FFFD).
fn continuations(b: u8) -> u8 {
    match b {
        0xC0..=0xDF => 1,
        0xE0..=0xEF => 2,
        0xF0..=0xF7 => 3,
        _ => 0,
    }
}

impl Kept {
    fn write(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some((&b, after)) = rest.split_first() {
            if self.pending > 0 && !is_first_byte(b) {
                self.pending -= 1;
            } else if self.chars < self.limit {
                // A character begins: a first byte, or a stray continuation byte.
                self.chars += 1;
                self.pending = if is_first_byte(b) {
                    continuations(b)
                } else {
                    0
                };
            } else {
                break;
            }
            self.bytes.push(b);
            rest = after;
        }
        self.pending = if rest.is_empty() { self.pending } else { 0 };
        self.dropped_chars += bytecount::num_chars(rest) as u64;
    }
}

impl Capture {
    /// A stream keeping at most `limit` characters per call.
    pub fn new(limit: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Kept {
                limit,
                bytes: Vec::new(),
                chars: 0,
                dropped_chars: 0,
                pending: 0,
            })),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What was written since the last take, as text; the stream starts empty again. Bytes
    /// that are not UTF-8 read as U+FFFD, and never past the limit: what a stray byte counted
    /// as one character may read as more, and the excess is counted as dropped.
    pub fn take(&self) -> Captured {
        let mut kept = self.kept();
        let bytes = std::mem::take(&mut kept.bytes);
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        let mut dropped_chars = kept.dropped_chars;
        if let Some((cut, _)) = text.char_indices().nth(kept.limit) {
            dropped_chars += text[cut..].chars().count() as u64;
            text.truncate(cut);
        }
        kept.chars = 0;
        kept.dropped_chars = 0;
        kept.pending = 0;
        Captured {
            text,
            dropped_chars,
        }
    }

    /// What was written since the last take, left in place (a trap's message quotes it).
    pub fn peek(&self) -> String {
        String::from_utf8_lossy(&self.kept().bytes).into_owned()
    }
}

impl IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Capture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[async_trait]
impl Pollable for Capture {
    async fn ready(&mut self) {}
}

impl OutputStream for Capture {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.kept().write(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

impl AsyncWrite for Capture {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.kept().write(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(capture: &Capture, text: &[u8]) {
        capture.clone().write(Bytes::copy_from_slice(text)).unwrap();
    }

    #[test]
    fn keeps_the_first_characters_and_counts_the_rest() {
        let capture = Capture::new(5);
        write(&capture, b"ab");
        write(&capture, "cdé€f".as_bytes());
        write(&capture, "ghi".as_bytes());
        assert_eq!(
            capture.take(),
            Captured {
                text: "abcdé".into(),
                dropped_chars: 5
            }
        );
        assert_eq!(capture.take(), Captured::default(), "a take empties it");
        write(&capture, "€€€€€€".as_bytes());
        let six = capture.take();
        assert_eq!(six.text, "€€€€€");
        assert_eq!(six.dropped_chars, 1);
    }

    #[test]
    fn a_character_split_across_writes_is_kept_whole() {
        let capture = Capture::new(2);
        let euro = "€".as_bytes();
        write(&capture, b"a");
        write(&capture, &euro[..1]);
        write(&capture, &euro[1..]);
        write(&capture, &euro[..2]);
        write(&capture, &euro[2..]);
        assert_eq!(
            capture.take(),
            Captured {
                text: "a€".into(),
                dropped_chars: 1
            }
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_are_read_as_replacement_characters() {
        let capture = Capture::new(10);
        write(&capture, b"a\xffb");
        assert_eq!(capture.take().text, "a\u{fffd}b");
    }

    #[test]
    fn stray_continuation_bytes_count_against_the_cap() {
        let capture = Capture::new(4);
        write(&capture, b"a");
        for _ in 0..64 {
            write(&capture, &[0x80; 1 << 14]);
        }
        assert!(
            capture.kept().bytes.len() <= 16,
            "at most 4 bytes a character"
        );
        let taken = capture.take();
        assert_eq!(taken.text, "a\u{fffd}\u{fffd}\u{fffd}");
        // A lead byte with too few continuations, then an invalid one: each read, never more
        // characters than the cap.
        write(&capture, b"\xe2\x82x\xf0\x80\x80\x80\x80yz");
        let taken = capture.take();
        assert!(taken.text.chars().count() <= 4, "{:?}", taken.text);
        assert!(taken.dropped_chars >= 2, "{taken:?}");
    }

    #[test]
    fn what_is_held_stays_within_the_cap_however_much_is_written() {
        let capture = Capture::new(100);
        let block = vec![b'x'; 1 << 20];
        for _ in 0..64 {
            write(&capture, &block);
        }
        assert!(
            capture.kept().bytes.capacity() < 4096,
            "held no more than it keeps"
        );
        let taken = capture.take();
        assert_eq!(taken.text.len(), 100);
        assert_eq!(taken.dropped_chars, (64 << 20) - 100);
    }
}
