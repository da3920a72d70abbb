//! A child's output, from a pipe into its file, capped: the file keeps the
//! first [`HEAD`] bytes, then a note of how much was cut, then the last
//! [`TAIL`] bytes. `timeout 3 yes` once left a 1 GB file under
//! `$XDG_CACHE_HOME/glrs/output/` (issue 20, item 9); a command that writes
//! for ten minutes would fill the disk. The tail waits in memory (at most
//! `TAIL` bytes) and is written when the run ends.
//!
//! Why a pipe and not the file itself as the child's stdout: a file the
//! child writes cannot be capped while it writes (a size limit would kill
//! the command), and stdout and stderr sharing one pipe keeps their order
//! exact, as sharing one file did.

use std::collections::VecDeque;
use std::io::Write as _;

use tokio::net::unix::pipe;

/// The start of an output kept in its file.
pub const HEAD: usize = 4 * 1024 * 1024;
/// The end of an output kept in its file.
pub const TAIL: usize = 4 * 1024 * 1024;

/// One output stream being copied into its file.
pub struct Capture {
    pipe: pipe::Receiver,
    file: std::fs::File,
    /// Bytes written to the file so far (at most `HEAD` while running).
    written: usize,
    /// The newest bytes past the head, at most `TAIL`.
    tail: VecDeque<u8>,
    /// Bytes dropped from between the head and the tail.
    cut: u64,
    /// The first failure to write the file: the output is then lost, the
    /// command is not (it keeps running and is read to the end).
    failed: Option<std::io::Error>,
    closed: bool,
}

impl Capture {
    /// Copies what arrives on `pipe` into `file`.
    pub fn new(pipe: pipe::Receiver, file: std::fs::File) -> Capture {
        Capture { pipe, file, written: 0, tail: VecDeque::new(), cut: 0, failed: None, closed: false }
    }

    /// Copies until every writer has closed the pipe. Cancel-safe: dropped
    /// mid-way, nothing read is lost (it is already in the file or the tail).
    pub async fn pump(&mut self) {
        while !self.closed {
            if self.pipe.readable().await.is_err() {
                self.closed = true;
                return;
            }
            self.read_ready();
        }
    }

    /// Takes what is in the pipe now, without waiting: after the child
    /// exited, what a child it left running keeps writing is not waited for.
    pub fn drain(&mut self) {
        self.read_ready();
    }

    /// Reads until the pipe would block or is closed.
    fn read_ready(&mut self) {
        let mut buf = [0u8; 64 * 1024];
        // Bounded: a background writer cannot keep this loop going forever.
        for _ in 0..1024 {
            match self.pipe.try_read(&mut buf) {
                Ok(0) => {
                    self.closed = true;
                    return;
                }
                Ok(n) => self.keep(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.closed = true;
                    return;
                }
            }
        }
    }

    fn keep(&mut self, mut bytes: &[u8]) {
        if self.written < HEAD {
            let n = bytes.len().min(HEAD - self.written);
            self.write(&bytes[..n]);
            self.written += n;
            bytes = &bytes[n..];
        }
        self.tail.extend(bytes);
        let over = self.tail.len().saturating_sub(TAIL);
        if over > 0 {
            self.tail.drain(..over);
            self.cut += over as u64;
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if self.failed.is_none()
            && let Err(e) = self.file.write_all(bytes)
        {
            self.failed = Some(e);
        }
    }

    /// Writes the note of what was cut and the tail; the error is the first
    /// failure to write the file.
    pub fn finish(mut self) -> std::io::Result<()> {
        if self.cut > 0 {
            let total = self.written as u64 + self.cut + self.tail.len() as u64;
            let note = format!(
                "\n[… {} bytes cut here: the output was {total} bytes; its first {} and last {} are kept]\n",
                self.cut,
                self.written,
                self.tail.len()
            );
            self.write(note.as_bytes());
        }
        let tail = std::mem::take(&mut self.tail);
        let (a, b) = tail.as_slices();
        self.write(a);
        self.write(b);
        match self.failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// A pipe for a child's output: the end the child writes (as often as it
/// is cloned: stdout and stderr), and the [`Capture`] reading the other.
pub fn pipe_into(file: std::fs::File) -> std::io::Result<(std::io::PipeWriter, Capture)> {
    let (reader, writer) = std::io::pipe()?;
    let receiver = pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))?;
    Ok((writer, Capture::new(receiver, file)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        crate::runtime::build().unwrap()
    }

    #[test]
    fn a_small_output_is_copied_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        runtime().block_on(async {
            let (mut writer, mut capture) = pipe_into(std::fs::File::create(&path).unwrap()).unwrap();
            writer.write_all(b"hello\nworld\n").unwrap();
            drop(writer);
            capture.pump().await;
            capture.finish().unwrap();
        });
        assert_eq!(std::fs::read(&path).unwrap(), b"hello\nworld\n");
    }

    #[test]
    fn a_huge_output_keeps_its_head_a_note_and_its_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let total = HEAD + TAIL + 3 * 1024 * 1024 + 17;
        runtime().block_on(async {
            let (writer, mut capture) = pipe_into(std::fs::File::create(&path).unwrap()).unwrap();
            let write = tokio::task::spawn_blocking(move || {
                let mut writer = writer;
                let chunk: Vec<u8> = (0..total).map(|i| b'a' + (i % 26) as u8).collect();
                writer.write_all(&chunk).unwrap();
            });
            capture.pump().await;
            write.await.unwrap();
            capture.finish().unwrap();
        });
        let kept = std::fs::read(&path).unwrap();
        let expect: Vec<u8> = (0..total).map(|i| b'a' + (i % 26) as u8).collect();
        assert_eq!(&kept[..HEAD], &expect[..HEAD]);
        assert_eq!(&kept[kept.len() - TAIL..], &expect[total - TAIL..]);
        let note = String::from_utf8_lossy(&kept[HEAD..kept.len() - TAIL]).into_owned();
        assert_eq!(
            note,
            format!(
                "\n[… {} bytes cut here: the output was {total} bytes; its first {HEAD} and last {TAIL} are kept]\n",
                3 * 1024 * 1024 + 17
            )
        );
        assert!(kept.len() < HEAD + TAIL + 200);
    }
}
