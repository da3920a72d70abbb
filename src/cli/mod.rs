//! The programs' command-line surfaces: argument definitions (also used to
//! generate man pages and completions) and the code each subcommand runs.
//! The mains in `bin/` parse arguments, call `run`, and hand the result to
//! [`finish`].

pub mod sessions;

use std::process::ExitCode;

use crate::error::StoreError;

/// Turn a program's result into its exit status (SPEC section 11): errors
/// go to stderr as `NAME: error: …` and exit 1, or 4 when a session is busy,
/// or 2 for an argument that is not an id. A closed pipe (`| head`) is not
/// an error.
pub fn finish(program: &str, result: anyhow::Result<i32>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("{program}: error: {err:#}");
            let code = err.chain().find_map(|e| e.downcast_ref::<StoreError>()).map_or(1, StoreError::exit_code);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().filter_map(|e| e.downcast_ref::<std::io::Error>()).any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Print a warning the way every program does.
pub fn warn(program: &str, message: &str) {
    eprintln!("{program}: warning: {message}");
}
