//! Export forms, from one session with every kind of entry.

use super::*;

fn sample() -> SessionFile {
    let text = r#"{"schema":2,"id":"3f9a1c2b","createdAt":"2026-11-29T15:24:19.412Z","updatedAt":"2026-11-29T15:31:02.007Z","cwd":"/home/ada/app","model":"openai/gpt-4.1","events":[
{"type":"user","at":"2026-11-29T15:24:19.412Z","text":"Fix <b>the</b> login test\nsecond line"},
{"type":"reasoning","at":"2026-11-29T15:24:20.000Z","text":"think **hard**"},
{"type":"assistant","at":"2026-11-29T15:24:21.000Z","text":"Reading it.","model":"openai/gpt-4.1","toolCalls":[{"id":"c1","name":"read","input":{"path":"src/login.ts"}}],"stopReason":"tool_use"},
{"type":"tool","at":"2026-11-29T15:24:22.000Z","id":"c1","name":"read","input":{"path":"src/login.ts"},"result":"const a = 1;\n```\nfence inside","isError":false},
{"type":"usage","at":"2026-11-29T15:24:22.000Z","model":"openai/gpt-4.1","inputTokens":10,"outputTokens":5},
{"type":"assistant","at":"2026-11-29T15:24:23.000Z","text":"Done: *fixed*. ![x](https://example.com/x.png) [bad](javascript:alert(1)) <script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |","model":"openai/gpt-4.1","toolCalls":[],"stopReason":"stop"},
{"type":"turn","at":"2026-11-29T15:24:23.000Z","messages":[]},
{"type":"hologram","at":"2026-11-29T15:25:00.000Z","x":1}
],"contextTokens":15}"#;
    format::parse(text.as_bytes(), std::path::Path::new("3f9a1c2b.json"), None).unwrap()
}

#[test]
fn markdown_has_a_heading_per_message_and_fenced_tools() {
    let md = export(&sample(), Format::Md);
    assert!(
        md.starts_with("# Fix <b>the</b> login test\n\nsession `3f9a1c2b` · created `2026-11-29T15:24:19.412Z`"),
        "{md}"
    );
    let headings: Vec<&str> = md.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(headings.len(), 6, "usage and turn are left out: {headings:?}");
    assert_eq!(headings[0], "## [1] User · 2026-11-29 15:24:19 UTC");
    assert!(headings[3].starts_with("## [4] Tool result · `read` (`c1`)"), "{headings:?}");
    assert!(headings[5].starts_with("## [8] hologram"), "{headings:?}");
    assert!(md.contains("Tool call `read` (`c1`):\n\n```json\n{\n  \"path\": \"src/login.ts\"\n}\n```\n"), "{md}");
    // A result holding a fence gets a longer fence.
    assert!(md.contains("````text\nconst a = 1;\n```\nfence inside\n````\n"), "{md}");
    assert!(md.contains("> think **hard**\n"), "{md}");
}

#[test]
fn html_is_self_contained_and_safe() {
    let html = export(&sample(), Format::Html);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("name=\"viewport\""));
    assert!(html.contains("default-src 'none'"));
    for bad in ["<script", "src=", "<link", "url(", "javascript:", "<b>the</b>"] {
        assert!(!html.contains(bad), "{bad} in {html}");
    }
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "raw HTML shown as text");
    assert!(html.contains("<a href=\"https://example.com/x.png\">x</a>"), "an image becomes a link");
    assert!(html.contains("<em>fixed</em>") && html.contains("<table>"), "{html}");
    assert!(html.contains("<details><summary>read (3 lines)</summary>"), "{html}");
    assert!(html.contains("<details><summary>Reasoning</summary>"), "{html}");
    assert_eq!(html.matches("<article").count(), 6);
}

#[test]
fn jsonl_is_every_entry_a_line() {
    let out = export(&sample(), Format::Jsonl);
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 8);
    assert_eq!(lines[7]["type"], "hologram");
    assert_eq!(lines[0]["text"], "Fix <b>the</b> login test\nsecond line");
}

#[test]
fn formats_follow_the_file_name() {
    use std::path::Path;
    assert_eq!(Format::from_path(Path::new("a/b.HTML")), Some(Format::Html));
    assert_eq!(Format::from_path(Path::new("t.md")), Some(Format::Md));
    assert_eq!(Format::from_path(Path::new("t.jsonl")), Some(Format::Jsonl));
    assert_eq!(Format::from_path(Path::new("t.txt")), None);
}
