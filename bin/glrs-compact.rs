//! `glrs-compact`: compact a session, or every session that needs it.

use clap::CommandFactory;
use glrs::cli::{compact, finish};

fn main() -> std::process::ExitCode {
    glrs::cli::complete::handle(compact::Args::command);
    let args: compact::Args = glrs::cli::parse_args(compact::PROGRAM_NAME);
    finish(compact::PROGRAM_NAME, compact::run(args))
}
