//! What a resumed session shows before its prompt: the last few exchanges
//! of the transcript, starting at a user message (never in the middle of
//! a turn), with `… N earlier entries` above when there is more, and the
//! replies rendered as Markdown exactly as they were when streamed.

use crate::error::StoreError;
use crate::output::{Style, terminal_safe};
use crate::store::{Entry, Located, Parsed, Store};

use super::Chat;
use super::render::render_text;

/// About how many messages (user and assistant) are shown.
const SHOWN: usize = 6;

/// How many entries the first read from the end takes; each read after
/// takes four times as many, until the shown part's first message is in.
const FIRST_READ: usize = 64;

/// Print the end of `chat`'s transcript. Only the end of the file is read
/// (see [`read_shown`]), whatever the session's size.
pub fn show(chat: &Chat, color: bool) {
    let Some(at) = chat.agent().store().locate(chat.agent().id()) else { return };
    let Ok((entries, first)) = read_shown(chat.agent().store(), &at) else { return };
    let width = crossterm::terminal::size().map_or(80, |(w, _)| w as usize);
    print!("{}", transcript_from(&entries, first, width, color, chat.agent().id().as_str()));
}

/// The last entries of the session at `at` (parsed) and the index of the
/// first of them: enough that the shown part starts among them. They are
/// found from the end backwards ([`Store::read_from`]: with the scan kept
/// beside a large file, nothing before them is read), more each time the
/// part read does not reach the user message the shown part starts at.
fn read_shown(store: &Store, at: &Located) -> Result<(Vec<Parsed>, usize), StoreError> {
    let mut want = FIRST_READ;
    loop {
        let recent = store.read_from(at, |total| total.saturating_sub(want))?;
        let entries: Vec<Parsed> = recent.lines.entries().into_iter().map(Parsed::from_text).collect();
        if recent.first == 0 || starts_within(&entries) {
            return Ok((entries, recent.first));
        }
        want = want.saturating_mul(4);
    }
}

/// True when [`start_of`] these entries is where it is for the whole
/// session, whatever came before them: they hold the `SHOWN` last
/// messages and, at or before the first of those, the user message that
/// began its turn.
fn starts_within(entries: &[Parsed]) -> bool {
    let messages = entries.iter().filter(|e| is_message(e)).count();
    messages >= SHOWN && entries.get(start_of(entries)).is_some_and(is_user)
}

fn is_message(e: &Parsed) -> bool {
    matches!(e, Parsed::Known(Entry::User { .. } | Entry::Assistant { .. }))
}

/// A message the user typed (a steer joins a turn; it begins none).
fn is_user(e: &Parsed) -> bool {
    matches!(e, Parsed::Known(Entry::User { steer: false, .. }))
}

/// The text [`show`] prints for these entries.
pub fn transcript(entries: &[Parsed], width: usize, color: bool, id: &str) -> String {
    transcript_from(entries, 0, width, color, id)
}

/// [`transcript`] of a session's entries from index `first` on.
fn transcript_from(entries: &[Parsed], first: usize, width: usize, color: bool, id: &str) -> String {
    let start = first + start_of(entries);
    let mut out = String::new();
    let style = Style::on_terminal(color);
    let dim = |t: &str| style.dim(t);
    if start > 0 {
        let s = if start == 1 { "entry" } else { "entries" };
        out.push_str(&dim(&format!("… {start} earlier {s} (glrs-sessions show {id})")));
        out.push('\n');
    }
    // A turn glrs started itself (the memory flush) is not the person's:
    // neither its prompt nor its answer is shown as typed and answered.
    let mut internal = false;
    for entry in &entries[start - first..] {
        match entry {
            Parsed::Known(Entry::User { internal: mark, steer: false, .. }) if mark.is_some() => internal = true,
            Parsed::Known(Entry::User { .. } | Entry::Assistant { .. }) if internal && !is_user(entry) => {}
            Parsed::Known(Entry::User { text, .. }) => {
                internal = false;
                let mark = style.bold(">");
                out.push_str(&format!("{mark} {}\n", terminal_safe(text.trim_end())));
            }
            Parsed::Known(Entry::Assistant { text, tool_calls, .. }) => {
                if !text.trim().is_empty() {
                    out.push_str(&render_text(&terminal_safe(text), width, color));
                }
                for call in tool_calls {
                    out.push_str(&dim(&terminal_safe(&format!("● {}", call.name))));
                    out.push('\n');
                }
            }
            _ => {}
        }
    }
    out
}

/// Where the shown part starts: the user message at or before the
/// `SHOWN`th-last message, so a turn is never shown from its middle.
fn start_of(entries: &[Parsed]) -> usize {
    let mut seen = 0;
    let mut from = entries.len();
    for (i, e) in entries.iter().enumerate().rev() {
        if is_message(e) {
            seen += 1;
            from = i;
            if seen >= SHOWN {
                break;
            }
        }
    }
    // Back to the user message that began that turn.
    (0..=from.min(entries.len().saturating_sub(1))).rev().find(|&i| is_user(&entries[i])).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(lines: &[&str]) -> Vec<Parsed> {
        lines
            .iter()
            .map(|l| Parsed::from_raw(&serde_json::value::RawValue::from_string(l.to_string()).unwrap()))
            .collect()
    }

    fn user(t: &str) -> String {
        format!(r#"{{"type":"user","at":"t","text":"{t}"}}"#)
    }

    fn assistant(t: &str, tools: bool) -> String {
        let calls = if tools { r#"[{"id":"c","name":"read","input":{}}]"# } else { "[]" };
        format!(r#"{{"type":"assistant","at":"t","text":"{t}","model":"m","toolCalls":{calls},"stopReason":"stop"}}"#)
    }

    #[test]
    fn the_replay_starts_at_a_user_message_and_counts_what_is_left_out() {
        let mut lines = vec![user("first"), assistant("one", false)];
        // A turn of many steps: the last six messages begin inside it.
        lines.push(user("second"));
        for i in 0..6 {
            lines.push(assistant(&format!("step {i}"), true));
            lines.push(
                r#"{"type":"tool","at":"t","id":"c","name":"read","input":{},"result":"r","isError":false}"#.into(),
            );
        }
        lines.push(assistant("**done**", false));
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let text = transcript(&parsed(&refs), 80, false, "abcd0001");
        assert!(text.starts_with("… 2 earlier entries (glrs-sessions show abcd0001)\n> second\n"), "{text}");
        assert!(text.ends_with("**done**\n"), "plain without colour: {text}");
        let styled = transcript(&parsed(&refs), 80, true, "abcd0001");
        assert!(styled.contains("\x1b[1mdone\x1b[0m"), "{styled:?}");
    }

    /// A store in `dir` holding one session of these entries.
    fn stored(dir: &std::path::Path, lines: &[String]) -> (Store, Located) {
        let paths = crate::Paths::from_vars(Some(dir.into()), None, None, Some(dir.into())).unwrap();
        let store = Store::new(paths);
        let id = crate::SessionId::parse("3f9a1c2b").unwrap();
        let mut file = crate::store::SessionFile::new(id.as_str(), "/w", "2026-11-29T15:24:19.412Z");
        for l in lines {
            file.events.push(serde_json::value::RawValue::from_string(l.clone()).unwrap());
        }
        assert!(store.create_file(&id, &file).unwrap());
        let at = store.locate(&id).unwrap();
        (store, at)
    }

    fn tool() -> String {
        r#"{"type":"tool","at":"t","id":"c","name":"read","input":{},"result":"r","isError":false}"#.into()
    }

    /// What a whole read of the session shows.
    fn shown_whole(store: &Store, at: &Located) -> String {
        let lines = store.read_lines(at).unwrap();
        let all: Vec<Parsed> = lines.entries().into_iter().map(Parsed::from_text).collect();
        transcript(&all, 80, false, "x")
    }

    #[test]
    fn the_shown_part_read_from_the_end_is_what_the_whole_session_shows() {
        let steer = r#"{"type":"user","at":"t","text":"and this","steer":true}"#.to_string();
        let mut long_turn = vec![user("old"), assistant("old answer", false), user("go")];
        // One turn of 300 steps with few messages: reads from the end must
        // reach back past many entries to the user message that began it.
        for i in 0..300 {
            long_turn.push(if i % 100 == 0 { assistant(&format!("step {i}"), true) } else { tool() });
        }
        long_turn.extend([steer.clone(), assistant("done", false)]);
        let mut many = Vec::new();
        for i in 0..200 {
            many.extend([user(&format!("q{i}")), assistant(&format!("a{i}"), true), tool()]);
        }
        let short = vec![user("hi"), assistant("hello", false), steer];
        for (name, lines, read_back) in
            [("long turn", long_turn, true), ("many turns", many, false), ("short", short, true)]
        {
            let dir = tempfile::tempdir().unwrap();
            let (store, at) = stored(dir.path(), &lines);
            let (entries, first) = read_shown(&store, &at).unwrap();
            assert_eq!(transcript_from(&entries, first, 80, false, "x"), shown_whole(&store, &at), "{name}");
            assert_eq!(first == 0, read_back, "{name}: read from {first}");
            if !read_back {
                assert_eq!(entries.len(), FIRST_READ, "{name}: one read of the end");
            }
        }
    }

    #[test]
    fn nothing_before_the_shown_part_is_read() {
        // A session over 1 MiB keeps its scan beside it; then a line break
        // in its middle is broken in place (its time put back, as if the
        // kept scan still held). A whole read, or any scan of the file from
        // its start, refuses the file: showing its end reads neither.
        let dir = tempfile::tempdir().unwrap();
        let note = |i: usize| format!(r#"{{"type":"notice","at":"t","text":"{i} {}"}}"#, "n".repeat(1000));
        let mut lines: Vec<String> = (0..1500).map(note).collect();
        for i in 0..4 {
            lines.extend([user(&format!("q{i}")), assistant(&format!("a{i}"), false)]);
        }
        let (store, at) = stored(dir.path(), &lines);
        let before = shown_whole(&store, &at);
        let (entries, first) = read_shown(&store, &at).unwrap();
        assert_eq!(transcript_from(&entries, first, 80, false, "x"), before);
        assert!(at.path.with_extension("scan").is_file(), "the scan is kept beside the file");

        let file = std::fs::OpenOptions::new().read(true).write(true).open(&at.path).unwrap();
        let modified = file.metadata().unwrap().modified().unwrap();
        let text = std::fs::read(&at.path).unwrap();
        let middle = text.len() / 2 + memchr::memmem::find(&text[text.len() / 2..], b"},\n").unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, b"} ", middle as u64).unwrap();
        file.set_times(std::fs::FileTimes::new().set_modified(modified)).unwrap();
        assert!(store.read_lines(&at).is_err(), "a whole read refuses the broken file");
        assert_eq!(std::fs::read(&at.path).unwrap()[middle..middle + 3], *b"} \n", "left broken");
        let (entries, first) = read_shown(&store, &at).unwrap();
        assert_eq!(transcript_from(&entries, first, 80, false, "x"), before);
    }

    #[test]
    fn a_short_session_is_shown_whole() {
        let lines = [user("hi"), assistant("hello", false)];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_eq!(transcript(&parsed(&refs), 80, false, "x"), "> hi\nhello\n");
    }
}
