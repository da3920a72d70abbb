//! The house rules on who may use whom (CONTRIBUTING.md, "Developing":
//! the module map, in layers), checked on the source. The library's top-level modules sit in ordered
//! layers; a module may use only modules of layers below its own: every
//! `crate::` path in its code (groups too), every `super::` that climbs to
//! the crate root, and so every `pub use` of either counts. A new module
//! must be given a layer. A few rules more say what layering alone cannot.

mod scan;

use std::path::{Path, PathBuf};

use scan::{Named, named};

/// The layers, lowest first, and why each sits where it does.
const LAYERS: &[(&[&str], &str)] = &[
    (
        &["alloc_probe", "error", "exit", "fuzz", "message", "output", "programs", "redact", "runtime", "time"],
        "leaves: shared types (messages, store errors, exit statuses), terminal output, redaction, the clock, the runtime",
    ),
    (&["id"], "session ids"),
    (&["paths"], "the XDG paths of the store"),
    (&["limits", "store"], "the output limits; the store (knows no provider, chat or CLI)"),
    (&["context", "export", "process"], "over the store: the context, exports; process control (knows no tool)"),
    (&["import", "sandbox"], "import into the store; the sandbox over process control"),
    (&["permissions"], "permission rules and the bash judge (paths judged as the sandbox resolves them)"),
    (&["hooks"], "hooks run through process control, matched by rules"),
    (&["config"], "the config: plain data, read and checked"),
    (&["checkpoint", "keys", "provider"], "checkpoints; session keys; the model adapters (no store)"),
    (&["compact", "prune", "rewind", "tools"], "compaction; context pruning; rewind; the one tool registry (no MCP)"),
    (
        &["agent", "fork", "maintenance", "mcp", "provenance"],
        "the turn loop; fork; cleanup; MCP servers as a tool source; provenance over checkpoints",
    ),
    (&["chat"], "the REPL and one-shot mode around an agent"),
    (&["cli"], "the programs' edge: arguments, exit codes"),
];

/// Uses the layers allow that a rule still forbids: `(files under, module, why)`.
const NEVER: &[(&str, &str, &str)] = &[
    ("provider", "store", "provider adapters know no store"),
    ("provider", "context", "provider adapters know no store"),
    ("provider", "keys", "provider adapters know no store"),
    ("provider", "checkpoint", "provider adapters know no store"),
    ("cli/compact.rs", "chat", "glrs-compact runs its memory flush on an agent, not the REPL's chat"),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(modules, _)| modules.contains(&module))
}

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

/// The module path of a file below `src/`: `tools/fs/write.rs` is
/// `tools::fs::write`, `tools/mod.rs` is `tools`, `lib.rs` the root.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" && stem != "lib" {
            parts.push(stem.to_string());
        }
    }
    parts
}

/// What `lib.rs` re-exports at the crate root (`pub use id::SessionId;`):
/// `crate::SessionId` is a use of `id`.
fn root_exports(src: &Path) -> Vec<(String, String)> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_else(|e| panic!("read src/lib.rs: {e}"));
    let mut out = Vec::new();
    for line in scan::code_only(&lib).lines() {
        let Some(path) = line.trim().strip_prefix("pub use ").and_then(|p| p.strip_suffix(';')) else { continue };
        let Some((module, names)) = path.split_once("::") else { continue };
        let names = names.trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.trim().rsplit("::").next().unwrap_or("").to_string();
            out.push((name, module.to_string()));
        }
    }
    out
}

/// Every use the layers forbid, as `src/FILE:LINE: …`.
fn violations() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let exports = root_exports(&src);
    let mut out = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&src).unwrap_or(&path).to_path_buf();
        let module = module_path(&rel);
        let Some(top) = module.first() else { continue };
        let Some(own) = layer_of(top) else {
            out.push(format!("src/{}: module {top} is in no layer (add it to LAYERS)", rel.display()));
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        for Named { line, module: used } in named(&text, &module) {
            let used = exports.iter().find(|(name, _)| *name == used).map_or(used, |(_, m)| m.clone());
            if &used == top {
                continue;
            }
            let at = format!("src/{}:{line}", rel.display());
            match layer_of(&used) {
                None => out.push(format!("{at}: uses crate::{used}, which is in no layer")),
                Some(theirs) if theirs >= own => out.push(format!(
                    "{at}: {top} (layer {}: {}) uses crate::{used} (layer {}: {}), which is not below it",
                    own + 1,
                    LAYERS[own].1,
                    theirs + 1,
                    LAYERS[theirs].1
                )),
                Some(_) => {}
            }
            for (under, forbidden, why) in NEVER {
                if (rel.starts_with(under) || rel == Path::new(under)) && used == *forbidden {
                    out.push(format!("{at}: uses crate::{used} ({why})"));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_module_uses_only_the_layers_below_its_own() {
    let found = violations();
    assert!(found.is_empty(), "layering broken:\n  {}", found.join("\n  "));
}

/// Every top-level module of the library has a layer, and no layer names
/// a module that is not there.
#[test]
fn the_layers_name_every_module_once() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let name = name.strip_suffix(".rs").map(str::to_string).unwrap_or(name);
            (name != "lib").then_some(name)
        })
        .collect();
    modules.sort();
    modules.dedup();
    let mut listed: Vec<String> = LAYERS.iter().flat_map(|(m, _)| m.iter().map(|s| s.to_string())).collect();
    listed.sort();
    assert_eq!(listed, modules, "LAYERS and src/ differ");
}

#[test]
fn the_scanner_sees_paths_groups_supers_and_leaves_out_comments_and_strings() {
    let text = "use crate::store::Entry;\nuse crate::{cli, provider::{Message, Role}, self};\n// crate::chat in a comment\nlet x = crate::cli::run(\"crate::agent\"); /* crate::compact */\nuse super::super::tools::Tool;\nuse super::sibling;\nmod tests {\n    use super::super::mcp;\n}\npub use super::super::{hooks, config::Config};\nlet c = '\"'; let s = r#\"crate::fork\"#;\nfn f<'a>(x: &'a str) -> crate::id::SessionId { todo!() }\n";
    let found: Vec<(usize, String)> =
        named(text, &["chat".into(), "repl".into()]).into_iter().map(|n| (n.line, n.module)).collect();
    let want: Vec<(usize, String)> = [
        (1, "store"),
        (2, "cli"),
        (2, "provider"),
        (4, "cli"),
        (5, "tools"),
        (10, "hooks"),
        (10, "config"),
        (12, "id"),
    ]
    .into_iter()
    .map(|(l, m)| (l, m.to_string()))
    .collect();
    // Line 6's `super::sibling` is chat::sibling; line 8's climbs from
    // chat::repl::tests to chat only.
    assert_eq!(found, want);
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
