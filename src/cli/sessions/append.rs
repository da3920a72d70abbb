//! `glrs-sessions append` (SPEC 15): a program's own data as a `custom`
//! entry, or a `notice`, added to a session under the short write lock.
//! It works while a chat has the session open: the chat sees the file
//! changed and merges the entry at its next write, so nothing is lost.

use std::io::Read;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::AppendArgs;
use crate::config::Config;
use crate::exit::ExitCode;
use crate::store::{Append, Entry, Store};

/// Run `append`: resolve the id, build the entry, redact it, append it.
/// Silent on success, like `cp`.
pub fn run(store: &Store, args: &AppendArgs) -> Result<ExitCode> {
    let at = store.resolve(&args.id)?;
    let entry = match (&args.custom, &args.notice) {
        (Some(name), None) => {
            if name.trim().is_empty() {
                bail!("--custom needs a non-empty NAME");
            }
            Entry::Custom { at: crate::time::now(), name: name.clone(), data: custom_data(args.data.as_deref())? }
        }
        (None, Some(text)) => {
            if args.data.is_some() {
                bail!("--notice takes its TEXT only; JSON data goes with --custom NAME");
            }
            Entry::Notice { at: crate::time::now(), text: text.clone() }
        }
        // clap's group makes exactly one of them present.
        _ => bail!("give --custom NAME [JSON|-] or --notice TEXT"),
    };
    // Secrets never reach a file, whoever hands them to glrs.
    let redactor = Config::load_env(&store.paths)?.redactor()?;
    let entry = entry.redacted(&redactor)?.unwrap_or(entry);
    let written = store.append(&at.id, Append::new().entry(&entry)?)?;
    if let Some(warning) = written.warning {
        eprintln!("{}: warning: {warning}", super::PROGRAM);
    }
    // A one-off writer leaves nothing in the journal (the entry is
    // committed already: a failure here is only a warning).
    if let Err(e) = store.checkpoint(&at.id) {
        eprintln!("{}: warning: {}", super::PROGRAM, e.report());
    }
    Ok(ExitCode::Success)
}

/// The custom entry's `data`: the JSON argument, stdin for `-`, else `null`.
fn custom_data(arg: Option<&str>) -> Result<Value> {
    let (text, from) = match arg {
        None => return Ok(Value::Null),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("reading the JSON data from stdin")?;
            (text, "stdin")
        }
        Some(text) => (text.to_string(), "the JSON argument"),
    };
    serde_json::from_str(&text).with_context(|| format!("{from} is not valid JSON"))
}
