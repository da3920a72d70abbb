//! `glrs-artifacts`: list, read, annotate, remove and locate artifacts.

use clap::CommandFactory;
use glrs::cli::{artifacts, finish};

fn main() -> std::process::ExitCode {
    glrs::cli::complete::handle(artifacts::Args::command);
    let args: artifacts::Args = glrs::cli::parse_args(artifacts::PROGRAM_NAME);
    finish(artifacts::PROGRAM_NAME, artifacts::run(args))
}
