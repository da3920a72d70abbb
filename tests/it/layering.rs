//! The house rules on who may use whom (README, "Developing"), checked on
//! the source: every `crate::MODULE` path in a module's code (a `use` line
//! or a path written inline) must be one its layer may use.

use std::path::{Path, PathBuf};

/// A rule: files under `under` must not name `crate::{forbidden}`.
struct Rule {
    under: &'static str,
    forbidden: &'static [&'static str],
    why: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        under: "store",
        forbidden: &["provider", "agent", "chat", "cli", "compact", "context", "config"],
        why: "the store knows no provider, chat, compaction or CLI",
    },
    Rule {
        under: "provider",
        forbidden: &["store", "agent", "chat", "cli", "compact", "mcp", "tools"],
        why: "provider adapters know no store, no MCP and no tool (a key command runs through crate::process)",
    },
    Rule {
        under: "compact",
        forbidden: &["agent", "chat", "cli", "mcp"],
        why: "compaction knows no turn loop, REPL, CLI or MCP",
    },
    Rule { under: "agent", forbidden: &["chat", "cli"], why: "the agent knows no terminal: the chat wraps it" },
    Rule {
        under: "cli/compact.rs",
        forbidden: &["chat"],
        why: "glrs-compact runs its memory flush on an agent, not the REPL's chat",
    },
    Rule {
        under: "mcp",
        forbidden: &["store", "agent", "chat", "cli", "compact"],
        why: "MCP servers are tools, no more",
    },
    Rule {
        under: "message.rs",
        forbidden: &[
            "store",
            "provider",
            "agent",
            "chat",
            "cli",
            "compact",
            "config",
            "context",
            "fork",
            "keys",
            "maintenance",
        ],
        why: "the shared message types are a leaf",
    },
    Rule { under: "config.rs", forbidden: &["provider", "store", "chat", "cli"], why: "config is read by everyone" },
    Rule {
        under: "process",
        forbidden: &[
            "store",
            "provider",
            "agent",
            "chat",
            "cli",
            "compact",
            "config",
            "context",
            "tools",
            "hooks",
            "mcp",
            "keys",
            "maintenance",
        ],
        why: "process control is a leaf: it knows no tool, hook, provider or chat",
    },
    Rule {
        under: "limits.rs",
        forbidden: &[
            "store", "provider", "agent", "chat", "cli", "compact", "config", "tools", "hooks", "mcp", "process",
        ],
        why: "the output limits are a leaf",
    },
];

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())).flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The modules `text` names as `crate::MODULE`, with their line numbers,
/// comments left out.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let module: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !module.is_empty() {
                found.push((n + 1, module));
            }
        }
        // `use crate::{a, b::c}` names several.
        if let Some(group) = code.split("crate::{").nth(1) {
            for part in group.split(',') {
                let module: String =
                    part.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !module.is_empty() {
                    found.push((n + 1, module));
                }
            }
        }
    }
    found
}

/// Whether `file` (relative to `src/`) falls under `under`.
fn is_under(file: &Path, under: &str) -> bool {
    file.starts_with(under) || file == Path::new(under)
}

fn violations() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&src).unwrap_or(&path).to_path_buf();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        for (line, module) in crate_paths(&text) {
            // Library code never imports `cli`.
            if module == "cli" && !rel.starts_with("cli") {
                out.push(format!("src/{}:{line}: uses crate::cli (library code never imports cli)", rel.display()));
            }
            for rule in RULES.iter().filter(|r| is_under(&rel, r.under)) {
                if rule.forbidden.contains(&module.as_str()) {
                    out.push(format!("src/{}:{line}: uses crate::{module} ({})", rel.display(), rule.why));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_module_uses_only_what_its_layer_may() {
    let found = violations();
    assert!(found.is_empty(), "layering broken:\n  {}", found.join("\n  "));
}

#[test]
fn the_scanner_sees_use_lines_groups_and_inline_paths() {
    let text = "use crate::store::Entry;\nuse crate::{cli, provider::Message};\n// crate::chat in a comment\nlet x = crate::cli::run(1); // crate::compact\n";
    let found = crate_paths(text);
    assert_eq!(
        found,
        [(1, "store".to_string()), (2, "cli".to_string()), (2, "provider".to_string()), (4, "cli".to_string())]
    );
}

/// The SGR (colour) escapes written in `text`'s code before its tests, as
/// line numbers: `\x1b[` or `\u{1b}[` up to an `m`.
fn colour_escapes(text: &str) -> Vec<usize> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for opener in ["\\x1b[", "\\u{1b}["] {
            for (at, _) in line.match_indices(opener) {
                let rest = &line[at + opener.len()..];
                // Parameters, or `{…}` placeholders for them, then the final letter.
                let mut braces = 0;
                let last = rest.chars().find(|&c| {
                    match c {
                        '{' => braces += 1,
                        '}' => braces -= 1,
                        _ => {}
                    }
                    braces == 0 && c.is_ascii_alphabetic()
                });
                if last == Some('m') {
                    found.push(n + 1);
                }
            }
        }
    }
    found
}

/// Colour goes through `output::Style`, which knows `NO_COLOR`; only the
/// Markdown renderer composes its own (nested spans).
#[test]
fn colour_escapes_are_written_only_by_output_style() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let allowed = [Path::new("output.rs"), Path::new("chat/markdown.rs")];
    let mut out = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&src).unwrap_or(&path).to_path_buf();
        if allowed.contains(&rel.as_path()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        out.extend(colour_escapes(&text).into_iter().map(|line| format!("src/{}:{line}", rel.display())));
    }
    assert!(out.is_empty(), "colour escapes outside output::Style:\n  {}", out.join("\n  "));
}

#[test]
fn the_colour_scanner_sees_sgr_but_not_cursor_moves() {
    let text = "let a = \"\\x1b[2m\";\nlet b = \"\\x1b[{}A\\x1b[J\";\nlet c = format!(\"\\u{1b}[{code}m\");\n#[cfg(test)]\nlet d = \"\\x1b[1m\";\n";
    assert_eq!(colour_escapes(text), [1, 3]);
}
