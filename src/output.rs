//! How programs write for people and for pipes: colour only on a terminal
//! and never with `NO_COLOR`; tab-separated fields that stay one per column.

use std::io::IsTerminal;

/// True when stdout is a terminal.
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// True when colour may be used on stdout (SPEC section 11).
pub fn color_enabled() -> bool {
    stdout_is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Bold and dim text, or plain when colour is off.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// Whether to colour.
    pub color: bool,
}

impl Style {
    /// Colour on a terminal, never with `NO_COLOR`.
    pub fn detect() -> Style {
        Style { color: color_enabled() }
    }

    /// `text` in bold, when colouring.
    pub fn bold(&self, text: &str) -> String {
        self.wrap("1", text)
    }

    /// `text` dimmed, when colouring.
    pub fn dim(&self, text: &str) -> String {
        self.wrap("2", text)
    }

    fn wrap(&self, code: &str, text: &str) -> String {
        if self.color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
    }
}

/// A value fit for one tab-separated field: tabs and line breaks become
/// spaces, so `cut -f` and `fzf` always see the same columns.
pub fn field(text: &str) -> String {
    text.chars().map(|c| if matches!(c, '\t' | '\n' | '\r') { ' ' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_never_split() {
        assert_eq!(super::field("a\tb\nc"), "a b c");
    }
}
