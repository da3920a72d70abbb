//! Showing a streamed reply on a terminal. Text appears as it arrives;
//! when a line is complete, its raw echo is erased and the block it belongs
//! to (a paragraph, list, quote, table: up to the next blank line) is drawn
//! again from a real Markdown parse ([`super::markdown`]), styled and wrapped
//! to the terminal's width, so a table lines up as its rows arrive. Code
//! fences are shown line by line. Plain text when piped or with `NO_COLOR`.
//! Also the spinner shown until the first token.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use unicode_width::UnicodeWidthChar;

use super::markdown::render_block;
use crate::output::Style;

/// Renders a stream of text, line by line.
pub struct MarkdownStream {
    color: bool,
    /// Write `\r\n` for a newline (the terminal is in raw mode during turns).
    raw: bool,
    width: usize,
    /// Rows a block may take and still be redrawn (the cursor cannot move
    /// above the top of the screen).
    height: usize,
    /// The current line so far, echoed as it arrived.
    line: String,
    /// The complete lines of the block being shown, and the rows it took.
    block: String,
    block_rows: usize,
    /// The open code fence (its marker), if any.
    fence: Option<String>,
}

impl MarkdownStream {
    /// A renderer: `color` styles and wraps finished lines (else the text
    /// passes through untouched), `raw` writes `\r\n`, `width` is the terminal's.
    pub fn new(color: bool, raw: bool, width: usize) -> MarkdownStream {
        MarkdownStream {
            color,
            raw,
            width: width.max(20),
            height: 24,
            line: String::new(),
            block: String::new(),
            block_rows: 0,
            fence: None,
        }
    }

    /// The terminal's height in rows.
    pub fn with_height(mut self, rows: usize) -> MarkdownStream {
        self.height = rows.max(4);
        self
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

    /// End the reply: show the last line and end it.
    pub fn finish(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        if !self.line.is_empty() {
            self.end_line(out)?;
        }
        self.block.clear();
        self.block_rows = 0;
        self.fence = None;
        out.flush()
    }

    fn newline(&self) -> &'static [u8] {
        if self.raw { b"\r\n" } else { b"\n" }
    }

    fn end_line(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        let line = std::mem::take(&mut self.line);
        if !self.color {
            return out.write_all(self.newline());
        }
        // Erase the raw echo (the terminal may have wrapped it).
        let echoed = rows_of(&line, self.width);
        out.write_all(b"\r")?;
        if echoed > 1 {
            write!(out, "\x1b[{}A", echoed - 1)?;
        }
        out.write_all(b"\x1b[J")?;
        let trimmed = line.trim_start();
        let lines: Vec<String> = if let Some(fence) = &self.fence {
            if closes(trimmed, fence) {
                self.fence = None;
                vec![Style::on_terminal(true).dim(&line)]
            } else {
                hard_wrap(&line, self.width).into_iter().map(|l| Style::on_terminal(true).cyan(&l)).collect()
            }
        } else if let Some(fence) = opens(&line) {
            self.commit();
            self.fence = Some(fence);
            vec![Style::on_terminal(true).dim(&line)]
        } else if trimmed.is_empty() {
            self.commit();
            vec![String::new()]
        } else {
            // Redraw the block with this line added.
            if self.block_rows > 0 {
                write!(out, "\x1b[{}A\r\x1b[J", self.block_rows)?;
            }
            self.block.push_str(&line);
            self.block.push('\n');
            let lines = render_block(&self.block, self.width, true);
            self.block_rows = lines.len();
            if self.block_rows + 1 >= self.height {
                self.commit();
            }
            lines
        };
        for l in lines {
            out.write_all(l.as_bytes())?;
            out.write_all(self.newline())?;
        }
        Ok(())
    }

    /// The block on screen stays as it is; the next line starts a new one.
    fn commit(&mut self) {
        self.block.clear();
        self.block_rows = 0;
    }
}

/// Render a whole text at once, as the stream would show it (the replay of
/// a resumed session): styled lines, each ending in `\n`.
pub fn render_text(text: &str, width: usize, color: bool) -> String {
    if !color {
        let mut plain = text.trim_end_matches('\n').to_string();
        plain.push('\n');
        return plain;
    }
    let mut md = MarkdownStream::new(true, false, width).with_height(usize::MAX / 2);
    let mut out = Vec::new();
    let _ = md.push(text, &mut out);
    let _ = md.finish(&mut out);
    // Nothing was echoed before: keep only what was drawn, not the erasing.
    let text = String::from_utf8_lossy(&out).into_owned();
    strip_cursor_moves(&text)
}

/// Remove the cursor movements and erasures a stream writes, keeping the
/// final lines (used when the text was never echoed raw).
fn strip_cursor_moves(text: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' if chars.peek() == Some(&'[') => {
                chars.next();
                let mut seq = String::new();
                while let Some(&n) = chars.peek() {
                    chars.next();
                    seq.push(n);
                    if n.is_ascii_alphabetic() {
                        break;
                    }
                }
                match seq.chars().last() {
                    Some('A') => {
                        let n: usize = seq[..seq.len() - 1].parse().unwrap_or(1);
                        for _ in 0..n {
                            lines.pop();
                        }
                        current.clear();
                    }
                    Some('J') => current.clear(),
                    _ => {
                        current.push_str("\x1b[");
                        current.push_str(&seq);
                    }
                }
            }
            '\r' => current.clear(),
            '\n' => lines.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// The rows `text` takes when a terminal `width` columns wide wraps it.
fn rows_of(text: &str, width: usize) -> usize {
    let (mut rows, mut col) = (1, 0);
    for c in text.chars() {
        let w = if c == '\t' { 8 - col % 8 } else { c.width().unwrap_or(0) };
        if col + w > width {
            rows += 1;
            col = w;
        } else {
            col += w;
        }
    }
    rows
}

/// A code line cut into rows of `width` columns.
fn hard_wrap(line: &str, width: usize) -> Vec<String> {
    let mut rows = vec![String::new()];
    let mut col = 0;
    for c in line.chars() {
        let w = if c == '\t' { 4 } else { c.width().unwrap_or(0) };
        if col + w > width {
            rows.push(String::new());
            col = 0;
        }
        if let Some(row) = rows.last_mut() {
            if c == '\t' {
                row.push_str("    ");
            } else {
                row.push(c);
            }
        }
        col += w;
    }
    rows
}

/// The fence a line opens (```` ``` ```` or `~~~`, up to 3 spaces in), if any.
fn opens(line: &str) -> Option<String> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    for mark in ['`', '~'] {
        let n = rest.chars().take_while(|c| *c == mark).count();
        if n >= 3 {
            return Some(std::iter::repeat_n(mark, n).collect());
        }
    }
    None
}

/// Whether `trimmed` closes the fence `fence`.
fn closes(trimmed: &str, fence: &str) -> bool {
    let mark = fence.chars().next().unwrap_or('`');
    let n = trimmed.chars().take_while(|c| *c == mark).count();
    n >= fence.chars().count() && trimmed[n..].trim().is_empty()
}

/// A spinner drawn on the current line until stopped: a timer task on
/// the runtime, not a thread.
pub struct Spinner {
    active: Arc<AtomicBool>,
    out: Arc<Mutex<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// Time between two frames.
const FRAME: Duration = Duration::from_millis(80);

impl Spinner {
    /// Start drawing (inside the runtime); `lock` serialises terminal
    /// writes with the caller.
    pub fn start(lock: Arc<Mutex<()>>) -> Spinner {
        let active = Arc::new(AtomicBool::new(true));
        let flag = active.clone();
        let out = lock.clone();
        let task = tokio::spawn(async move {
            let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let mut ticks = tokio::time::interval(FRAME);
            for i in 0.. {
                ticks.tick().await;
                let Ok(_guard) = out.lock() else { return };
                // Checked under the lock: once `stop` holds it, no frame follows.
                if !flag.load(Ordering::SeqCst) {
                    return;
                }
                let mut stdout = std::io::stdout().lock();
                let frame = Style::on_terminal(true).dim(&frames[i % frames.len()].to_string());
                let _ = write!(stdout, "\r{frame} ");
                let _ = stdout.flush();
            }
        });
        Spinner { active, out: lock, task: Some(task) }
    }

    /// Stop and erase the spinner.
    pub fn stop(&mut self) {
        if !self.active.swap(false, Ordering::SeqCst) {
            return;
        }
        if let Some(task) = self.task.take() {
            task.abort();
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

    fn render(color: bool, width: usize, pieces: &[&str]) -> String {
        let mut md = MarkdownStream::new(color, false, width);
        let mut out = Vec::new();
        for p in pieces {
            md.push(p, &mut out).unwrap();
        }
        md.finish(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plain_is_exactly_the_text() {
        assert_eq!(render(false, 80, &["# Ti", "tle\n- **a** `b`\n"]), "# Title\n- **a** `b`\n");
    }

    #[test]
    fn a_finished_line_is_erased_and_drawn_styled() {
        let out = render(true, 80, &["# Ti", "tle\n- **a** `b`\n"]);
        assert!(out.starts_with("# Title\r\x1b[J"), "the raw echo, then its erasure: {out:?}");
        assert!(out.contains("\r\x1b[J\x1b[0m\x1b[1;4mTitle\x1b[0m\n"), "{out:?}");
        assert!(out.contains("\x1b[1m• a\x1b[0m \x1b[0m\x1b[36mb\x1b[0m\n"), "{out:?}");
    }

    #[test]
    fn a_long_line_is_erased_over_the_rows_it_wrapped_to_and_rewrapped() {
        let long = "word ".repeat(10); // 50 columns on a 20-column terminal: 3 rows
        let out = render(true, 20, &[&long, "\n"]);
        assert!(out.contains("\r\x1b[2A\x1b[J"), "{out:?}");
        let shown = strip_cursor_moves(&out[long.len()..]);
        assert_eq!(shown, "word word word word\nword word word word\nword word\n");
    }

    #[test]
    fn a_block_is_redrawn_as_it_grows_and_code_is_kept() {
        let out = render_text("| a | b |\n|---|---|\n| long cell | 2 |\n\n```\n# not a heading\n```\nafter", 80, true);
        let plain: String = strip_sgr(&out);
        assert_eq!(plain, "a         │ b\n──────────┼──\nlong cell │ 2\n\n```\n# not a heading\n```\nafter\n");
    }

    #[test]
    fn rows_follow_the_terminal_wrap() {
        assert_eq!(rows_of("", 10), 1);
        assert_eq!(rows_of(&"x".repeat(10), 10), 1);
        assert_eq!(rows_of(&"x".repeat(11), 10), 2);
        assert_eq!(rows_of("日本語日本", 9), 2, "a wide character that does not fit moves to the next row");
    }

    fn strip_sgr(text: &str) -> String {
        regex::Regex::new("\x1b\\[[0-9;]*m").unwrap().replace_all(text, "").into_owned()
    }
}
