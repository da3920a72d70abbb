//! The HTML form: one page that needs nothing else. Styles are inline, a
//! Content-Security-Policy forbids every fetch and every script, message
//! Markdown is rendered with raw HTML shown as text and images turned into
//! links (so nothing loads), and tool results and reasoning fold away in
//! `<details>` (no script needed). Readable on a phone: a viewport line,
//! one narrow column, code that scrolls sideways instead of widening it.

use std::fmt::Write;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::{Transcript, pretty};
use crate::store::{Entry, Parsed};

const STYLE: &str = r#"
:root { color-scheme: light dark; --fg: #1d1d1f; --bg: #fff; --muted: #6e6e73; --line: #d2d2d7;
  --user: #eef4ff; --code: #f5f5f7; --err: #b3261e; }
@media (prefers-color-scheme: dark) { :root { --fg: #e8e8ed; --bg: #161617; --muted: #a1a1a6;
  --line: #3a3a3c; --user: #1c2a40; --code: #222224; --err: #ff8a80; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 50rem; margin: 0 auto; padding: 1rem; }
header h1 { font-size: 1.4rem; margin: .5rem 0; overflow-wrap: anywhere; }
.meta { color: var(--muted); font-size: .85rem; margin: 0 0 1.5rem; overflow-wrap: anywhere; }
article { border-top: 1px solid var(--line); padding: .75rem 0; }
article > h2 { font-size: .8rem; font-weight: 600; color: var(--muted); margin: 0 0 .4rem; }
article > h2 a { color: inherit; text-decoration: none; }
article.user .body { background: var(--user); border-radius: .6rem; padding: .6rem .9rem; white-space: pre-wrap; }
article.error { color: var(--err); }
.body { overflow-wrap: anywhere; }
.body img { max-width: 100%; }
pre { background: var(--code); padding: .6rem .8rem; border-radius: .4rem; overflow-x: auto;
  font-size: .85rem; line-height: 1.4; white-space: pre; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
:not(pre) > code { background: var(--code); padding: .1em .3em; border-radius: .25rem; }
blockquote { margin: .5rem 0; padding-left: .9rem; border-left: 3px solid var(--line); color: var(--muted); }
table { border-collapse: collapse; display: block; overflow-x: auto; }
th, td { border: 1px solid var(--line); padding: .25rem .5rem; text-align: left; }
details { margin: .4rem 0; }
summary { cursor: pointer; color: var(--muted); font-size: .9rem; }
"#;

pub(super) fn render(t: &Transcript) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let heading = esc(&t.heading());
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>{heading}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n<header>\n<h1>{heading}</h1>\n"
    );
    let mut facts = vec![format!("session <code>{}</code>", esc(&t.id))];
    facts.extend(t.facts.iter().map(|(label, value)| format!("{label} {}", esc(value))));
    let _ = writeln!(out, "<p class=\"meta\">{}</p>\n</header>", facts.join(" · "));
    for (n, entry) in &t.entries {
        entry_html(&mut out, *n, entry);
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn entry_html(out: &mut String, n: u64, entry: &Parsed) {
    let at = esc(&super::readable_time(entry.at()));
    let head = |out: &mut String, class: &str, what: &str| {
        let _ = write!(
            out,
            "<article class=\"{class}\" id=\"e{n}\">\n<h2><a href=\"#e{n}\">[{n}]</a> {what} · <time>{at}</time></h2>\n"
        );
    };
    let Parsed::Known(entry) = entry else {
        let Parsed::Other { kind, value, .. } = entry else { return };
        head(out, "other", &esc(kind));
        folded(out, "entry", &pre(&pretty(value)));
        out.push_str("</article>\n");
        return;
    };
    match entry {
        Entry::User { text, steer, internal, .. } => {
            let what = match internal {
                Some(_) => "glrs prompt (memory flush, not typed)",
                None if *steer => "User (joined the running turn)",
                None => "User",
            };
            head(out, "user", what);
            // What the user typed, line breaks and all.
            let _ = writeln!(out, "<div class=\"body\">{}</div>", esc(text.trim_end()));
        }
        Entry::Assistant { text, model, tool_calls, stop_reason, .. } => {
            head(out, "assistant", &format!("Assistant · {}", esc(model)));
            if !text.trim().is_empty() {
                let _ = writeln!(out, "<div class=\"body\">{}</div>", markdown(text));
            }
            for call in tool_calls {
                let summary = format!("Tool call <code>{}</code> ({})", esc(&call.name), esc(&call.id));
                folded(out, &summary, &pre(&pretty(&call.input)));
            }
            if !stop_reason.ended_normally() {
                let _ = writeln!(out, "<p class=\"meta\">(stopped: {})</p>", esc(stop_reason.as_str()));
            }
        }
        Entry::Reasoning { text, .. } => {
            head(out, "reasoning", "Reasoning");
            folded(out, "Reasoning", &format!("<blockquote>{}</blockquote>", markdown(text)));
        }
        Entry::Tool { id, name, input, result, is_error, .. } => {
            let error = if *is_error { " · error" } else { "" };
            head(out, "tool", &format!("Tool result · <code>{}</code> ({}){error}", esc(name), esc(id)));
            let lines = result.lines().count();
            let summary = format!("{} ({lines} line{})", esc(name), if lines == 1 { "" } else { "s" });
            folded(out, &summary, &format!("<p>Input</p>{}<p>Result</p>{}", pre(&pretty(input)), pre(result)));
        }
        Entry::Notice { text, .. } => {
            head(out, "notice", "Notice");
            let _ = writeln!(out, "<div class=\"body\">{}</div>", markdown(text));
        }
        Entry::Error { text, kind, .. } => {
            head(out, "error", &format!("Error ({})", esc(kind)));
            out.push_str(&pre(text));
        }
        Entry::Cleared { .. } => {
            head(out, "cleared", "Cleared");
            out.push_str("<p class=\"meta\">The model started from nothing after here.</p>\n");
        }
        Entry::Compacted { brief, first_kept, tokens_before, tokens_after, artifact, .. } => {
            head(out, "compacted", "Compacted");
            let _ = writeln!(
                out,
                "<p class=\"meta\">Entries before {first_kept} were replaced by a brief ({tokens_before} → \
                 {tokens_after} tokens; artifact <code>{}</code>).</p>",
                esc(artifact)
            );
            folded(out, "Brief", &format!("<div class=\"body\">{}</div>", markdown(brief)));
        }
        Entry::Custom { name, data, .. } => {
            head(out, "custom", &format!("Custom <code>{}</code>", esc(name)));
            folded(out, "data", &pre(&pretty(data)));
        }
        // Workspace checkpoints are glrs's own bookkeeping, not conversation.
        Entry::Usage { .. } | Entry::Turn { .. } | Entry::Checkpoint { .. } => return,
    }
    out.push_str("</article>\n");
}

/// A block that starts folded: `summary` is already HTML.
fn folded(out: &mut String, summary: &str, inner: &str) {
    let _ = writeln!(out, "<details><summary>{summary}</summary>\n{inner}\n</details>");
}

fn pre(text: &str) -> String {
    format!("<pre><code>{}</code></pre>", esc(text))
}

/// Message Markdown as HTML that can neither run nor fetch anything: raw
/// HTML becomes text, images become links, and only web, mail and
/// same-page links keep their target.
pub(super) fn markdown(text: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Image { link_type, dest_url, title, id }) => {
            Event::Start(Tag::Link { link_type, dest_url: safe_url(dest_url), title, id })
        }
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
            Event::Start(Tag::Link { link_type, dest_url: safe_url(dest_url), title, id })
        }
        other => other,
    });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

fn safe_url(url: pulldown_cmark::CowStr<'_>) -> pulldown_cmark::CowStr<'_> {
    let lower = url.trim().to_ascii_lowercase();
    let scheme = lower.split_once(':').map(|(s, _)| s).filter(|s| !s.contains(['/', '?', '#']));
    match scheme {
        None | Some("http" | "https" | "mailto") => url,
        Some(_) => "#".into(),
    }
}

/// Text safe in HTML content and attribute values.
pub(super) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
