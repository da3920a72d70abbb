//! `glrs-artifacts`: list, read, annotate, remove and locate artifacts.

use clap::Parser;
use glrs::cli::{artifacts, finish};

fn main() -> std::process::ExitCode {
    let args = artifacts::Args::parse();
    finish(artifacts::PROGRAM_NAME, artifacts::run(args))
}
