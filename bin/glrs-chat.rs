//! `glrs-chat`: the REPL and one-shot mode.

use clap::Parser;
use glrs::cli::{chat, finish};

fn main() -> std::process::ExitCode {
    let args = chat::Args::parse();
    finish(chat::PROGRAM_NAME, chat::run(args))
}
