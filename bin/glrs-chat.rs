//! `glrs-chat`: the REPL and one-shot mode.

use clap::CommandFactory;
use glrs::cli::{chat, finish};

fn main() -> std::process::ExitCode {
    glrs::cli::complete::handle(chat::Args::command);
    // Run by the front door (`glrs --resume …`), its errors are glrs's.
    let name = glrs::cli::front::invoked_as(chat::PROGRAM_NAME);
    let args: chat::Args = glrs::cli::parse_args(name);
    finish(name, chat::run(args))
}
