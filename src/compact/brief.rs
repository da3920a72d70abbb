//! The brief (SPEC 6, "The brief"): asked of the compact model with the
//! replaced messages (tool results cut to 2,000 characters in the request
//! only), the previous brief folded in, and the user's instruction. A part
//! too large for one request is summarised in pieces, and the pieces
//! merged. glrs then appends an "Exact references" section built
//! mechanically from the replaced messages (`super::references`): the
//! paths, commands, URLs and backticked names a summary would otherwise
//! lose, what the agent did first.

use anyhow::{Result, bail};

use super::plan::{Block, Tag};
use super::references::{self, REFERENCES_HEADING, References};
use crate::provider::{CallError, Cancel, Message, Provider, Request};

/// Tool results in the request are cut to this many characters.
pub const TOOL_RESULT_LIMIT: usize = 2_000;
/// Tokens kept free in the compact model's window for the prompt and the
/// brief it writes.
const HEADROOM_TOKENS: u64 = 12_000;

/// The system prompt of the summary request.
pub const SYSTEM_PROMPT: &str = "You write the brief that replaces the older part of a conversation between a user and an AI \
assistant, so that the assistant can carry on the work from the brief alone.\n\n\
Answer with the brief only, in this form:\n\
- First line: a short label naming the work, under 80 characters, no heading marks (e.g. \"fixed three failing auth tests\").\n\
- Then these Markdown sections: ## Goal; ## Constraints and preferences; ## Progress (### Done, ### In progress, ### Blocked); \
## Key decisions; ## Next steps; ## Critical context.\n\n\
Keep exact file paths, function and variable names, commands, numbers, versions and error messages, verbatim. \
Say what was decided and why. Leave out pleasantries and anything no longer true.";

/// A block as the request shows it: tool results cut, with a marker.
fn request_text(block: &Block) -> String {
    if !matches!(block.tag, Tag::ToolResult(_)) || block.text.chars().count() <= TOOL_RESULT_LIMIT {
        return block.text.clone();
    }
    let kept: String = block.text.chars().take(TOOL_RESULT_LIMIT).collect();
    let cut = block.text.chars().count() - TOOL_RESULT_LIMIT;
    format!("{kept}\n[… {cut} more characters cut from this request; the artifact keeps them whole]")
}

fn transcript(blocks: &[Block]) -> String {
    blocks.iter().filter(|b| b.tag != Tag::Brief).map(|b| format!("[{}]\n{}\n", b.tag, request_text(b))).collect()
}

/// The user message of one summary request.
pub fn prompt(
    previous: Option<&str>,
    transcript: &str,
    instruction: Option<&str>,
    part: Option<(usize, usize)>,
) -> String {
    let mut p = String::new();
    if let Some(previous) = previous {
        p.push_str(
            "This is the brief of the conversation so far. Update it with the messages that follow: keep what is \
             still true, change what changed, add what is new.\n<previous-brief>\n",
        );
        p.push_str(previous);
        p.push_str("\n</previous-brief>\n\n");
    }
    if let Some((i, n)) = part {
        p.push_str(&format!("The messages are part {i} of {n} of the older conversation.\n"));
    }
    p.push_str("<conversation>\n");
    p.push_str(transcript);
    p.push_str("</conversation>\n\nWrite the brief now.");
    if let Some(instruction) = instruction.filter(|i| !i.trim().is_empty()) {
        p.push_str(&format!("\n\nAdditional focus: {instruction}"));
    }
    p
}

/// Split blocks into pieces whose request text fits `budget` characters.
fn pieces(blocks: &[Block], budget: usize) -> Vec<Vec<Block>> {
    let mut out: Vec<Vec<Block>> = vec![Vec::new()];
    let mut size = 0;
    for block in blocks.iter().filter(|b| b.tag != Tag::Brief) {
        // Sized as the request will show it; tool results stay whole here
        // and are cut once, by `transcript`.
        let mut block = block.clone();
        if request_text(&block).len() > budget {
            // One message larger than a request: its start stands for it.
            let end = (0..=budget).rev().find(|&i| block.text.is_char_boundary(i)).unwrap_or(0);
            block.text = format!("{}\n[… cut to fit the summary request]", &block.text[..end]);
        }
        let len = request_text(&block).len() + block.tag.to_string().len() + 4;
        if size + len > budget && out.last().is_some_and(|p| !p.is_empty()) {
            out.push(Vec::new());
            size = 0;
        }
        size += len;
        if let Some(last) = out.last_mut() {
            last.push(block);
        }
    }
    out
}

async fn ask(provider: &Provider, model: &str, text: String, cancel: &Cancel) -> Result<String> {
    let messages = [Message::User { content: text }];
    let request =
        Request { model, system: Some(SYSTEM_PROMPT), messages: &messages, tools: &[], thinking: Default::default() };
    let response = provider.complete(&request, &mut |_| {}, cancel).await.map_err(|e| match e {
        CallError::Cancelled { .. } => anyhow::anyhow!("stopped; nothing was written"),
        other => anyhow::anyhow!("the compact model {}/{model} failed ({other}); nothing was written", provider.id),
    })?;
    let text = response.text.trim().to_string();
    if text.is_empty() {
        bail!("the compact model returned an empty brief; nothing was written");
    }
    Ok(text)
}

/// The user messages of the summary requests for `blocks` on a model with
/// a `window`-token context: one, or one a piece (to be merged after).
pub fn request_texts(window: u64, blocks: &[Block], previous: Option<&str>, instruction: Option<&str>) -> Vec<String> {
    let budget_tokens = window.saturating_sub(HEADROOM_TOKENS).max(2_000);
    let previous_len = previous.map_or(0, str::len);
    let budget = (budget_tokens as usize * 4).saturating_sub(previous_len).max(4_000);
    let parts = pieces(blocks, budget);
    if parts.len() == 1 {
        return vec![prompt(previous, &transcript(&parts[0]), instruction, None)];
    }
    let n = parts.len();
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| prompt(if i == 0 { previous } else { None }, &transcript(part), None, Some((i + 1, n))))
        .collect()
}

/// Ask the model for the brief of `blocks` (previous brief first, if any).
/// `window` is the compact model's context window, in tokens. Returns the
/// brief with its label line first and the exact references at the end.
pub async fn write(
    provider: &Provider,
    model: &str,
    window: u64,
    blocks: &[Block],
    previous: Option<&str>,
    instruction: Option<&str>,
    cancel: &Cancel,
) -> Result<Brief> {
    let requests = request_texts(window, blocks, previous, instruction);
    let summary = if requests.len() == 1 {
        ask(provider, model, requests.into_iter().next().unwrap_or_default(), cancel).await?
    } else {
        let mut partials = Vec::with_capacity(requests.len());
        for text in requests {
            partials.push(ask(provider, model, text, cancel).await?);
        }
        let mut merge = String::from(
            "These partial briefs cover consecutive parts of one conversation, oldest first. Merge them into one \
             brief: later parts win where they disagree.\n",
        );
        for (i, p) in partials.iter().enumerate() {
            merge.push_str(&format!("<partial-brief part=\"{}\">\n{p}\n</partial-brief>\n", i + 1));
        }
        merge.push_str("\nWrite the merged brief now.");
        if let Some(instruction) = instruction.filter(|i| !i.trim().is_empty()) {
            merge.push_str(&format!("\n\nAdditional focus: {instruction}"));
        }
        ask(provider, model, merge, cancel).await?
    };
    Ok(finish(&summary, blocks))
}

/// A brief before it lands: the model's text, and the references to append
/// (how many fit is decided at landing, where the context must not grow).
#[derive(Debug, Clone)]
pub struct Brief {
    /// The label line and the model's sections, its own references dropped.
    pub summary: String,
    /// What the replaced messages name.
    pub references: References,
}

impl Brief {
    /// The brief with at most `max_chars` of references (the artifact still
    /// [`references::ARTIFACT_MARK`]).
    pub fn render(&self, max_chars: usize) -> String {
        let section = references::render(&self.references.choose(max_chars));
        if section.is_empty() { self.summary.clone() } else { format!("{}\n\n{section}", self.summary) }
    }
}

/// The model's text with a clean label line and its own copy of a
/// references section dropped; ours come with it.
pub fn finish(summary: &str, blocks: &[Block]) -> Brief {
    let summary = strip_references(summary);
    let mut lines = summary.trim().lines();
    let label = clean_label(lines.next().unwrap_or(""));
    let rest: Vec<&str> = lines.collect();
    let text = format!("{label}\n{}", rest.join("\n").trim_start_matches('\n'));
    Brief { summary: text.trim_end().to_string(), references: References::of(blocks) }
}

/// The label: the first line as plain text (no heading, list or quote
/// marks, emphasis, code spans or link syntax: it is shown in listings and
/// front matter, where markup is noise), under 80 characters.
pub fn clean_label(line: &str) -> String {
    let plain = strip_markup(line);
    let mut text = plain.trim();
    for prefix in ["Label:", "label:", "LABEL:"] {
        text = text.strip_prefix(prefix).unwrap_or(text).trim();
    }
    let text = text.trim_matches('"').trim();
    let text = if text.is_empty() { "compacted conversation" } else { text };
    match text.char_indices().nth(79) {
        Some((cut, _)) => text[..cut].trim_end().to_string(),
        None => text.to_string(),
    }
}

/// One line of Markdown as the text it shows: `[text](url)` is `text`;
/// emphasis, strike and code marks go (an `_` inside a word stays); leading
/// heading, quote and list marks go.
fn strip_markup(line: &str) -> String {
    let mut text = line.trim();
    loop {
        let before = text;
        text = text.trim_start_matches(['#', '>']).trim_start();
        for marker in ["- ", "* ", "+ "] {
            text = text.strip_prefix(marker).unwrap_or(text);
        }
        let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && matches!(text[digits..].chars().next(), Some('.' | ')')) {
            text = text[digits + 1..].trim_start();
        }
        if text == before {
            break;
        }
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '[' {
            // A link: keep its text, drop the target.
            let close = chars[i..].iter().position(|&x| x == ']').map(|p| p + i);
            if let Some(close) = close
                && chars.get(close + 1) == Some(&'(')
                && let Some(end) = chars[close..].iter().position(|&x| x == ')').map(|p| p + close)
            {
                out.extend(&chars[i + 1..close]);
                i = end + 1;
                continue;
            }
        }
        let word_inside =
            |j: usize| j > 0 && j + 1 < chars.len() && chars[j - 1].is_alphanumeric() && chars[j + 1].is_alphanumeric();
        match c {
            '*' | '`' | '~' => {}
            '_' if !word_inside(i) => {}
            _ => out.push(c),
        }
        i += 1;
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn strip_references(summary: &str) -> String {
    match summary.find(REFERENCES_HEADING) {
        Some(at) => {
            let after = &summary[at + REFERENCES_HEADING.len()..];
            let next = after.find("\n## ").map_or("", |i| &after[i..]);
            format!("{}{next}", &summary[..at])
        }
        None => summary.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(tag: &str, text: &str) -> Block {
        Block { tag: tag.into(), text: text.into() }
    }

    #[test]
    fn tool_results_are_cut_in_the_request_only() {
        let long = "z".repeat(5_000);
        let t = transcript(&[b("tool-result read", &long), b("user", &long)]);
        assert!(
            t.contains("[… 3000 more characters cut from this request; the artifact keeps them whole]"),
            "{}",
            &t[..100]
        );
        assert_eq!(t.matches('z').count(), 2_000 + 5_000);
    }

    #[test]
    fn labels_and_finishing() {
        assert_eq!(clean_label("# **Label:** fixed the auth tests"), "fixed the auth tests");
        assert_eq!(
            clean_label("1. Fixed **three** failing `auth_test` cases in [redirect.ts](src/redirect.ts), _finally_"),
            "Fixed three failing auth_test cases in redirect.ts, finally"
        );
        assert_eq!(clean_label("> - ~~old~~ *new* plan"), "old new plan");
        assert_eq!(clean_label(""), "compacted conversation");
        assert_eq!(clean_label(&"x".repeat(200)).len(), 79);
        let brief = finish(
            "## fixed things\n## Goal\nship\n## Exact references\n- `stale`\n## Next steps\nmore",
            &[b("user", "`kept`")],
        )
        .render(references::REFERENCE_CHARS);
        assert_eq!(brief, "fixed things\n## Goal\nship\n\n## Next steps\nmore\n\n## Exact references\n- `kept`");
    }

    #[test]
    fn prompts_fold_in_the_previous_brief_and_the_instruction() {
        let p = prompt(Some("old brief"), "[user]\nhi\n", Some("the database schema"), None);
        assert!(p.contains("<previous-brief>\nold brief\n</previous-brief>"));
        assert!(p.ends_with("Additional focus: the database schema"));
        let parts = pieces(&[b("user", &"a".repeat(3_000)), b("user", &"b".repeat(3_000)), b("user", "c")], 4_000);
        assert_eq!(parts.len(), 2);
    }
}
