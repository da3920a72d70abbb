//! The sandbox policy (SPEC 17) as paths: the writable roots, the
//! read-only subpaths inside them, the `denyRead` paths, worked out once
//! from the config, the cwd and the environment. Every path here is
//! resolved (symlinks followed as far as they exist, `..` removed), and
//! the questions (`is_writable`, `is_denied_read`) take resolved paths:
//! [`resolve`] makes one.

use std::path::{Component, Path, PathBuf};

use anyhow::{Result, bail};

use super::{Mode, SandboxConfig};

/// `sandbox.denyRead` when the config does not set it (glrs's own config
/// folder is added to whatever the list is).
pub const DEFAULT_DENY_READ: &[&str] =
    &["~/.ssh", "~/.gnupg", "~/.aws", "~/.config/gcloud", "~/.netrc", "~/.docker/config.json"];

/// `sandbox.writableRoots` when the config does not set it: none. The
/// shared build caches (`~/.cargo/registry`, `~/.npm`, `~/.cache`, …) were
/// the default until a command edited a crate's `build.rs` in
/// `~/.cargo/registry/src` that the user's next build ran (issue 31 item
/// 6): a writable root is code the user runs later. Commands read those
/// caches (read-only: an offline `cargo build` finds every crate already
/// downloaded) and write their own in [`PRIVATE_CACHES`].
pub const DEFAULT_WRITABLE_ROOTS: &[&str] = &[];

/// The variables that give sandboxed commands caches of their own, each a
/// folder in the workspace's private cache folder ([`caches_folder`]):
/// what a command writes there is never run by the user's own builds.
pub const PRIVATE_CACHES: &[(&str, &str)] =
    &[("XDG_CACHE_HOME", "xdg"), ("GOCACHE", "go-build"), ("npm_config_cache", "npm"), ("PIP_CACHE_DIR", "pip")];

/// The private cache folder of sandboxed commands in the workspace named
/// `key`: `$XDG_CACHE_HOME/glrs/sandbox/<key>/` (else under `~/.cache`).
/// One a workspace, not a session: every session in the workspace may
/// write the workspace itself anyway, and builds stay warm between them.
pub fn caches_folder(key: &str) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| dirs::home_dir().map(|h| h.join(".cache")))?;
    Some(base.join("glrs").join("sandbox").join(key))
}

/// Where the policy's `~`, temporary folder and glrs's own folders are.
#[derive(Debug, Clone)]
pub struct Places {
    /// The home folder (`~`), if known.
    pub home: Option<PathBuf>,
    /// `$TMPDIR`, else `/tmp`.
    pub tmp: PathBuf,
    /// glrs's data folder (the session store): never writable from inside.
    pub data: PathBuf,
    /// glrs's config folder (`$XDG_CONFIG_HOME/glrs`): never readable from
    /// inside, but for its `tools/` (executable tools run from there).
    pub config_dir: PathBuf,
    /// The config file in use (`$GLRS_CONFIG` may name one elsewhere):
    /// never readable from inside.
    pub config_file: PathBuf,
    /// The session's own output folder (inside `data`): the one part of
    /// the data folder commands and file tools may read.
    pub own_output: Option<PathBuf>,
    /// The private cache folder of the session's commands
    /// ([`caches_folder`]): a writable root.
    pub caches: Option<PathBuf>,
}

impl Places {
    /// From the process environment and glrs's [`crate::Paths`].
    pub fn from_env(paths: &crate::Paths) -> Places {
        let tmp = std::env::var_os("TMPDIR")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        // `$XDG_CONFIG_HOME/glrs` (else `~/.config/glrs`): where config.json,
        // AGENTS.md and tools/ live, even when GLRS_CONFIG names another file.
        let config_dir = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| dirs::home_dir().map(|h| h.join(".config")))
            .map(|h| h.join("glrs"))
            .or_else(|| paths.config.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| paths.config.clone());
        Places {
            home: dirs::home_dir(),
            tmp,
            data: paths.data.clone(),
            config_dir,
            config_file: paths.config.clone(),
            own_output: None,
            caches: None,
        }
    }
}

/// The computed policy of one session: its mode and the paths it names.
#[derive(Debug, Clone)]
pub struct Policy {
    mode: Mode,
    network: bool,
    writable_roots: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    deny_read: Vec<PathBuf>,
    /// Denied paths' exceptions (glrs's `tools/` under its config folder).
    deny_read_except: Vec<PathBuf>,
    data: PathBuf,
    own_output: Option<PathBuf>,
    caches: Option<PathBuf>,
    /// `sandbox.allowUnixSockets`, expanded (not resolved: a socket path
    /// is compared as written, see [`Policy::unix_sockets`]).
    unix_sockets: Vec<PathBuf>,
}

impl Policy {
    /// The policy for a session in `cwd` in `mode`; a bad `writableRoots`
    /// or `denyRead` entry is an error naming it.
    pub fn new(config: &SandboxConfig, mode: Mode, cwd: &Path, places: &Places) -> Result<Policy> {
        let resolver = Resolver::new(places.home.as_deref());
        let resolve = |path: &Path| resolver.resolve(path);
        let cwd = resolve(cwd);
        let workspace = work_tree_root(&cwd).unwrap_or_else(|| cwd.clone());
        let mut writable_roots = vec![workspace.clone(), resolve(&places.tmp)];
        let configured: Vec<String> = match &config.writable_roots {
            Some(list) => list.clone(),
            None => DEFAULT_WRITABLE_ROOTS.iter().map(|s| s.to_string()).collect(),
        };
        for (i, text) in configured.iter().enumerate() {
            let path = expand(text, places.home.as_deref())
                .map_err(|e| anyhow::anyhow!("sandbox.writableRoots[{i}] ({text:?}): {e}"))?;
            writable_roots.push(resolve(&path));
        }
        let caches = places.caches.as_deref().map(resolve);
        writable_roots.extend(caches.clone());
        dedup_nested(&mut writable_roots);
        let denied: Vec<String> = match &config.deny_read {
            Some(list) => list.clone(),
            None => DEFAULT_DENY_READ.iter().map(|s| s.to_string()).collect(),
        };
        let mut deny_read = Vec::new();
        for (i, text) in denied.iter().enumerate() {
            let path = expand(text, places.home.as_deref())
                .map_err(|e| anyhow::anyhow!("sandbox.denyRead[{i}] ({text:?}): {e}"))?;
            deny_read.push(resolve(&path));
        }
        let config_dir = resolve(&places.config_dir);
        deny_read.push(config_dir.clone());
        let config_file = resolve(&places.config_file);
        if !config_file.starts_with(&config_dir) {
            deny_read.push(config_file);
        }
        let mut read_only = Vec::new();
        for root in &writable_roots {
            read_only.extend(super::protected::on_the_way(root, &cwd));
        }
        read_only.extend(super::protected::in_tree(&workspace));
        read_only.sort();
        read_only.dedup();
        let mut unix_sockets = Vec::new();
        for (i, text) in config.allow_unix_sockets.iter().flatten().enumerate() {
            let path = expand(text, places.home.as_deref())
                .map_err(|e| anyhow::anyhow!("sandbox.allowUnixSockets[{i}] ({text:?}): {e}"))?;
            unix_sockets.push(path);
        }
        Ok(Policy {
            unix_sockets,
            mode,
            network: config.network.unwrap_or(false),
            writable_roots,
            read_only,
            deny_read,
            deny_read_except: vec![config_dir.join("tools")],
            data: resolve(&places.data),
            own_output: places.own_output.as_deref().map(resolve),
            caches,
        })
    }

    /// `off` with no paths at all.
    pub fn none() -> Policy {
        Policy {
            mode: Mode::Off,
            network: true,
            writable_roots: Vec::new(),
            read_only: Vec::new(),
            deny_read: Vec::new(),
            deny_read_except: Vec::new(),
            data: PathBuf::new(),
            own_output: None,
            caches: None,
            unix_sockets: Vec::new(),
        }
    }

    /// The policy the start-up probe tries: `dir` writable, `hidden`
    /// denied (so the mount namespace is tried too).
    pub fn probe(dir: &Path, hidden: &Path) -> Policy {
        Policy {
            mode: Mode::WorkspaceWrite,
            network: false,
            writable_roots: vec![resolve(dir)],
            read_only: Vec::new(),
            deny_read: vec![resolve(hidden)],
            deny_read_except: Vec::new(),
            data: resolve(&dir.join("data")),
            own_output: None,
            caches: None,
            unix_sockets: Vec::new(),
        }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The same paths in another mode (`/sandbox MODE`).
    pub fn with_mode(&self, mode: Mode) -> Policy {
        Policy { mode, ..self.clone() }
    }

    /// `sandbox.network`: whether commands inside may open network sockets.
    pub fn network(&self) -> bool {
        self.network
    }

    /// `sandbox.allowUnixSockets`: the Unix socket paths commands may
    /// connect to. On Linux the kernel cannot judge a `connect()`'s path
    /// (seccomp sees numbers only), so any entry lets commands make Unix
    /// sockets and connect to every path; the entries also keep the
    /// variables naming them ([`super::DROPPED_ENV`]).
    pub fn unix_sockets(&self) -> &[PathBuf] {
        &self.unix_sockets
    }

    /// Where `workspace-write` lets commands write: the workspace (the cwd,
    /// or the root of the git work tree it is in), the temporary folder,
    /// `sandbox.writableRoots`. Resolved, none inside another.
    pub fn writable_roots(&self) -> &[PathBuf] {
        &self.writable_roots
    }

    /// What stays read-only inside the writable roots and exists now (or
    /// may be made): `.git` (and a `gitdir:` target), `.glrs`, `AGENTS.md`.
    pub fn read_only(&self) -> &[PathBuf] {
        &self.read_only
    }

    /// `sandbox.denyRead` and glrs's config folder, resolved.
    pub fn deny_read(&self) -> &[PathBuf] {
        &self.deny_read
    }

    /// Paths under a denied one that stay readable (glrs's `tools/`).
    pub fn deny_read_except(&self) -> &[PathBuf] {
        &self.deny_read_except
    }

    /// glrs's data folder, never writable from inside, hidden from
    /// commands and refused to the file tools (but for [`Policy::own_output`]).
    pub fn data(&self) -> &Path {
        &self.data
    }

    /// The session's own output folder, which commands and file tools
    /// may read though it is in the data folder.
    pub fn own_output(&self) -> Option<&Path> {
        self.own_output.as_deref()
    }

    /// The private cache folder of the session's commands, a writable
    /// root ([`PRIVATE_CACHES`] point into it).
    pub fn caches(&self) -> Option<&Path> {
        self.caches.as_deref()
    }

    /// Whether `path` (resolved) is in glrs's data folder (other sessions'
    /// transcripts, checkpoint copies, locks), outside the session's own
    /// output folder: never read by a file tool, in any mode.
    pub fn is_glrs_data(&self, path: &Path) -> bool {
        !self.data.as_os_str().is_empty()
            && path.starts_with(&self.data)
            && !self.own_output.as_ref().is_some_and(|o| path.starts_with(o))
    }

    /// Whether a command (or a file tool) may write `path` (resolved): in
    /// `off` always; in `read-only` only `/dev/null`; in `workspace-write`
    /// under a writable root, not in a protected subpath, not glrs's data
    /// folder, not a denied path.
    pub fn is_writable(&self, path: &Path) -> bool {
        match self.mode {
            Mode::Off => true,
            Mode::ReadOnly => path == Path::new("/dev/null"),
            Mode::WorkspaceWrite => {
                path == Path::new("/dev/null")
                    || (self.writable_roots.iter().any(|root| path.starts_with(root))
                        && !self.is_protected(path)
                        && !path.starts_with(&self.data)
                        && !self.is_denied_read(path))
            }
        }
    }

    /// Whether `path` (resolved) is inside a protected subpath: one listed
    /// in [`Policy::read_only`], or any `.git`/`.glrs` folder or
    /// `AGENTS.md` file beneath a writable root (the file tools judge by
    /// name, so nested ones count too).
    pub fn is_protected(&self, path: &Path) -> bool {
        if self.read_only.iter().any(|p| path.starts_with(p)) {
            return true;
        }
        self.writable_roots.iter().filter_map(|root| path.strip_prefix(root).ok()).any(|rel| {
            let parts: Vec<_> = rel.components().collect();
            parts.iter().enumerate().any(|(i, part)| match part {
                Component::Normal(name) => {
                    let name = name.to_string_lossy();
                    name == ".git" || name == ".glrs" || (name == "AGENTS.md" && i + 1 == parts.len())
                }
                _ => false,
            })
        })
    }

    /// Whether `path` (resolved) may not be read: it is under a `denyRead`
    /// path (in every mode: these are the user's secrets).
    pub fn is_denied_read(&self, path: &Path) -> bool {
        self.deny_read.iter().any(|d| path.starts_with(d)) && !self.deny_read_except.iter().any(|e| path.starts_with(e))
    }
}

/// Check `sandbox.writableRoots` and `sandbox.denyRead` when the config is
/// read: each entry absolute, or under `~`/`$HOME`.
pub fn check_config(config: &SandboxConfig) -> Result<()> {
    let lists = [
        ("writableRoots", &config.writable_roots),
        ("denyRead", &config.deny_read),
        ("allowUnixSockets", &config.allow_unix_sockets),
    ];
    for (key, list) in lists {
        for (i, text) in list.iter().flatten().enumerate() {
            expand(text, Some(Path::new("/"))).map_err(|e| anyhow::anyhow!("sandbox.{key}[{i}] ({text:?}): {e}"))?;
        }
    }
    Ok(())
}

/// `~`, `~/…`, `$HOME/…` expanded; anything else must be absolute.
fn expand(text: &str, home: Option<&Path>) -> Result<PathBuf> {
    let rest = text
        .strip_prefix("~")
        .or_else(|| text.strip_prefix("$HOME"))
        .or_else(|| text.strip_prefix("${HOME}"))
        .filter(|rest| rest.is_empty() || rest.starts_with('/'));
    match (rest, home) {
        (Some(rest), Some(home)) => Ok(home.join(rest.trim_start_matches('/'))),
        (Some(_), None) => bail!("names the home folder, which is not known (set HOME)"),
        (None, _) if Path::new(text).is_absolute() => Ok(PathBuf::from(text)),
        (None, _) => bail!("is not an absolute path (write /…, ~/… or $HOME/…)"),
    }
}

/// [`resolve`] for the many paths of one policy, most of them under the
/// home folder (the default `denyRead` list): the home folder is resolved
/// once and the paths under it from there, a `statx` a part below it
/// rather than one a part from `/` (issue 32).
struct Resolver<'a> {
    home: Option<(&'a Path, PathBuf)>,
}

impl<'a> Resolver<'a> {
    fn new(home: Option<&'a Path>) -> Resolver<'a> {
        let home = home.filter(|h| h.is_absolute()).and_then(|h| Some((h, super::real::real_path(h).ok()?)));
        Resolver { home }
    }

    fn resolve(&self, path: &Path) -> PathBuf {
        if let Some((given, real)) = &self.home
            && let Ok(rest) = path.strip_prefix(given)
            && let Ok(out) = super::real::real_path_from(real, rest)
        {
            return out;
        }
        resolve(path)
    }
}

/// `path` made absolute and resolved as [`super::real::real_path`] does:
/// every symlink followed, a dangling one too (a write through it would
/// create its target), and `..` applied after each link. When a folder on
/// the way cannot be read, `.` and `..` are removed by hand.
pub fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")).join(path)
    };
    super::real::real_path(&absolute).unwrap_or_else(|_| lexical(&absolute))
}

/// `a/./b/../c` → `a/c` without touching the disk.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The root of the git work tree `cwd` is in: the nearest folder at or
/// above it holding `.git` (a folder, or a file naming a `gitdir:`).
pub fn work_tree_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors().find(|dir| dir.join(".git").exists()).map(Path::to_path_buf)
}

/// Drop roots inside other roots (and repeats), keeping the order.
fn dedup_nested(roots: &mut Vec<PathBuf>) {
    let all = roots.clone();
    let mut seen: Vec<PathBuf> = Vec::new();
    roots.retain(|r| {
        let inside = all.iter().any(|other| other != r && r.starts_with(other));
        let repeat = seen.contains(r);
        seen.push(r.clone());
        !inside && !repeat
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(home: &Path) -> Places {
        Places {
            home: Some(home.to_path_buf()),
            tmp: home.join("tmp"),
            data: home.join(".local/share/glrs"),
            config_dir: home.join(".config/glrs"),
            config_file: home.join("elsewhere/config.json"),
            own_output: None,
            caches: Some(home.join(".cache/glrs/sandbox/repo-1")),
        }
    }

    #[test]
    fn roots_protected_paths_and_denied_reads() {
        let dir = tempfile::tempdir().unwrap();
        let home = resolve(dir.path());
        let repo = home.join("repo");
        std::fs::create_dir_all(repo.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::write(repo.join("AGENTS.md"), "be nice").unwrap();
        std::fs::write(repo.join("src/AGENTS.md"), "be nicer").unwrap();
        std::fs::create_dir_all(home.join("tmp")).unwrap();
        let policy =
            Policy::new(&SandboxConfig::default(), Mode::WorkspaceWrite, &repo.join("src/deep"), &places(&home))
                .unwrap();
        assert_eq!(policy.writable_roots()[0], repo, "the work tree root, not the cwd");
        assert!(!policy.writable_roots().contains(&home.join(".cache")), "no shared cache is writable");
        assert!(policy.is_writable(&home.join(".cache/glrs/sandbox/repo-1/go-build/x")), "the private one is");
        assert!(!policy.is_writable(&home.join(".cargo/registry/src/x/build.rs")));
        assert!(policy.is_writable(&repo.join("src/new.rs")));
        assert!(policy.is_writable(&home.join("tmp/x")));
        assert!(policy.is_writable(Path::new("/dev/null")));
        assert!(!policy.is_writable(&home.join(".bashrc")));
        assert!(!policy.is_writable(&repo.join(".git/hooks/pre-commit")));
        assert!(!policy.is_writable(&repo.join("AGENTS.md")) && !policy.is_writable(&repo.join("src/AGENTS.md")));
        assert!(!policy.is_writable(&repo.join("src/deep/.glrs/x")), "by name, even before it exists");
        assert!(policy.read_only().contains(&repo.join(".git")));
        assert!(policy.read_only().contains(&repo.join("src/AGENTS.md")));
        assert!(policy.is_denied_read(&home.join(".ssh/id_ed25519")));
        assert!(policy.is_denied_read(&home.join(".config/glrs/config.json")));
        assert!(!policy.is_denied_read(&home.join(".config/glrs/tools/mytool")));
        assert!(policy.is_denied_read(&home.join("elsewhere/config.json")), "GLRS_CONFIG's file");
        assert!(!policy.is_denied_read(&repo.join("src/a.rs")));
        let read_only = policy.with_mode(Mode::ReadOnly);
        assert!(!read_only.is_writable(&repo.join("src/new.rs")) && read_only.is_writable(Path::new("/dev/null")));
        assert!(policy.with_mode(Mode::Off).is_writable(&home.join(".bashrc")));
        assert!(!policy.network());
    }

    #[test]
    fn gitdir_targets_and_configured_lists() {
        let dir = tempfile::tempdir().unwrap();
        let home = resolve(dir.path());
        let main_git = home.join("main/.git/worktrees/wt");
        std::fs::create_dir_all(&main_git).unwrap();
        std::fs::create_dir_all(home.join("wt")).unwrap();
        std::fs::write(home.join("wt/.git"), format!("gitdir: {}\n", main_git.display())).unwrap();
        let config = SandboxConfig {
            writable_roots: Some(vec!["$HOME/wt/../main".into()]),
            deny_read: Some(vec!["/srv/secret".into()]),
            network: Some(true),
            ..SandboxConfig::default()
        };
        let policy = Policy::new(&config, Mode::WorkspaceWrite, &home.join("wt"), &places(&home)).unwrap();
        assert!(policy.read_only().contains(&main_git), "{:?}", policy.read_only());
        assert!(!policy.is_writable(&main_git.join("HEAD")));
        assert!(policy.is_writable(&home.join("main/README")));
        assert!(policy.writable_roots().contains(&home.join("main")), "the list configured");
        assert!(policy.is_denied_read(Path::new("/srv/secret/k")) && !policy.is_denied_read(&home.join(".ssh/k")));
        assert!(policy.network());
        let bad = SandboxConfig { writable_roots: Some(vec!["build".into()]), ..SandboxConfig::default() };
        let err = Policy::new(&bad, Mode::WorkspaceWrite, &home, &places(&home)).unwrap_err().to_string();
        assert!(err.contains("sandbox.writableRoots[0]") && err.contains("absolute"), "{err}");
    }

    #[test]
    fn resolving_follows_links_and_dots() {
        let dir = tempfile::tempdir().unwrap();
        let base = resolve(dir.path());
        std::fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        assert_eq!(resolve(&base.join("link/new/../file")), base.join("real/file"));
        assert_eq!(resolve(&base.join("link/./a/b")), base.join("real/a/b"));
    }
}
