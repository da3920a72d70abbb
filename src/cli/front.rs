//! `glrs`, git-style: `glrs NAME ARGS…` runs `glrs-NAME ARGS…`; anything
//! else (no arguments, flags first, or a prompt) is the chat. A few
//! commands are its own: `man`, `completions`, `config`, `models`, `help`.

use super::ExitCode;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use clap::{FromArgMatches, Subcommand};

use super::generate::{self, Shell};
use super::program_path;

/// The programs `glrs NAME` knows of, for help and completion.
pub const PROGRAMS: &[(&str, &str)] = &[
    ("chat", "the REPL, or one turn with -p (the default)"),
    ("sessions", "list, show, search and remove sessions"),
    ("fork", "copy a session, whole or up to entry N, to a new id"),
    ("compact", "summarise the older part of a session into a brief"),
    ("artifacts", "list, read, annotate and remove compaction artifacts"),
];

/// The front door's own commands (clap takes this line as the about of
/// the command they join: [`command`] sets its own after).
#[derive(Debug, Subcommand)]
pub enum Builtin {
    /// Print a program's man page (glrs man sessions | man -l -), or write them all into a folder
    Man {
        /// glrs, or a program: chat, sessions, fork, compact, artifacts
        #[arg(value_name = "PROGRAM", conflicts_with = "dir")]
        program: Option<String>,
        /// Write every page into this folder (e.g. ~/.local/share/man/man1)
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Print the completions of every glrs program for SHELL, or write them into a folder
    Completions {
        #[arg(value_enum)]
        /// The shell
        shell: Shell,
        /// Write one file a program into this folder, named as the shell looks for it
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// The config file: its path, or its contents with secrets as ***
    Config {
        #[command(subcommand)]
        /// The config subcommand
        command: super::settings::ConfigCommand,
    },
    /// The providers and models that can be used: window, the key each needs, and whether it is set
    Models {
        /// Print a JSON array
        #[arg(long)]
        json: bool,
    },
    /// Print a program's help: glrs help chat
    Help {
        #[arg(value_name = "PROGRAM")]
        /// The program whose man page to print
        program: Option<String>,
    },
}

/// The `glrs` command, for its man page, completions and own commands.
pub fn command() -> clap::Command {
    let mut cmd = clap::Command::new("glrs")
        .version(env!("CARGO_PKG_VERSION"))
        .override_usage("glrs [CHAT FLAGS] [PROMPT]\n       glrs NAME [ARGS]...")
        .after_help(
            "Chat flags (glrs help chat): --resume [ID], --continue, --key K, --model M, --system TEXT, \
             -p PROMPT, --json.\nPrograms are found beside glrs, else on PATH.",
        )
        .disable_help_subcommand(true);
    for (name, about) in PROGRAMS {
        cmd = cmd.subcommand(clap::Command::new(*name).about(*about).allow_external_subcommands(true));
    }
    with_about(Builtin::augment_subcommands(cmd))
}

/// `cmd` with the front door's about: the derive gives the command the
/// enum's doc line when it adds the subcommands.
fn with_about(cmd: clap::Command) -> clap::Command {
    cmd.about("The glrs front door: glrs [chat flags] [PROMPT] is glrs-chat; glrs NAME ARGS runs glrs-NAME ARGS")
        .long_about(
            "The glrs front door. With no program name, glrs is glrs-chat: every glrs-chat flag is accepted \
             (glrs --resume ID, glrs -p PROMPT, glrs -m openai/gpt-4.1; glrs help chat lists them all). \
             glrs NAME ARGS runs glrs-NAME ARGS, found beside glrs, else on PATH.",
        )
}

/// `glrs` as the shell completes it: the chat's flags, and each program
/// as a subcommand with all of its own arguments (`glrs sessions show ID`).
pub fn completion_command() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = super::chat::Args::command().name("glrs").bin_name("glrs").disable_help_subcommand(true);
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
    with_about(Builtin::augment_subcommands(cmd))
}

const BUILTINS: &[&str] = &["man", "completions", "config", "models", "help"];

/// Run the program the arguments name; returns only on failure.
pub fn dispatch(args: &[OsString]) -> std::process::ExitCode {
    let first = args.first().and_then(|a| a.to_str()).unwrap_or("");
    let (program, rest) = match first {
        "--help" | "-h" => {
            let _ = command().print_long_help();
            return ExitCode::Success.into();
        }
        "--version" | "-V" => {
            println!("glrs {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::Success.into();
        }
        name if BUILTINS.contains(&name) => return builtin(args),
        "" => return exec_chat(args),
        name if name.starts_with('-') => return exec_chat(args),
        // Not a program's name (spaces, punctuation): a prompt for the chat.
        name if !is_program_name(name) => return exec_chat(args),
        name => (format!("glrs-{name}"), &args[1..]),
    };
    exec_program(&program, rest, args)
}

/// Run `program` with `rest` (see [`exec`]).
fn exec_program(program: &str, rest: &[OsString], typed: &[OsString]) -> std::process::ExitCode {
    exec(std::process::Command::new(program_path(program)), program, rest, typed)
}

/// `glrs [chat flags] [PROMPT]`: glrs-chat, run as `glrs` (its zeroth
/// argument), so what it says of its arguments says `glrs:` and `Usage:
/// glrs`, the command the user typed.
fn exec_chat(args: &[OsString]) -> std::process::ExitCode {
    let mut command = std::process::Command::new(program_path(CHAT));
    command.arg0(FRONT);
    exec(command, CHAT, args, args)
}

/// The name a program goes by: `glrs` when the front door ran it (its
/// zeroth argument, see [`exec_chat`]), else its own.
pub fn invoked_as(own: &'static str) -> &'static str {
    let zeroth = std::env::args_os().next().map(PathBuf::from);
    match zeroth.as_deref().and_then(|p| p.file_name()) {
        Some(name) if name == FRONT => FRONT,
        _ => own,
    }
}

/// The front door's name, and the program it is when no other is named.
const FRONT: &str = "glrs";
const CHAT: &str = "glrs-chat";

fn is_program_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Run `program` with `rest`; `typed` is everything after `glrs`, for the
/// advice when there is no such program.
fn exec(
    mut command: std::process::Command,
    program: &str,
    rest: &[OsString],
    typed: &[OsString],
) -> std::process::ExitCode {
    let error = command.args(rest).exec();
    if error.kind() == std::io::ErrorKind::NotFound {
        eprintln!("glrs: error: no program {program} (looked beside glrs and on PATH); {}", not_found_advice(typed));
        return ExitCode::Usage.into();
    }
    eprintln!("glrs: error: cannot run {program}: {error}");
    ExitCode::Failure.into()
}

/// What to say after "no program glrs-NAME": the name meant, when one is
/// close (`sesions` → `sessions`), else how to send all the words typed as
/// a prompt (`glrs hello world` → `glrs -p 'hello world'`).
fn not_found_advice(typed: &[OsString]) -> String {
    let name = typed.first().map(|n| n.to_string_lossy()).unwrap_or_default();
    let names = PROGRAMS.iter().map(|(n, _)| *n).chain(BUILTINS.iter().copied());
    // A typo's worth of edits: one in a short name, two in a long one (so
    // `hello` is a prompt, not `help`).
    let closest = names
        .map(|n| (strsim::damerau_levenshtein(&name, n), n))
        .filter(|(edits, n)| *edits <= (n.len() / 4).max(1))
        .min_by_key(|(edits, _)| *edits);
    if let Some((_, meant)) = closest {
        return format!("did you mean {meant}? (glrs --help lists them)");
    }
    let words: Vec<String> = typed.iter().map(|w| w.to_string_lossy().into_owned()).collect();
    format!("glrs --help lists them (to send it as a prompt: glrs -p {})", shell_quoted(&words.join(" ")))
}

/// `text` as one shell word: as it is when nothing in it is special, else
/// in single quotes.
fn shell_quoted(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./,:=@%+".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn builtin(args: &[OsString]) -> std::process::ExitCode {
    let argv = std::iter::once(OsString::from("glrs")).chain(args.iter().cloned());
    let parsed = command().try_get_matches_from(argv).and_then(|m| Builtin::from_arg_matches(&m));
    match parsed {
        Ok(Builtin::Help { program: Some(name) }) if !BUILTINS.contains(&name.as_str()) => {
            if !is_program_name(&name) {
                eprintln!("glrs: error: {name:?} is not a glrs program");
                return ExitCode::Usage.into();
            }
            exec_program(&format!("glrs-{name}"), &[OsString::from("--help")], &[OsString::from(&name)])
        }
        Ok(cmd) => super::finish("glrs", run_builtin(cmd)),
        Err(e) => super::usage_error("glrs", &e).into(),
    }
}

fn run_builtin(cmd: Builtin) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match cmd {
        Builtin::Man { dir: Some(dir), .. } => {
            let pages: Vec<_> = generate::man_pages().into_iter().map(|(n, b)| (PathBuf::from(n), b)).collect();
            generate::write_all(&dir, &pages)?;
            writeln!(out, "{} man pages written to {}", pages.len(), dir.display())?;
        }
        Builtin::Man { program, dir: None } => {
            let name = match program.as_deref() {
                None | Some("glrs") => "glrs".to_string(),
                Some(p) if p.starts_with("glrs-") => p.to_string(),
                Some(p) => format!("glrs-{p}"),
            };
            let file = format!("{name}.1");
            let Some((_, page)) = generate::man_pages().into_iter().find(|(n, _)| *n == file) else {
                return Err(super::UsageError(format!("no man page {file} (programs: glrs, glrs-chat, glrs-sessions, glrs-fork, glrs-compact, glrs-artifacts)")).into());
            };
            out.write_all(&page)?;
        }
        Builtin::Completions { shell, dir } => {
            let files: Vec<_> = generate::programs()
                .iter()
                .map(|cmd| (PathBuf::from(shell.file_name(cmd.get_name())), generate::completion(shell, cmd)))
                .collect();
            match dir {
                Some(dir) => {
                    generate::write_all(&dir, &files)?;
                    writeln!(out, "{} {} completion files written to {}", files.len(), shell.name(), dir.display())?;
                }
                None => {
                    for (_, script) in files {
                        out.write_all(&script)?;
                    }
                }
            }
        }
        Builtin::Config { command } => return super::settings::config(command, &mut out),
        Builtin::Models { json } => return super::settings::models(json, &mut out),
        Builtin::Help { program } => {
            let name = program.unwrap_or_default();
            let mut cmd = command();
            match cmd.find_subcommand_mut(&name) {
                Some(sub) if !name.is_empty() => {
                    let mut sub = sub.clone().bin_name(format!("glrs {name}"));
                    sub.print_long_help()?;
                }
                _ => cmd.print_long_help()?,
            }
        }
    }
    Ok(ExitCode::Success)
}
