//! Writing an append's new entries without holding them: serialized
//! straight into the journal and the session file through these writers
//! (a 100 MB answer is never built into a second buffer, issue 14).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

/// Write the new tail of an in-place append: each entry after `,⏎`,
/// serialized straight into `out`, then `end` (`⏎]`, the trailing fields,
/// `}⏎`).
pub(super) fn write_tail<T: serde::Serialize>(out: &mut dyn Write, entries: &[T], end: &[u8]) -> io::Result<()> {
    for entry in entries {
        out.write_all(b",\n")?;
        serde_json::to_writer(&mut *out, entry)?;
    }
    out.write_all(end)
}

/// How many bytes `write` writes, keeping none of them.
pub(super) fn measure(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<u64> {
    let mut count = Count(0);
    write(&mut count)?;
    Ok(count.0)
}

struct Count(u64);

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes at consecutive offsets of a file (no shared cursor); with
/// `stop_after`, drops everything past that many bytes, as a kill during
/// the write would.
pub(super) struct WriteAt<'a> {
    file: &'a File,
    at: u64,
    stop_after: Option<u64>,
}

impl<'a> WriteAt<'a> {
    pub(super) fn new(file: &'a File, at: u64, stop_after: Option<u64>) -> WriteAt<'a> {
        WriteAt { file, at, stop_after }
    }
}

impl Write for WriteAt<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let keep = match &mut self.stop_after {
            Some(left) => {
                let keep = (*left).min(buf.len() as u64);
                *left -= keep;
                keep as usize
            }
            None => buf.len(),
        };
        self.file.write_all_at(&buf[..keep], self.at)?;
        self.at += keep as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Write `write`'s bytes at `at` of `file` through a buffer.
pub(super) fn write_at(
    file: &File,
    at: u64,
    stop_after: Option<u64>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, WriteAt::new(file, at, stop_after));
    write(&mut out)?;
    out.flush()
}

/// Passes bytes on, continuing a journal checksum over them once `hash` is
/// set.
pub(super) struct Hashing<W> {
    pub(super) out: W,
    pub(super) hash: Option<super::journal::Chain>,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        if let Some(h) = &mut self.hash {
            h.update(&buf[..n]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
