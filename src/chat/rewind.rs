//! `/rewind` (SPEC 19): the session's user messages (number, first line,
//! files changed after it), the one to go back to before, and what to take
//! back: the conversation and the files, the conversation only, or the
//! files only. The conversation part forks the session up to just before
//! that message (the original stays whole and listed) and continues in
//! the fork, the message put back in the input line to edit and send.

use anyhow::Result;
use rustyline::error::ReadlineError;

use super::Chat;
use crate::rewind::{self, Message, Point};

/// How many of the newest user messages are offered.
const SHOWN: usize = 20;

/// What to take back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Both,
    Conversation,
    Files,
}

/// Run `/rewind`. Returns the text to put in the input line: the message
/// gone back to, when the conversation was rewound.
pub fn run(chat: &mut Chat) -> Result<Option<String>> {
    // Run by the REPL outside the runtime's workers (crate::runtime::blocking).
    let runtime = tokio::runtime::Handle::current();
    let runtime = &runtime;
    let Some(at) = chat.agent().store().locate(chat.agent().id()).filter(|_| chat.agent().is_saved()) else {
        println!("nothing to rewind yet: session {} has nothing saved", chat.agent().id());
        return Ok(None);
    };
    let file = chat.agent().store().read(&at)?.file;
    let (points, messages) = rewind::scan(&file.events);
    if messages.is_empty() {
        println!("no message to rewind to");
        return Ok(None);
    }
    let shown = &messages[messages.len().saturating_sub(SHOWN)..];
    let counts = changed_after(chat, runtime, &points, shown);
    for (i, m) in shown.iter().enumerate() {
        let line = crate::output::terminal_safe(&crate::limits::one_line(m.first_line(), 70)).into_owned();
        let files = match counts.get(i).copied().flatten() {
            Some(0) | None => "no files changed after it".to_string(),
            Some(n) => format!("{} changed after it", crate::output::count(n as u64, "file", "files")),
        };
        println!("{:>3}  [{}] {line}  ({files})", i + 1, m.entry);
    }
    let mut editor = rustyline::DefaultEditor::new()?;
    let Some(chosen) = ask(&mut editor, "rewind to before which message (number, Enter for none)? ", |a| {
        a.parse::<usize>().ok().and_then(|n| n.checked_sub(1)).and_then(|i| shown.get(i))
    })?
    else {
        return Ok(None);
    };
    println!("  1  conversation and files\n  2  conversation only\n  3  files only");
    let Some(part) = ask(&mut editor, "take back what (1, 2 or 3, Enter for none)? ", |a| match a {
        "1" => Some(Part::Both),
        "2" => Some(Part::Conversation),
        "3" => Some(Part::Files),
        _ => None,
    })?
    else {
        return Ok(None);
    };
    if part != Part::Conversation {
        rewind_files(chat, runtime, rewind::target(&points, chosen.entry))?;
    }
    if part == Part::Files {
        return Ok(None);
    }
    continue_in_fork(chat, &at, chosen)?;
    Ok(Some(chosen.text.clone()))
}

/// For each message shown, how many files going back to before it would
/// change (`None`: unknown, checkpoints being off or failing).
fn changed_after(
    chat: &mut Chat,
    runtime: &tokio::runtime::Handle,
    points: &[Point],
    shown: &[Message],
) -> Vec<Option<usize>> {
    let targets: Vec<Option<&Point>> = shown.iter().map(|m| rewind::target(points, m.entry)).collect();
    let commits: Vec<String> = targets.iter().flatten().map(|p| p.commit.clone()).collect();
    if commits.is_empty() || chat.checkpoints().unavailable().is_some() {
        return targets.iter().map(|t| t.map_or(Some(0), |_| None)).collect();
    }
    let Ok(all) = runtime.block_on(chat.checkpoints().preview_all(&commits)) else {
        return vec![None; shown.len()];
    };
    let mut counted = all.into_iter().map(|c| c.len());
    targets.iter().map(|t| if t.is_some() { counted.next() } else { Some(0) }).collect()
}

/// Ask until the answer is one `pick` takes, or none (Enter, Ctrl-D, Ctrl-C).
fn ask<T>(
    editor: &mut rustyline::DefaultEditor,
    question: &str,
    pick: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>> {
    loop {
        let answer = match editor.readline(question) {
            Ok(a) => a,
            Err(ReadlineError::Interrupted | ReadlineError::Eof) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let answer = answer.trim();
        if answer.is_empty() {
            return Ok(None);
        }
        match pick(answer) {
            Some(chosen) => return Ok(Some(chosen)),
            None => println!("{answer:?} is not one of them"),
        }
    }
}

/// The files part, on this chat's own session.
fn rewind_files(chat: &mut Chat, runtime: &tokio::runtime::Handle, target: Option<&Point>) -> Result<()> {
    let Some(target) = target else {
        println!("no tool changed files after that message: the files stay as they are");
        return Ok(());
    };
    let (changed, undo) = runtime.block_on(chat.rewind_files(target)).map_err(anyhow::Error::msg)?;
    for c in &changed {
        println!("  {} {}", c.status.letter(), crate::output::terminal_safe(&c.path));
    }
    let count = crate::output::count(changed.len() as u64, "file", "files");
    println!(
        "files: {count} put back as they were (undo: glrs-sessions rewind {} {undo} --files-only)",
        chat.agent().id()
    );
    Ok(())
}

/// Fork the session to just before `message` and continue in the fork.
fn continue_in_fork(chat: &mut Chat, at: &crate::store::Located, message: &Message) -> Result<()> {
    let forked = crate::fork::fork_before(chat.agent().store(), at, message.entry)?;
    let current = chat.agent().model().clone();
    let (store, config) = (chat.agent().store().clone(), chat.agent().config().clone());
    let located = store.resolve(forked.id.as_str())?;
    let mut next = crate::agent::Agent::resume(
        store,
        config,
        &located,
        crate::store::lock::Holder::Chat,
        Some(current.clone()),
        || Ok(current),
        None,
    )?;
    chat.agent().carry_tools_to(&mut next);
    let next = Chat::from(next);
    super::repl::leave_loudly(chat);
    let old = chat.agent().id().clone();
    *chat = next;
    println!(
        "continuing in {} (entries 1-{} of {old}; {old} stays as it was: /resume {old})",
        chat.agent().id(),
        message.entry - 1
    );
    Ok(())
}
