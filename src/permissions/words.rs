//! The words of a parsed command line as bash will see them: quotes
//! removed and escapes decoded where the value is known before the line
//! runs, the source text kept where it is not (`$HOME`, `"$(…)"`). Also the
//! checks that tree-sitter-bash read a token as bash will (the extent of
//! `$'…'` strings, the end of a here-document), since a token bash ends
//! elsewhere could hide a command from the judge.

use tree_sitter::Node;

/// One word of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The value, quotes removed, when it is known; else the source text.
    pub text: String,
    /// The value is known before the line runs: no expansion in it, and no
    /// unquoted `*?[` or brace that bash would expand.
    pub fixed: bool,
}

impl Word {
    /// A word whose value is known.
    pub fn fixed(text: impl Into<String>) -> Word {
        Word { text: text.into(), fixed: true }
    }
}

/// A word whose value is made when the line runs: its source text, cut.
fn made_at_run_time(raw: &str) -> Word {
    let text = match raw.char_indices().nth(DYNAMIC_KEPT) {
        Some((cut, _)) => format!("{}…", &raw[..cut]),
        None => raw.to_string(),
    };
    Word { text, fixed: false }
}

/// The source text of a node.
pub fn source<'a>(node: &Node<'_>, src: &'a str) -> &'a str {
    src.get(node.byte_range()).unwrap_or("")
}

/// How much of a word made at run time is kept (its source text, for deny
/// rules to match); a longer one ends in `…`, so it cannot end in text
/// chosen to match a rule.
const DYNAMIC_KEPT: usize = 4096;

/// The word a node stands for (`word`, `string`, `raw_string`,
/// `concatenation`, …).
pub fn word(node: &Node<'_>, src: &str) -> Word {
    let raw = source(node, src);
    let dynamic = || made_at_run_time(raw);
    match node.kind() {
        "word" => unquoted(raw),
        "command_name" => match node.named_child(0) {
            Some(inner) => word(&inner, src),
            None => dynamic(),
        },
        "raw_string" => Word::fixed(raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')).unwrap_or(raw)),
        "string" => double_quoted(node, raw).unwrap_or_else(dynamic),
        "ansi_c_string" => match ansi_c(raw) {
            Some(text) => Word::fixed(text),
            None => dynamic(),
        },
        "translated_string" => match node.named_child(0) {
            Some(inner) if inner.kind() == "string" => {
                double_quoted(&inner, source(&inner, src)).unwrap_or_else(dynamic)
            }
            _ => dynamic(),
        },
        "number" if node.named_child_count() == 0 => Word::fixed(raw),
        "concatenation" => concatenation(node, src).unwrap_or_else(dynamic),
        _ => dynamic(),
    }
}

/// The parts of a concatenation joined, when each part is known and they
/// cover the whole word.
fn concatenation(node: &Node<'_>, src: &str) -> Option<Word> {
    let mut text = String::new();
    let mut at = node.start_byte();
    let mut cursor = node.walk();
    for part in node.children(&mut cursor) {
        if part.start_byte() != at {
            return None;
        }
        at = part.end_byte();
        let piece = word(&part, src);
        if !piece.fixed {
            return None;
        }
        text.push_str(&piece.text);
    }
    (at == node.end_byte()).then(|| Word::fixed(text))
}

/// An unquoted word: `\x` is `x`, a backslash-newline is nothing. Not
/// fixed when bash would expand it (a glob, a brace, a `$`).
fn unquoted(raw: &str) -> Word {
    let mut text = String::with_capacity(raw.len());
    let mut fixed = true;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => text.push(next),
            },
            '*' | '?' | '[' | '{' | '$' | '`' => {
                fixed = false;
                text.push(c);
            }
            '~' if text.is_empty() => {
                fixed = false;
                text.push(c);
            }
            c => text.push(c),
        }
    }
    if fixed { Word::fixed(text) } else { made_at_run_time(raw) }
}

/// A `"…"` string with only literal content: `\"`, `\\`, `` \` ``, `\$`
/// and backslash-newline decoded, other backslashes kept.
fn double_quoted(node: &Node<'_>, raw: &str) -> Option<Word> {
    let mut cursor = node.walk();
    if node.named_children(&mut cursor).any(|c| c.kind() != "string_content") {
        return None;
    }
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    let mut text = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('"' | '\\' | '`' | '$') => text.extend(chars.next()),
                Some('\n') => {
                    chars.next();
                }
                _ => text.push('\\'),
            }
        } else {
            text.push(c);
        }
    }
    Some(Word::fixed(text))
}

/// The value of a `$'…'` string, when the token is one whole string as
/// bash reads it (see [`ansi_c_end`]).
fn ansi_c(raw: &str) -> Option<String> {
    let body = raw.strip_prefix("$'")?;
    if ansi_c_end(raw)? != raw.len() {
        return None;
    }
    let body = body.strip_suffix('\'')?;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else { break };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' => out.extend(number(&mut chars, 16, 2)),
            'u' => out.extend(number(&mut chars, 16, 4)),
            'U' => out.extend(number(&mut chars, 16, 8)),
            '0'..='7' => {
                let mut value = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    let Some(d) = chars.peek().and_then(|c| c.to_digit(8)) else { break };
                    value = value * 8 + d;
                    chars.next();
                }
                out.extend(char::from_u32(value));
            }
            'c' => out.extend(chars.next().map(|c| char::from((c as u8) & 0x1f))),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

/// Up to `max` digits in `radix`, as a character.
fn number(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, radix: u32, max: usize) -> Option<char> {
    let mut value = 0u32;
    let mut read = 0;
    while read < max {
        let Some(d) = chars.peek().and_then(|c| c.to_digit(radix)) else { break };
        value = value * radix + d;
        chars.next();
        read += 1;
    }
    if read == 0 { None } else { char::from_u32(value) }
}

/// Where bash ends a `$'…'` string that starts `text`: after the first
/// `'` not escaped by a backslash. `None` when it does not end.
pub fn ansi_c_end(text: &str) -> Option<usize> {
    let body = text.strip_prefix("$'")?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '\'' => return Some(2 + i + 1),
            _ => {}
        }
    }
    None
}

/// Whether a here-document ends where bash ends it: its delimiter is the
/// word after `<<` with quotes removed, and the body holds no line that is
/// the delimiter (leading tabs removed for `<<-`), or bash would have
/// stopped there and read what follows as commands.
pub fn heredoc_agrees(redirect: &Node<'_>, src: &str) -> bool {
    let mut cursor = redirect.walk();
    let children: Vec<Node<'_>> = redirect.children(&mut cursor).collect();
    let strip_tabs = children.iter().any(|c| c.kind() == "<<-");
    let Some(start) = children.iter().find(|c| c.kind() == "heredoc_start") else { return false };
    let delimiter = delimiter_of(source(start, src));
    // Parts of the delimiter word that tree-sitter split off (`<<'E'"OF"`).
    if children.iter().any(|c| c.start_byte() == start.end_byte() && c.kind() != "heredoc_body" && c.is_named()) {
        return false;
    }
    let end = children.iter().find(|c| c.kind() == "heredoc_end").map(|e| source(e, src));
    if end.map(|e| if strip_tabs { e.trim_start_matches('\t') } else { e }) != Some(delimiter.as_str()) {
        return false;
    }
    let body = children.iter().find(|c| c.kind() == "heredoc_body").map_or("", |b| source(b, src));
    !body.lines().any(|line| (if strip_tabs { line.trim_start_matches('\t') } else { line }) == delimiter)
}

/// A here-document's delimiter word with its quotes removed.
fn delimiter_of(word: &str) -> String {
    let mut out = String::new();
    let mut quote = None;
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '\\') | (Some('"'), '\\') => out.extend(chars.next()),
            (_, c) => out.push(c),
        }
    }
    out
}

/// The text inside a `` `…` `` substitution as bash reads it before
/// parsing it: `` \` ``, `\\` and `\$` lose their backslash.
pub fn backtick_body(raw: &str) -> Option<String> {
    let inner = raw.strip_prefix('`')?.strip_suffix('`')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.peek(), Some('`' | '\\' | '$')) {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    Some(out)
}
