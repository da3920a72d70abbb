//! `glrs-artifacts`: list, read, annotate, remove and locate compaction
//! artifacts (SPEC sections 6 and 11).

use std::io::Write;

use anyhow::{Result, bail};
use clap::{Parser, Subcommand};

use crate::compact::artifact::{self, ArtifactInfo};
use crate::exit::ExitCode;
use crate::output::field;
use crate::store::Store;

/// The program's name, for messages.
pub const PROGRAM_NAME: &str = "glrs-artifacts";

#[derive(Debug, Parser)]
#[command(
    name = "glrs-artifacts",
    version,
    about = "List, read, annotate, remove and locate compaction artifacts",
    long_about = "List, read, annotate, remove and locate compaction artifacts: the messages a compaction \
        replaced, kept whole as Markdown in $XDG_DATA_HOME/glrs/sessions/artifacts/ID/. A FILE is a path to \
        an artifact (or ID/NAME.md); anything outside the artifacts folder is refused.",
    after_help = "Exit status: 0 success, 1 failure, 2 usage error or an invalid id."
)]
/// The arguments of glrs-artifacts.
pub struct Args {
    #[command(subcommand)]
    /// The subcommand.
    pub command: Command,
}

#[derive(Debug, Subcommand)]
/// The subcommands of glrs-artifacts.
pub enum Command {
    /// List artifacts, oldest first: file, session, createdAt, label, messages, note
    Ls {
        /// Session id or unique prefix (none, or --all: every session)
        #[arg(conflicts_with = "all")]
        #[arg(add = crate::cli::complete::ids())]
        id: Option<String>,
        /// Every session's artifacts
        #[arg(long)]
        all: bool,
        /// Print a JSON array
        #[arg(long)]
        json: bool,
    },
    /// Print an artifact: a FILE, ID (its newest) or ID:N (its Nth, oldest first)
    Cat {
        #[arg(value_name = "FILE|ID[:N]")]
        #[arg(add = crate::cli::complete::artifacts(true))]
        /// An artifact file, a session id (its newest), or ID:N (its Nth)
        target: String,
    },
    /// Print the artifacts folder, or one session's
    Path {
        /// Session id or unique prefix
        #[arg(add = crate::cli::complete::ids())]
        id: Option<String>,
    },
    /// Set an artifact's note (empty text clears it)
    Annotate {
        #[arg(value_name = "FILE")]
        #[arg(add = crate::cli::complete::artifacts(false))]
        /// The artifact file
        file: String,
        /// The note (empty clears it)
        note: String,
    },
    /// Remove an artifact
    Rm {
        #[arg(value_name = "FILE")]
        #[arg(add = crate::cli::complete::artifacts(false))]
        /// The artifact file
        file: String,
    },
}

/// Run `glrs-artifacts`; returns the exit code.
pub fn run(args: Args) -> Result<ExitCode> {
    let store = Store::from_env()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.command {
        Command::Ls { id, all: _, json } => {
            let one = id.map(|text| store.resolve(&text)).transpose()?.map(|at| at.id);
            let ids = match &one {
                Some(id) => vec![id.clone()],
                None => artifact::sessions_with_artifacts(&store),
            };
            let mut rows: Vec<ArtifactInfo> = Vec::new();
            for id in ids {
                rows.extend(artifact::list(&store, &id)?);
            }
            if rows.is_empty() && !json {
                // Said on stderr, so a pipe still reads an empty listing.
                match one {
                    Some(id) => eprintln!("no artifacts yet for session {id}"),
                    None => eprintln!("no artifacts yet"),
                }
            }
            if json {
                let rows: Vec<serde_json::Value> = rows
                    .iter()
                    .map(|a| {
                        serde_json::json!({"file": a.file, "session": a.session, "createdAt": a.created_at,
                            "label": a.label, "messages": a.messages, "note": a.note})
                    })
                    .collect();
                serde_json::to_writer_pretty(&mut out, &rows)?;
                writeln!(out)?;
            } else {
                let terminal = crate::output::stdout_is_terminal();
                let table: Vec<Vec<String>> = rows
                    .iter()
                    .map(|a| {
                        let cells = [
                            a.file.display().to_string(),
                            a.session.clone(),
                            a.created_at.clone(),
                            field(&a.label),
                            a.messages.to_string(),
                            field(&a.note),
                        ];
                        cells.iter().map(|c| crate::output::shown(c, terminal).into_owned()).collect()
                    })
                    .collect();
                if terminal {
                    let headers = ["FILE", "SESSION", "CREATED", "LABEL", "MESSAGES", "NOTE"];
                    crate::output::write_table(&mut out, &headers, &table)?;
                } else {
                    for row in table {
                        writeln!(out, "{}", row.join("\t"))?;
                    }
                }
            }
        }
        Command::Cat { target } => {
            let path = cat_target(&store, &target)?;
            out.write_all(&std::fs::read(&path)?)?;
        }
        Command::Path { id } => {
            let path = match id {
                Some(text) => store.paths.artifacts_of(&store.resolve(&text)?.id),
                None => {
                    // Created (0700), so `grep -r PATTERN "$(glrs-artifacts path)"`
                    // works on a store that has no artifacts yet.
                    crate::paths::ensure_private_dir(&store.paths.artifacts)
                        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", store.paths.artifacts.display()))?;
                    store.paths.artifacts.clone()
                }
            };
            writeln!(out, "{}", path.display())?;
        }
        Command::Annotate { file, note } => {
            let path = artifact::resolve_file(&store, &file)?;
            artifact::annotate(&store, &path, &note)?;
        }
        Command::Rm { file } => {
            let path = artifact::resolve_file(&store, &file)?;
            std::fs::remove_file(&path).map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", path.display()))?;
            if crate::output::stdout_is_terminal() {
                writeln!(out, "removed {}", crate::output::terminal_safe(&path.display().to_string()))?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::Success)
}

/// `FILE`, `ID` (newest) or `ID:N` (Nth, oldest first).
fn cat_target(store: &Store, target: &str) -> Result<std::path::PathBuf> {
    if target.contains('/') || target.ends_with(".md") {
        return Ok(artifact::resolve_file(store, target)?);
    }
    let (id, n) = match target.split_once(':') {
        Some((id, n)) => {
            (id, Some(n.parse::<usize>().map_err(|_| anyhow::anyhow!("{target:?}: N in ID:N is a number from 1"))?))
        }
        None => (target, None),
    };
    let at = store.resolve(id)?;
    let list = artifact::list(store, &at.id)?;
    let chosen = match n {
        None => list.last(),
        Some(n) => n.checked_sub(1).and_then(|i| list.get(i)),
    };
    match chosen {
        Some(a) => Ok(a.file.clone()),
        None if list.is_empty() => bail!("session {} has no artifacts", at.id),
        None => {
            let has = crate::output::count(list.len() as u64, "artifact", "artifacts");
            bail!("session {} has {has}; {target} names none of them", at.id)
        }
    }
}
