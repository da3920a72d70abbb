//! `glrs`: the front door. `glrs [chat flags]` is `glrs-chat`; `glrs NAME
//! ARGS…` runs `glrs-NAME ARGS…`, found beside this program, else on PATH.

fn main() -> std::process::ExitCode {
    glrs::cli::complete::handle(glrs::cli::front::completion_command);
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    glrs::cli::front::dispatch(&args)
}
