//! `glrs-compact`: compact a session, or every session that needs it.

use clap::{CommandFactory, Parser};
use glrs::cli::{compact, finish};

fn main() -> std::process::ExitCode {
    glrs::cli::complete::handle(compact::Args::command);
    let args = compact::Args::parse();
    finish(compact::PROGRAM_NAME, compact::run(args))
}
