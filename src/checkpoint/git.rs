//! Running the `git` program on a shadow repository: every call names the
//! shadow (`GIT_DIR`), the workspace (`GIT_WORK_TREE`) and the session's
//! index (`GIT_INDEX_FILE`) explicitly, so no repository is discovered and
//! the user's own `.git` is never read or written. Processes go through
//! `crate::process::run_own` (what git prints is read whole, never cut as a
//! tool's output is; their own group, killed if glrs stops waiting; never
//! in the model's sandbox: this is glrs's own work).

use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;

use crate::process::{Ending, Own, run_own};

/// How long one git command may take (a first checkpoint of a huge
/// workspace hashes every file).
const TIMEOUT: Duration = Duration::from_secs(600);

/// Settings passed to every command (the user's own git config is not
/// read at all, see `run_with`): no line-ending conversions (the bytes are
/// kept as they are), no file system monitor hooks, modes and links as
/// they are.
const SETTINGS: &[&str] = &[
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.fileMode=true",
    "-c",
    "core.symlinks=true",
    "-c",
    "core.quotePath=false",
    "-c",
    "gc.auto=0",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.attributesFile=/dev/null",
];

/// The empty tree (SHA-1, the shadows' format): where attributes are read
/// from, so none apply. A workspace's `.gitattributes` (`eol=crlf`, `text`,
/// `filter=lfs`, …) would otherwise change the bytes recorded or put back,
/// or run a filter program on every checkpoint.
const NO_ATTRIBUTES: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Where `git` is, when it is on PATH.
pub fn find_git() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("git"))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// One shadow repository and the workspace it records, as seen by one
/// session (its index).
#[derive(Debug, Clone)]
pub struct Git {
    /// The `git` program.
    pub program: PathBuf,
    /// The shadow repository (`GIT_DIR`).
    pub dir: PathBuf,
    /// The workspace (`GIT_WORK_TREE`).
    pub work_tree: PathBuf,
    /// The index file used.
    pub index: PathBuf,
}

/// What a git command printed.
pub struct Output {
    /// Its stdout.
    pub stdout: Vec<u8>,
}

impl Output {
    /// Stdout as trimmed text (a hash, a ref).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim().to_string()
    }

    /// Stdout split at NULs (`-z` output), empty records dropped.
    pub fn records(&self) -> Vec<String> {
        self.paths().into_iter().map(|r| String::from_utf8_lossy(r).into_owned()).collect()
    }

    /// The records of `-z` output as git wrote them (a path's bytes, to be
    /// handed back to git unchanged).
    pub fn paths(&self) -> Vec<&[u8]> {
        self.stdout.split(|b| *b == 0).filter(|r| !r.is_empty()).collect()
    }
}

impl Git {
    /// The same repository and workspace with another index.
    pub fn with_index(&self, index: PathBuf) -> Git {
        Git { index, ..self.clone() }
    }

    /// Run `git ARGS` in the workspace; an error names the command and
    /// says what git said.
    pub async fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<Output, String> {
        let tree = [("GIT_WORK_TREE", self.work_tree.as_os_str()), ("GIT_INDEX_FILE", self.index.as_os_str())];
        self.run_with(args, stdin, &tree).await
    }

    /// Run `git ARGS` on the repository alone: no work tree, no index
    /// (comparing commits and trees).
    pub async fn run_bare(&self, args: &[&str]) -> Result<Output, String> {
        self.run_with(args, None, &[]).await
    }

    /// Make the shadow repository (bare: it has no work tree of its own;
    /// every other command names one).
    pub async fn init(&self) -> Result<(), String> {
        self.run_with(&["init", "-q", "--bare", "--object-format=sha1"], None, &[]).await.map(drop)
    }

    async fn run_with(&self, args: &[&str], stdin: Option<&[u8]>, tree: &[(&str, &OsStr)]) -> Result<Output, String> {
        let mut all: Vec<&str> = SETTINGS.to_vec();
        all.extend_from_slice(args);
        let objects = self.dir.join("objects");
        let mut env: Vec<(&str, &OsStr)> = tree.to_vec();
        env.extend([
            ("GIT_DIR", self.dir.as_os_str()),
            ("GIT_COMMON_DIR", self.dir.as_os_str()),
            ("GIT_OBJECT_DIRECTORY", objects.as_os_str()),
            // Inherited from a git hook that started glrs, these could
            // point into the user's repository.
            ("GIT_ALTERNATE_OBJECT_DIRECTORIES", OsStr::new("")),
            ("GIT_NAMESPACE", OsStr::new("")),
            ("GIT_CONFIG_COUNT", OsStr::new("0")),
            // The user's and the system's git config are not ours to
            // follow (filters, split indexes, untracked caches, a default
            // object format): only the shadow's own and SETTINGS.
            ("GIT_CONFIG_GLOBAL", OsStr::new("/dev/null")),
            ("GIT_CONFIG_NOSYSTEM", OsStr::new("1")),
            ("GIT_ATTR_NOSYSTEM", OsStr::new("1")),
            ("GIT_ATTR_SOURCE", OsStr::new(NO_ATTRIBUTES)),
            ("GIT_TERMINAL_PROMPT", OsStr::new("0")),
            ("GIT_AUTHOR_NAME", OsStr::new("glrs")),
            ("GIT_AUTHOR_EMAIL", OsStr::new("glrs@localhost")),
            ("GIT_COMMITTER_NAME", OsStr::new("glrs")),
            ("GIT_COMMITTER_EMAIL", OsStr::new("glrs@localhost")),
            ("LC_ALL", OsStr::new("C")),
        ]);
        // The workspace, else (making the shadow) the folder above it.
        let cwd = if tree.is_empty() { self.dir.parent().unwrap_or(&self.dir) } else { &self.work_tree };
        let own = Own { program: self.program.as_os_str(), args: &all, cwd, env: &env, stdin };
        let ran = run_own(&own, TIMEOUT).await?;
        let (stdout, stderr) = (ran.stdout, ran.stderr);
        match ran.ending {
            Ending::Exit(0) => Ok(Output { stdout }),
            ending => {
                let said = String::from_utf8_lossy(&stderr);
                let said = said.trim();
                let how = match ending {
                    Ending::Exit(code) => format!("exited with {code}"),
                    Ending::Signal(sig) => format!("was killed by signal {sig}"),
                    Ending::TimedOut(secs) => format!("took longer than {secs} s"),
                };
                Err(format!("git {} {how}: {said}", args.first().copied().unwrap_or("")))
            }
        }
    }
}
