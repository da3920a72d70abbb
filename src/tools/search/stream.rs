//! One file searched the way ripgrep searches it (issue 31, item 15): by
//! `grep-searcher` over a fixed buffer, a chunk at a time, with the regex
//! of `grep-regex`, so what a search holds is bounded by a line and the
//! results kept, never by the file: a sparse 64 GB file, or a file under
//! `/proc` that never ends, used to be read whole into memory first. A NUL
//! byte marks the file binary and ends its search; only the first `keep`
//! matching lines (and their context) are kept, the rest only counted.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};

use super::super::fs::open;

/// Longest line shown in a `grep` result.
const LINE_CHARS: usize = 300;

/// The longest line the searcher holds (its buffer grows to a line): a
/// file with a longer one is not searched rather than read into memory.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The matching lines of one file: (line number, text, is a match).
pub type Hits = Vec<(usize, String, bool)>;

/// What one file's search found: the lines kept and how many matched.
#[derive(Debug, Default)]
pub struct Found {
    /// The first matches (at most `keep`) and their context lines.
    pub hits: Hits,
    /// Every matching line, kept or not.
    pub matches: usize,
}

/// The regex as the searcher wants it: lines end at `\n`, which a match
/// never crosses.
pub fn matcher(pattern: &str, ignore_case: bool) -> Result<RegexMatcher, String> {
    RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| e.to_string())
}

/// A searcher for `context` lines around each match.
pub fn searcher(context: usize) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(b'\0'))
        .heap_limit(Some(MAX_LINE_BYTES))
        .build()
}

/// Search the regular file at `real` (opened following no link); `None`
/// for a binary file, one that cannot be read, or no match.
pub fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    real: &Path,
    keep: usize,
    stop: &AtomicBool,
) -> Option<Found> {
    let (file, _) = open::open_regular(real).ok()?;
    let mut sink = Collect { found: Found::default(), keep, binary: false, stop };
    searcher.search_file(matcher, &file, &mut sink).ok()?;
    (!sink.binary && sink.found.matches > 0).then_some(sink.found)
}

/// The sink that keeps the first `keep` matches and counts the rest.
struct Collect<'a> {
    found: Found,
    keep: usize,
    binary: bool,
    stop: &'a AtomicBool,
}

impl Collect<'_> {
    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) {
        let number = number.and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
        self.found.hits.push((number, line_text(bytes), is_match));
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.found.matches += 1;
        if self.found.matches <= self.keep {
            self.push(m.line_number(), m.bytes(), true);
        }
        Ok(!self.stop.load(Ordering::Relaxed))
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        // Lines before a match not kept, and after the last kept, are not shown.
        let kept = match c.kind() {
            SinkContextKind::Before => self.found.matches < self.keep,
            _ => self.found.matches <= self.keep,
        };
        if kept {
            self.push(c.line_number(), c.bytes(), false);
        }
        Ok(!self.stop.load(Ordering::Relaxed))
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A line as shown: without its line break, cut at [`LINE_CHARS`].
fn line_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches('\n').trim_end_matches('\r');
    match text.char_indices().nth(LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// True for a folder of a kernel's virtual file system (`/proc`, `/sys`,
/// wherever mounted): its files are generated as they are read (some
/// never end, some are the memory of a process) and none is a project's.
pub fn is_virtual(path: &Path) -> bool {
    /// sysfs's magic number (`statfs(2)`); rustix names procfs's only.
    const SYSFS_MAGIC: rustix::fs::FsWord = 0x6265_6572;
    rustix::fs::statfs(path).is_ok_and(|s| s.f_type == rustix::fs::PROC_SUPER_MAGIC || s.f_type == SYSFS_MAGIC)
}
