//! Where things live (SPEC section 1): the XDG data and config folders, the
//! read-only legacy `glorious` folder, and creation of folders as 0700.

use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// Where the user's own programs start (hooks, MCP servers,
/// `apiKeyCommand`, an executable tool's `--describe`: SPEC 15), unless
/// their config names a `cwd`: a folder the model cannot write. In the
/// session's folder, what the model planted there ran, outside the
/// sandbox, at the next chat start: a `notes_mcp.py` for `python3 -m
/// notes_mcp`, an `.npmrc` for `npx`, a `pyproject.toml` for `uv run`
/// (issue 31, item 11).
pub const OWN_PROGRAMS_CWD: &str = "/";

/// The folder a hook or server runs in: its configured `cwd` (`~`
/// expanded; a relative one, `.` too, is taken from the session's folder,
/// which then is trusted), else [`OWN_PROGRAMS_CWD`].
pub fn own_program_cwd(session_cwd: &Path, configured: Option<&str>) -> PathBuf {
    let Some(dir) = configured else { return PathBuf::from(OWN_PROGRAMS_CWD) };
    let expanded = match dir.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match dirs::home_dir() {
            Some(home) => home.join(rest.trim_start_matches('/')),
            None => PathBuf::from(dir),
        },
        _ => PathBuf::from(dir),
    };
    if expanded.is_absolute() { expanded } else { session_cwd.join(expanded) }
}

/// Every path glrs uses, worked out once from the environment.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `<data>`: `$XDG_DATA_HOME/glrs` or `~/.local/share/glrs`.
    pub data: PathBuf,
    /// `<data>/sessions`.
    pub sessions: PathBuf,
    /// `<data>/sessions/artifacts`.
    pub artifacts: PathBuf,
    /// `$XDG_DATA_HOME/glorious/sessions`: read, never written.
    pub legacy_sessions: PathBuf,
    /// The config file: `$GLRS_CONFIG`, else `$XDG_CONFIG_HOME/glrs/config.json`.
    pub config: PathBuf,
}

impl Paths {
    /// Paths from the process environment.
    pub fn from_env() -> Result<Paths> {
        let get = |name: &str| std::env::var_os(name).map(PathBuf::from);
        Paths::from_vars(get("XDG_DATA_HOME"), get("XDG_CONFIG_HOME"), get("GLRS_CONFIG"), dirs::home_dir())
    }

    /// Paths from explicit values, so tests need not touch the environment.
    /// Per the XDG base directory rules, a relative or empty `XDG_*` value
    /// is ignored and the fallback under the home folder is used.
    pub fn from_vars(
        xdg_data: Option<PathBuf>,
        xdg_config: Option<PathBuf>,
        glrs_config: Option<PathBuf>,
        home: Option<PathBuf>,
    ) -> Result<Paths> {
        let absolute = |p: Option<PathBuf>| p.filter(|p| p.is_absolute());
        let home_or = |rest: &str| -> Result<PathBuf> {
            match home.as_ref().filter(|h| h.is_absolute()) {
                Some(h) => Ok(h.join(rest)),
                None => bail!("cannot find the home folder: set HOME or XDG_DATA_HOME"),
            }
        };
        let data_base = match absolute(xdg_data) {
            Some(p) => p,
            None => home_or(".local/share")?,
        };
        let config = match glrs_config.filter(|p| !p.as_os_str().is_empty()) {
            Some(p) => p,
            None => match absolute(xdg_config) {
                Some(p) => p.join("glrs/config.json"),
                None => home_or(".config")?.join("glrs/config.json"),
            },
        };
        let data = data_base.join("glrs");
        let sessions = data.join("sessions");
        Ok(Paths {
            artifacts: sessions.join("artifacts"),
            legacy_sessions: data_base.join("glorious").join("sessions"),
            data,
            sessions,
            config,
        })
    }

    /// `<data>/output`: where long tool outputs are kept whole, outside
    /// every writable root (the sandbox hides the data folder).
    pub fn output(&self) -> PathBuf {
        self.data.join("output")
    }

    /// `<data>/output/<id>`: one session's kept outputs, the only part of
    /// the data folder its commands and file tools may read.
    pub fn output_of(&self, id: &str) -> PathBuf {
        self.output().join(id)
    }

    /// The artifacts folder of one session.
    pub fn artifacts_of(&self, id: &crate::SessionId) -> PathBuf {
        self.artifacts.join(id.as_str())
    }
}

/// Create `dir` and any missing parents with mode 0700 (sessions hold
/// private conversations). An existing folder is left as it is.
pub fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Refuse a path in the store that leads out of it: `path` resolved (or,
/// when it does not exist yet, its folder resolved) must lie inside `root`
/// resolved. A symbolic link planted in the store (an artifacts folder, an
/// artifact, a session file) could otherwise make glrs read, write or
/// delete files elsewhere. A store moved as a whole behind a link of its
/// own is fine: `root` is resolved too.
pub fn check_inside(root: &Path, path: &Path) -> std::io::Result<()> {
    let real_root = root.canonicalize()?;
    let real = match path.canonicalize() {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) if std::fs::symlink_metadata(path).is_err() => dir.canonicalize()?.join(name),
            // A dangling link.
            _ => return Err(leads_out(path, root)),
        },
        Err(e) => return Err(e),
    };
    if real.starts_with(&real_root) { Ok(()) } else { Err(leads_out(path, root)) }
}

/// True when `path` is a plain file itself, not a link to one.
pub fn is_plain_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

fn leads_out(path: &Path, root: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!("{} leads out of {} (a symbolic link?): refused", path.display(), root.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<PathBuf> {
        Some(PathBuf::from(s))
    }

    #[test]
    fn xdg_values_win_when_absolute() {
        let paths = Paths::from_vars(p("/x/data"), p("/x/conf"), None, p("/home/a")).unwrap();
        assert_eq!(paths.sessions, PathBuf::from("/x/data/glrs/sessions"));
        assert_eq!(paths.artifacts, PathBuf::from("/x/data/glrs/sessions/artifacts"));
        assert_eq!(paths.legacy_sessions, PathBuf::from("/x/data/glorious/sessions"));
        assert_eq!(paths.config, PathBuf::from("/x/conf/glrs/config.json"));
    }

    #[test]
    fn relative_or_missing_xdg_falls_back_to_home() {
        let paths = Paths::from_vars(p("rel"), None, None, p("/home/a")).unwrap();
        assert_eq!(paths.data, PathBuf::from("/home/a/.local/share/glrs"));
        assert_eq!(paths.config, PathBuf::from("/home/a/.config/glrs/config.json"));
    }

    #[test]
    fn glrs_config_names_another_file() {
        let paths = Paths::from_vars(None, None, p("/etc/g.json"), p("/home/a")).unwrap();
        assert_eq!(paths.config, PathBuf::from("/etc/g.json"));
    }

    #[test]
    fn no_home_and_no_xdg_is_an_error() {
        assert!(Paths::from_vars(None, None, None, None).is_err());
    }

    #[test]
    fn links_out_of_the_store_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("store"), dir.path().join("outside"));
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "x").unwrap();
        std::fs::write(root.join("a/ok"), "x").unwrap();
        assert!(check_inside(&root, &root.join("a/ok")).is_ok());
        assert!(check_inside(&root, &root.join("a/new")).is_ok(), "a file to create");
        std::os::unix::fs::symlink(&outside, root.join("linked")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), root.join("a/link")).unwrap();
        std::os::unix::fs::symlink(outside.join("none"), root.join("a/dangling")).unwrap();
        for bad in ["linked/secret", "linked/new", "a/link", "a/dangling"] {
            let err = check_inside(&root, &root.join(bad)).unwrap_err();
            assert!(err.to_string().contains("leads out of"), "{bad}: {err}");
        }
        assert!(is_plain_file(&root.join("a/ok")) && !is_plain_file(&root.join("a/link")));
    }
}
