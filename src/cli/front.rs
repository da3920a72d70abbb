//! `glrs`, git-style: `glrs NAME ARGS…` runs `glrs-NAME ARGS…`; anything
//! else (no arguments, or flags first) is the chat.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;

use super::program_path;

/// The programs `glrs NAME` knows of, for help and completion.
pub const PROGRAMS: &[(&str, &str)] = &[
    ("chat", "the REPL, or one turn with -p (the default)"),
    ("sessions", "list, show, search and remove sessions"),
    ("fork", "copy a session, whole or up to entry N, to a new id"),
    ("compact", "summarise the older part of a session into a brief"),
    ("artifacts", "list, read, annotate and remove compaction artifacts"),
];

/// The `glrs` command, for its man page and completions.
pub fn command() -> clap::Command {
    let mut cmd = clap::Command::new("glrs")
        .version(env!("CARGO_PKG_VERSION"))
        .about("The glrs front door: glrs [chat flags] is glrs-chat; glrs NAME ARGS runs glrs-NAME ARGS")
        .after_help("Programs are found beside glrs, else on PATH. `glrs --resume ID` is `glrs-chat --resume ID`.");
    for (name, about) in PROGRAMS {
        cmd = cmd.subcommand(clap::Command::new(*name).about(*about).allow_external_subcommands(true));
    }
    cmd
}

/// `glrs` as the shell completes it: the chat's flags, and each program
/// as a subcommand with all of its own arguments (`glrs sessions show ID`).
pub fn completion_command() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = super::chat::Args::command().name("glrs").bin_name("glrs");
    for (name, about) in PROGRAMS {
        let program = match *name {
            "chat" => super::chat::Args::command(),
            "sessions" => super::sessions::Args::command(),
            "fork" => super::fork::Args::command(),
            "compact" => super::compact::Args::command(),
            "artifacts" => super::artifacts::Args::command(),
            _ => clap::Command::new(*name),
        };
        cmd = cmd.subcommand(program.name(*name).about(*about));
    }
    cmd
}

/// Run the program the arguments name; returns only on failure.
pub fn dispatch(args: &[OsString]) -> ExitCode {
    let first = args.first().and_then(|a| a.to_str()).unwrap_or("");
    let (program, rest) = match first {
        "--help" | "-h" | "help" => {
            let _ = command().print_long_help();
            return ExitCode::SUCCESS;
        }
        "--version" | "-V" => {
            println!("glrs {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        "" => ("glrs-chat".to_string(), args),
        name if name.starts_with('-') => ("glrs-chat".to_string(), args),
        name => (format!("glrs-{name}"), &args[1..]),
    };
    if !program.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        eprintln!("glrs: error: {first:?} is not a glrs program");
        return ExitCode::from(2);
    }
    let error = std::process::Command::new(program_path(&program)).args(rest).exec();
    if error.kind() == std::io::ErrorKind::NotFound {
        eprintln!("glrs: error: no program {program} (looked beside glrs and on PATH); glrs --help lists them");
        return ExitCode::from(2);
    }
    eprintln!("glrs: error: cannot run {program}: {error}");
    ExitCode::from(1)
}
