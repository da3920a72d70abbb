//! `glrs-fork`: copy a session to a new id.

use clap::CommandFactory;
use glrs::cli::{finish, fork};

fn main() -> std::process::ExitCode {
    glrs::cli::complete::handle(fork::Args::command);
    let args: fork::Args = glrs::cli::parse_args(fork::PROGRAM_NAME);
    finish(fork::PROGRAM_NAME, fork::run(args))
}
