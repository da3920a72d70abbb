//! Server-Sent Events, parsed by the WHATWG rules in linear time.
//!
//! Bytes go in as they arrive; each byte is looked at once. An unfinished
//! line is kept in one buffer that only grows at its end (the crate used
//! before re-scanned its whole buffer on every chunk: a 16 MB line took
//! 17.6 s). A line, or the data of one event, longer than the limit makes
//! the stream an error instead of growing without bound.
//!
//! Only what a model stream needs is kept: the event type and its data;
//! `id` and `retry` are read and ignored (glrs never reconnects a stream).

/// The longest line, or event data, accepted (64 MiB).
pub const MAX_EVENT_BYTES: usize = 64 << 20;

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field, `message` when there was none.
    pub event: String,
    /// The `data:` lines, joined by `\n`.
    pub data: String,
}

/// Why a stream cannot be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A line or an event's data passed `limit` bytes.
    #[error("an event is longer than {} without ending", size(*.limit))]
    TooLong {
        /// The limit that was passed, in bytes.
        limit: usize,
    },
}

/// A limit as said: whole megabytes from 1 MB, else bytes.
fn size(limit: usize) -> String {
    if limit >= 1 << 20 { format!("{} MB", limit >> 20) } else { format!("{limit} bytes") }
}

/// The parser's state between chunks.
#[derive(Debug)]
pub struct EventParser {
    limit: usize,
    /// The unfinished line's bytes.
    line: Vec<u8>,
    /// The previous line ended with CR: an LF first in the next chunk is
    /// part of that line ending, not an empty line.
    after_cr: bool,
    /// No line finished yet: a leading byte-order mark is dropped.
    first_line: bool,
    event: String,
    data: String,
}

impl Default for EventParser {
    fn default() -> Self {
        EventParser::new(MAX_EVENT_BYTES)
    }
}

impl EventParser {
    /// A parser refusing lines or events longer than `limit` bytes.
    pub fn new(limit: usize) -> EventParser {
        EventParser {
            limit,
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            event: String::new(),
            data: String::new(),
        }
    }

    /// Bytes held for an unfinished line or event.
    pub fn pending(&self) -> usize {
        self.line.len() + self.data.len()
    }

    /// Take the next bytes of the stream; complete events are pushed to
    /// `out`. Returns how many lines these bytes finished (a stream that
    /// sends bytes but finishes no line is not making progress).
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<usize, ParseError> {
        let mut rest = bytes;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        let mut lines = 0;
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let piece = &rest[..end];
            self.grow(piece.len())?;
            if self.line.is_empty() {
                self.take_line(piece, out)?;
            } else {
                self.line.extend_from_slice(piece);
                let line = std::mem::take(&mut self.line);
                self.take_line(&line, out)?;
                // Keep the allocation for the next long line.
                self.line = line;
                self.line.clear();
            }
            lines += 1;
            let mut next = end + 1;
            if rest[end] == b'\r' {
                match rest.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            rest = &rest[next..];
        }
        self.grow(rest.len())?;
        self.line.extend_from_slice(rest);
        Ok(lines)
    }

    fn grow(&self, more: usize) -> Result<(), ParseError> {
        if self.pending().saturating_add(more) > self.limit {
            return Err(ParseError::TooLong { limit: self.limit });
        }
        Ok(())
    }

    /// One whole line (without its ending).
    fn take_line(&mut self, mut line: &[u8], out: &mut Vec<Event>) -> Result<(), ParseError> {
        if std::mem::take(&mut self.first_line) {
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(()); // a comment (keep-alive)
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            b"data" => {
                self.grow(value.len() + 1)?;
                self.data.push_str(&String::from_utf8_lossy(value));
                self.data.push('\n');
            }
            _ => {} // id, retry, and unknown fields
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<Event>) {
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the last line's `\n`
        let event = if event.is_empty() { "message".to_string() } else { event };
        out.push(Event { event, data });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<Event> {
        let mut parser = EventParser::default();
        let mut out = Vec::new();
        for c in chunks {
            parser.feed(c, &mut out).unwrap();
        }
        out
    }

    fn ev(event: &str, data: &str) -> Event {
        Event { event: event.into(), data: data.into() }
    }

    #[test]
    fn fields_comments_and_line_endings() {
        let text = b"\xEF\xBB\xBF: keep-alive\r\nevent: ping\rdata: {\"a\":1}\r\n\r\ndata:x\ndata\n\nid: 7\nretry: 10\n\nevent: e\n\n";
        let whole = parse(&[text]);
        assert_eq!(whole, vec![ev("ping", "{\"a\":1}"), ev("message", "x\n")]);
        // Split at every byte: the same events (a CR at a chunk's end, a BOM in pieces).
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(parse(&bytes), whole);
    }

    #[test]
    fn an_unfinished_event_is_not_dispatched() {
        assert_eq!(parse(&[b"data: a\n"]), vec![]);
        assert_eq!(parse(&[b"data: a\n", b"\n"]), vec![ev("message", "a")]);
    }

    #[test]
    fn a_line_over_the_limit_is_an_error() {
        let mut parser = EventParser::new(100);
        let mut out = Vec::new();
        assert_eq!(parser.feed(&[b'x'; 60], &mut out), Ok(0));
        assert_eq!(parser.feed(&[b'x'; 60], &mut out), Err(ParseError::TooLong { limit: 100 }));
        // Many data lines of one event count together.
        let mut parser = EventParser::new(100);
        let many = "data: 0123456789\n".repeat(20);
        assert!(parser.feed(many.as_bytes(), &mut out).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn lines_finished_are_counted() {
        let mut parser = EventParser::default();
        let mut out = Vec::new();
        assert_eq!(parser.feed(b"data: abc", &mut out), Ok(0));
        assert_eq!(parser.feed(b"def\n\ndata", &mut out), Ok(2));
        assert_eq!(out, vec![ev("message", "abcdef")]);
    }
}
