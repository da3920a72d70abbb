//! The programs' command-line surfaces: argument definitions (also used to
//! generate man pages and completions) and the code each subcommand runs.
//! The mains in `bin/` parse arguments, call `run`, and hand the result to
//! [`finish`].

pub mod artifacts;
pub mod chat;
pub mod compact;
pub mod complete;
pub mod fork;
pub mod front;
pub mod generate;
mod manual;
pub mod sessions;
pub mod settings;

use crate::error::StoreError;
pub use crate::exit::ExitCode;
pub use crate::programs::{program_path, run_program};

/// Parse the arguments of `program`: a usage error is printed as every
/// other error is, `NAME: error: …` (SPEC 11), and exits 2; `--help` and
/// `--version` print and exit 0.
pub fn parse_args<A: clap::Parser>(program: &str) -> A {
    match A::try_parse() {
        Ok(args) => args,
        Err(e) => std::process::exit(usage_error(program, &e).into()),
    }
}

/// Print clap's error `e` (or its help or version) for `program`, with the
/// programs' `NAME: error:` prefix: the exit status to end with (0 for
/// help and version, else 2).
pub fn usage_error(program: &str, e: &clap::Error) -> ExitCode {
    if !e.use_stderr() {
        let _ = e.print();
        return ExitCode::Success;
    }
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    eprint!("{program}: error: {text}");
    ExitCode::Usage
}

/// Turn a program's result into its exit status (SPEC section 11): errors
/// go to stderr as `NAME: error: …` and exit 1, or 4 when a session is busy,
/// or 2 for an argument that is not an id. A closed pipe (`| head`) is not
/// an error.
pub fn finish(program: &str, result: anyhow::Result<ExitCode>) -> std::process::ExitCode {
    match result {
        Ok(code) => code.into(),
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::Success.into();
            }
            let advice = err.chain().find_map(|e| e.downcast_ref::<StoreError>()).and_then(advice);
            crate::output::to_stderr(format_args!(
                "{program}: error: {}{}",
                describe(&err),
                advice.unwrap_or_default()
            ));
            let usage =
                |e: &(dyn std::error::Error + 'static)| e.is::<UsageError>() || e.is::<crate::config::MisnamedModel>();
            let code = if err.chain().any(usage) {
                ExitCode::Usage
            } else {
                err.chain().find_map(|e| e.downcast_ref::<StoreError>()).map_or(ExitCode::Failure, exit_code_of)
            };
            code.into()
        }
    }
}

/// An error and its causes, `: `-joined. Each error's text is its own part
/// only (a store error's I/O cause is its source, not in its text), so
/// nothing is said twice.
pub fn describe(err: &anyhow::Error) -> String {
    format!("{err:#}")
}

/// The exit status of a program that ends on a store error (SPEC 11): busy
/// when a session is open elsewhere, usage for an argument that is no id.
pub fn exit_code_of(err: &StoreError) -> ExitCode {
    match err {
        StoreError::Busy { .. } => ExitCode::Busy,
        StoreError::InvalidId { .. } => ExitCode::Usage,
        _ => ExitCode::Failure,
    }
}

/// What the user can do about a store error, for the programs' messages
/// (the store itself knows no commands): `; fork it …` for a busy session.
pub fn advice(err: &StoreError) -> Option<String> {
    match err {
        // A compaction ends by itself: waiting is the advice, not a fork.
        StoreError::Busy { id, by: crate::store::lock::Holder::Chat, .. } => {
            Some(format!("; fork it to work on a copy: glrs-fork {id}"))
        }
        _ => None,
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().filter_map(|e| e.downcast_ref::<std::io::Error>()).any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Run `work` on a runtime of its own: the one runtime of a program that
/// otherwise needs none (`glrs-sessions rewind` runs git).
pub fn block_on<T>(work: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    let runtime = crate::runtime::build()?;
    let out = runtime.block_on(work);
    crate::runtime::shut_down(runtime);
    out
}

/// Print a warning the way every program does.
pub fn warn(program: &str, message: &str) {
    crate::output::to_stderr(format_args!("{program}: warning: {message}"));
}

/// A mistake in how a program was called (exit 2), found after parsing.

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

#[cfg(test)]
mod tests {
    #[test]
    fn an_io_cause_is_said_once_after_its_store_error() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let store = || crate::error::StoreError::Io { path: "/x/a.md".into(), action: "find", source: io() };
        assert_eq!(store().to_string(), "cannot find /x/a.md", "the cause is the source, not the text");
        let err = anyhow::Error::new(store()).context("annotate");
        assert_eq!(super::describe(&err), "annotate: cannot find /x/a.md: No such file or directory");
        assert_eq!(crate::error::Report(&store()).to_string(), "cannot find /x/a.md: No such file or directory");
    }
}
