//! Showing a streamed reply on a terminal: text appears as it arrives, and
//! each line is redrawn with light Markdown styling (headings, bold, inline
//! code, code blocks, bullets) once it is complete. Plain text when piped or
//! with `NO_COLOR`. Also the spinner shown until the first token.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Renders a stream of text, line by line.
pub struct MarkdownStream {
    color: bool,
    /// Write `\r\n` for a newline (the terminal is in raw mode during turns).
    raw: bool,
    width: usize,
    line: String,
    in_code: bool,
}

impl MarkdownStream {
    /// A renderer: `color` styles finished lines, `raw` passes text through untouched, `width` is the terminal's.
    pub fn new(color: bool, raw: bool, width: usize) -> MarkdownStream {
        MarkdownStream { color, raw, width: width.max(20), line: String::new(), in_code: false }
    }

    /// Take a piece of text; write what can be shown now.
    pub fn push(&mut self, text: &str, out: &mut dyn Write) -> std::io::Result<()> {
        let mut rest = text;
        while let Some(nl) = rest.find('\n') {
            let piece = &rest[..nl];
            out.write_all(piece.as_bytes())?;
            self.line.push_str(piece);
            self.end_line(out)?;
            rest = &rest[nl + 1..];
        }
        out.write_all(rest.as_bytes())?;
        self.line.push_str(rest);
        out.flush()
    }

    /// End the reply: style the last line and end it.
    pub fn finish(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        if !self.line.is_empty() {
            self.end_line(out)?;
        }
        self.in_code = false;
        out.flush()
    }

    fn end_line(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        let line = std::mem::take(&mut self.line);
        if self.color {
            let styled = self.style(&line);
            // Redraw only a line that did not wrap: the cursor is still on it.
            if styled != line && line.chars().count() < self.width {
                out.write_all(b"\r\x1b[2K")?;
                out.write_all(styled.as_bytes())?;
            }
        } else if line.trim_start().starts_with("```") {
            self.in_code = !self.in_code;
        }
        out.write_all(if self.raw { b"\r\n" } else { b"\n" })
    }

    /// The styled form of one complete line.
    pub fn style(&mut self, line: &str) -> String {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            self.in_code = !self.in_code;
            return format!("\x1b[2m{line}\x1b[0m");
        }
        if self.in_code {
            return format!("\x1b[36m{line}\x1b[0m");
        }
        if trimmed.starts_with('#') {
            let title = trimmed.trim_start_matches('#').trim_start();
            return format!("\x1b[1m{title}\x1b[0m");
        }
        let indent = &line[..line.len() - trimmed.len()];
        match trimmed.strip_prefix("- ").or_else(|| trimmed.strip_prefix("* ")) {
            Some(item) => format!("{indent}• {}", inline(item)),
            None => inline(line),
        }
    }
}

/// `**bold**` and `` `code` `` inside a line.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    loop {
        let bold = rest.find("**");
        let code = rest.find('`');
        let (at, marker, style) = match (bold, code) {
            (Some(b), Some(c)) if c < b => (c, "`", "\x1b[36m"),
            (Some(b), _) => (b, "**", "\x1b[1m"),
            (None, Some(c)) => (c, "`", "\x1b[36m"),
            (None, None) => break,
        };
        let after = &rest[at + marker.len()..];
        let Some(end) = after.find(marker) else { break };
        out.push_str(&rest[..at]);
        out.push_str(style);
        out.push_str(&after[..end]);
        out.push_str("\x1b[0m");
        rest = &after[end + marker.len()..];
    }
    out.push_str(rest);
    out
}

/// A spinner drawn on the current line until stopped.
pub struct Spinner {
    active: Arc<AtomicBool>,
    out: Arc<Mutex<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    /// Start drawing; `lock` serialises terminal writes with the caller.
    pub fn start(lock: Arc<Mutex<()>>) -> Spinner {
        let active = Arc::new(AtomicBool::new(true));
        let flag = active.clone();
        let out = lock.clone();
        let thread = std::thread::spawn(move || {
            let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let mut i = 0;
            while flag.load(Ordering::SeqCst) {
                if let Ok(_guard) = out.lock() {
                    if !flag.load(Ordering::SeqCst) {
                        break;
                    }
                    let mut stdout = std::io::stdout().lock();
                    let _ = write!(stdout, "\r\x1b[2m{}\x1b[0m ", frames[i % frames.len()]);
                    let _ = stdout.flush();
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(80));
            }
        });
        Spinner { active, out: lock, thread: Some(thread) }
    }

    /// Stop and erase the spinner.
    pub fn stop(&mut self) {
        if !self.active.swap(false, Ordering::SeqCst) {
            return;
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Ok(_guard) = self.out.lock() {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(b"\r\x1b[2K");
            let _ = stdout.flush();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(color: bool, pieces: &[&str]) -> String {
        let mut md = MarkdownStream::new(color, false, 80);
        let mut out = Vec::new();
        for p in pieces {
            md.push(p, &mut out).unwrap();
        }
        md.finish(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plain_is_exactly_the_text() {
        assert_eq!(render(false, &["# Ti", "tle\n- **a** `b`\n"]), "# Title\n- **a** `b`\n");
    }

    #[test]
    fn lines_are_restyled_when_complete() {
        let out = render(true, &["# Ti", "tle\n- **a** `b`\nplain\n"]);
        assert!(out.contains("\r\x1b[2K\x1b[1mTitle\x1b[0m\n"), "{out:?}");
        assert!(out.contains("• \x1b[1ma\x1b[0m \x1b[36mb\x1b[0m\n"), "{out:?}");
        assert!(out.ends_with("plain\n"), "{out:?}");
    }

    #[test]
    fn code_blocks_are_kept_verbatim() {
        let mut md = MarkdownStream::new(true, false, 80);
        assert!(md.style("```rust").contains("```rust"));
        assert_eq!(md.style("# not a heading"), "\x1b[36m# not a heading\x1b[0m");
        md.style("```");
        assert_eq!(md.style("# heading"), "\x1b[1mheading\x1b[0m");
    }
}
