//! The forms of one simple command that deny rules are matched against
//! (SPEC 17): as written, with its path prefix stripped (`/bin/rm` → `rm`),
//! and the commands it runs in turn: what follows a wrapper (`command`,
//! `env`, `sudo`, `timeout`, `xargs`, …), `find -exec … ;`, the script of
//! `sh -c '…'` and `eval '…'` (parsed again). Whether it runs text as
//! commands (`eval`, `source`, `exec`, `sh -c`), which no allow rule covers,
//! and what hides its commands from deny rules (a computed name, a script
//! built at run time, a shell reading commands from its input).

use super::command::{Hidden, Scan};
use super::hidden;
use super::words::Word;

/// Commands that run their arguments as a command. Every later word may
/// start that command (options with values cannot be told apart), so each
/// is tried.
const WRAPPERS: &[&str] = &[
    "builtin",
    "busybox",
    "caffeinate",
    "chroot",
    "chrt",
    "command",
    "doas",
    "env",
    "exec",
    "firejail",
    "flock",
    "i386",
    "ionice",
    "linux32",
    "linux64",
    "ltrace",
    "nice",
    "nohup",
    "nsenter",
    "numactl",
    "parallel",
    "pkexec",
    "prlimit",
    "runuser",
    "setarch",
    "setsid",
    "stdbuf",
    "strace",
    "sudo",
    "taskset",
    "time",
    "timeout",
    "unbuffer",
    "unshare",
    "x86_64",
    "xargs",
];

/// Shells, whose `-c` script is a command line of its own.
const SHELLS: &[&str] =
    &["ash", "bash", "csh", "dash", "fish", "ksh", "mksh", "posh", "rbash", "sh", "tcsh", "yash", "zsh"];

/// How many later words of a wrapper are tried as the start of its
/// command; a longer wrapper command hides what it runs.
const WRAPPER_REACH: usize = 64;

/// What one simple command is, for the allow rules (its forms go to the
/// scan, for the deny rules).
#[derive(Debug, Default)]
pub struct Forms {
    /// It runs text as commands (`eval`, `source`, `exec`, `sh -c`): the
    /// name, for the reason no allow rule covers it.
    pub runs_text: Option<String>,
}

/// The words joined by spaces: what a `bash:GLOB` rule is matched against.
pub fn render(words: &[Word]) -> String {
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&w.text);
    }
    out
}

/// The program's name without its folder.
pub fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The forms of the command `words`, into `scan`; nested command lines
/// (`sh -c`, `eval`) are scanned too, and what is hidden noted.
pub fn forms(words: &[Word], scan: &mut Scan) -> Forms {
    let mut out = Forms::default();
    let mut visited = vec![false; words.len()];
    let mut starts = vec![0];
    while let Some(start) = starts.pop() {
        if start >= words.len() || std::mem::replace(&mut visited[start], true) {
            continue;
        }
        let ws = &words[start..];
        let head = &ws[0];
        scan.add(render(ws));
        if !head.fixed {
            scan.hide_with(|| Hidden::ComputedName(head.text.clone()));
            continue;
        }
        let base = base_name(&head.text);
        if base != head.text {
            let mut stripped = vec![Word::fixed(base)];
            stripped.extend_from_slice(&ws[1..]);
            scan.add(render(&stripped));
        }
        if let Some(hidden) = hidden::in_command(base, ws, WRAPPERS.contains(&base)) {
            scan.hide(hidden);
        }
        if WRAPPERS.contains(&base) {
            if ws.len() > WRAPPER_REACH {
                scan.hide(Hidden::TooLong(base.to_string()));
            }
            for next in start + 1..(start + WRAPPER_REACH).min(words.len()) {
                starts.push(next);
                if base == "xargs" {
                    // xargs adds the words it reads to the command.
                    scan.add(format!("{} {{}}", render(&words[next..])));
                }
            }
        }
        match base {
            "eval" | "watch" => {
                if base == "eval" {
                    out.runs_text = Some(base.into());
                }
                match ws[1..].iter().all(|w| w.fixed) {
                    true => scan.nested(&render(&ws[1..])),
                    false => scan.hide(Hidden::ComputedScript(base.into())),
                }
            }
            "source" | "." | "exec" => out.runs_text = Some(base.into()),
            "trap" => {
                out.runs_text = Some(base.into());
                trap_handler(ws, scan);
            }
            "find" => executed_by_find(ws, &["-exec", "-execdir", "-ok", "-okdir"], scan, &mut out),
            "fd" | "fdfind" => executed_by_find(ws, &["-x", "--exec", "-X", "--exec-batch"], scan, &mut out),
            "alias" if ws[1..].iter().any(|w| w.text.contains('=') || !w.fixed) => scan.hide(Hidden::Alias),
            shell if SHELLS.contains(&shell) => {
                out.runs_text = Some(format!("{shell} reading commands"));
                match shell_script(ws) {
                    Script::Text(text) => {
                        out.runs_text = Some(format!("{shell} -c"));
                        scan.nested(&text);
                    }
                    Script::Computed => scan.hide(Hidden::ComputedScript(format!("{shell} -c"))),
                    Script::Stdin => scan.hide(Hidden::ShellInput(shell.into())),
                    // A script file: what it runs is not known here.
                    Script::File => out.runs_text = None,
                }
            }
            _ => {}
        }
    }
    out
}

/// The commands `find -exec … ;` (or `fd -x …`) runs: each a command of
/// its own, with its forms.
fn executed_by_find(ws: &[Word], flags: &[&str], scan: &mut Scan, out: &mut Forms) {
    let mut i = 1;
    while i < ws.len() {
        if flags.contains(&ws[i].text.as_str()) {
            let begin = i + 1;
            let mut end = begin;
            while end < ws.len() && !matches!(ws[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            if begin < end {
                let inner = scan.deeper(|scan| forms(&ws[begin..end], scan));
                if let Some(inner) = inner {
                    out.runs_text = out.runs_text.take().or(inner.runs_text);
                }
            }
            i = end;
        }
        i += 1;
    }
}

/// The handler of `trap HANDLER SIGNAL…`, run later as a command line:
/// scanned as one when its text is known.
fn trap_handler(ws: &[Word], scan: &mut Scan) {
    let mut args = ws[1..].iter().skip_while(|w| w.fixed && matches!(w.text.as_str(), "-p" | "-l" | "-P"));
    let handler = match args.next() {
        Some(w) if w.fixed && w.text == "--" => args.next(),
        other => other,
    };
    match handler {
        Some(w) if w.fixed => scan.nested(&w.text),
        Some(_) => scan.hide(Hidden::ComputedScript("trap".into())),
        None => {}
    }
}

/// What a shell command runs.
enum Script {
    /// `-c TEXT` with the text known.
    Text(String),
    /// `-c` with text made at run time, or missing.
    Computed,
    /// Commands read from its standard input.
    Stdin,
    /// A script file.
    File,
}

/// The script of `sh [options] [-c TEXT | FILE]`.
fn shell_script(ws: &[Word]) -> Script {
    let (mut c_flag, mut s_flag) = (false, false);
    let mut i = 1;
    while i < ws.len() {
        let w = &ws[i];
        if !w.fixed {
            return Script::Computed;
        }
        let text = w.text.as_str();
        if text == "--" || text == "-" {
            i += 1;
            break;
        }
        if text.len() < 2 || !(text.starts_with('-') || text.starts_with('+')) {
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            if matches!(long, "rcfile" | "init-file") {
                i += 1;
            }
        } else {
            let letters = &text[1..];
            c_flag |= text.starts_with('-') && letters.contains('c');
            s_flag |= letters.contains('s');
            if letters.contains('o') || letters.contains('O') {
                i += 1;
            }
        }
        i += 1;
    }
    match ws.get(i) {
        _ if c_flag => match ws.get(i) {
            Some(w) if w.fixed => Script::Text(w.text.clone()),
            _ => Script::Computed,
        },
        None => Script::Stdin,
        Some(_) if s_flag => Script::Stdin,
        // `bash /dev/stdin`, `bash /dev/fd/3`: its input, not a file.
        Some(w) if hidden::reads_input(&w.text) => Script::Stdin,
        Some(_) => Script::File,
    }
}
