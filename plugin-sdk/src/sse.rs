//! A server-sent events parser for streamed upstream responses (the WHATWG event-stream format):
//! feed it bytes as they arrive, take complete events out. Handles `\n`, `\r\n` and `\r` line
//! ends, multi-line `data:`, comments (`:` lines, dropped), `event:`, `id:` and `retry:` fields,
//! and chunks that split lines or UTF-8 characters anywhere.

/// One complete event.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Event {
    /// The `event:` field; empty when the upstream sent none (the spec's "message").
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` field seen, if any.
    pub id: Option<String>,
}

/// Incremental parser state.
#[derive(Debug, Default)]
pub struct Parser {
    buffer: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
    /// A `\r` ended the previous chunk: a `\n` starting the next non-empty one belongs to it.
    pending_cr: bool,
}

impl Parser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds bytes and returns the events they completed, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        let mut bytes = bytes;
        // An empty piece says nothing about the byte after the `\r`: the question waits for
        // the next piece that has one.
        if self.pending_cr && !bytes.is_empty() {
            self.pending_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        let mut events = Vec::new();
        // A piece usually starts at a line's start: its lines are read where they are, and only
        // an unfinished last line is kept, to be completed by the next piece.
        if self.buffer.is_empty() {
            let read = self.lines(bytes, &mut events);
            self.buffer.extend_from_slice(&bytes[read..]);
        } else {
            let mut buffer = std::mem::take(&mut self.buffer);
            buffer.extend_from_slice(bytes);
            let read = self.lines(&buffer, &mut events);
            buffer.drain(..read);
            self.buffer = buffer;
        }
        events
    }

    /// Reads the complete lines at the start of `bytes` into `events`; returns how many bytes
    /// they took.
    fn lines(&mut self, bytes: &[u8], events: &mut Vec<Event>) -> usize {
        let mut start = 0;
        // memchr, not a loop over bytes: a plugin's loop pays an interruption check per
        // iteration, and most of a piece is the JSON inside `data:` lines.
        while let Some(offset) = memchr::memchr2(b'\n', b'\r', &bytes[start..]) {
            let end = start + offset;
            let mut next = end + 1;
            if bytes[end] == b'\r' {
                match bytes.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
            let event = match std::str::from_utf8(&bytes[start..end]) {
                Ok(line) => self.line(line),
                Err(_) => self.line(&String::from_utf8_lossy(&bytes[start..end])),
            };
            events.extend(event);
            start = next;
        }
        start
    }

    /// Ends the stream: an event not yet closed by a blank line is dropped, as the spec says.
    pub fn finish(&mut self) {
        *self = Self::default();
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            if !self.has_data && self.event.is_empty() {
                return None;
            }
            let event = Event {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
                id: self.id.clone(),
            };
            self.has_data = false;
            return Some(event);
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<Event> {
        let mut parser = Parser::new();
        chunks.iter().flat_map(|c| parser.push(c)).collect()
    }

    #[test]
    fn parses_named_events_and_multiline_data() {
        let events = all(&[b"event: response.output_text.delta\ndata: {\"a\":1}\n\n: keep-alive\n\ndata: x\ndata: y\n\n"]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].event, "response.output_text.delta");
        assert_eq!(events[0].data, "{\"a\":1}");
        assert_eq!(events[1].event, "");
        assert_eq!(events[1].data, "x\ny");
    }

    #[test]
    fn survives_any_split_and_any_line_end() {
        let stream = "event: a\r\ndata: é1\r\n\r\nid: 7\rdata:2\r\rdata: 3\n\n";
        let whole = all(&[stream.as_bytes()]);
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[0].data, "é1");
        assert_eq!(whole[1].id.as_deref(), Some("7"));
        assert_eq!(whole[1].data, "2");
        for split in 1..stream.len() {
            let (a, b) = stream.as_bytes().split_at(split);
            assert_eq!(all(&[a, b]), whole, "split at {split}");
        }
    }

    #[test]
    fn a_byte_at_a_time_gives_the_same_events() {
        // Every line end, a comment, a character of two bytes and a byte that is not UTF-8.
        let stream: &[u8] =
            b"event: a\r\ndata: \xc3\xa91\r\n\r\nid: 7\rdata:2\r\rdata: 3\n\n: c\ndata: x\xffy\n\n";
        let whole = all(&[stream]);
        assert_eq!(whole.len(), 4);
        assert_eq!(whole[0].data, "\u{e9}1");
        assert_eq!(whole[3].data, "x\u{fffd}y");
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(all(&bytes), whole);
    }

    #[test]
    fn an_empty_piece_between_a_cr_and_its_lf_keeps_them_one_line_end() {
        let events = all(&[b"data: a\r", b"", b"\ndata: b\r\n\r\n"]);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].data, "a\nb");
    }

    #[test]
    fn invalid_utf8_in_a_line_is_replaced_not_dropped() {
        let events = all(&[b"data: a\xffb\n\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "a\u{fffd}b");
    }

    #[test]
    fn an_unterminated_event_is_not_emitted() {
        let mut parser = Parser::new();
        assert!(parser.push(b"data: partial").is_empty());
        parser.finish();
        assert!(parser.push(b"\n\n").is_empty());
    }
}
