//! `glrs-sessions`: list, show, search and remove sessions.

use clap::Parser;
use glrs::cli::{finish, sessions};

fn main() -> std::process::ExitCode {
    let args = sessions::Args::parse();
    finish(sessions::PROGRAM_NAME, sessions::run(args))
}
