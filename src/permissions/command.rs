//! Command rules (SPEC 17): a `bash` command line is parsed with
//! tree-sitter-bash (the grammar editors and other agents use for bash)
//! and judged command by command, never as one string.
//!
//! - An allow rule covers a line only when the line is simple commands
//!   joined by `;`, `&&`, `||`, `|` and newlines, each of which it matches,
//!   and nothing in it can run what the rule did not see: no `$(…)`,
//!   backticks or `<(…)`, no `eval`/`source`/`exec`/`sh -c`, no background
//!   `&`, no `if`/`for`/function, redirections only into the writable roots
//!   or `/dev/null`, no `$_` and nothing that runs a variable's value
//!   ([`super::hidden`]). Anything else is [`Unjudgeable`].
//! - A deny rule is matched against every command anywhere in the line
//!   ([`CommandLine::everywhere`]): inside substitutions, `sh -c '…'`,
//!   `xargs` and `find -exec`, as written and with its path prefix
//!   stripped (`\rm`, `/bin/rm`, `command rm` are all `rm`). What no deny
//!   rule can see into (a computed command name, a script built at run
//!   time, a line that does not parse) is [`Hidden`].
//!
//! A line that tree-sitter and bash would read differently (a `$'…'`
//! string or a here-document that bash ends elsewhere) is treated as one
//! that does not parse.

use std::fmt;
use std::path::{Path, PathBuf};

use tree_sitter::{Node, Tree, TreeCursor};

use super::forms::{self, base_name, render};
use super::hidden;
use super::words::{self, Word, source};

/// How deep `sh -c 'sh -c …'` and `find -exec` nest before the judge
/// gives up (and says the line hides what it runs).
const MAX_DEPTH: usize = 8;

/// The most bytes of forms kept for the deny rules; a line that needs
/// more hides what it runs (the memory of judging stays bounded).
const MAX_FORMS_BYTES: usize = 8 << 20;

/// Why no allow rule can cover a line: it is asked about (or denied
/// without a terminal) whatever the rules say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unjudgeable {
    /// The line does not parse as bash.
    NotParsed,
    /// `$(…)` or `` `…` ``.
    Substitution,
    /// `<(…)` or `>(…)`.
    ProcessSubstitution,
    /// A command sent to the background with `&`.
    Background,
    /// `eval`, `source`, `exec`, `sh -c`: text run as commands.
    RunsText(String),
    /// A compound command (`if`, `for`, a function, a subshell, `[[ … ]]`).
    Construct(String),
    /// A command whose name is made at run time (`$cmd`, `r*`).
    ComputedName(String),
    /// A redirection that writes outside the writable roots.
    Redirect(String),
    /// `$_`: the last word of the command before, which the rule judged
    /// as that command's, not as this one's.
    LastArgument,
    /// Something that runs commands without naming them ([`Hidden`]).
    Hides(Hidden),
    /// No command at all.
    Empty,
}

impl fmt::Display for Unjudgeable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unjudgeable::NotParsed => write!(f, "the line does not parse as bash"),
            Unjudgeable::Substitution => write!(f, "it has a command substitution ($(…) or backticks)"),
            Unjudgeable::ProcessSubstitution => write!(f, "it has a process substitution (<(…) or >(…))"),
            Unjudgeable::Background => write!(f, "it starts a command in the background (&)"),
            Unjudgeable::RunsText(what) => write!(f, "it runs text as commands ({what})"),
            Unjudgeable::Construct(kind) => write!(f, "it has a compound command ({})", kind.replace('_', " ")),
            Unjudgeable::ComputedName(name) => write!(f, "the command name {name} is made when it runs"),
            Unjudgeable::Redirect(target) => write!(f, "it writes to {target}, outside the writable roots"),
            Unjudgeable::LastArgument => write!(f, "it uses $_, the last word of the command before"),
            Unjudgeable::Hides(hidden) => write!(f, "{hidden}"),
            Unjudgeable::Empty => write!(f, "it runs no command"),
        }
    }
}

/// What keeps deny rules from seeing every command a line runs. With a
/// `bash:GLOB` deny rule in force, such a line is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hidden {
    /// The line does not parse as bash.
    NotParsed,
    /// A command name made at run time (`$cmd`, `r$x`, `/bin/r?`).
    ComputedName(String),
    /// `eval`/`sh -c` of text made at run time.
    ComputedScript(String),
    /// A shell reading commands from its input (`… | sh`).
    ShellInput(String),
    /// An alias definition (it renames what later lines run).
    Alias,
    /// Too many words after a wrapper (`env`, `xargs`, …).
    TooLong(String),
    /// Nesting deeper than the judge follows.
    TooDeep,
    /// An expansion or builtin that evaluates a value as code: a prompt
    /// transformation (`${x@P}`), an indirection, arithmetic reading a
    /// variable, `let`, `printf -v`, `test -v`, `declare -n`.
    Evaluates(String),
    /// A variable bash acts on by itself (`PS4`, `BASH_ALIASES`, …).
    ShellHook(String),
    /// `hash -p`: a command name made to run another program.
    Rebinds(String),
    /// A command given as text to call back (`mapfile -C`).
    Callback(String),
}

impl fmt::Display for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hidden::NotParsed => write!(f, "the line does not parse as bash"),
            Hidden::ComputedName(name) => write!(f, "the command name {name} is made when it runs"),
            Hidden::ComputedScript(what) => write!(f, "{what} runs text made when it runs"),
            Hidden::ShellInput(shell) => write!(f, "{shell} reads its commands from its input"),
            Hidden::Alias => write!(f, "it defines an alias"),
            Hidden::TooLong(wrapper) => write!(f, "{wrapper} has too many words to tell which command it runs"),
            Hidden::TooDeep => write!(f, "it nests commands deeper than {MAX_DEPTH} levels"),
            Hidden::Evaluates(what) => write!(f, "{what} can run commands held in a variable's value"),
            Hidden::ShellHook(name) => write!(f, "it sets {name}, which makes bash run or look up commands by itself"),
            Hidden::Rebinds(what) => write!(f, "{what} makes a command name run another program"),
            Hidden::Callback(what) => write!(f, "{what} runs a command given as text"),
        }
    }
}

/// A command line as the rules see it.
#[derive(Debug, Clone)]
pub struct CommandLine {
    /// The simple commands an allow rule must each match (assignments
    /// kept, as written: `RUST_LOG=debug cargo test`), or why no allow
    /// rule can cover the line.
    pub allowable: Result<Vec<String>, Unjudgeable>,
    /// Every form of every command anywhere in the line, for deny rules.
    pub everywhere: Vec<String>,
    /// What deny rules cannot see into, if anything.
    pub hidden: Option<Hidden>,
}

/// Read `line` as `bash -c` would, run in `cwd`; redirections may write
/// only where `roots` allows.
pub fn read(line: &str, cwd: &Path, roots: &WritableRoots) -> CommandLine {
    let mut scan = Scan::default();
    let Some(tree) = parse(line) else {
        scan.add(line.to_string());
        return CommandLine {
            allowable: Err(Unjudgeable::NotParsed),
            everywhere: scan.strings,
            hidden: Some(Hidden::NotParsed),
        };
    };
    let root = tree.root_node();
    let allowable = if trusted(root, line) { allowable(root, line, cwd, roots) } else { Err(Unjudgeable::NotParsed) };
    if allowable == Err(Unjudgeable::NotParsed) {
        // Judged as one string, and by every command tree-sitter recovered.
        scan.add(line.to_string());
        scan.hide(Hidden::NotParsed);
    }
    walk(root, line, &mut scan);
    // What deny rules cannot see, no allow rule covers.
    let allowable = match (allowable, &scan.hidden) {
        (Ok(_), Some(hidden)) => Err(Unjudgeable::Hides(hidden.clone())),
        (allowable, _) => allowable,
    };
    CommandLine { allowable, everywhere: scan.strings, hidden: scan.hidden }
}

fn parse(text: &str) -> Option<Tree> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
    parser.parse(text, None)
}

/// No syntax error, and no token that bash would end elsewhere.
fn trusted(root: Node<'_>, src: &str) -> bool {
    !root.has_error()
        && Descendants::of(root).all(|node| match node.kind() {
            "ansi_c_string" => words::ansi_c_end(source(&node, src)) == Some(node.byte_range().len()),
            "heredoc_redirect" => words::heredoc_agrees(&node, src),
            _ => true,
        })
}

/// Every node under `root` (itself included), depth first, without
/// recursion: a line nested ten thousand deep cannot overflow the stack.
struct Descendants<'t> {
    cursor: TreeCursor<'t>,
    done: bool,
}

impl<'t> Descendants<'t> {
    fn of(root: Node<'t>) -> Descendants<'t> {
        Descendants { cursor: root.walk(), done: false }
    }
}

impl<'t> Iterator for Descendants<'t> {
    type Item = Node<'t>;
    fn next(&mut self) -> Option<Node<'t>> {
        if self.done {
            return None;
        }
        let node = self.cursor.node();
        if !self.cursor.goto_first_child() {
            while !self.cursor.goto_next_sibling() {
                if !self.cursor.goto_parent() {
                    self.done = true;
                    break;
                }
            }
        }
        Some(node)
    }
}

/// The deny side's scan: every command's forms, and what is hidden.
#[derive(Debug, Default)]
pub struct Scan {
    strings: Vec<String>,
    bytes: usize,
    hidden: Option<Hidden>,
    depth: usize,
}

impl Scan {
    /// Note what deny rules cannot see (the first reason is kept).
    pub fn hide(&mut self, hidden: Hidden) {
        self.hidden.get_or_insert(hidden);
    }

    /// [`Scan::hide`], making the reason only when it is the first.
    pub fn hide_with(&mut self, hidden: impl FnOnce() -> Hidden) {
        self.hidden.get_or_insert_with(hidden);
    }

    /// A form deny rules are matched against.
    pub fn add(&mut self, form: String) {
        self.bytes += form.len();
        if self.bytes > MAX_FORMS_BYTES {
            self.hide(Hidden::TooLong("the line".into()));
        } else {
            self.strings.push(form);
        }
    }

    /// A command line inside the line (`sh -c '…'`, `eval`): judged as one
    /// string and command by command.
    pub fn nested(&mut self, text: &str) {
        self.add(text.to_string());
        self.deeper(|scan| match parse(text) {
            Some(tree) => {
                if !trusted(tree.root_node(), text) {
                    scan.hide(Hidden::NotParsed);
                }
                walk(tree.root_node(), text, scan);
            }
            None => scan.hide(Hidden::NotParsed),
        });
    }

    /// Run `f` one level deeper, unless that is too deep.
    pub fn deeper<T>(&mut self, f: impl FnOnce(&mut Scan) -> T) -> Option<T> {
        if self.depth >= MAX_DEPTH {
            self.hide(Hidden::TooDeep);
            return None;
        }
        self.depth += 1;
        let out = f(self);
        self.depth -= 1;
        Some(out)
    }
}

/// Every command under `root`, wherever it is, into `scan`.
fn walk(root: Node<'_>, src: &str, scan: &mut Scan) {
    let mut outer = Redirects::default();
    for node in Descendants::of(root) {
        if let Some(hidden) = hidden::in_node(&node, src) {
            scan.hide(hidden);
        }
        match node.kind() {
            "redirected_statement" => outer.note(&node),
            "command" => {
                forms::forms(&command_words(&node, src, &outer), scan);
            }
            "declaration_command" | "unset_command" => scan.add(one_spaced(source(&node, src))),
            // Bash reads `` \` `` inside backticks as a nested substitution;
            // tree-sitter as a plain character.
            "command_substitution" if source(&node, src).starts_with('`') && source(&node, src).contains("\\`") => {
                if let Some(body) = words::backtick_body(source(&node, src)) {
                    scan.nested(&body);
                }
            }
            _ => {}
        }
    }
}

/// The redirections of each `redirected_statement` whose body is a
/// command, by the command's node id: they may hold its last words.
#[derive(Default)]
struct Redirects<'t>(std::collections::HashMap<usize, Vec<Node<'t>>>);

impl<'t> Redirects<'t> {
    fn note(&mut self, statement: &Node<'t>) {
        if let Some(body) = statement.child_by_field_name("body") {
            self.0.insert(body.id(), fields_nodes(statement, &["redirect"]));
        }
    }
}

/// The name and arguments of a `command` node (not its assignments or
/// redirections). tree-sitter reads words after a final redirection as
/// more of its targets (`rm > /dev/null VICTIM`) or as arguments of a
/// here-document (`rm <<EOF VICTIM`); bash gives them to the command.
fn command_words(node: &Node<'_>, src: &str, outer: &Redirects<'_>) -> Vec<Word> {
    let mut out = fields(node, src, &["name", "argument"]);
    let mut redirects = fields_nodes(node, &["redirect"]);
    redirects.extend(outer.0.get(&node.id()).into_iter().flatten().copied());
    for redirect in redirects {
        match redirect.kind() {
            "file_redirect" => out.extend(fields(&redirect, src, &["destination"]).into_iter().skip(1)),
            "heredoc_redirect" => out.extend(fields(&redirect, src, &["argument"])),
            _ => {}
        }
    }
    out
}

/// The children of `node` in these fields, in order.
fn fields_nodes<'t>(node: &Node<'t>, names: &[&str]) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    let mut out = Vec::new();
    for (i, child) in node.children(&mut cursor).enumerate() {
        let field = u32::try_from(i).ok().and_then(|i| node.field_name_for_child(i));
        if field.is_some_and(|f| names.contains(&f)) {
            out.push(child);
        }
    }
    out
}

/// The words in these fields of `node`.
fn fields(node: &Node<'_>, src: &str, names: &[&str]) -> Vec<Word> {
    fields_nodes(node, names).iter().map(|n| words::word(n, src)).collect()
}

/// Whitespace runs as one space.
fn one_spaced(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Nodes that join simple commands (their children are judged in turn).
const JOINERS: &[&str] =
    &["program", "list", "pipeline", "negated_command", "redirected_statement", "heredoc_redirect"];

/// What a simple command's words may be made of.
const WORD_PARTS: &[&str] = &[
    "command_name",
    "word",
    "string",
    "string_content",
    "raw_string",
    "ansi_c_string",
    "translated_string",
    "concatenation",
    "number",
    "simple_expansion",
    "expansion",
    "variable_name",
    "special_variable_name",
    "variable_assignment",
    "variable_assignments",
    "array",
    "arithmetic_expansion",
    "binary_expression",
    "unary_expression",
    "parenthesized_expression",
    "ternary_expression",
    "postfix_expression",
    "subscript",
    "brace_expression",
    "regex",
    "file_redirect",
    "file_descriptor",
    "herestring_redirect",
    "comment",
];

/// The allow side: the simple commands of the line, or why it cannot be
/// judged.
fn allowable(root: Node<'_>, src: &str, cwd: &Path, roots: &WritableRoots) -> Result<Vec<String>, Unjudgeable> {
    let mut commands = Vec::new();
    let mut heads = Vec::new();
    let mut relative_writes = false;
    let mut outer = Redirects::default();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            kind if JOINERS.contains(&kind) => {
                if kind == "redirected_statement" {
                    outer.note(&node);
                }
                joined_parts(node, src, &mut stack)?;
            }
            "command" => {
                only_word_parts(node, src)?;
                let (text, head) = simple_command(&node, src, &outer)?;
                commands.push(text);
                heads.push(head);
            }
            "variable_assignment" | "variable_assignments" | "declaration_command" | "unset_command" => {
                only_word_parts(node, src)?;
                commands.push(one_spaced(source(&node, src)));
            }
            "file_redirect" => relative_writes |= redirect(&node, src, cwd, roots)?,
            "herestring_redirect" => only_word_parts(node, src)?,
            "heredoc_body" => only_word_parts(node, src)?,
            "comment" | "heredoc_start" | "heredoc_end" | "heredoc_content" | "file_descriptor" => {}
            "command_substitution" => return Err(Unjudgeable::Substitution),
            "process_substitution" => return Err(Unjudgeable::ProcessSubstitution),
            other => return Err(Unjudgeable::Construct(other.to_string())),
        }
    }
    // A relative path after `cd` is not where it looks.
    if relative_writes && heads.iter().any(|h| matches!(h.as_str(), "cd" | "pushd" | "popd")) {
        return Err(Unjudgeable::Redirect("a relative path after cd".into()));
    }
    if commands.is_empty() { Err(Unjudgeable::Empty) } else { Ok(commands) }
}

/// Push the children of a joining node; only `;`, `&&`, `||`, `|` join.
fn joined_parts<'t>(node: Node<'t>, src: &str, stack: &mut Vec<Node<'t>>) -> Result<(), Unjudgeable> {
    let arguments = fields_nodes(&node, &["argument"]);
    let mut cursor = node.walk();
    // Pushed last first, so the commands come off the stack in order.
    let mut parts = Vec::new();
    for child in node.children(&mut cursor) {
        if arguments.contains(&child) {
            // A word of the command (see `command_words`).
            word_part(child, src)?;
            only_word_parts(child, src)?;
            continue;
        }
        if child.is_named() {
            parts.push(child);
            continue;
        }
        match child.kind() {
            "&" => return Err(Unjudgeable::Background),
            ";" | "&&" | "||" | "|" | "|&" | "!" | "<<" | "<<-" => {}
            other => return Err(Unjudgeable::Construct(other.to_string())),
        }
    }
    stack.extend(parts.into_iter().rev());
    Ok(())
}

/// Every named node under a command is a part of a word, an assignment or
/// a redirection.
fn only_word_parts(node: Node<'_>, src: &str) -> Result<(), Unjudgeable> {
    Descendants::of(node).skip(1).filter(|n| n.is_named()).try_for_each(|n| word_part(n, src))
}

/// A node that may be part of a simple command's words, or why not: a
/// word an allow rule covers is text, or a variable's value used as text
/// (never `$_`, and nothing that evaluates a value: [`hidden::in_node`]).
fn word_part(node: Node<'_>, src: &str) -> Result<(), Unjudgeable> {
    if let Some(hidden) = hidden::in_node(&node, src) {
        return Err(Unjudgeable::Hides(hidden));
    }
    match node.kind() {
        "special_variable_name" if source(&node, src) == "_" => Err(Unjudgeable::LastArgument),
        kind if WORD_PARTS.contains(&kind) || kind == "heredoc_content" => Ok(()),
        "command_substitution" => Err(Unjudgeable::Substitution),
        "process_substitution" => Err(Unjudgeable::ProcessSubstitution),
        other => Err(Unjudgeable::Construct(other.to_string())),
    }
}

/// A simple command as allow rules match it, and its program's name.
fn simple_command(node: &Node<'_>, src: &str, outer: &Redirects<'_>) -> Result<(String, String), Unjudgeable> {
    let words = command_words(node, src, outer);
    let Some(head) = words.first() else { return Err(Unjudgeable::Empty) };
    if !head.fixed {
        return Err(Unjudgeable::ComputedName(head.text.clone()));
    }
    let found = forms::forms(&words, &mut Scan::default());
    if let Some(what) = found.runs_text {
        return Err(Unjudgeable::RunsText(what));
    }
    let mut cursor = node.walk();
    let mut parts: Vec<String> = node
        .children(&mut cursor)
        .filter(|c| c.kind() == "variable_assignment")
        .map(|c| source(&c, src).to_string())
        .collect();
    parts.push(render(&words));
    Ok((parts.join(" "), base_name(&head.text).to_string()))
}

/// Judge a file redirection: input and descriptor copies are fine, output
/// only into the writable roots. True when it writes to a relative path.
fn redirect(node: &Node<'_>, src: &str, cwd: &Path, roots: &WritableRoots) -> Result<bool, Unjudgeable> {
    only_word_parts(*node, src)?;
    let mut cursor = node.walk();
    let operator = node.children(&mut cursor).find(|c| !c.is_named()).map(|c| c.kind()).unwrap_or("");
    let Some(target) = node.child_by_field_name("destination") else { return Ok(false) };
    let target = words::word(&target, src);
    let copies_descriptor = matches!(operator, ">&" | "<&" | ">&-" | "<&-")
        && (target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit()));
    if matches!(operator, "<" | "<&" | "<&-") || copies_descriptor {
        return Ok(false);
    }
    if !target.fixed || !roots.allows(cwd, &target.text) {
        return Err(Unjudgeable::Redirect(target.text));
    }
    Ok(!target.text.starts_with('/') && !target.text.starts_with('~'))
}

/// Where a redirection in an allowed line may write: `/dev/null` (and
/// `/dev/stdout`, `/dev/stderr`), and inside the writable roots, never into
/// `.git` or `.glrs` or an `AGENTS.md` file.
#[derive(Debug, Clone, Default)]
pub struct WritableRoots {
    roots: Vec<PathBuf>,
}

impl WritableRoots {
    /// No root: only `/dev/null` and the standard streams.
    pub fn none() -> WritableRoots {
        WritableRoots::default()
    }

    /// The writable roots of SPEC 17 for a session in `cwd`: the cwd (the
    /// repository root when it is in a git work tree) and `$TMPDIR` (else
    /// `/tmp`).
    pub fn for_session(cwd: &Path) -> WritableRoots {
        let top = cwd.ancestors().find(|dir| dir.join(".git").exists()).unwrap_or(cwd);
        let temp = std::env::var_os("TMPDIR").map(PathBuf::from).filter(|p| p.is_absolute());
        let temp = temp.unwrap_or_else(|| PathBuf::from("/tmp"));
        WritableRoots { roots: [top.to_path_buf(), temp].into_iter().map(|r| r.canonicalize().unwrap_or(r)).collect() }
    }

    /// Whether a redirection may write to `target` (as written, relative
    /// to `cwd`): resolved through symlinks that exist, then inside a
    /// root and not in a protected folder.
    pub fn allows(&self, cwd: &Path, target: &str) -> bool {
        if matches!(target, "/dev/null" | "/dev/stdout" | "/dev/stderr") {
            return true;
        }
        let path = match target.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => match dirs::home_dir() {
                Some(home) => home.join(rest.trim_start_matches('/')),
                None => return false,
            },
            Some(_) => return false,
            None => cwd.join(target),
        };
        let Some(resolved) = resolve(&path) else { return false };
        self.roots.iter().any(|root| {
            resolved.strip_prefix(root).is_ok_and(|inside| {
                !inside.components().any(|c| matches!(c.as_os_str().to_str(), Some(".git" | ".glrs")))
                    && inside.file_name().is_none_or(|name| name != "AGENTS.md")
            })
        })
    }
}

/// `path` with symlinks resolved as far as it exists; `None` when what
/// does not exist yet climbs out with `..`.
fn resolve(path: &Path) -> Option<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Some(out);
        }
        // `None` for a path ending in `..`.
        rest.push(existing.file_name()?.to_os_string());
        if !existing.pop() {
            return None;
        }
    }
}
