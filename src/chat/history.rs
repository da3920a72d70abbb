//! What a resumed session shows before its prompt: the last few exchanges
//! of the transcript, starting at a user message (never in the middle of
//! a turn), with `… N earlier entries` above when there is more, and the
//! replies rendered as Markdown exactly as they were when streamed.

use crate::output::{Style, terminal_safe};
use crate::store::{Entry, Parsed};

use super::Chat;
use super::render::render_text;

/// About how many messages (user and assistant) are shown.
const SHOWN: usize = 6;

/// Print the end of `chat`'s transcript. Only the messages are picked out
/// of the file (by a streaming scan), and only the last few parsed.
pub fn show(chat: &Chat, color: bool) {
    let Some(at) = chat.agent().store().locate(chat.agent().id()) else { return };
    // Enough messages back that the shown part's first user message is
    // among them, whatever the turn's length.
    let start = |hits: &[crate::store::recent::Hit]| {
        let is_user = |h: &&crate::store::recent::Hit| {
            h.text.starts_with("{\"type\":\"user\"") && !h.text.contains("\"steer\":true")
        };
        let from = hits.len().saturating_sub(SHOWN);
        hits[..(from + 1).min(hits.len())].iter().rev().find(is_user).map_or(0, |h| h.index)
    };
    let Ok(recent) = chat.agent().store().read_recent(&at, &["user", "assistant"], start) else { return };
    let entries: Vec<Parsed> = recent.lines.entries().into_iter().map(Parsed::from_text).collect();
    let width = crossterm::terminal::size().map_or(80, |(w, _)| w as usize);
    print!("{}", transcript_from(&entries, recent.first, width, color, chat.agent().id().as_str()));
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
    for entry in &entries[start - first..] {
        match entry {
            Parsed::Known(Entry::User { text, .. }) => {
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
    let is_message = |e: &Parsed| matches!(e, Parsed::Known(Entry::User { .. } | Entry::Assistant { .. }));
    let is_user = |e: &Parsed| matches!(e, Parsed::Known(Entry::User { steer: false, .. }));
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

    #[test]
    fn a_short_session_is_shown_whole() {
        let lines = [user("hi"), assistant("hello", false)];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_eq!(transcript(&parsed(&refs), 80, false, "x"), "> hi\nhello\n");
    }
}
