//! `glrs-fork ID [N]`: copy a session to a new id (SPEC section 8).

use anyhow::Result;
use clap::Parser;

use crate::SessionId;
use crate::exit::ExitCode;
use crate::store::{Located, Store};

/// The program's name, for messages.
pub const PROGRAM_NAME: &str = "glrs-fork";

#[derive(Debug, Parser)]
#[command(
    name = "glrs-fork",
    version,
    about = "Copy a session, whole or up to entry N, to a new id; print the new id",
    long_about = "Copy a session, whole or entries 1..N (the numbers glrs-sessions show prints), to a new id, and \
        print the new id. The original is untouched; the copy records parent {id, entry} and takes along the \
        compaction artifacts whose replaced entries all lie within 1..N. Works on a session open in a chat and on \
        a legacy one.",
    after_help = "Exit status: 0 success, 1 failure (unknown id, N out of range, N splitting a tool call from its result), \
        2 usage error, 4 (--files) the session is open in a chat."
)]
/// The arguments of glrs-fork.
pub struct Args {
    /// Session id or unique prefix
    #[arg(add = crate::cli::complete::ids())]
    pub id: String,
    /// Keep entries 1..N (default: all)
    #[arg(value_parser = clap::value_parser!(u64))]
    pub n: Option<u64>,
    /// Also put the workspace's files back as they were at entry N (SPEC 19): the present is checkpointed
    /// first, so this can be undone; refused (exit 4) while a chat has the session open
    #[arg(long, requires = "n")]
    pub files: bool,
}

/// Fork the session and print the new id.
pub fn run(args: Args) -> Result<ExitCode> {
    let store = Store::from_env()?;
    let at = store.resolve(&args.id)?;
    let upto = args.n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    // The files part is refused while a chat has the session open (exit 4),
    // and none opens it until the files are back.
    let _open = if args.files { Some(store.open_lock(&at.id)?) } else { None };
    let forked = crate::fork::fork(&store, &at, upto, None)?;
    if args.files
        && let Some(n) = upto
        && let Err(e) = rewind_files(&store, &at, &forked.id, n)
    {
        // All or nothing: a fork whose files could not follow is not kept.
        if let Some(made) = store.locate(&forked.id) {
            let _ = store.remove(&made);
            crate::checkpoint::lifecycle::forget(&store.paths.data, &forked.id);
        }
        return Err(e);
    }
    println!("{}", forked.id);
    Ok(ExitCode::Success)
}

/// The files part of `--files`: the workspace as it was at entry `n` of
/// `at`. The fork records it (the checkpoint of the present, to undo it):
/// a fork leaves the original byte for byte as it was (SPEC 8).
fn rewind_files(store: &Store, at: &Located, fork: &SessionId, n: usize) -> Result<()> {
    let file = store.read(at)?.file;
    let (points, _) = crate::rewind::scan(&file.events);
    let Some(target) = crate::rewind::target(&points, n) else {
        eprintln!(
            "{PROGRAM_NAME}: no checkpoint at or after entry {n}: no tool changed files after it; the files are left as they are"
        );
        return Ok(());
    };
    let fork = store.resolve(fork.as_str())?;
    let settings = crate::checkpoint::Settings::from_config(&crate::config::Config::load_env(&store.paths)?);
    let done = crate::cli::block_on(crate::rewind::rewind_files(store, &fork, settings, target, false))?;
    let count = crate::output::count(done.files.len() as u64, "file", "files");
    let undo = done
        .undo_entry
        .map(|e| format!("; undo with: glrs-sessions rewind {} {e} --files-only", fork.id))
        .unwrap_or_default();
    eprintln!("{PROGRAM_NAME}: rewound {count} to checkpoint {}{undo}", crate::rewind::short(&done.checkpoint));
    Ok(())
}
