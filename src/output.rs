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
    pub color: bool,
}

impl Style {
    pub fn detect() -> Style {
        Style { color: color_enabled() }
    }

    pub fn bold(&self, text: &str) -> String {
        self.wrap("1", text)
    }

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

/// `1 entry`, `2 entries`: a count with its noun in the right number.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_never_split() {
        assert_eq!(super::field("a\tb\nc"), "a b c");
        assert_eq!(super::count(1, "entry", "entries"), "1 entry");
        assert_eq!(super::count(0, "entry", "entries"), "0 entries");
    }
}
