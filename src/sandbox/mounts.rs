//! The file system a sandboxed command sees (Linux), made in its own mount
//! namespace before Landlock is applied:
//!
//! 1. Everything is read-only but the writable roots: each root's mount
//!    tree is cloned (`open_tree`), the whole tree from `/` is made
//!    read-only (`mount_setattr`, recursive), then each clone is put back
//!    over its root (`move_mount`), with the flags it had. Landlock governs
//!    writes, but not `chmod`, `chown`, `utime` or `setxattr`: on a
//!    read-only mount these fail with `EROFS` (issue 31 item 9).
//! 2. Inside the writable roots, each protected subpath (`.git` and its
//!    `gitdir:` target, `.glrs`, `AGENTS.md`) is bound onto itself
//!    read-only.
//! 3. Each `denyRead` folder is covered by an empty read-only tmpfs, each
//!    `denyRead` file by `/dev/null` (glrs's config folder: each entry but
//!    `tools/`).
//! 4. glrs's data folder (every session's transcript, checkpoint copies,
//!    locks, kept outputs) is covered by a tmpfs holding only this
//!    session's own output folder, bound in read-only: a command can
//!    neither read another project's sessions nor hold a session's lock.
//!
//! Everything is worked out in the parent ([`Mounts::new`]); the child
//! ([`Mounts::apply`]) only makes system calls, with no allocation.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Mode, Policy};

/// The most writable roots one command may have (their clones are held in
/// a fixed array in the child, which may not allocate).
const MAX_ROOTS: usize = 64;

/// `mount_setattr`'s argument (linux/mount.h).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const OPEN_TREE_CLONE: libc::c_uint = 0x1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// One mount made in the child's own namespace, after the tree was made
/// read-only.
enum MountOp {
    /// Bind `path` onto itself, then remount it read-only, keeping the
    /// flags the kernel locks (`extra`).
    ReadOnly { path: CString, extra: libc::c_ulong },
    /// Cover a folder with an empty read-only tmpfs.
    HideDir { path: CString },
    /// Cover a file with `/dev/null`, read-only.
    HideFile { path: CString, extra: libc::c_ulong },
    /// Cover a folder with a tmpfs holding only `keep` (bound in at the
    /// same place, read-only): `folders` are made in the tmpfs first, the
    /// last being `keep`'s place.
    HideAllBut { path: CString, keep: CString, folders: Vec<CString> },
}

/// The mounts of one command.
pub(super) struct Mounts {
    /// The writable roots that exist, bound back read-write.
    writable: Vec<CString>,
    ops: Vec<MountOp>,
}

/// The `nosuid`/`nodev`/`noexec`/atime flags of the mount holding `path`,
/// which a remount inside a user namespace must keep.
fn locked_flags(path: &Path) -> libc::c_ulong {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return 0 };
    // SAFETY: statvfs writes into the zeroed struct we own; the path is a
    // valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    let kept =
        libc::ST_NOSUID | libc::ST_NODEV | libc::ST_NOEXEC | libc::ST_NOATIME | libc::ST_NODIRATIME | libc::ST_RELATIME;
    // The ST_ and MS_ bits have the same values for these flags.
    st.f_flag & kept
}

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::other(format!("{} holds a NUL", path.display())))
}

fn is_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

impl Mounts {
    /// The mounts for `policy`; `private_tmp` is `read-only`'s one
    /// writable folder.
    pub(super) fn new(policy: &Policy, private_tmp: Option<&Path>) -> io::Result<Mounts> {
        let mut roots: Vec<PathBuf> = match policy.mode() {
            Mode::WorkspaceWrite => policy.writable_roots().to_vec(),
            Mode::ReadOnly | Mode::Off => Vec::new(),
        };
        roots.extend(private_tmp.map(super::resolve));
        // A root inside the data folder is not bound back: the data folder
        // is never writable from inside.
        roots.retain(|r| is_dir(r) && !r.starts_with(policy.data()));
        if roots.len() > MAX_ROOTS {
            return Err(io::Error::other(format!(
                "{} writable roots: at most {MAX_ROOTS} (sandbox.writableRoots)",
                roots.len()
            )));
        }
        let writable = roots.iter().map(|r| cstring(r)).collect::<io::Result<_>>()?;
        let mut ops = Vec::new();
        if policy.mode() == Mode::WorkspaceWrite {
            for path in policy.read_only() {
                // Resolved, so a link is not followed somewhere else at mount time.
                let real = super::resolve(path);
                if std::fs::symlink_metadata(&real).is_ok() {
                    ops.push(MountOp::ReadOnly { extra: locked_flags(&real), path: cstring(&real)? });
                }
            }
        }
        hide_denied(policy, &mut ops)?;
        hide_data(policy, &mut ops)?;
        Ok(Mounts { writable, ops })
    }

    /// Make the mounts (in the child, inside its new mount namespace, `/`
    /// already private).
    pub(super) fn apply(&self) -> io::Result<()> {
        self.read_only_but_roots()?;
        for op in &self.ops {
            apply_op(op)?;
        }
        Ok(())
    }

    /// Step 1: the whole tree read-only, the writable roots as they were.
    fn read_only_but_roots(&self) -> io::Result<()> {
        let mut clones: [libc::c_int; MAX_ROOTS] = [-1; MAX_ROOTS];
        for (root, clone) in self.writable.iter().zip(clones.iter_mut()) {
            *clone = open_tree(root)?;
        }
        let attr = MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
        // SAFETY: a valid C string and a struct we own, of the size given.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                c"/".as_ptr(),
                libc::AT_RECURSIVE as libc::c_uint,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        };
        check_long(rc)?;
        for (root, clone) in self.writable.iter().zip(clones) {
            move_mount(clone, root)?;
        }
        reenter_cwd()
    }
}

/// `denyRead`: each folder covered by an empty tmpfs, each file by
/// `/dev/null`; a denied folder with kept paths under it (glrs's config
/// folder and its `tools/`) has each entry hidden but those leading to one.
fn hide_denied(policy: &Policy, ops: &mut Vec<MountOp>) -> io::Result<()> {
    for denied in policy.deny_read() {
        let keep: Vec<&PathBuf> = policy.deny_read_except().iter().filter(|e| e.starts_with(denied)).collect();
        let hide: Vec<PathBuf> = if keep.is_empty() {
            vec![denied.clone()]
        } else {
            match std::fs::read_dir(denied) {
                Ok(entries) => entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| !keep.iter().any(|k| k.starts_with(p)))
                    .collect(),
                Err(_) => Vec::new(),
            }
        };
        for path in hide {
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_dir() => ops.push(MountOp::HideDir { path: cstring(&path)? }),
                Ok(_) => {
                    ops.push(MountOp::HideFile { extra: locked_flags(Path::new("/dev/null")), path: cstring(&path)? })
                }
                Err(_) => {}
            }
        }
    }
    Ok(())
}

/// glrs's data folder hidden, but for the session's own output folder
/// (when it is inside and exists).
fn hide_data(policy: &Policy, ops: &mut Vec<MountOp>) -> io::Result<()> {
    let data = policy.data();
    if data.as_os_str().is_empty() || !is_dir(data) {
        return Ok(());
    }
    let keep = policy.own_output().filter(|o| o.starts_with(data) && o != &data && is_dir(o));
    let Some(keep) = keep else {
        ops.push(MountOp::HideDir { path: cstring(data)? });
        return Ok(());
    };
    let mut folders = Vec::new();
    let mut at = data.to_path_buf();
    for part in keep.strip_prefix(data).unwrap_or(Path::new("")).components() {
        at.push(part);
        folders.push(cstring(&at)?);
    }
    ops.push(MountOp::HideAllBut { path: cstring(data)?, keep: cstring(keep)?, folders });
    Ok(())
}

/// Change to the working folder again by its path: the child changed to it
/// before the mounts, so it is still on the mount now covered (read-only);
/// by path it is found on the mount put over it.
fn reenter_cwd() -> io::Result<()> {
    let mut buf = [0 as libc::c_char; libc::PATH_MAX as usize];
    // SAFETY: getcwd writes a NUL-terminated path of at most buf.len()
    // bytes into our buffer; chdir reads it.
    unsafe {
        if libc::getcwd(buf.as_mut_ptr(), buf.len()).is_null() {
            return Err(io::Error::last_os_error());
        }
        check(libc::chdir(buf.as_ptr()))
    }
}

/// `-1` from a libc call as the error it set.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

fn check_long(rc: libc::c_long) -> io::Result<()> {
    if rc == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// A detached copy of the mount tree at `path` (its submounts too).
fn open_tree(path: &CString) -> io::Result<libc::c_int> {
    let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_RECURSIVE as libc::c_uint;
    // SAFETY: a valid C string; the call returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) };
    check_long(fd)?;
    libc::c_int::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))
}

/// Attach the detached tree `fd` at `path`, and close `fd`.
fn move_mount(fd: libc::c_int, path: &CString) -> io::Result<()> {
    // SAFETY: a descriptor from open_tree, valid C strings.
    let rc = unsafe {
        libc::syscall(libc::SYS_move_mount, fd, c"".as_ptr(), libc::AT_FDCWD, path.as_ptr(), MOVE_MOUNT_F_EMPTY_PATH)
    };
    // SAFETY: our descriptor, closed once.
    unsafe { libc::close(fd) };
    check_long(rc)
}

const TMPFS_FLAGS: libc::c_ulong = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;

fn apply_op(op: &MountOp) -> io::Result<()> {
    let null = std::ptr::null::<libc::c_char>();
    // SAFETY: plain system calls with C strings we own.
    unsafe {
        match op {
            MountOp::ReadOnly { path, extra } => {
                let p = path.as_ptr();
                check(libc::mount(p, p, null, libc::MS_BIND | libc::MS_REC, std::ptr::null()))?;
                let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | extra;
                check(libc::mount(null, p, null, flags, std::ptr::null()))?;
            }
            MountOp::HideDir { path } => {
                let opts = c"size=4k,mode=0500";
                let flags = libc::MS_RDONLY | TMPFS_FLAGS;
                check(libc::mount(c"tmpfs".as_ptr(), path.as_ptr(), c"tmpfs".as_ptr(), flags, opts.as_ptr().cast()))?;
            }
            MountOp::HideFile { path, extra } => {
                let p = path.as_ptr();
                check(libc::mount(c"/dev/null".as_ptr(), p, null, libc::MS_BIND, std::ptr::null()))?;
                let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | extra;
                check(libc::mount(null, p, null, flags, std::ptr::null()))?;
            }
            MountOp::HideAllBut { path, keep, folders } => {
                // Cloned before the tmpfs covers it.
                let clone = open_tree(keep)?;
                let opts = c"size=64k,mode=0700";
                check(libc::mount(
                    c"tmpfs".as_ptr(),
                    path.as_ptr(),
                    c"tmpfs".as_ptr(),
                    TMPFS_FLAGS,
                    opts.as_ptr().cast(),
                ))?;
                for folder in folders {
                    check(libc::mkdir(folder.as_ptr(), 0o700))?;
                }
                move_mount(clone, keep)?;
                let flags = libc::MS_REMOUNT | libc::MS_RDONLY | TMPFS_FLAGS;
                check(libc::mount(null, path.as_ptr(), null, flags, std::ptr::null()))?;
            }
        }
    }
    Ok(())
}
