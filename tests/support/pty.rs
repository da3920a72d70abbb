//! Driving `glrs-chat` through a pseudo-terminal, as a person would.
//! rexpect reads the terminal byte by byte as Latin-1, so expectations
//! should match ASCII text only.

use std::process::Command;

use rexpect::reader::Options;
use rexpect::session::{PtySession, spawn_with_options};

use super::{OPENAI_KEY, TestStore};

/// `glrs-chat ARGS` in a terminal against `ts`; `env` adds variables, and
/// escapes are stripped from what is read unless `raw`.
pub fn chat(ts: &TestStore, args: &[&str], env: &[(&str, &str)], raw: bool) -> PtySession {
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.args(args).env("TERM", "xterm-256color").env("OPENAI_API_KEY", OPENAI_KEY);
    for (k, v) in env {
        cmd.env(k, v);
    }
    spawn(cmd, raw)
}

/// Any command in a terminal (a shell running a README recipe, say).
pub fn spawn(cmd: Command, raw: bool) -> PtySession {
    spawn_with_options(cmd, Options::new().timeout_ms(Some(20_000)).strip_ansi_escape_codes(!raw))
        .expect("spawn in a pty")
}

/// Wait for the prompt (`ID MODEL N% > `).
pub fn prompt(p: &mut PtySession) {
    p.exp_regex(r"[0-9a-f]{8} gpt-4\.1 \d+% > ").expect("the prompt");
}

/// `exe ARGS` in a terminal against `ts`: everything it wrote, escapes
/// and all, once it has exited.
pub fn run_raw(ts: &TestStore, exe: &str, args: &[&str]) -> String {
    let mut cmd = ts.std_cmd(exe);
    cmd.args(args).env("TERM", "xterm-256color");
    let mut p = spawn(cmd, true);
    p.exp_eof().expect("the program to finish")
}

/// A program in a pseudo-terminal whose far end the test can close, as a
/// user closing the window does ([`Hangable::hang_up`]). rexpect cannot: its
/// reader thread keeps the terminal open, and it kills the program on drop.
/// Output is read only while waiting for it, on the test's thread, so
/// closing the one descriptor closes the terminal.
pub struct Hangable {
    master: Option<std::os::fd::OwnedFd>,
    pub child: std::process::Child,
    /// Everything read so far.
    pub seen: String,
}

/// `glrs-chat ARGS` in a terminal of its own (its controlling terminal,
/// so closing it sends the kernel's SIGHUP too), without colour.
pub fn hangable_chat(ts: &TestStore, args: &[&str], env: &[(&str, &str)]) -> Hangable {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    // SAFETY: posix_openpt and friends take and return plain integers; the
    // name buffer is ours and its length is passed.
    let (master, slave) = unsafe {
        // Close-on-exec: a program started meanwhile (by this test or
        // another) must not hold the terminal open.
        let master = libc::open(c"/dev/ptmx".as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(master >= 0, "open /dev/ptmx: {}", std::io::Error::last_os_error());
        let master = OwnedFd::from_raw_fd(master);
        assert_eq!(libc::grantpt(master.as_raw_fd()), 0);
        assert_eq!(libc::unlockpt(master.as_raw_fd()), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()), 0);
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(slave >= 0, "open the terminal's slave: {}", std::io::Error::last_os_error());
        let size = libc::winsize { ws_row: 24, ws_col: 100, ws_xpixel: 0, ws_ypixel: 0 };
        libc::ioctl(slave, libc::TIOCSWINSZ, &size);
        let flags = libc::fcntl(master.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(master.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        (master, OwnedFd::from_raw_fd(slave))
    };
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.args(args).env("TERM", "xterm-256color").env("NO_COLOR", "1").env("OPENAI_API_KEY", OPENAI_KEY);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(slave.try_clone().unwrap()).stdout(slave.try_clone().unwrap()).stderr(slave);
    // SAFETY: setsid and ioctl are async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("start glrs-chat in a terminal");
    Hangable { master: Some(master), child, seen: String::new() }
}

impl Hangable {
    /// Type `text`.
    pub fn send(&mut self, text: &str) {
        use std::io::Write;
        let fd = self.master.as_ref().expect("the terminal is open");
        let mut file = std::fs::File::from(fd.try_clone().unwrap());
        file.write_all(text.as_bytes()).expect("type into the terminal");
    }

    /// Wait (at most 20 s) until `text` has been shown since the last
    /// wait; returns what came before it.
    pub fn expect(&mut self, text: &str) -> String {
        use std::os::fd::AsRawFd;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            if let Some(at) = self.seen.find(text) {
                let before = self.seen[..at].to_string();
                self.seen.drain(..at + text.len());
                return before;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "waited 20 s for {text:?} in the terminal; it shows {:?}",
                self.seen
            );
            let fd = self.master.as_ref().expect("the terminal is open").as_raw_fd();
            let mut query = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            let mut buffer = [0u8; 4096];
            // SAFETY: one pollfd and a buffer of ours, its length passed.
            let got = unsafe {
                libc::poll(&mut query, 1, 50);
                libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len())
            };
            if got > 0 {
                self.seen.push_str(&String::from_utf8_lossy(&buffer[..got as usize]));
            }
        }
    }

    /// Close the terminal, as closing its window does.
    pub fn hang_up(&mut self) {
        self.master = None;
    }

    /// The exit status, within `limit` (else the test fails, the program killed).
    pub fn wait_exit(&mut self, limit: std::time::Duration) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("glrs-chat did not exit within {limit:?} of the terminal closing");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Hangable {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
