//! The session picker `--resume` (no id) and `/resume` show: the newest
//! sessions, numbered, and a prompt for a number or an id.

use anyhow::Result;

use crate::store::{Located, Store, listing};

/// Ask which session to open, newest first. `None` when the user picks none.
pub fn pick_session(store: &Store) -> Result<Option<Located>> {
    let listing = listing::list(store)?;
    if listing.sessions.is_empty() {
        println!("no sessions yet");
        return Ok(None);
    }
    let shown: Vec<_> = listing.sessions.iter().take(20).collect();
    for (i, s) in shown.iter().enumerate() {
        println!("{:>3}  {}  {}  {}", i + 1, s.id, s.updated_at.get(..16).unwrap_or(&s.updated_at), s.title);
    }
    let mut editor = rustyline::DefaultEditor::new()?;
    let answer = match editor.readline("open which (number or id, Enter for none)? ") {
        Ok(a) => a,
        Err(_) => return Ok(None),
    };
    let answer = answer.trim();
    if answer.is_empty() {
        return Ok(None);
    }
    if let Ok(n) = answer.parse::<usize>()
        && (1..=shown.len()).contains(&n)
    {
        return Ok(Some(store.resolve(&shown[n - 1].id)?));
    }
    Ok(Some(store.resolve(answer)?))
}
