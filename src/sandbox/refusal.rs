//! Naming what the sandbox refused (SPEC 17: `sandbox: write to /etc/hosts
//! refused`). The kernel tells the command, not glrs: a refused `open`
//! gives the command `EACCES`/`EPERM`/`EROFS`, and what it prints is all
//! glrs sees. So this is a best-effort reading of a failed command's
//! output, claiming only what holds: a path the output reports as denied
//! (`Permission denied`, `Read-only file system`, `Operation not
//! permitted`) that the policy does not let the command write, but glrs
//! itself could (so the sandbox, not the file's owner, refused it); a path
//! under `denyRead` the output names at all (hidden, it reads as missing);
//! and, with the network off, an output that reports a refused socket.

use std::path::Path;

use super::Policy;

/// The errors a refused file access prints.
const DENIED: &[&str] = &["Permission denied", "Read-only file system", "Operation not permitted"];
/// Words of a refused network access.
const NETWORK: &[&str] = &["socket", "connect", "network", "/dev/tcp/", "/dev/udp/", "Network"];

/// The lines to add to a failed command's result, one per refusal found
/// (at most a few), each starting `sandbox: `.
pub fn explain(output: &str, policy: &Policy, cwd: &Path) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut network = false;
    for line in output.lines().take(2_000) {
        let denied = DENIED.iter().any(|d| line.contains(d));
        for candidate in paths_in(line) {
            let path = super::resolve(&cwd.join(candidate));
            let note = if policy.is_denied_read(&path) {
                format!("sandbox: access to {} refused (it is in sandbox.denyRead)", path.display())
            } else if denied && !policy.is_writable(&path) && writable_outside(&path) {
                let why = if policy.is_protected(&path) {
                    "read-only inside the sandbox"
                } else {
                    "outside the writable roots"
                };
                format!("sandbox: write to {} refused ({why}, mode {})", path.display(), policy.mode().name())
            } else {
                continue;
            };
            if !found.contains(&note) {
                found.push(note);
            }
        }
        if denied && !policy.network() && NETWORK.iter().any(|w| line.contains(w)) {
            network = true;
        }
    }
    found.truncate(5);
    if network {
        found.push("sandbox: network access refused (the network is off inside the sandbox; sandbox.network: true turns it on)".into());
    }
    found
}

/// The paths a line names: quoted ones (`'…'`, `"…"`, `‘…’`), the
/// `: `-separated fields that look like a path or come just before the
/// error (`bash: .git/config: Read-only file system`, `bash: made.txt:
/// Permission denied`), and words starting with `/` (`sh: 1: cannot
/// create /etc/x: Permission denied`).
fn paths_in(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (open, close) in [('\'', '\''), ('"', '"'), ('‘', '’'), ('`', '\'')] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let quoted = &after[..end];
            if quoted.contains('/') {
                out.push(quoted);
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    let fields: Vec<&str> = line.split(": ").map(str::trim).collect();
    for (i, field) in fields.iter().enumerate() {
        let before_error = fields.get(i + 1).is_some_and(|next| DENIED.iter().any(|d| next.starts_with(d)));
        if !field.contains(' ') && (field.contains('/') || before_error) && !field.contains(['\'', '"']) {
            out.push(field);
        } else {
            out.extend(field.split_whitespace().filter(|w| w.starts_with('/') && !w.contains(['\'', '"'])));
        }
    }
    out
}

/// Whether glrs (outside the sandbox) could write `path`, or create it in
/// its nearest existing folder: then a refusal inside was the sandbox's.
fn writable_outside(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Some(existing) = path.ancestors().find(|p| std::fs::symlink_metadata(p).is_ok()) else { return false };
    let Ok(c) = std::ffi::CString::new(existing.as_os_str().as_bytes()) else { return false };
    // SAFETY: access only reads the C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{Mode, Places, SandboxConfig};

    #[test]
    fn refused_writes_and_reads_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let home = crate::sandbox::resolve(dir.path());
        let work = home.join("work");
        std::fs::create_dir_all(work.join(".git")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let places = Places {
            home: Some(home.clone()),
            tmp: home.join("tmp"),
            data: home.join("data"),
            config_dir: home.join(".config/glrs"),
            config_file: home.join(".config/glrs/config.json"),
            own_output: None,
            caches: None,
        };
        let policy = Policy::new(&SandboxConfig::default(), Mode::WorkspaceWrite, &work, &places).unwrap();
        let out = format!(
            "touch: cannot touch '{0}/x': Permission denied\nbash: line 1: {1}/.git/config: Read-only file system\n\
             cat: {0}/.ssh/id_rsa: No such file or directory\nbash: {1}/ok: Permission denied\n\
             bash: line 1: plain.txt: Permission denied\n\
             bash: connect: Operation not permitted\nbash: line 1: /dev/tcp/127.0.0.1/9: Operation not permitted\n",
            home.display(),
            work.display()
        );
        let notes = explain(&out, &policy, &work);
        assert!(
            notes.contains(&format!(
                "sandbox: write to {}/x refused (outside the writable roots, mode workspace-write)",
                home.display()
            )),
            "{notes:?}"
        );
        assert!(notes.iter().any(|n| n.contains(".git/config refused (read-only inside the sandbox")), "{notes:?}");
        assert!(notes.iter().any(|n| n.contains(".ssh/id_rsa refused (it is in sandbox.denyRead)")), "{notes:?}");
        assert!(!notes.iter().any(|n| n.contains("/ok")), "a writable path is not the sandbox's doing: {notes:?}");
        assert!(notes.last().unwrap().contains("network access refused"), "{notes:?}");
        let read_only = policy.with_mode(Mode::ReadOnly);
        let plain = explain("bash: line 1: plain.txt: Permission denied\n", &read_only, &work);
        assert_eq!(
            plain,
            [format!(
                "sandbox: write to {}/plain.txt refused (outside the writable roots, mode read-only)",
                work.display()
            )]
        );
        assert!(explain("all good\n", &policy, &work).is_empty());
    }
}
