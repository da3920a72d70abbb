//! Shell completion. Each program answers its shell's completion requests
//! itself (clap_complete's dynamic completion): the script a shell loads
//! only calls the program back with the words typed, so subcommands,
//! flags, and session ids (with their titles, where the shell shows
//! descriptions: zsh and fish) always match the program that is installed.
//!
//! The scripts (`glrs completions SHELL`, and the copies in `completions/`)
//! are [`script`]'s output, named by `generate::Shell::file_name`.

use std::ffi::OsStr;

use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};
use clap_complete::env::{Bash, CompleteEnv, EnvCompleter, Fish, Zsh};

use crate::store::{Store, listing};

/// The variable that turns a program run into a completion request.
pub const VAR: &str = "_GLRS_COMPLETE";

/// Answer a completion request and exit, when this run is one (the
/// variable is set); otherwise return at once. Called first in each main.
pub fn handle(factory: fn() -> clap::Command) {
    CompleteEnv::with_factory(factory).var(VAR).complete();
}

/// The script that makes `shell` complete `program` (found on PATH), or
/// `None` for a shell without one.
pub fn script(shell: &str, program: &str) -> Option<String> {
    let mut out = Vec::new();
    let name = program.to_string();
    let written = match shell {
        "bash" => Bash.write_registration(VAR, &name, program, program, &mut out),
        "zsh" => Zsh.write_registration(VAR, &name, program, program, &mut out).map(|()| {
            // Autoloaded from fpath, the file is the body of `_NAME`: besides
            // defining the completer it must answer this first request.
            let function = format!("_clap_dynamic_completer_{}", program.replace('-', "_"));
            out.extend_from_slice(
                format!("\nif [[ ${{funcstack[1]}} == _{program} ]]; then\n    {function} \"$@\"\nfi\n").as_bytes(),
            );
        }),
        "fish" => Fish.write_registration(VAR, &name, program, program, &mut out),
        _ => return None,
    };
    written.ok()?;
    String::from_utf8(out).ok()
}

/// The completer for an argument that takes a session id.
pub fn ids() -> ArgValueCompleter {
    ArgValueCompleter::new(session_ids)
}

/// Session ids that start with what was typed, newest first, each with its
/// title as the description.
pub fn session_ids(current: &OsStr) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy().to_ascii_lowercase();
    let Ok(store) = Store::from_env() else { return Vec::new() };
    let Ok(found) = listing::list(&store) else { return Vec::new() };
    found
        .sessions
        .iter()
        .filter(|s| s.id.starts_with(&typed))
        .map(|s| {
            let title = crate::output::field(&s.title);
            let help = if title.is_empty() { None } else { Some(title.into()) };
            CompletionCandidate::new(&s.id).help(help)
        })
        .collect()
}

/// The completer for an argument naming an artifact as `ID/NAME.md`; with
/// `ids`, also the ids of sessions that have artifacts (`cat ID` prints the
/// newest).
pub fn artifacts(ids: bool) -> ArgValueCompleter {
    ArgValueCompleter::new(move |current: &OsStr| artifact_refs(current, ids))
}

/// Artifacts as `ID/NAME.md` starting with what was typed, each with its
/// label, read only from the sessions whose id fits what was typed.
fn artifact_refs(current: &OsStr, ids: bool) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy().to_ascii_lowercase();
    let Ok(store) = Store::from_env() else { return Vec::new() };
    let Ok(folders) = std::fs::read_dir(&store.paths.artifacts) else { return Vec::new() };
    let session_part = typed.split('/').next().unwrap_or_default();
    let mut sessions: Vec<crate::SessionId> = folders
        .flatten()
        .filter_map(|e| crate::SessionId::parse(&e.file_name().to_string_lossy()).ok())
        .filter(|id| id.as_str().starts_with(session_part) || session_part.starts_with(id.as_str()))
        .collect();
    sessions.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    let mut out = Vec::new();
    for id in sessions {
        let Ok(found) = crate::compact::artifact::list(&store, &id) else { continue };
        if ids && !found.is_empty() && id.as_str().starts_with(&typed) {
            out.push(CompletionCandidate::new(id.as_str()).help(Some("its newest artifact".into())));
        }
        for info in found {
            let Some(name) = info.file.file_name().map(|n| n.to_string_lossy().into_owned()) else { continue };
            let reference = format!("{id}/{name}");
            if reference.starts_with(&typed) {
                let label = crate::output::field(&info.label);
                out.push(CompletionCandidate::new(reference).help((!label.is_empty()).then(|| label.into())));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_call_the_program_back() {
        let bash = script("bash", "glrs-sessions").unwrap();
        assert!(
            bash.contains("_GLRS_COMPLETE=\"bash\"") && bash.contains("-F _clap_complete_glrs_sessions glrs-sessions")
        );
        let zsh = script("zsh", "glrs-sessions").unwrap();
        assert!(
            zsh.starts_with("#compdef glrs-sessions\n") && zsh.contains("_clap_dynamic_completer_glrs_sessions \"$@\"")
        );
        assert!(script("fish", "glrs").unwrap().contains("--command glrs"));
        assert!(script("tcsh", "glrs").is_none());
    }

    #[test]
    fn glrs_completes_as_its_programs_and_commands() {
        let cmd = super::super::front::completion_command();
        cmd.clone().debug_assert();
        let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
        for name in ["sessions", "fork", "compact", "artifacts", "man", "completions", "help"] {
            assert!(names.contains(&name), "{name} in {names:?}");
        }
    }
}
