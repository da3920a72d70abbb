//! The brief's "Exact references" (SPEC 6): what a summary would lose,
//! gathered mechanically from the replaced messages and ranked by what
//! matters when the work goes on. First what the agent did: the files its
//! tool calls wrote or edited, the commands they ran, every other path in
//! their inputs (whatever the tool is called and however its input is
//! shaped: strings, argv lists, nested objects, patch text); then what a
//! previous brief kept; then names, paths and commands in what the user and
//! the assistant said; last, path-like tokens inside tool results.
//!
//! Within the caps everything the tool calls did is kept; when even that
//! does not fit, the most recent is, and the section ends saying how many
//! were left out and which artifact holds them all (the artifact is named
//! when the compaction lands: [`ARTIFACT_MARK`] stands for it until then).

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::plan::{Block, Tag};

/// At most this many exact references…
pub const REFERENCE_CAP: usize = 400;
/// …and this many characters of them.
pub const REFERENCE_CHARS: usize = 24_000;
/// The longest reference listed, in bytes.
const MAX_REFERENCE: usize = 1_000;
/// The heading of the section.
pub const REFERENCES_HEADING: &str = "## Exact references";
/// Stands for the artifact's file name until the compaction lands.
pub const ARTIFACT_MARK: &str = "\u{0}artifact\u{0}";

/// How much a reference says about what the agent did, most first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rank {
    /// A file a tool call wrote, edited, created or deleted.
    Changed,
    /// A command a tool call ran (its first line).
    Ran,
    /// Any other path or URL in a tool call's input (a file read, a
    /// folder searched).
    Touched,
    /// Kept by the previous brief's references.
    Earlier,
    /// A name, path, URL or command in what the user or the assistant said.
    Said,
    /// A path-like token inside a tool result.
    Incidental,
}

impl Rank {
    /// A path or command of a replaced tool call: never left out silently.
    pub fn acted(self) -> bool {
        matches!(self, Rank::Changed | Rank::Ran | Rank::Touched)
    }
}

/// Every reference found, each with its best rank and where it was last seen.
#[derive(Debug, Clone, Default)]
pub struct References {
    found: HashMap<String, (Rank, usize)>,
    seen: usize,
    /// Paths and commands of the tool calls too long to list (a one-line
    /// script of thousands of characters): counted, never dropped silently.
    too_long: usize,
}

/// What fits: the references shown, and how many of the tool calls' paths
/// and commands were left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// In rank order, and in order of appearance within a rank.
    pub items: Vec<String>,
    /// Paths and commands of the replaced tool calls that did not fit.
    pub acted_left_out: usize,
}

impl References {
    /// The references of the replaced messages.
    pub fn of(blocks: &[Block]) -> References {
        let mut refs = References::default();
        for block in blocks {
            match &block.tag {
                Tag::Brief => refs.carry_over(&block.text),
                Tag::ToolCall(tool) => refs.tool_call(tool, &block.text),
                Tag::ToolResult(tool) if tool == TASK_TOOL => {
                    refs.child_sessions(&block.text);
                    refs.prose(&block.text, Rank::Incidental);
                }
                Tag::ToolResult(_) => refs.prose(&block.text, Rank::Incidental),
                Tag::User | Tag::Assistant | Tag::Reasoning => refs.prose(&block.text, Rank::Said),
            }
        }
        refs
    }

    /// True when none were.
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// The rank of one reference, if found.
    pub fn rank_of(&self, text: &str) -> Option<Rank> {
        self.found.get(text).map(|(rank, _)| *rank)
    }

    /// Redacts every reference (a secret in a command line stays out of
    /// the brief as it stays out of the file).
    pub fn redact(&mut self, redactor: &crate::redact::Redactor) {
        let old = std::mem::take(&mut self.found);
        for (text, (rank, at)) in old {
            let text = redactor.text(&text).into_owned();
            self.note(&text, rank, at);
        }
    }

    /// A reference found in what was said: the sentence's punctuation
    /// after it is not part of it.
    fn add(&mut self, item: &str, rank: Rank) {
        let item = item.trim().trim_end_matches(['.', ',', ';', ':', '!', '?']).trim();
        if item.chars().count() < 2 || item.len() > MAX_REFERENCE {
            return;
        }
        self.seen += 1;
        let at = self.seen;
        self.note(item, rank, at);
    }

    /// A path or command of a tool call: kept verbatim (`git add .` ends
    /// in its dot), and one too long to list is counted as left out.
    fn exact(&mut self, item: &str, rank: Rank) {
        let item = item.trim();
        if item.is_empty() {
            return;
        }
        if item.len() > MAX_REFERENCE {
            if rank.acted() {
                self.too_long += 1;
            }
            return;
        }
        self.seen += 1;
        let at = self.seen;
        self.note(item, rank, at);
    }

    fn note(&mut self, item: &str, rank: Rank, at: usize) {
        let entry = self.found.entry(item.to_string()).or_insert((rank, at));
        entry.0 = entry.0.min(rank);
        entry.1 = entry.1.max(at);
    }

    /// A folded-in brief's references carry over (its note of what it left
    /// out is not a reference).
    fn carry_over(&mut self, brief: &str) {
        let Some(at) = brief.find(REFERENCES_HEADING) else { return };
        for line in brief[at..].lines().skip(1) {
            if line.starts_with("## ") {
                break;
            }
            if let Some(item) = line.strip_prefix("- ") {
                self.exact(item.trim().trim_matches('`'), Rank::Earlier);
            }
        }
    }

    /// A tool call's input: JSON as the model wrote it, or text when it
    /// was not JSON (a custom tool's raw input, such as a patch).
    fn tool_call(&mut self, tool: &str, input: &str) {
        let changes = changes_files(tool);
        match serde_json::from_str::<Value>(input) {
            Ok(value) => self.input_value(None, &value, changes),
            Err(_) => self.free_text(input, changes),
        }
    }

    fn input_value(&mut self, key: Option<&str>, value: &Value, changes: bool) {
        let kind = key.map(key_kind).unwrap_or(KeyKind::Other);
        match value {
            Value::String(s) => self.input_string(kind, s, changes),
            Value::Array(items) if kind == KeyKind::Command && items.iter().all(Value::is_string) => {
                let argv: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                self.command(&argv_command(&argv));
                // `["apply_patch", PATCH]` (Codex's shell before its own
                // tool): the files the patch names are changed.
                for word in argv.iter().skip(1).filter(|w| w.contains('\n')) {
                    self.patched_files(word);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| self.input_value(key, v, changes)),
            Value::Object(map) => map.iter().for_each(|(k, v)| self.input_value(Some(k), v, changes)),
            _ => {}
        }
    }

    fn input_string(&mut self, kind: KeyKind, s: &str, changes: bool) {
        match kind {
            KeyKind::Command => self.command(s),
            KeyKind::Path if !s.contains('\n') => self.exact(s, if changes { Rank::Changed } else { Rank::Touched }),
            KeyKind::Content => {}
            _ => self.free_text(s, changes),
        }
    }

    /// Text inside a tool call that is not a command or a named path: the
    /// files a patch names are changed; a lone path is touched.
    fn free_text(&mut self, s: &str, changes: bool) {
        let patched = self.patched_files(s);
        if !patched && !s.contains('\n') && (is_path(s) || URL.is_match(s)) {
            self.exact(s, if changes { Rank::Changed } else { Rank::Touched });
        }
    }

    /// The files a patch (or a script holding one) names, as changed; true
    /// when it named any.
    fn patched_files(&mut self, text: &str) -> bool {
        let mut patched = false;
        for c in PATCH_FILE.captures_iter(text) {
            if let Some(m) = c.get(1) {
                patched = true;
                self.exact(m.as_str().trim_start_matches("a/").trim_start_matches("b/"), Rank::Changed);
            }
        }
        patched
    }

    /// A `task` result names its child's session (SPEC 20): what the agent
    /// did, kept as the command that reads it, so the model can read the
    /// child's session after the result was summarised away.
    fn child_sessions(&mut self, result: &str) {
        for c in CHILD_SESSION.captures_iter(result) {
            self.exact(&format!("glrs-sessions show {}", &c[1]), Rank::Ran);
        }
    }

    /// A command by its first line; a script that writes a patch
    /// (`apply_patch <<'EOF'`) changes the files it names.
    fn command(&mut self, command: &str) {
        if let Some(first) = command.trim().lines().next() {
            self.exact(first, Rank::Ran);
        }
        if command.contains('\n') {
            self.patched_files(command);
        }
    }

    /// What people and tools said: backticked names, `$ ` command lines,
    /// URLs and paths.
    fn prose(&mut self, text: &str, rank: Rank) {
        for c in BACKTICKED.captures_iter(text) {
            self.add(&c[1], rank);
        }
        for c in COMMAND_LINE.captures_iter(text) {
            self.add(&c[1], rank);
        }
        let mut without_urls = text.to_string();
        for m in URL.find_iter(text) {
            self.add(m.as_str(), rank);
            without_urls = without_urls.replace(m.as_str(), " ");
        }
        for m in PATH.find_iter(&without_urls) {
            if is_path(m.as_str()) {
                self.add(m.as_str(), rank);
            }
        }
    }

    /// The references that fit in `max_chars` (and [`REFERENCE_CAP`]):
    /// by rank, the most recent first within a rank.
    pub fn choose(&self, max_chars: usize) -> Chosen {
        let mut ranked: Vec<(&String, Rank, usize)> = self.found.iter().map(|(t, (r, at))| (t, *r, *at)).collect();
        ranked.sort_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)));
        let (mut chars, mut picked, mut acted_left_out) = (0, Vec::new(), self.too_long);
        for (text, rank, at) in ranked {
            if picked.len() < REFERENCE_CAP && chars + text.len() <= max_chars {
                chars += text.len();
                picked.push((rank, at, text.clone()));
            } else if rank.acted() {
                acted_left_out += 1;
            }
        }
        picked.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        Chosen { items: picked.into_iter().map(|(_, _, t)| t).collect(), acted_left_out }
    }
}

/// The references as the brief's closing section; empty when there are none.
pub fn render(chosen: &Chosen) -> String {
    if chosen.items.is_empty() && chosen.acted_left_out == 0 {
        return String::new();
    }
    let mut out = String::from(REFERENCES_HEADING);
    for item in &chosen.items {
        if item.contains('`') {
            out.push_str(&format!("\n- {item}"));
        } else {
            out.push_str(&format!("\n- `{item}`"));
        }
    }
    if chosen.acted_left_out > 0 {
        let n = chosen.acted_left_out;
        let what = if n == 1 { "path or command" } else { "paths and commands" };
        out.push_str(&format!(
            "\n\n({n} more {what} of the replaced tool calls left out for room; the artifact {ARTIFACT_MARK} holds them all.)"
        ));
    }
    out
}

/// What a key of a tool call's input holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Command,
    Path,
    /// A file's new content or an edit's text: what it says is not a path
    /// the agent used.
    Content,
    Other,
}

fn key_kind(key: &str) -> KeyKind {
    let key = key.to_ascii_lowercase().replace(['_', '-'], "");
    match key.as_str() {
        "command" | "cmd" | "script" | "commandline" | "argv" => KeyKind::Command,
        "path" | "paths" | "file" | "files" | "filepath" | "filename" | "notebookpath" | "targetfile" | "dir"
        | "directory" | "cwd" | "workdir" | "oldpath" | "newpath" | "source" | "destination" | "from" | "to"
        | "url" | "uri" | "target" => KeyKind::Path,
        "content" | "contents" | "oldtext" | "newtext" | "oldstring" | "newstring" | "text" | "newsource" | "body" => {
            KeyKind::Content
        }
        _ => KeyKind::Other,
    }
}

/// Tools whose paths are files they change: `write`, `edit`, Claude Code's
/// `Write`/`Edit`/`MultiEdit`/`NotebookEdit`, Codex's `apply_patch`, MCP
/// tools named so.
fn changes_files(tool: &str) -> bool {
    let tool = tool.to_ascii_lowercase();
    ["write", "edit", "patch", "create", "delete", "remove", "move", "rename", "replace"]
        .iter()
        .any(|w| tool.contains(w))
}

/// An argv list as the command line it stands for: the script of a shell
/// run with `-c`/`-lc`, else the words joined (quoted where needed).
fn argv_command(argv: &[&str]) -> String {
    if let [shell, flag, script, ..] = argv {
        let shell = shell.rsplit('/').next().unwrap_or(shell);
        if matches!(shell, "bash" | "sh" | "zsh" | "dash") && flag.starts_with('-') && flag.ends_with('c') {
            return script.to_string();
        }
    }
    argv.iter()
        .map(|a| {
            if a.is_empty() || a.contains([' ', '\t', '"', '\'']) {
                format!("'{}'", a.replace('\'', r"'\''"))
            } else {
                a.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A regex from a pattern written in this file. No input reaches it, and
/// the reference tests compile every one, so a bad pattern cannot ship.
#[allow(clippy::expect_used)]
fn fixed(pattern: &'static str) -> Regex {
    Regex::new(pattern).expect("a pattern of this file compiles")
}

static BACKTICKED: LazyLock<Regex> = LazyLock::new(|| fixed(r"`([^`\n]{1,300})`"));
static URL: LazyLock<Regex> = LazyLock::new(|| fixed(r#"https?://[^\s<>()\[\]{}"'`]+"#));
static PATH: LazyLock<Regex> = LazyLock::new(|| fixed(r"(?:~|\.{1,2})?/?(?:[A-Za-z0-9_@.+-]+/)+[A-Za-z0-9_@.+-]+"));
/// The subagent tool's name (the task tool's `NAME`, in a layer above
/// compaction, so named here).
const TASK_TOOL: &str = "task";
/// How a `task` result names its child's session.
static CHILD_SESSION: LazyLock<Regex> = LazyLock::new(|| fixed(r"glrs-sessions show ([0-9a-f]{8})\b"));
static COMMAND_LINE: LazyLock<Regex> = LazyLock::new(|| fixed(r"(?m)^\s*\$ (.+)$"));
/// The files a patch names: Codex's `apply_patch` envelope and unified diffs.
static PATCH_FILE: LazyLock<Regex> = LazyLock::new(|| {
    fixed(r"(?m)^(?:\*\*\* (?:Add|Update|Delete) File: |\*\*\* Move to: |\+\+\+ |--- )(?:b/|a/)?([^\s]+)\s*$")
});

/// A path worth keeping: absolute, home- or dot-relative, or with a file
/// extension (`and/or` is not a path).
pub fn is_path(text: &str) -> bool {
    let last = text.rsplit('/').next().unwrap_or("");
    text.starts_with('/')
        || text.starts_with("~/")
        || text.starts_with("./")
        || text.starts_with("../")
        || last.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty() && (1..=8).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(tag: &str, text: &str) -> Block {
        Block { tag: tag.into(), text: text.into() }
    }

    fn kept(blocks: &[Block]) -> Vec<String> {
        References::of(blocks).choose(REFERENCE_CHARS).items
    }

    #[test]
    fn references_catch_paths_urls_commands_and_names() {
        let blocks = [
            b(
                "user",
                "the test in src/auth/redirect.ts fails, see https://example.com/issues/42. Run `npm test -- auth`",
            ),
            b("tool-call bash", r#"{"command":"cargo test --test store_durability"}"#),
            b(
                "tool-result bash",
                "error[E0599]: no method `lock_shared` in /home/ada/app/src/lock.rs\n$ git status --short",
            ),
            b("assistant", "Fixed it in ./lib/util.js and/or maybe not; `parse_ms` was wrong."),
        ];
        let refs = kept(&blocks);
        for expected in [
            "src/auth/redirect.ts",
            "https://example.com/issues/42",
            "npm test -- auth",
            "cargo test --test store_durability",
            "lock_shared",
            "/home/ada/app/src/lock.rs",
            "git status --short",
            "./lib/util.js",
            "parse_ms",
        ] {
            assert!(refs.iter().any(|r| r == expected), "{expected} missing from {refs:?}");
        }
        assert!(!refs.iter().any(|r| r == "and/or"), "{refs:?}");
        assert_eq!(refs.iter().filter(|r| *r == "src/auth/redirect.ts").count(), 1);
    }

    #[test]
    fn every_tool_input_shape_is_read_whatever_the_tool_is_called() {
        let blocks = [
            b("tool-call Bash", r#"{"command":"npm run build\necho done","description":"build it"}"#),
            b("tool-call Read", r#"{"file_path":"/repo/src/app.tsx","offset":10}"#),
            b("tool-call NotebookEdit", r#"{"notebook_path":"/repo/nb/explore.ipynb","new_source":"x = 1"}"#),
            b("tool-call shell", r#"{"command":["bash","-lc","cargo test -p core"],"workdir":"/repo"}"#),
            b("tool-call exec_command", r#"{"cmd":"rg -n TODO src"}"#),
            b(
                "tool-call local_shell",
                r#"{"action":{"command":["ls","-la","my dir"],"working_directory":"/repo/sub"}}"#,
            ),
            b(
                "tool-call apply_patch",
                "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** Add File: docs/new.md\n+hi\n*** End Patch",
            ),
            b("tool-call Edit", r#"{"file_path":"src/main.rs","old_string":"src/not_a_ref.rs","new_string":"b"}"#),
            b("tool-call mcp__fs__read_many", r#"{"paths":["a/one.txt","a/two.txt"]}"#),
        ];
        let refs = References::of(&blocks);
        let rank = |t: &str| refs.rank_of(t);
        assert_eq!(rank("npm run build"), Some(Rank::Ran), "a command by its first line");
        assert_eq!(rank("/repo/src/app.tsx"), Some(Rank::Touched));
        assert_eq!(rank("/repo/nb/explore.ipynb"), Some(Rank::Changed));
        assert_eq!(rank("cargo test -p core"), Some(Rank::Ran), "the script of bash -lc");
        assert_eq!(rank("/repo"), Some(Rank::Touched));
        assert_eq!(rank("rg -n TODO src"), Some(Rank::Ran));
        assert_eq!(rank("ls -la 'my dir'"), Some(Rank::Ran), "an argv list, quoted");
        assert_eq!(rank("/repo/sub"), Some(Rank::Touched));
        assert_eq!(rank("src/lib.rs"), Some(Rank::Changed), "a file the patch updates");
        assert_eq!(rank("docs/new.md"), Some(Rank::Changed));
        assert_eq!(rank("src/main.rs"), Some(Rank::Changed));
        assert_eq!(rank("src/not_a_ref.rs"), None, "an edit's text is not a path it used");
        assert_eq!(rank("a/one.txt"), Some(Rank::Touched));
        assert_eq!(rank("a/two.txt"), Some(Rank::Touched));
    }

    #[test]
    fn what_a_tool_call_did_is_kept_verbatim_or_counted() {
        let patch = "*** Begin Patch\n*** Update File: src/parser.rs\n@@\n-a\n+b\n*** End Patch\n";
        let long = format!("python3 -c 'print({})'", "1+".repeat(600));
        let blocks = [
            b("tool-call Bash", r#"{"command":"git add ."}"#),
            b("tool-call bash", r#"{"command":"grep -rn verbose ."}"#),
            b("tool-call LS", r#"{"path":".."}"#),
            b("tool-call shell", &serde_json::json!({"command": ["apply_patch", patch]}).to_string()),
            b(
                "tool-call exec_command",
                &serde_json::json!({"cmd": format!("apply_patch <<'EOF'\n{patch}EOF")}).to_string(),
            ),
            b("tool-call bash", &serde_json::json!({"command": long}).to_string()),
            b("user", "then run `make check`."),
        ];
        let refs = References::of(&blocks);
        assert_eq!(refs.rank_of("git add ."), Some(Rank::Ran), "its dot is part of it");
        assert_eq!(refs.rank_of("grep -rn verbose ."), Some(Rank::Ran));
        assert_eq!(refs.rank_of(".."), Some(Rank::Touched));
        assert_eq!(refs.rank_of("src/parser.rs"), Some(Rank::Changed), "a patch given as an argv word or a heredoc");
        assert_eq!(refs.rank_of("apply_patch <<'EOF'"), Some(Rank::Ran));
        assert_eq!(refs.rank_of("make check"), Some(Rank::Said), "what was said loses its full stop");
        let chosen = refs.choose(REFERENCE_CHARS);
        assert_eq!(chosen.acted_left_out, 1, "the command too long to list is counted");
        assert!(render(&chosen).contains("1 more path or command of the replaced tool calls left out"));
    }

    #[test]
    fn a_task_result_keeps_its_child_session_as_the_command_that_reads_it() {
        let blocks = [
            b("tool-call task", r#"{"description":"review","prompt":"review the diff"}"#),
            b(
                "tool-result task",
                "no problems\n\n[subagent \"review\": session 0badcafe (glrs-sessions show 0badcafe has all it did)]",
            ),
            b("tool-result bash", "glrs-sessions show 1234abcd"),
        ];
        let refs = References::of(&blocks);
        assert_eq!(refs.rank_of("glrs-sessions show 0badcafe"), Some(Rank::Ran));
        assert_eq!(refs.rank_of("glrs-sessions show 1234abcd"), None, "only a task result names a child");
        let chosen = References::of(&blocks).choose(REFERENCE_CHARS);
        assert!(chosen.items.iter().any(|i| i == "glrs-sessions show 0badcafe"), "{chosen:?}");
    }

    #[test]
    fn what_the_agent_did_comes_first_and_results_never_crowd_it_out() {
        // Early tool results full of path-like tokens, then the commands.
        let noise: String = (0..3_000).map(|i| format!("/usr/lib/pkg{i}/file{i}.so\n")).collect();
        let mut blocks = vec![b("tool-result bash", &noise), b("user", "look at `the_config` in cfg/app.toml")];
        for i in 0..150 {
            blocks.push(b("tool-call bash", &format!(r#"{{"command":"make target{i}"}}"#)));
        }
        blocks.push(b("tool-call write", r#"{"path":"out/report.md","content":"x"}"#));
        let chosen = References::of(&blocks).choose(REFERENCE_CHARS);
        for i in 0..150 {
            assert!(chosen.items.contains(&format!("make target{i}")), "make target{i} missing");
        }
        assert_eq!(chosen.acted_left_out, 0);
        assert_eq!(chosen.items[0], "out/report.md", "a file written first");
        assert!(chosen.items.contains(&"the_config".to_string()) && chosen.items.contains(&"cfg/app.toml".to_string()));
        let said = chosen.items.iter().position(|i| i == "the_config").unwrap();
        let incidental = chosen.items.iter().position(|i| i.starts_with("/usr/lib/")).unwrap();
        assert!(said < incidental, "the conversation above tool results");
    }

    #[test]
    fn when_even_the_tool_calls_do_not_fit_the_newest_are_kept_and_the_rest_counted() {
        let blocks: Vec<Block> = (0..1_000)
            .map(|i| b("tool-call bash", &format!(r#"{{"command":"./run-step --number {i:04}"}}"#)))
            .collect();
        let chosen = References::of(&blocks).choose(REFERENCE_CHARS);
        assert_eq!(chosen.items.len(), REFERENCE_CAP);
        assert_eq!(chosen.acted_left_out, 1_000 - REFERENCE_CAP);
        assert_eq!(chosen.items.last().map(String::as_str), Some("./run-step --number 0999"), "the newest kept");
        assert!(!chosen.items.iter().any(|i| i == "./run-step --number 0000"), "the oldest left out");
        let text = render(&chosen);
        assert!(text.ends_with(&format!(
            "({} more paths and commands of the replaced tool calls left out for room; the artifact {ARTIFACT_MARK} holds them all.)",
            1_000 - REFERENCE_CAP
        )));
        // Fewer characters: fewer kept, more counted.
        let small = References::of(&blocks).choose(1_000);
        assert!(small.items.iter().map(String::len).sum::<usize>() <= 1_000);
        assert_eq!(small.items.len() + small.acted_left_out, 1_000);
    }

    #[test]
    fn references_of_a_previous_brief_carry_over_and_its_note_does_not() {
        let prev = "old label\n## Goal\nx\n\n## Exact references\n- `src/old.rs`\n- `make check`\n\n(3 more paths and commands of the replaced tool calls left out for room; the artifact `a.md` holds them all.)";
        let refs = kept(&[b("brief", prev), b("user", "now `new_thing`")]);
        assert_eq!(refs, ["src/old.rs", "make check", "new_thing"]);
        let many: String = (0..500).map(|i| format!("`name_{i}` ")).collect();
        assert_eq!(kept(&[b("user", &many)]).len(), REFERENCE_CAP);
    }
}
