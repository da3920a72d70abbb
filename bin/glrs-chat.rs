//! `glrs-chat`: the REPL and one-shot mode.

use clap::CommandFactory;
use glrs::cli::{chat, finish};

fn main() -> std::process::ExitCode {
    glrs::cli::complete::handle(chat::Args::command);
    let args: chat::Args = glrs::cli::parse_args(chat::PROGRAM_NAME);
    finish(chat::PROGRAM_NAME, chat::run(args))
}
