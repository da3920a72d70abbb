//! The system prompt (SPEC 14): a default part naming the tools, the cwd,
//! the date and the platform (replaced by `--system` or `systemPrompt`),
//! then every `AGENTS.md`: `$XDG_CONFIG_HOME/glrs/AGENTS.md`, then each one
//! from the repository root (the nearest folder above the cwd holding
//! `.git`, else `/`) down to the cwd. With the built-in tools off and no
//! replacement the default part is left out: a plain chat sends no system
//! prompt of its own.
//!
//! An `AGENTS.md` comes with the repository, so it is as hostile as the rest
//! of it (issue 20): one that is a link leading out of the repository (or,
//! outside a repository, out of its own folder) is not read, nor one that is
//! not a regular file (a FIFO would hang the start); each is read following
//! no link swapped in meanwhile, and at most 64 KB of it is used. The chat
//! lists what it loaded and says what it left out.

use std::path::{Path, PathBuf};

use crate::tools::fs::open::{OpenError, open_regular, read_capped};
use crate::tools::fs::real::real_path;

/// The most of one `AGENTS.md` that goes into the prompt.
const AGENTS_BYTES: u64 = 64 * 1024;

/// The default part.
pub fn default_part(tools: &[String], cwd: &str, date: &str) -> String {
    let tools = if tools.is_empty() { "none".to_string() } else { tools.join(", ") };
    format!(
        "You are glrs, a coding agent working in the user's terminal. You can act on the user's machine through \
tools: {tools}. Use read, grep, find and ls to look before you change anything; use edit for changes to \
existing files and write for new ones; use bash to build, test and run commands. Calls that change things may \
need the user's permission; a denied call comes back as an error with the reason, so adjust rather than retry \
it. Keep answers short and concrete, and say what you changed.\n\n\
Working directory: {cwd}\nDate: {date}\nPlatform: {} ({})",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// The `AGENTS.md` files that apply in `cwd`, in the order they are appended.
pub fn agents_files(config_home: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(home) = config_home {
        let global = home.join("glrs").join("AGENTS.md");
        if global.exists() {
            files.push(global);
        }
    }
    let ancestors: Vec<&Path> = cwd.ancestors().collect();
    let root = ancestors.iter().position(|dir| dir.join(".git").exists()).unwrap_or(ancestors.len() - 1);
    for dir in ancestors[..=root].iter().rev() {
        let file = dir.join("AGENTS.md");
        // A link is listed too (even one leading nowhere): loading judges it.
        if std::fs::symlink_metadata(&file).is_ok() {
            files.push(file);
        }
    }
    files
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
pub fn config_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| dirs::home_dir().map(|h| h.join(".config")))
}

/// What the `AGENTS.md` files of a session add to its prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    /// The text, each file under a line naming it.
    pub text: String,
    /// The files it came from, in order.
    pub loaded: Vec<PathBuf>,
    /// The files left out or cut, each with why (for a warning).
    pub problems: Vec<String>,
}

/// The folder an `AGENTS.md` in `dir` may lead into: the repository's root
/// when `dir` is in one, else `dir` itself.
fn allowed_scope(dir: &Path) -> PathBuf {
    let root = dir.ancestors().find(|d| d.join(".git").exists()).unwrap_or(dir);
    real_path(root).unwrap_or_else(|_| root.to_path_buf())
}

/// Read one `AGENTS.md`: its text (at most 64 KB), or why it was left out.
fn read_one(file: &Path, scope: Option<&Path>, problems: &mut Vec<String>) -> Option<String> {
    let shown = file.display();
    let real = match real_path(file) {
        Ok(real) => real,
        Err(e) => {
            problems.push(format!("{shown} was not loaded: {e}"));
            return None;
        }
    };
    if let Some(scope) = scope
        && !real.starts_with(scope)
    {
        problems.push(format!("{shown} was not loaded: it links outside the repository (to {})", real.display()));
        return None;
    }
    let read = open_regular(&real).and_then(|(mut f, size)| Ok(read_capped(&mut f, AGENTS_BYTES, size)?));
    let (bytes, more) = match read {
        Ok(read) => read,
        Err(OpenError::NotRegular(kind)) => {
            problems.push(format!("{shown} was not loaded: it is {kind}, not a regular file"));
            return None;
        }
        Err(OpenError::Io(e)) => {
            problems.push(format!("{shown} was not loaded: {e}"));
            return None;
        }
    };
    if more {
        problems.push(format!("{shown} is over 64 KB: only its first 64 KB are used"));
    }
    // A cut may split the last character: keep only whole ones.
    let end = match std::str::from_utf8(&bytes) {
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        _ => bytes.len(),
    };
    Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

/// Load `files` (from [`agents_files`]): the global one (`config_home`'s,
/// the user's own) may be a link anywhere; the others must stay inside
/// their repository.
pub fn load_instructions(config_home: Option<&Path>, files: &[PathBuf]) -> Instructions {
    let global = config_home.map(|home| home.join("glrs").join("AGENTS.md"));
    let mut out = Instructions::default();
    for file in files {
        let scope = match file.parent() {
            Some(dir) if global.as_deref() != Some(file.as_path()) => Some(allowed_scope(dir)),
            _ => None,
        };
        let Some(text) = read_one(file, scope.as_deref(), &mut out.problems) else { continue };
        if !text.trim().is_empty() {
            out.text.push_str(&format!("\n\n# Instructions from {}\n\n{}", file.display(), text.trim()));
            out.loaded.push(file.clone());
        }
    }
    out
}

/// The whole prompt, or `None` when there is nothing to send.
pub fn assemble(
    replacement: Option<&str>,
    builtin_tools: Option<&[String]>,
    cwd: &str,
    agents: &str,
) -> Option<String> {
    let base = match (replacement, builtin_tools) {
        (Some(text), _) => text.to_string(),
        (None, Some(tools)) => {
            default_part(tools, cwd, &crate::time::local_now().strftime("%Y-%m-%d (%A)").to_string())
        }
        (None, None) => String::new(),
    };
    let whole = format!("{base}{agents}");
    let whole = whole.trim_start();
    (!whole.is_empty()).then(|| whole.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_files_from_the_config_then_root_down_to_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let cwd = d.join("repo/app/src");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(d.join("repo/.git")).unwrap();
        std::fs::create_dir_all(d.join("conf/glrs")).unwrap();
        for (path, text) in [
            ("conf/glrs/AGENTS.md", "global"),
            ("AGENTS.md", "above the repo"),
            ("repo/AGENTS.md", "repo"),
            ("repo/app/src/AGENTS.md", "here"),
        ] {
            std::fs::write(d.join(path), text).unwrap();
        }
        let files = agents_files(Some(&d.join("conf")), &cwd);
        let names: Vec<String> = files.iter().map(|f| f.strip_prefix(d).unwrap().display().to_string()).collect();
        assert_eq!(names, ["conf/glrs/AGENTS.md", "repo/AGENTS.md", "repo/app/src/AGENTS.md"]);
        let text = load_instructions(Some(&d.join("conf")), &files).text;
        assert!(text.find("global").unwrap() < text.find("repo").unwrap() && text.ends_with("here"));
        let tools = vec!["read".to_string(), "bash".to_string()];
        let prompt = assemble(None, Some(&tools), "/w", &text).unwrap();
        assert!(
            prompt.starts_with("You are glrs")
                && prompt.contains("tools: read, bash")
                && prompt.contains("Working directory: /w")
        );
        assert!(prompt.contains(std::env::consts::OS) && prompt.ends_with("here"));
        assert_eq!(assemble(Some("be brief"), Some(&tools), "/w", "").as_deref(), Some("be brief"));
        assert_eq!(assemble(None, None, "/w", ""), None);
        assert_eq!(assemble(None, None, "/w", "\n\n# x").as_deref(), Some("# x"));
    }

    #[test]
    fn agents_md_links_out_of_the_repository_fifos_and_big_files_are_not_sent() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let repo = d.join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("docs/deep")).unwrap();
        std::fs::create_dir_all(d.join("home/.ssh")).unwrap();
        std::fs::write(d.join("home/.ssh/id_ed25519"), "PRIVATE KEY").unwrap();
        std::fs::write(repo.join("RULES.md"), "shared rules").unwrap();
        std::os::unix::fs::symlink("../RULES.md", repo.join("docs/AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(d.join("home/.ssh/id_ed25519"), repo.join("AGENTS.md")).unwrap();
        // A link to a link that leads out.
        std::os::unix::fs::symlink("../../AGENTS.md", repo.join("docs/deep/AGENTS.md")).unwrap();
        let files = agents_files(None, &repo.join("docs/deep"));
        assert_eq!(files.len(), 3, "{files:?}");
        let got = load_instructions(None, &files);
        assert!(!got.text.contains("PRIVATE KEY") && got.text.contains("shared rules"), "{}", got.text);
        assert_eq!(got.loaded, [repo.join("docs/AGENTS.md")], "a link inside the repository is followed");
        assert_eq!(got.problems.len(), 2, "{:?}", got.problems);
        assert!(got.problems.iter().all(|p| p.contains("links outside the repository")), "{:?}", got.problems);

        let fifo = d.join("fifo");
        std::fs::create_dir(&fifo).unwrap();
        rustix::fs::mknodat(rustix::fs::CWD, fifo.join("AGENTS.md"), rustix::fs::FileType::Fifo, 0o600.into(), 0)
            .unwrap();
        let got = load_instructions(None, &agents_files(None, &fifo));
        assert!(got.loaded.is_empty() && got.problems[0].contains("FIFO"), "{got:?}");
        std::fs::remove_file(fifo.join("AGENTS.md")).unwrap();
        std::fs::write(fifo.join("AGENTS.md"), "é".repeat(40_000)).unwrap();
        let got = load_instructions(None, &agents_files(None, &fifo));
        assert!(got.problems[0].contains("over 64 KB"), "{got:?}");
        assert!(got.text.len() < 64 * 1024 + 200 && !got.text.contains('\u{fffd}'));
    }
}
