//! Keys from the terminal during a turn, as an async stream on the
//! runtime: [`Keyboard::next`] waits for the terminal to be readable (no
//! polling), reads exactly what is there, and decodes it
//! (`termion::event::parse_event`). It ends (`None`) at end of file or on
//! an error: a closed terminal ends the turn like SIGHUP, never a loop
//! reading nothing.
//!
//! Not crossterm's `EventStream`: on a closed terminal its reader retries
//! a read that returns 0 forever, at 100% CPU (crossterm issue 793), and
//! it keeps what it read ahead in a buffer of its own that the line editor
//! never sees. Here a byte is read only when it is decoded at once, and
//! what is not read stays in the terminal for the line editor: type-ahead
//! survives the hand-over between a turn and the prompt.

use std::collections::VecDeque;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// A key, as a turn reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// A character of text.
    Text(char),
    /// Enter.
    Enter,
    /// Backspace (or Ctrl-H).
    Backspace,
    /// Esc or Ctrl-C.
    Stop,
    /// Anything else (arrows, function keys, other control keys).
    Other,
}

/// The terminal, read key by key.
pub struct Keyboard {
    tty: AsyncFd<OwnedFd>,
    /// Keys decoded from what was read and not yet taken.
    keys: VecDeque<Key>,
}

impl Keyboard {
    /// Read stdin (inside the runtime).
    pub fn open() -> std::io::Result<Keyboard> {
        let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
        // SAFETY: an OwnedFd is open for as long as it lives, and always
        // the same descriptor.
        let tty = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(std::io::Error::from)?;
        Ok(Keyboard { tty, keys: VecDeque::new() })
    }

    /// The next key; `None` once the terminal has ended (end of file, a
    /// hang-up, an error).
    pub async fn next(&mut self) -> Option<Key> {
        loop {
            if let Some(key) = self.keys.pop_front() {
                return Some(key);
            }
            let bytes = self.read().await?;
            decode(&bytes, &mut self.keys);
        }
    }

    /// Keys already read from the terminal and not yet taken: when a turn
    /// ends, they are the user's and handed over.
    pub fn take_read(&mut self) -> Vec<Key> {
        self.keys.drain(..).collect()
    }

    /// What the terminal holds, once it holds something. The descriptor is
    /// shared with the line editor, so it stays blocking: only as many
    /// bytes as are waiting are read, and a read never blocks.
    async fn read(&mut self) -> Option<Vec<u8>> {
        loop {
            let mut ready = self.tty.readable().await.ok()?;
            let fd = ready.get_inner().as_raw_fd();
            let waiting = waiting(fd)?;
            if waiting == 0 {
                if ready.ready().is_read_closed() || hung_up(fd) {
                    return None;
                }
                ready.clear_ready();
                continue;
            }
            let mut bytes = vec![0u8; waiting.min(64 * 1024)];
            // SAFETY: reads at most `bytes.len()` bytes into the buffer we own.
            let got = unsafe { libc::read(fd, bytes.as_mut_ptr().cast(), bytes.len()) };
            match got {
                n if n > 0 => {
                    bytes.truncate(n as usize);
                    return Some(bytes);
                }
                0 => return None,
                _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => continue,
                _ => return None,
            }
        }
    }
}

/// How many bytes the terminal holds; `None` when it cannot say (gone).
fn waiting(fd: i32) -> Option<usize> {
    let mut count: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int into `count`, which we own.
    let status = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut count) };
    (status == 0).then(|| usize::try_from(count).unwrap_or(0))
}

/// True when the terminal has hung up (readable with nothing to read).
fn hung_up(fd: i32) -> bool {
    let mut query = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd we own; a zero timeout only asks, never waits.
    let status = unsafe { libc::poll(&mut query, 1, 0) };
    status < 0 || query.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

/// The keys in `bytes`, one read's worth. A lone Esc at the end of a read
/// is the Esc key (a sequence arrives whole in one read).
fn decode(bytes: &[u8], keys: &mut VecDeque<Key>) {
    use termion::event::{Event, Key as K, parse_event};
    let mut rest = bytes.iter().copied().map(Ok::<u8, std::io::Error>).peekable();
    while let Some(Ok(byte)) = rest.next() {
        if byte == 0x1b && rest.peek().is_none() {
            keys.push_back(Key::Stop);
            continue;
        }
        let key = match parse_event(byte, &mut rest) {
            Ok(Event::Key(K::Char('\n'))) => Key::Enter,
            Ok(Event::Key(K::Char(c))) => Key::Text(c),
            Ok(Event::Key(K::Backspace | K::Ctrl('h'))) => Key::Backspace,
            Ok(Event::Key(K::Ctrl('c') | K::Esc)) => Key::Stop,
            _ => Key::Other,
        };
        keys.push_back(key);
    }
}

#[cfg(test)]
mod tests {
    use super::{Key, decode};

    fn keys(bytes: &[u8]) -> Vec<Key> {
        let mut out = std::collections::VecDeque::new();
        decode(bytes, &mut out);
        out.into()
    }

    #[test]
    fn text_enter_backspace_and_the_stop_keys() {
        assert_eq!(keys(b"h\xc3\xa9\r"), [Key::Text('h'), Key::Text('\u{e9}'), Key::Enter]);
        assert_eq!(keys(b"a\x7f\x08"), [Key::Text('a'), Key::Backspace, Key::Backspace]);
        assert_eq!(keys(b"\x03"), [Key::Stop]);
        assert_eq!(keys(b"\x1b"), [Key::Stop], "a lone Esc");
        assert_eq!(keys(b"x\x1b"), [Key::Text('x'), Key::Stop]);
    }

    #[test]
    fn sequences_are_keys_of_their_own_not_esc() {
        assert_eq!(keys(b"\x1b[A\x1b[3~z"), [Key::Other, Key::Other, Key::Text('z')]);
    }
}
