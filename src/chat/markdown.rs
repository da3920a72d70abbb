//! Markdown for the terminal: one block of a reply (a paragraph, a list, a
//! quote, a table, a heading) parsed with pulldown-cmark and laid out as
//! styled lines no wider than the terminal. Line breaks the model wrote are
//! kept; longer lines are wrapped at spaces (words wider than a line are
//! cut). Code inside fences is handled line by line by the caller.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use unicode_width::UnicodeWidthChar;

/// How a run of text looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Style {
    bold: bool,
    italic: bool,
    underline: bool,
    strike: bool,
    code: bool,
    dim: bool,
}

impl Style {
    /// The SGR sequence that turns this style on (after a reset).
    fn sgr(self) -> String {
        let mut codes = Vec::new();
        for (on, code) in [
            (self.bold, "1"),
            (self.dim, "2"),
            (self.italic, "3"),
            (self.underline, "4"),
            (self.strike, "9"),
            (self.code, "36"),
        ] {
            if on {
                codes.push(code);
            }
        }
        if codes.is_empty() { String::new() } else { format!("\x1b[{}m", codes.join(";")) }
    }
}

/// Styled characters of one line before wrapping.
type Cells = Vec<(char, Style)>;

/// A line being built: its cells and the prefixes of its first and
/// continuation rows (list markers, quote bars).
struct Pending {
    first: Cells,
    rest: Cells,
    cells: Cells,
}

/// Lays out one block; see the module doc.
struct Layout {
    width: usize,
    color: bool,
    out: Vec<String>,
    style: Vec<Style>,
    /// Per open list: the next number (ordered) or `None`.
    lists: Vec<Option<u64>>,
    quote: usize,
    line: Option<Pending>,
    link: Vec<String>,
    table: Option<Table>,
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<Cells>>,
    cell: Cells,
    head_rows: usize,
}

/// Render one block of Markdown as terminal lines (with SGR styles when
/// `color`), none wider than `width` columns.
pub fn render_block(text: &str, width: usize, color: bool) -> Vec<String> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut layout = Layout {
        width: width.max(10),
        color,
        out: Vec::new(),
        style: vec![Style::default()],
        lists: Vec::new(),
        quote: 0,
        line: None,
        link: Vec::new(),
        table: None,
    };
    for event in Parser::new_ext(text, options) {
        layout.event(event);
    }
    layout.flush();
    layout.out
}

impl Layout {
    fn current(&self) -> Style {
        self.style.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, change: impl Fn(&mut Style)) {
        let mut style = self.current();
        change(&mut style);
        self.style.push(style);
    }

    fn pop_style(&mut self) {
        if self.style.len() > 1 {
            self.style.pop();
        }
    }

    /// The prefix every row of a new line gets: quote bars and list indent.
    fn prefix(&self) -> Cells {
        let dim = Style { dim: true, ..Style::default() };
        let mut cells: Cells = Vec::new();
        for _ in 0..self.quote {
            cells.extend([('│', dim), (' ', Style::default())]);
        }
        for _ in 0..self.lists.len().saturating_sub(1) {
            cells.extend([(' ', Style::default()), (' ', Style::default()), (' ', Style::default())]);
        }
        cells
    }

    fn start_line(&mut self) {
        if self.line.is_none() {
            let prefix = self.prefix();
            self.line = Some(Pending { first: prefix.clone(), rest: prefix, cells: Vec::new() });
        }
    }

    fn text(&mut self, text: &str) {
        let style = self.current();
        if let Some(table) = &mut self.table {
            table.cell.extend(text.chars().map(|c| (c, style)));
            return;
        }
        self.start_line();
        if let Some(line) = &mut self.line {
            line.cells.extend(text.chars().map(|c| (c, style)));
        }
    }

    /// End the current line: wrap it into rows.
    fn flush(&mut self) {
        if let Some(line) = self.line.take() {
            let rows = wrap(&line.first, &line.rest, &line.cells, self.width);
            for row in rows {
                self.out.push(serialize(&row, self.color));
            }
        }
    }

    fn blank(&mut self) {
        self.flush();
        if self.out.last().is_some_and(|l| !l.is_empty()) {
            self.out.push(String::new());
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                // Text inside an indented or fenced code block keeps its lines.
                if self.current().code && t.contains('\n') {
                    let lines: Vec<&str> = t.trim_end_matches('\n').split('\n').collect();
                    for (i, l) in lines.iter().enumerate() {
                        if i > 0 {
                            self.flush();
                        }
                        self.text(l);
                    }
                } else {
                    self.text(&t);
                }
            }
            Event::Code(t) => {
                self.push_style(|s| s.code = true);
                self.text(&t);
                self.pop_style();
            }
            Event::Html(t) | Event::InlineHtml(t) => self.text(t.trim_end_matches('\n')),
            Event::SoftBreak | Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                let rule = "─".repeat(self.width.min(40));
                self.out.push(crate::output::Style::on_terminal(self.color).dim(&rule));
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::FootnoteReference(t) => self.text(&format!("[{t}]")),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.flush(),
            Tag::Heading { level, .. } => {
                self.blank();
                let underline = level == HeadingLevel::H1;
                self.push_style(|s| {
                    s.bold = true;
                    s.underline = underline;
                });
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote += 1;
                self.push_style(|s| s.italic = true);
            }
            Tag::CodeBlock(_) => {
                self.flush();
                self.push_style(|s| s.code = true);
            }
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                let prefix = self.prefix();
                let mut first = prefix.clone();
                first.extend(marker.chars().map(|c| (c, Style { bold: true, ..Style::default() })));
                let mut rest = prefix;
                rest.extend(std::iter::repeat_n((' ', Style::default()), marker.chars().count()));
                self.line = Some(Pending { first, rest, cells: Vec::new() });
            }
            Tag::Emphasis => self.push_style(|s| s.italic = true),
            Tag::Strong => self.push_style(|s| s.bold = true),
            Tag::Strikethrough => self.push_style(|s| s.strike = true),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.link.push(dest_url.to_string());
                self.push_style(|s| s.underline = true);
            }
            Tag::Table(_) => {
                self.flush();
                self.table = Some(Table::default());
            }
            Tag::TableHead => self.push_style(|s| s.bold = true),
            Tag::TableRow | Tag::TableCell => {
                if let Some(table) = &mut self.table
                    && matches!(tag, Tag::TableRow)
                {
                    table.rows.push(Vec::new());
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush(),
            TagEnd::Heading(_) => {
                self.pop_style();
                self.flush();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.pop_style();
            }
            TagEnd::CodeBlock => {
                self.flush();
                self.pop_style();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link | TagEnd::Image => {
                self.pop_style();
                // The target, unless the text already shows it.
                if let Some(url) = self.link.pop() {
                    let shown: String =
                        self.line.as_ref().map(|l| l.cells.iter().map(|c| c.0).collect()).unwrap_or_default();
                    if !url.is_empty() && !shown.ends_with(&url) {
                        self.push_style(|s| s.dim = true);
                        self.text(&format!(" ({url})"));
                        self.pop_style();
                    }
                }
            }
            TagEnd::TableHead => {
                self.pop_style();
                if let Some(table) = &mut self.table {
                    // A header without TableRow events: its cells are a row.
                    table.head_rows = table.rows.len();
                }
            }
            TagEnd::TableCell => {
                if let Some(table) = &mut self.table {
                    let cell = std::mem::take(&mut table.cell);
                    if table.rows.is_empty() {
                        table.rows.push(Vec::new());
                    }
                    if let Some(row) = table.rows.last_mut() {
                        row.push(cell);
                    }
                }
            }
            TagEnd::TableRow => {}
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.table_lines(table);
                }
            }
            _ => {}
        }
    }

    /// Columns padded to line up, ` │ ` between them, a rule under the
    /// header; a table too wide for the terminal is wrapped row by row.
    fn table_lines(&mut self, table: Table) {
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for row in &table.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(cells_width(cell));
            }
        }
        let dim = Style { dim: true, ..Style::default() };
        let head_rows = table.head_rows.max(1);
        for (r, row) in table.rows.iter().enumerate() {
            let mut line: Cells = Vec::new();
            for (i, w) in widths.iter().enumerate() {
                if i > 0 {
                    line.extend([(' ', dim), ('│', dim), (' ', dim)]);
                }
                let cell = row.get(i).cloned().unwrap_or_default();
                let pad = w - cells_width(&cell);
                line.extend(cell);
                if i + 1 < widths.len() {
                    line.extend(std::iter::repeat_n((' ', Style::default()), pad));
                }
            }
            let prefix = self.prefix();
            for row in wrap(&prefix, &prefix, &line, self.width) {
                self.out.push(serialize(&row, self.color));
            }
            if r + 1 == head_rows {
                let rule: Cells = widths
                    .iter()
                    .enumerate()
                    .flat_map(|(i, w)| {
                        let joint = if i > 0 { vec![('─', dim), ('┼', dim), ('─', dim)] } else { Vec::new() };
                        joint.into_iter().chain(std::iter::repeat_n(('─', dim), *w))
                    })
                    .collect();
                for row in wrap(&prefix, &prefix, &rule, self.width) {
                    self.out.push(serialize(&row, self.color));
                }
            }
        }
    }
}

fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

fn cells_width(cells: &[(char, Style)]) -> usize {
    cells.iter().map(|(c, _)| char_width(*c)).sum()
}

/// Wrap `cells` into rows of at most `width` columns, each starting with a
/// prefix (`first` for the first row, `rest` after): at the last space that
/// fits, else (a word wider than the row) wherever the row is full.
fn wrap(first: &[(char, Style)], rest: &[(char, Style)], cells: &[(char, Style)], width: usize) -> Vec<Cells> {
    let mut rows = Vec::new();
    let mut start = 0;
    let mut prefix = first;
    loop {
        let room = width.saturating_sub(cells_width(prefix)).max(1);
        let mut used = 0;
        let mut end = start;
        let mut last_space = None;
        while end < cells.len() {
            let w = char_width(cells[end].0);
            if used + w > room {
                break;
            }
            if cells[end].0 == ' ' {
                last_space = Some(end);
            }
            used += w;
            end += 1;
        }
        let (cut, next) = if end >= cells.len() {
            (cells.len(), cells.len())
        } else if cells[end].0 == ' ' {
            (end, end + 1)
        } else if let Some(space) = last_space.filter(|s| *s > start) {
            (space, space + 1)
        } else {
            (end.max(start + 1), end.max(start + 1))
        };
        let mut row: Cells = prefix.to_vec();
        row.extend_from_slice(&cells[start..cut.min(cells.len())]);
        while row.last().is_some_and(|c| c.0 == ' ') && row.len() > prefix.len() {
            row.pop();
        }
        rows.push(row);
        start = next;
        prefix = rest;
        if start >= cells.len() {
            break;
        }
    }
    rows
}

/// One row as text, with SGR sequences where the style changes.
fn serialize(row: &[(char, Style)], color: bool) -> String {
    let mut out = String::new();
    let mut current = Style::default();
    for (c, style) in row {
        if color && *style != current {
            out.push_str("\x1b[0m");
            out.push_str(&style.sgr());
            current = *style;
        }
        out.push(*c);
    }
    if color && current != Style::default() {
        out.push_str("\x1b[0m");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str, width: usize) -> Vec<String> {
        render_block(text, width, false)
    }

    #[test]
    fn paragraphs_wrap_at_spaces_and_keep_the_models_line_breaks() {
        assert_eq!(plain("one two three four five\nsix", 10), ["one two", "three four", "five", "six"]);
        assert_eq!(plain("abcdefghijklmno", 10), ["abcdefghij", "klmno"]);
    }

    #[test]
    fn inline_styles_and_links() {
        let lines = render_block("a *it* **b** `c` ~~d~~ [e](http://x)", 80, true);
        let line = &lines[0];
        assert!(line.contains("\x1b[3mit"), "{line:?}");
        assert!(line.contains("\x1b[1mb"), "{line:?}");
        assert!(line.contains("\x1b[36mc"), "{line:?}");
        assert!(line.contains("\x1b[9md"), "{line:?}");
        assert!(line.contains("\x1b[4me") && line.contains("\x1b[2m (http://x)"), "{line:?}");
        assert_eq!(plain("a *it* **b** `c` [e](http://x)", 80), ["a it b c e (http://x)"]);
    }

    #[test]
    fn lists_quotes_and_headings() {
        assert_eq!(plain("1. first item here\n2. second", 12), ["1. first", "   item here", "2. second"]);
        assert_eq!(plain("- a\n  - b", 20), ["• a", "   • b"]);
        assert_eq!(plain("> quoted text that wraps", 12), ["│ quoted", "│ text that", "│ wraps"]);
        assert_eq!(plain("# Title", 20), ["Title"]);
    }

    #[test]
    fn tables_line_up() {
        let lines = plain("| a | long header |\n|---|---|\n| wide cell | 2 |", 80);
        assert_eq!(lines, ["a         │ long header", "──────────┼────────────", "wide cell │ 2"]);
    }
}
