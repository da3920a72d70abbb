//! `glrs-compact`: compact a session, or every session that needs it.

use clap::Parser;
use glrs::cli::{compact, finish};

fn main() -> std::process::ExitCode {
    let args = compact::Args::parse();
    finish(compact::PROGRAM_NAME, compact::run(args))
}
