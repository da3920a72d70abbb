//! `glrs-chat`: the REPL and one-shot mode.

use clap::{CommandFactory, Parser};
use glrs::cli::{chat, finish};

fn main() -> std::process::ExitCode {
    glrs::cli::complete::handle(chat::Args::command);
    let args = chat::Args::parse();
    finish(chat::PROGRAM_NAME, chat::run(args))
}
