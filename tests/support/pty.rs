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
