//! `glrs-fork`: copy a session to a new id.

use clap::Parser;
use glrs::cli::{finish, fork};

fn main() -> std::process::ExitCode {
    let args = fork::Args::parse();
    finish(fork::PROGRAM_NAME, fork::run(args))
}
