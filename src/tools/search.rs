//! `grep` and `find` (SPEC 14), built from the crates ripgrep is built
//! from: `ignore` walks the tree in parallel honouring `.gitignore`,
//! `.ignore` and hidden files as ripgrep does (in any folder, not only in a
//! git repository), `globset` matches names, and `grep-searcher` streams
//! each file through `grep-regex` a buffer at a time ([`stream`]), stopping
//! at a NUL byte (binary). `/proc` and `/sys` are never searched. Results
//! are sorted by path so a limit cuts the same way every time. Both run on
//! a blocking thread that stops when the call is dropped (Esc).
//!
//! Both search the real path of their root (links followed, then judged)
//! and never follow a link below it; every file and folder is asked about
//! in the call's read guard, so a deny rule keeps its files out of the
//! results, and a denied folder is not entered at all. Each file is opened
//! following no link and only when it is a regular file.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Value, json};

use super::fs::checked_target;
use super::fs::real::{Target, real_path};
use super::{Judged, Origin, Tool, ToolContext, ToolFuture, ToolOutput, parse_input};
use crate::limits::MAX_BYTES;
use crate::provider::ToolSpec;
use crate::runtime::off_thread;

/// A glob over names: one without `/` matches the file name, one with `/`
/// the path below the search root.
struct NameGlob {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl NameGlob {
    fn new(pattern: &str) -> Result<NameGlob, ToolOutput> {
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolOutput::error(format!("bad glob {pattern:?}: {e}")))?
            .compile_matcher();
        Ok(NameGlob { matcher, whole_path: pattern.contains('/') })
    }

    fn is_match(&self, root: &Path, path: &Path) -> bool {
        if self.whole_path {
            path.strip_prefix(root).is_ok_and(|rel| self.matcher.is_match(rel))
        } else {
            path.file_name().is_some_and(|n| self.matcher.is_match(n))
        }
    }
}

/// A walk of `root` (real) for `tool` that does not enter folders the read
/// guard refuses.
fn walker(root: &Path, real_cwd: &Path, tool: &'static str, judged: &Judged) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder.require_git(false);
    let (guard, real_cwd) = (judged.reads.clone(), real_cwd.to_path_buf());
    // Nor `/proc` or `/sys` (wherever mounted): a walk of `/` would read
    // every process's memory maps and files that never end.
    builder.filter_entry(move |entry| {
        !entry.file_type().is_some_and(|t| t.is_dir())
            || entry.depth() == 0
            || !(guard.prunes(tool, &Target::of_real(&real_cwd, entry.path().to_path_buf()))
                || stream::is_virtual(entry.path()))
    });
    builder
}

/// The real cwd, against which results are shown.
fn real_cwd(cwd: &Path) -> PathBuf {
    real_path(cwd).unwrap_or_else(|_| cwd.to_path_buf())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct GrepInput {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    ignore_case: Option<bool>,
    context: Option<usize>,
    limit: Option<usize>,
}

/// One `grep` search.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepQuery<'a> {
    /// The regex.
    pub pattern: &'a str,
    /// The file or folder to search (the cwd when none).
    pub path: Option<&'a str>,
    /// Only files matching this glob.
    pub glob: Option<&'a str>,
    /// Match without regard to case.
    pub ignore_case: bool,
    /// Lines of context around each match.
    pub context: usize,
    /// The most matches returned.
    pub limit: usize,
}

/// The body of `grep`; also what the benchmark times.
pub fn grep(cwd: &Path, q: &GrepQuery<'_>, judged: &Judged, stop: &AtomicBool) -> ToolOutput {
    let GrepQuery { pattern, path, glob, ignore_case, context, limit } = *q;
    let matcher = match stream::matcher(pattern, ignore_case) {
        Ok(m) => m,
        Err(e) => return ToolOutput::error(format!("bad regex {pattern:?}: {e}")),
    };
    let glob = match glob.map(NameGlob::new).transpose() {
        Ok(g) => g,
        Err(e) => return e,
    };
    let shown_root = path.unwrap_or(".");
    let root = match checked_target(cwd, judged, "grep", shown_root, true) {
        Ok(t) => t.real,
        Err(refused) => return refused,
    };
    let Ok(meta) = std::fs::symlink_metadata(&root) else {
        return ToolOutput::error(format!("cannot search {shown_root}: no such file or folder"));
    };
    let under = if meta.is_dir() { root.as_path() } else { root.parent().unwrap_or(&root) };
    if stream::is_virtual(under) {
        return ToolOutput::error(format!(
            "grep does not search {shown_root}: /proc and /sys are made up as they are read (some files never end); \
             read one file there with read"
        ));
    }
    let real_cwd = real_cwd(cwd);
    let found: Mutex<Vec<(String, stream::Found)>> = Mutex::default();
    let search_file = |searcher: &mut grep_searcher::Searcher, file: &Path| {
        let target = Target::of_real(&real_cwd, file.to_path_buf());
        if judged.reads.refuses("grep", &target).is_none()
            && let Some(hits) = stream::search_file(searcher, &matcher, file, limit, stop)
            && let Ok(mut all) = found.lock()
        {
            all.push((target.shown, hits));
        }
    };
    if meta.is_file() {
        search_file(&mut stream::searcher(context), &root);
    } else {
        let (glob, root, search_file) = (&glob, &root, &search_file);
        walker(root, &real_cwd, "grep", judged).build_parallel().run(|| {
            // One searcher (and its buffer) per thread of the walk.
            let mut searcher = stream::searcher(context);
            Box::new(move |entry| {
                if stop.load(Ordering::Relaxed) {
                    return ignore::WalkState::Quit;
                }
                if let Ok(entry) = entry
                    && entry.file_type().is_some_and(|t| t.is_file())
                    && glob.as_ref().is_none_or(|g| g.is_match(root, entry.path()))
                {
                    search_file(&mut searcher, entry.path());
                }
                ignore::WalkState::Continue
            })
        });
    }
    if stop.load(Ordering::Relaxed) {
        return ToolOutput::error("interrupted by the user: the search was stopped");
    }
    let mut found = found.into_inner().unwrap_or_default();
    if found.is_empty() {
        return ToolOutput::ok(format!("no matches for {pattern:?} in {shown_root}"));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let total: usize = found.iter().map(|(_, f)| f.matches).sum();
    let mut out = String::new();
    let mut shown = 0;
    let mut full = false;
    'files: for (name, stream::Found { hits, .. }) in &found {
        let mut last = 0;
        for (n, text, is_match) in hits {
            if *is_match && shown == limit {
                full = true;
                break 'files;
            }
            if context > 0 && last != 0 && *n > last + 1 {
                out.push_str("--\n");
            }
            let sep = if *is_match { ':' } else { '-' };
            let line = format!("{name}{sep}{n}{sep}{text}\n");
            if out.len() + line.len() > MAX_BYTES {
                full = true;
                break 'files;
            }
            out.push_str(&line);
            shown += usize::from(*is_match);
            last = *n;
        }
        if context > 0 {
            out.push_str("--\n");
        }
    }
    if full || shown < total {
        out.push_str(&format!(
            "[showing {shown} of {total} matching lines: narrow the pattern, path or glob, or raise limit]\n"
        ));
    }
    ToolOutput::ok(out)
}

/// `grep`: search file contents with a regular expression.
pub struct Grep;

impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }
    fn origin(&self) -> Origin {
        Origin::BuiltIn
    }
    fn mutates(&self) -> bool {
        false
    }
    fn needs_permission(&self) -> bool {
        false
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: "Search file contents with a regular expression (Rust regex syntax), skipping what .gitignore excludes, hidden and binary files. Prints path:line:text, sorted by path.".into(),
            parameters: json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "the regular expression"},
                "path": {"type": "string", "description": "a file or folder to search (default: the working directory)"},
                "glob": {"type": "string", "description": "only files whose name matches, e.g. *.rs (with a /: the path below path)"},
                "ignoreCase": {"type": "boolean"},
                "context": {"type": "integer", "minimum": 0, "description": "lines of context around each match"},
                "limit": {"type": "integer", "minimum": 1, "description": "at most this many matching lines (default 100)"}
            }, "required": ["pattern"]}),
        }
    }
    fn subject(&self, input: &Value, cwd: &Path) -> Option<String> {
        let path = input.get("path").and_then(Value::as_str).unwrap_or(".");
        Some(super::fs::real::subject(cwd, path))
    }
    fn summary(&self, input: &Value) -> String {
        let pattern = input.get("pattern").and_then(Value::as_str).unwrap_or("?");
        match input.get("path").and_then(Value::as_str) {
            Some(p) => format!("{pattern}  {p}"),
            None => pattern.to_string(),
        }
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let input: GrepInput = match parse_input(input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let (cwd, judged) = (ctx.cwd.to_path_buf(), ctx.judged.clone());
            off_thread(move |stop| {
                let query = GrepQuery {
                    pattern: &input.pattern,
                    path: input.path.as_deref(),
                    glob: input.glob.as_deref(),
                    ignore_case: input.ignore_case.unwrap_or(false),
                    context: input.context.unwrap_or(0).min(20),
                    limit: input.limit.unwrap_or(100).max(1),
                };
                grep(&cwd, &query, &judged, stop)
            })
            .await
            .unwrap_or_else(ToolOutput::from)
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FindInput {
    pattern: String,
    path: Option<String>,
    limit: Option<usize>,
}

/// One `find` search.
#[derive(Debug, Clone, Copy)]
pub struct FindQuery<'a> {
    /// The glob.
    pub pattern: &'a str,
    /// The folder to search (the cwd when none).
    pub path: Option<&'a str>,
    /// The most paths returned.
    pub limit: usize,
}

/// The body of `find`.
pub fn find(cwd: &Path, q: &FindQuery<'_>, judged: &Judged, stop: &AtomicBool) -> ToolOutput {
    let FindQuery { pattern, path, limit } = *q;
    let glob = match NameGlob::new(pattern) {
        Ok(g) => g,
        Err(e) => return e,
    };
    let shown_root = path.unwrap_or(".");
    let root = match checked_target(cwd, judged, "find", shown_root, true) {
        Ok(t) => t.real,
        Err(refused) => return refused,
    };
    if !std::fs::symlink_metadata(&root).is_ok_and(|m| m.is_dir()) {
        return ToolOutput::error(format!("cannot search {shown_root}: no such folder"));
    }
    let real_cwd = real_cwd(cwd);
    let found: Mutex<Vec<String>> = Mutex::default();
    walker(&root, &real_cwd, "find", judged).build_parallel().run(|| {
        Box::new(|entry| {
            if stop.load(Ordering::Relaxed) {
                return ignore::WalkState::Quit;
            }
            let Ok(entry) = entry else { return ignore::WalkState::Continue };
            let target = Target::of_real(&real_cwd, entry.path().to_path_buf());
            if entry.depth() > 0
                && glob.is_match(&root, entry.path())
                && judged.reads.refuses("find", &target).is_none()
                && let Ok(mut all) = found.lock()
            {
                let mut name = target.shown;
                if entry.file_type().is_some_and(|t| t.is_dir()) {
                    name.push('/');
                }
                all.push(name);
            }
            ignore::WalkState::Continue
        })
    });
    if stop.load(Ordering::Relaxed) {
        return ToolOutput::error("interrupted by the user: the search was stopped");
    }
    let mut found = found.into_inner().unwrap_or_default();
    if found.is_empty() {
        return ToolOutput::ok(format!("no paths match {pattern:?} in {shown_root}"));
    }
    found.sort();
    let total = found.len();
    found.truncate(limit);
    let mut out = found.join("\n");
    if total > limit {
        out.push_str(&format!("\n[showing {limit} of {total} paths: narrow the pattern or path, or raise limit]"));
    }
    ToolOutput::ok(out)
}

/// `find`: paths matching a glob.
pub struct Find;

impl Tool for Find {
    fn name(&self) -> &str {
        "find"
    }
    fn origin(&self) -> Origin {
        Origin::BuiltIn
    }
    fn mutates(&self) -> bool {
        false
    }
    fn needs_permission(&self) -> bool {
        false
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "find".into(),
            description: "Find files and folders by glob (e.g. *.rs, src/**/test_*.py), skipping what .gitignore excludes and hidden files. A glob without / matches names; with /, the path below path. Folders end in /.".into(),
            parameters: json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "the glob"},
                "path": {"type": "string", "description": "the folder to search (default: the working directory)"},
                "limit": {"type": "integer", "minimum": 1, "description": "at most this many paths (default 1000)"}
            }, "required": ["pattern"]}),
        }
    }
    fn subject(&self, input: &Value, cwd: &Path) -> Option<String> {
        let path = input.get("path").and_then(Value::as_str).unwrap_or(".");
        Some(super::fs::real::subject(cwd, path))
    }
    fn summary(&self, input: &Value) -> String {
        let pattern = input.get("pattern").and_then(Value::as_str).unwrap_or("?");
        match input.get("path").and_then(Value::as_str) {
            Some(p) => format!("{pattern}  {p}"),
            None => pattern.to_string(),
        }
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let input: FindInput = match parse_input(input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let (cwd, judged) = (ctx.cwd.to_path_buf(), ctx.judged.clone());
            off_thread(move |stop| {
                let query = FindQuery {
                    pattern: &input.pattern,
                    path: input.path.as_deref(),
                    limit: input.limit.unwrap_or(1_000).max(1),
                };
                find(&cwd, &query, &judged, stop)
            })
            .await
            .unwrap_or_else(ToolOutput::from)
        })
    }
}

mod stream;

#[cfg(test)]
mod tests;
