//! What runs a command without naming it as one (issue 31, items 8 and
//! 12): bash runs text held in a variable's value when it expands a
//! prompt (`${x@P}`, `PS4` under `set -x`), evaluates arithmetic (a value
//! `a[$(cmd)]` read by `$((x))`, `${!x}`, `${a[x]}`, `${y:x}`, `let`,
//! `[[ x -eq 1 ]]`, `test -v`, `printf -v`, `declare -n`), calls a callback
//! (`mapfile -C`), or looks a name up somewhere the line changed (`hash
//! -p`, `BASH_ALIASES`, `BASH_CMDS`). No deny rule can see such a command,
//! so with one in force the line is refused, and no allow rule covers it.
//! Judged on the parsed nodes and words, never on the line's text.

use tree_sitter::Node;

use super::command::Hidden;
use super::words::{Word, source};

/// Variables bash runs, or looks commands up in, by itself: a line that
/// sets one (or passes it to a child in its environment) runs commands
/// it does not name.
const SHELL_HOOKS: &[&str] = &[
    "BASH_ALIASES",
    "BASH_CMDS",
    "BASH_ENV",
    "BASHOPTS",
    "ENV",
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "SHELLOPTS",
];

/// `[[ … ]]` operators that evaluate both sides as arithmetic.
const ARITHMETIC_TESTS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// Builtins whose arguments name variables: a name with a subscript
/// (`a[$(cmd)]`, `a[x]`) is evaluated as arithmetic.
const NAME_TAKERS: &[&str] =
    &["declare", "export", "getopts", "local", "mapfile", "read", "readarray", "readonly", "typeset", "unset", "wait"];

/// Node kinds that name a variable (or expand one) inside arithmetic.
const NAMES_A_VARIABLE: &[&str] =
    &["variable_name", "special_variable_name", "simple_expansion", "expansion", "subscript"];

/// Whether `name` (as an assignment writes it: before `=`, `+=` or `[`)
/// is one of the variables bash acts on by itself.
pub fn is_shell_hook(name: &str) -> bool {
    let name = name.split(['=', '[', '+']).next().unwrap_or(name);
    SHELL_HOOKS.contains(&name)
}

/// What a node of the parsed line hides, if anything.
pub fn in_node(node: &Node<'_>, src: &str) -> Option<Hidden> {
    let text = || source(node, src).to_string();
    let hides = match node.kind() {
        // `${!x}` (indirection), `${x@P}` (transformation), `${x:y}`
        // (an arithmetic offset).
        "expansion" => tokens(node).any(|t| matches!(t, "!" | "@" | ":")),
        "subscript" => node.child_by_field_name("index").is_some_and(|index| !literal_index(&index, src)),
        "arithmetic_expansion" | "c_style_for_statement" => names_a_variable(node),
        "compound_statement" => tokens(node).next() == Some("((") && names_a_variable(node),
        "test_command" => evaluates_in_test(node, src),
        "declaration_command" | "unset_command" => return declaration(node, src),
        "variable_assignment" => {
            let name = node.child_by_field_name("name").map_or("", |n| source(&n, src));
            return is_shell_hook(name).then(|| Hidden::ShellHook(name.to_string()));
        }
        _ => false,
    };
    hides.then(|| Hidden::Evaluates(text()))
}

/// The anonymous tokens among a node's children (operators, brackets).
fn tokens<'t>(node: &Node<'t>) -> std::vec::IntoIter<&'t str> {
    let mut cursor = node.walk();
    let kinds: Vec<&'t str> = node.children(&mut cursor).filter(|c| !c.is_named()).map(|c| c.kind()).collect();
    kinds.into_iter()
}

/// An array index bash does not evaluate: a number, `@` or `*`.
fn literal_index(index: &Node<'_>, src: &str) -> bool {
    let text = source(index, src);
    matches!(text, "@" | "*") || (!text.is_empty() && text.chars().all(|c| c.is_ascii_digit()))
}

/// Whether arithmetic under `node` reads a variable, whose value bash
/// evaluates in turn.
fn names_a_variable(node: &Node<'_>) -> bool {
    let mut cursor = node.walk();
    let mut stack = vec![*node];
    while let Some(n) = stack.pop() {
        if n.id() != node.id() && NAMES_A_VARIABLE.contains(&n.kind()) {
            return true;
        }
        stack.extend(n.named_children(&mut cursor));
    }
    false
}

/// `[[ -v name ]]`, `[[ -R name ]]` (`[` too), or in `[[ … ]]` an
/// arithmetic comparison of anything but numbers (`[`'s compares numbers
/// only).
fn evaluates_in_test(node: &Node<'_>, src: &str) -> bool {
    let double = tokens(node).next() == Some("[[");
    let mut cursor = node.walk();
    let mut stack = vec![*node];
    while let Some(n) = stack.pop() {
        let operator = n.child_by_field_name("operator").or_else(|| n.named_child(0));
        let operator = operator.filter(|o| o.kind() == "test_operator").map(|o| source(&o, src));
        match (n.kind(), operator) {
            ("unary_expression", Some("-v" | "-R")) => return true,
            ("binary_expression", Some(op)) if double && ARITHMETIC_TESTS.contains(&op) => {
                let sides = ["left", "right"].map(|f| n.child_by_field_name(f));
                if sides.iter().any(|s| s.is_none_or(|s| s.kind() != "number")) {
                    return true;
                }
            }
            _ => {}
        }
        stack.extend(n.named_children(&mut cursor));
    }
    false
}

/// `declare`/`local`/`export`/`unset` and kin: an integer (`-i`) or
/// reference (`-n`) variable, a subscripted name, or a shell hook.
fn declaration(node: &Node<'_>, src: &str) -> Option<Hidden> {
    let mut cursor = node.walk();
    let words: Vec<Word> = node
        .named_children(&mut cursor)
        .filter(|c| c.kind() != "variable_assignment")
        .map(|c| super::words::word(&c, src))
        .collect();
    let declares = node.kind() == "declaration_command";
    names_hide(&words, declares).then(|| Hidden::Evaluates(source(node, src).to_string()))
}

/// Whether the arguments of a builtin that takes names hide a command: a
/// name with a subscript, a shell hook, a name made when it runs, and for
/// `declare` and kin (`declares`) an integer or reference attribute.
fn names_hide(args: &[Word], declares: bool) -> bool {
    args.iter().any(|w| {
        let option = w.text.starts_with('-') || w.text.starts_with('+');
        match option {
            true => declares && w.text[1..].contains(['i', 'n']),
            false => !w.fixed || w.text.contains('[') || is_shell_hook(&w.text),
        }
    })
}

/// What a simple command (its words, its program's name `base`) hides;
/// a `wrapper` (`env`, `sudo`, …) passes assignments to what it runs.
pub fn in_command(base: &str, ws: &[Word], wrapper: bool) -> Option<Hidden> {
    let args = &ws[1..];
    let options = || args.iter().take_while(|w| w.text.starts_with('-') && w.text != "--");
    let named = |what: &str| Some(Hidden::Evaluates(format!("{base} {what}")));
    match base {
        "hash" if options().any(|w| w.text.contains('p')) => Some(Hidden::Rebinds("hash -p".into())),
        "printf" if args.first().is_some_and(|w| w.text.starts_with("-v") || !w.fixed) => named("-v"),
        "mapfile" | "readarray" if options().any(|w| w.text.contains('C')) => {
            Some(Hidden::Callback(format!("{base} -C")))
        }
        "let" => named(&super::forms::render(args)),
        "test" | "[" if args.iter().any(|w| matches!(w.text.as_str(), "-v" | "-R")) => named("-v"),
        "source" | "." => match args.iter().find(|w| w.text != "--") {
            Some(file) if !file.fixed || reads_input(&file.text) => Some(Hidden::ShellInput(base.into())),
            _ => None,
        },
        taker if NAME_TAKERS.contains(&taker) && names_hide(args, false) => named("of a name"),
        _ if wrapper => args
            .iter()
            .find(|w| w.text.contains('=') && is_shell_hook(&w.text))
            .map(|w| Hidden::ShellHook(w.text.split('=').next().unwrap_or_default().to_string())),
        _ => None,
    }
}

/// A script path that is the shell's input or another open file
/// (`/dev/stdin`, `/dev/fd/0`, `/proc/self/fd/3`): what it holds is not
/// known here.
pub fn reads_input(path: &str) -> bool {
    path.starts_with("/dev/") || path.starts_with("/proc/")
}
