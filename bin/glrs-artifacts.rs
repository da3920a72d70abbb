//! `glrs-artifacts`: list, read, annotate, remove and locate artifacts.

use clap::{CommandFactory, Parser};
use glrs::cli::{artifacts, finish};

fn main() -> std::process::ExitCode {
    glrs::cli::complete::handle(artifacts::Args::command);
    let args = artifacts::Args::parse();
    finish(artifacts::PROGRAM_NAME, artifacts::run(args))
}
