//! `glrs-fork`: copy a session to a new id.

use clap::{CommandFactory, Parser};
use glrs::cli::{finish, fork};

fn main() -> std::process::ExitCode {
    glrs::cli::complete::handle(fork::Args::command);
    let args = fork::Args::parse();
    finish(fork::PROGRAM_NAME, fork::run(args))
}
