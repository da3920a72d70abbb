//! `glrs-sessions`: list, show, search and remove sessions.

use clap::CommandFactory;
use glrs::cli::{finish, sessions};

fn main() -> std::process::ExitCode {
    glrs::cli::complete::handle(sessions::Args::command);
    let args: sessions::Args = glrs::cli::parse_args(sessions::PROGRAM_NAME);
    finish(sessions::PROGRAM_NAME, sessions::run(args))
}
