//! The session picker `--resume` (no id) and `/resume` show: the newest
//! sessions, numbered, and a prompt for a number or an id. A fork is marked
//! with its parent, so forks that share a title can be told apart.

use anyhow::Result;
use rustyline::error::ReadlineError;

use crate::store::{Located, Store, listing};

/// What the user chose at the picker.
#[derive(Debug)]
pub enum Pick {
    /// A session to open.
    Open(Located),
    /// None (Enter on an empty line, or Ctrl-D).
    Nothing,
    /// Ctrl-C: the caller stops (the chat exits 130).
    Interrupted,
}

/// How many sessions the picker lists.
const SHOWN: usize = 20;

/// Ask which session to open, newest first; a wrong answer is said and
/// asked again.
pub fn pick_session(store: &Store) -> Result<Pick> {
    let listing = listing::list(store)?;
    if listing.sessions.is_empty() {
        println!("no sessions yet");
        return Ok(Pick::Nothing);
    }
    let shown: Vec<_> = listing.sessions.iter().take(SHOWN).collect();
    for (i, s) in shown.iter().enumerate() {
        let parent = s.parent.as_ref().and_then(|p| p.get("id")).and_then(|v| v.as_str());
        let fork = parent.map(|p| format!("  (fork of {p})")).unwrap_or_default();
        let title = crate::output::terminal_safe(&s.title).into_owned();
        println!("{:>3}  {}  {}  {title}{fork}", i + 1, s.id, s.updated_at.get(..16).unwrap_or(&s.updated_at));
    }
    let mut editor = rustyline::DefaultEditor::new()?;
    loop {
        let answer = match editor.readline("open which (number or id, Enter for none)? ") {
            Ok(a) => a,
            Err(ReadlineError::Interrupted) => return Ok(Pick::Interrupted),
            Err(_) => return Ok(Pick::Nothing),
        };
        let answer = answer.trim();
        if answer.is_empty() {
            return Ok(Pick::Nothing);
        }
        match choose(store, &shown, answer) {
            // One open in another program is said, with the way to a copy,
            // and the question asked again (issue 24).
            Ok(at) => match open_elsewhere(store, &at) {
                Some(note) => println!("{note}"),
                None => return Ok(Pick::Open(at)),
            },
            Err(why) => println!("{why:#}"),
        }
    }
}

/// Why `at` cannot be opened here, when another program has it open.
fn open_elsewhere(store: &Store, at: &Located) -> Option<String> {
    let (pid, by) = store.open_holder_of(&at.id).ok()??;
    let busy = crate::error::StoreError::Busy { id: at.id.to_string(), pid, by };
    Some(match by {
        crate::store::lock::Holder::Chat => {
            format!("{busy}: pick another, or work on a copy of it: glrs-fork {}", at.id)
        }
        crate::store::lock::Holder::Compaction => format!("{busy}; or pick another"),
    })
}

/// The session an answer names: a listed number, else an id or prefix.
fn choose(store: &Store, shown: &[&listing::Summary], answer: &str) -> Result<Located> {
    if let Ok(n) = answer.parse::<usize>() {
        if let Some(s) = n.checked_sub(1).and_then(|i| shown.get(i)) {
            return Ok(store.resolve(&s.id)?);
        }
        // Short numbers are entry numbers, not id prefixes (4+ characters).
        if answer.len() < 4 {
            anyhow::bail!("no entry {n}: pick 1-{}, or give an id", shown.len());
        }
    }
    Ok(store.resolve(answer)?)
}
