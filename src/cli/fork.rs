//! `glrs-fork ID [N]`: copy a session to a new id (SPEC section 8).

use anyhow::Result;
use clap::Parser;

use crate::store::Store;

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
        2 usage error."
)]
/// The arguments of glrs-fork.
pub struct Args {
    /// Session id or unique prefix
    #[arg(add = crate::cli::complete::ids())]
    pub id: String,
    /// Keep entries 1..N (default: all)
    #[arg(value_parser = clap::value_parser!(u64))]
    pub n: Option<u64>,
}

/// Fork the session and print the new id.
pub fn run(args: Args) -> Result<i32> {
    let store = Store::from_env()?;
    let at = store.resolve(&args.id)?;
    let forked = crate::fork::fork(&store, &at, args.n.map(|n| n as usize), None)?;
    println!("{}", forked.id);
    Ok(0)
}
