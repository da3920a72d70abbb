//! Opening what was judged, and only that (SPEC 17, issue 20): a real path
//! (see `real`) is opened without following any symlink, so one swapped in
//! after the check fails the open; only regular files are read or
//! replaced (a FIFO would block the call forever, a device never ends);
//! and a file is replaced atomically (a temporary file in the same folder,
//! synced, renamed over it, with the old file's mode), so a full disk or a
//! crash leaves the old file whole, never a truncated one.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};

/// Flags for a folder opened only to open what is in it.
#[cfg(target_os = "linux")]
const WALK: OFlags = OFlags::PATH;
#[cfg(not(target_os = "linux"))]
const WALK: OFlags = OFlags::RDONLY;

/// Open `real` (absolute, no symlink in it) with `flags`, following no
/// symlink on the way or at the end: `openat2` with `RESOLVE_NO_SYMLINKS`
/// where the kernel has it, else one `openat` with `O_NOFOLLOW` a part.
pub fn open_no_links(real: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    open_no_links_mode(real, flags, Mode::empty())
}

/// [`open_no_links`], a file it creates given `mode`.
fn open_no_links_mode(real: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::ResolveFlags;
        match rustix::fs::openat2(CWD, real, flags, mode, ResolveFlags::NO_SYMLINKS) {
            // ENOSYS: an old kernel; EPERM: a seccomp filter that refuses it.
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {}
            other => return other.map_err(io::Error::from),
        }
    }
    let (parent, name) = split(real)?;
    let dir = walk(parent)?;
    Ok(rustix::fs::openat(&dir, name, flags, mode)?)
}

/// Append `bytes` to the regular file `real` (absolute, resolved),
/// created 0600 when missing, following no symlink on the way or at the
/// end: a link planted in its place (to `~/.bashrc`) fails the open.
pub fn append_no_links(real: &Path, bytes: &[u8]) -> Result<(), OpenError> {
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd = open_no_links_mode(real, flags, Mode::from_raw_mode(0o600))?;
    let stat = rustix::fs::fstat(&fd)?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Ok(File::from(fd).write_all(bytes)?),
        other => Err(OpenError::NotRegular(kind_name(other))),
    }
}

/// The folder and the last name of a real path.
fn split(real: &Path) -> io::Result<(&Path, &OsStr)> {
    match (real.parent(), real.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(io::Error::other("not a file path")),
    }
}

/// Open the folder `real` part by part from `/`, following no link.
fn walk(real: &Path) -> io::Result<OwnedFd> {
    let mut dir = rustix::fs::openat(CWD, "/", WALK | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    for part in real.components() {
        if let Component::Normal(name) = part {
            let flags = WALK | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            dir = rustix::fs::openat(&dir, name, flags, Mode::empty())?;
        }
    }
    Ok(dir)
}

/// Why a file was not opened.
#[derive(Debug)]
pub enum OpenError {
    /// It is not a regular file: what it is ("a folder", "a FIFO", …).
    NotRegular(&'static str),
    /// The system said no.
    Io(io::Error),
}

impl From<io::Error> for OpenError {
    fn from(e: io::Error) -> OpenError {
        OpenError::Io(e)
    }
}

impl From<rustix::io::Errno> for OpenError {
    fn from(e: rustix::io::Errno) -> OpenError {
        OpenError::Io(e.into())
    }
}

/// What a file type is called in an error.
pub fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "a file",
        FileType::Directory => "a folder",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "not a regular file",
    }
}

/// Open a regular file to read, and its size. Opened non-blocking, so a
/// FIFO is refused at once rather than waited on.
pub fn open_regular(real: &Path) -> Result<(File, u64), OpenError> {
    let fd = open_no_links(real, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY)?;
    let stat = rustix::fs::fstat(&fd)?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Ok((File::from(fd), u64::try_from(stat.st_size).unwrap_or(0))),
        other => Err(OpenError::NotRegular(kind_name(other))),
    }
}

/// At most `cap` bytes of `file`, and whether there was more.
pub fn read_capped(file: &mut File, cap: u64, size_hint: u64) -> io::Result<(Vec<u8>, bool)> {
    let mut bytes = Vec::with_capacity(usize::try_from(size_hint.min(cap)).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    let more = bytes.len() as u64 > cap;
    bytes.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
    Ok((bytes, more))
}

/// Open the folder `real` to create files in, making the folders that are
/// missing, following no link.
fn open_folder_creating(real: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY;
    match open_no_links(real, flags) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        other => return other,
    }
    // The deepest folder that exists, then each missing one made in it.
    let mut existing = real;
    let mut missing = Vec::new();
    while let (Err(_), Some(parent), Some(name)) =
        (rustix::fs::statat(CWD, existing, AtFlags::SYMLINK_NOFOLLOW), existing.parent(), existing.file_name())
    {
        missing.push(name);
        existing = parent;
    }
    let mut dir = open_no_links(existing, flags)?;
    for name in missing.into_iter().rev() {
        match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        dir = rustix::fs::openat(&dir, name, flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?;
    }
    Ok(dir)
}

/// What `replace` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaced {
    /// The file was there and now holds the new bytes.
    Existing,
    /// The file is new.
    Created,
}

/// Replace the file at `real` (or create it, and its folders) with
/// `bytes`, atomically: written to a temporary file beside it, synced,
/// given the old file's mode (and owner, where allowed), renamed over it,
/// and the folder synced. On any failure the old file is untouched and the
/// temporary file removed. Refused for anything but a regular file: a
/// FIFO, a device, a folder, or a symlink swapped in since `real` was
/// resolved.
pub fn replace(real: &Path, bytes: &[u8]) -> Result<Replaced, OpenError> {
    let (parent, name) = split(real)?;
    let dir = open_folder_creating(parent)?;
    let old = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Some(stat),
            other => return Err(OpenError::NotRegular(kind_name(other))),
        },
        Err(rustix::io::Errno::NOENT) => None,
        Err(e) => return Err(e.into()),
    };
    // A new file gets 0666 less the umask, as any new file does; an
    // existing file's mode is copied onto the temporary one below.
    let create_mode = if old.is_some() { 0o600 } else { 0o666 };
    let (temp_name, fd) = create_temp(&dir, name, create_mode)?;
    let written = (|| -> io::Result<()> {
        let mut file = File::from(fd);
        file.write_all(bytes)?;
        if let Some(stat) = &old {
            // The owner first: changing it may clear set-id bits.
            let owner = (rustix::fs::Uid::from_raw(stat.st_uid), rustix::fs::Gid::from_raw(stat.st_gid));
            let _ = rustix::fs::fchown(&file, Some(owner.0), Some(owner.1));
            rustix::fs::fchmod(&file, Mode::from_raw_mode(stat.st_mode & 0o7777))?;
        }
        file.sync_all()?;
        rustix::fs::renameat(&dir, &temp_name, &dir, name)?;
        Ok(())
    })();
    if let Err(e) = written {
        let _ = rustix::fs::unlinkat(&dir, &temp_name, AtFlags::empty());
        return Err(e.into());
    }
    // The rename is durable once the folder is synced; the file is already
    // whole either way, so a failure here is not the write's.
    let _ = rustix::fs::fsync(&dir);
    Ok(if old.is_some() { Replaced::Existing } else { Replaced::Created })
}

/// A new temporary file beside `name` in `dir`: `.NAME.glrs-PID-N.tmp`.
fn create_temp(dir: &OwnedFd, name: &OsStr, mode: u32) -> io::Result<(std::ffi::OsString, OwnedFd)> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    for n in 0..100u32 {
        let mut temp = std::ffi::OsString::from(".");
        temp.push(name);
        temp.push(format!(".glrs-{}-{}.tmp", std::process::id(), stamp.wrapping_add(n)));
        match rustix::fs::openat(dir, &temp, flags, Mode::from_raw_mode(mode)) {
            Ok(fd) => return Ok((temp, fd)),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::other("no free name for a temporary file"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[test]
    fn links_fifos_and_devices_are_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let d = super::super::real::real_path(dir.path()).unwrap();
        std::fs::write(d.join("secret"), "key").unwrap();
        symlink(d.join("secret"), d.join("link")).unwrap();
        std::fs::create_dir(d.join("real")).unwrap();
        symlink(d.join("real"), d.join("dirlink")).unwrap();
        std::fs::write(d.join("real/f"), "x").unwrap();
        // A link at the end or on the way: refused (a swap after the check).
        assert!(open_regular(&d.join("link")).is_err());
        assert!(open_regular(&d.join("dirlink/f")).is_err());
        assert!(open_regular(&d.join("real/f")).is_ok());
        let fifo = d.join("fifo");
        rustix::fs::mknodat(CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert!(matches!(open_regular(&fifo), Err(OpenError::NotRegular("a FIFO (named pipe)"))));
        assert!(matches!(open_regular(Path::new("/dev/zero")), Err(OpenError::NotRegular("a character device"))));
        assert!(matches!(replace(&fifo, b"x"), Err(OpenError::NotRegular(_))));
        assert!(matches!(replace(&d.join("link"), b"x"), Err(OpenError::NotRegular("a symbolic link"))));
        assert_eq!(std::fs::read_to_string(d.join("secret")).unwrap(), "key", "the link's target is untouched");
        assert!(replace(&d.join("dirlink/g"), b"x").is_err(), "no file made through a link");
        assert!(!d.join("real/g").exists());
    }

    #[test]
    fn replace_keeps_the_mode_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = super::super::real::real_path(dir.path()).unwrap();
        let file = d.join("run.sh");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o751)).unwrap();
        assert_eq!(replace(&file, b"new").unwrap(), Replaced::Existing);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777, 0o751);
        assert_eq!(replace(&d.join("a/b/c.txt"), b"deep").unwrap(), Replaced::Created);
        assert_eq!(std::fs::read_to_string(d.join("a/b/c.txt")).unwrap(), "deep");
        let names: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
