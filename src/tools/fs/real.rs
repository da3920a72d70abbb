//! Where a path really leads (SPEC 17: paths are resolved before they are
//! judged). A path the model names may pass through symlinks in the
//! repository (`src/config.rs -> ~/.bashrc`, `docs/home -> ~`), `..`, or
//! procfs's own links (`/proc/self/cwd`, `/proc/self/root`, `/proc/PID/…`);
//! rules and roots are judged against the path with every one of them
//! followed, as the kernel would follow them. A tail that does not exist
//! yet (a file `write` will create) is kept as written, `..` in it applied:
//! a name that does not exist cannot be a link.
//!
//! The result has no symlink in it, so the file tools then open it with
//! `open::open_no_links`: a link swapped in after the check makes the open
//! fail rather than lead elsewhere.

use std::io;
use std::path::{Path, PathBuf};

/// Where a path really leads: the sandbox's policy judges paths by the
/// same function.
pub use crate::sandbox::real::real_path;

/// A path a tool was given, resolved: what it opens and what rules judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The real path: absolute, no symlink in it.
    pub real: PathBuf,
    /// The real path as rules match it and results show it: relative to the
    /// real cwd when inside it, else absolute.
    pub shown: String,
}

impl Target {
    /// Resolve `path` as the model gave it (`~` expanded, relative to `cwd`).
    pub fn resolve(cwd: &Path, path: &str) -> io::Result<Target> {
        let real = real_path(&super::super::resolve_path(cwd, path))?;
        let real_cwd = real_path(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        Ok(Target::of_real(&real_cwd, real))
    }

    /// The entry `name` in this folder.
    pub fn child(&self, name: &str) -> Target {
        let shown = if self.shown == "." { name.to_string() } else { format!("{}/{name}", self.shown) };
        Target { real: self.real.join(name), shown }
    }

    /// A path already real (a walker's entry under a real root), shown
    /// against `real_cwd` (the cwd as `real_path` gives it).
    pub fn of_real(real_cwd: &Path, real: PathBuf) -> Target {
        let shown = super::super::shown_path(real_cwd, &real);
        Target { real, shown }
    }
}

/// What `TOOL:GLOB` rules match for a path: the resolved path, or the path
/// as written when it cannot be resolved (the run then fails on it).
pub fn subject(cwd: &Path, path: &str) -> String {
    match Target::resolve(cwd, path) {
        Ok(target) => target.shown,
        Err(_) => super::super::shown_path(cwd, &super::super::resolve_path(cwd, path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_dot_dot_and_proc_self_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        let d = real_path(dir.path()).unwrap();
        std::fs::create_dir_all(d.join("home/.ssh")).unwrap();
        std::fs::create_dir_all(d.join("repo/src")).unwrap();
        std::fs::write(d.join("home/.bashrc"), "").unwrap();
        symlink(d.join("home/.bashrc"), d.join("repo/src/config.rs")).unwrap();
        symlink("../home", d.join("repo/docs")).unwrap();
        symlink("loop", d.join("repo/loop")).unwrap();
        let repo = d.join("repo");
        let t = Target::resolve(&repo, "src/config.rs").unwrap();
        assert_eq!(t.real, d.join("home/.bashrc"));
        assert_eq!(t.shown, d.join("home/.bashrc").display().to_string(), "outside the cwd: absolute");
        // A file not there yet, below a link: judged where it would be made.
        let t = Target::resolve(&repo, "docs/.ssh/authorized_keys").unwrap();
        assert_eq!(t.real, d.join("home/.ssh/authorized_keys"));
        let t = Target::resolve(&repo, "new/dir/../a.txt").unwrap();
        assert_eq!((t.real, t.shown.as_str()), (repo.join("new/a.txt"), "new/a.txt"));
        assert_eq!(Target::resolve(&repo, "src/../src/./config.rs").unwrap().real, d.join("home/.bashrc"));
        assert!(Target::resolve(&repo, "loop/x").is_err(), "a loop of links is an error");
        // procfs: the process's own cwd and root lead where they point.
        let here = real_path(&std::env::current_dir().unwrap()).unwrap();
        let t = Target::resolve(&repo, "/proc/self/cwd/some/file").unwrap();
        assert_eq!(t.real, here.join("some/file"));
        let via_root = format!("/proc/self/root{}", d.join("home/.ssh/id_rsa").display());
        assert_eq!(Target::resolve(&repo, &via_root).unwrap().real, d.join("home/.ssh/id_rsa"));
        assert_eq!(subject(&repo, "src/config.rs"), d.join("home/.bashrc").display().to_string());
    }
}
