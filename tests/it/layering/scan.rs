//! Reading a source file for the layering test: which top-level modules of
//! the crate its code names, through `crate::` paths (groups too),
//! `super::` paths that climb to the crate root, and so `pub use`
//! re-exports of either. Comments and string literals are left out, so a
//! doc link or a message naming a module is no edge.

/// One module a file's code names: the line, and the top-level module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub line: usize,
    pub module: String,
}

/// `text` with comments, strings and char literals blanked (newlines kept,
/// so line numbers stay true).
pub fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('"') | Some('#')) && !ident_char(chars.get(i.wrapping_sub(1))) {
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let end: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let body_start = i + 2 + hashes;
            let rest: String = chars[body_start..].iter().collect();
            let len = rest.find(&end).map_or(rest.chars().count(), |at| rest[..at].chars().count() + end.len());
            out.extend(chars[i..(body_start + len).min(chars.len())].iter().map(|&k| blank(k)));
            i = body_start + len;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                let step = if chars[i] == '\\' { 2 } else { 1 };
                out.extend(chars[i..(i + step).min(chars.len())].iter().map(|&k| blank(k)));
                i += step;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && is_char_literal(&chars[i..]) {
            let len = char_literal_len(&chars[i..]);
            out.extend(std::iter::repeat_n(' ', len));
            i += len;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_char(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
}

/// `'x'`, `'\n'`, `'\u{1b}'`, `'"'` — not a lifetime (`'a`).
fn is_char_literal(s: &[char]) -> bool {
    match s.get(1) {
        Some('\\') => true,
        Some(_) => s.get(2) == Some(&'\''),
        None => false,
    }
}

fn char_literal_len(s: &[char]) -> usize {
    s[1..].iter().position(|&c| c == '\'').map_or(s.len(), |p| p + 2)
}

/// The top-level modules named by the code of a file whose module path is
/// `module` (`["tools", "fs", "write"]` for `src/tools/fs/write.rs`).
pub fn named(text: &str, module: &[String]) -> Vec<Named> {
    let code = code_only(text);
    let mut found = Vec::new();
    // Inline `mod NAME {` blocks: (name, brace depth outside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut line = 1;
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            '\n' => line += 1,
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            _ => {}
        }
        let boundary = !ident_char(i.checked_sub(1).and_then(|p| bytes.get(p)));
        if !boundary || !matches!(c, 'c' | 's' | 'm') {
            i += 1;
            continue;
        }
        let rest: String = bytes[i..bytes.len().min(i + 200)].iter().collect();
        if let Some(name) = inline_mod(&rest) {
            inline.push((name, depth));
        }
        if let Some(path) = rest.strip_prefix("crate::") {
            found.extend(tops(path).into_iter().map(|m| Named { line, module: m }));
            i += "crate::".len();
            continue;
        }
        if rest.starts_with("super::") {
            let climbed = count_supers(&rest);
            let mut path: Vec<String> = module.to_vec();
            path.extend(inline.iter().map(|(n, _)| n.clone()));
            let after = &rest["super::".len() * climbed..];
            if climbed >= path.len() {
                found.extend(tops(after).into_iter().map(|m| Named { line, module: m }));
            }
            i += "super::".len() * climbed;
            continue;
        }
        i += 1;
    }
    found
}

/// How many `super::` in a row `text` starts with.
fn count_supers(text: &str) -> usize {
    let mut n = 0;
    let mut rest = text;
    while let Some(r) = rest.strip_prefix("super::") {
        n += 1;
        rest = r;
    }
    n
}

/// `mod NAME {` (with `pub`/`pub(crate)` before it or not) at the start.
fn inline_mod(text: &str) -> Option<String> {
    let rest = text.strip_prefix("mod ")?;
    let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    let after = rest[name.len()..].trim_start();
    (!name.is_empty() && after.starts_with('{')).then_some(name)
}

/// The first segment after a path's root: `store::Entry` → `store`;
/// `{cli, provider::Message}` → `cli`, `provider`.
fn tops(text: &str) -> Vec<String> {
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
    let Some(group) = text.strip_prefix('{') else {
        let one = ident(text);
        return if one.is_empty() || one == "self" { Vec::new() } else { vec![one] };
    };
    let mut out = Vec::new();
    let (mut level, mut start) = (0usize, 0usize);
    for (at, c) in group.char_indices() {
        match c {
            '{' => level += 1,
            '}' if level == 0 => {
                out.push(ident(group[start..at].trim_start()));
                break;
            }
            '}' => level -= 1,
            ',' if level == 0 => {
                out.push(ident(group[start..at].trim_start()));
                start = at + 1;
            }
            _ => {}
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}
