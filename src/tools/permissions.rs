//! Permissions (SPEC 14): whether a tool call may run. Rules are `TOOL` or
//! `TOOL:GLOB` (`bash:git *`, `edit:src/**`, `mcp__fs__*`), the glob matched
//! against the call's subject (the `bash` command, the file path; `*`
//! matches any characters, `/` included). `permissions.deny` wins over
//! everything, `--allow-all` included; then `permissions.allow`, `--allow`
//! and what the user allowed for the session (`a`); then `--allow-all`;
//! else a tool that needs permission asks, and without a terminal to ask
//! it is denied with a result naming the rule that would allow it.

use anyhow::{Result, bail};
use globset::{GlobBuilder, GlobMatcher};

/// One `TOOL` or `TOOL:GLOB` rule.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: GlobMatcher,
    subject: Option<GlobMatcher>,
}

fn glob(text: &str) -> Result<GlobMatcher> {
    Ok(GlobBuilder::new(text).literal_separator(false).backslash_escape(true).build()?.compile_matcher())
}

impl Rule {
    /// Read a `TOOL` or `TOOL:GLOB` rule.
    pub fn parse(text: &str) -> Result<Rule> {
        let (tool, subject) = match text.split_once(':') {
            Some((tool, subject)) => (tool, Some(subject)),
            None => (text, None),
        };
        if tool.trim().is_empty() {
            bail!("rule {text:?} names no tool (write TOOL or TOOL:GLOB, e.g. bash:git *)");
        }
        let tool_glob = glob(tool).map_err(|e| anyhow::anyhow!("rule {text:?}: {e}"))?;
        let subject = match subject {
            // `~/…` and `$HOME/…` are the home folder (issue 20).
            Some(s) => Some(glob(&super::guard::expand_home(s)).map_err(|e| anyhow::anyhow!("rule {text:?}: {e}"))?),
            None => None,
        };
        Ok(Rule { text: text.to_string(), tool: tool_glob, subject })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// A `TOOL` rule matches every call of the tool; a `TOOL:GLOB` rule only
    /// calls whose subject matches.
    pub fn matches(&self, tool: &str, subject: Option<&str>) -> bool {
        self.tool.is_match(tool)
            && match (&self.subject, subject) {
                (None, _) => true,
                (Some(glob), Some(s)) => glob.is_match(s),
                (Some(_), None) => false,
            }
    }
}

/// What the permission check says about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Denied by a rule; the text is the result the model reads.
    Deny(String),
    /// The user must be asked.
    Ask,
}

/// How the user answered a permission prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// `y`: this call.
    Once,
    /// `a`: this tool (for `bash`, this exact command) for the session.
    Always,
    /// `n`, or other text: the reason given to the model.
    Deny(Option<String>),
    /// Esc or Ctrl-C at the prompt.
    Interrupted,
    /// There is no terminal to ask (one-shot mode).
    Cannot,
}

/// What a permission prompt shows.
#[derive(Debug, Clone)]
pub struct Question<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The call in one line.
    pub summary: String,
    /// A short diff for `write`/`edit`.
    pub preview: Option<String>,
    /// What `TOOL:GLOB` rules match (the command, the path).
    pub subject: Option<&'a str>,
}

/// An answer given at once, or one to wait for: the REPL's prompt is
/// answered by its key reader, through a oneshot channel (the call waits
/// for it beside the turn's cancel, so Esc and signals get through; a
/// dropped sender is taken for Esc).
pub enum Asked {
    /// Known now (one-shot mode cannot ask).
    Now(Answer),
    /// The prompt is shown; the answer comes by this channel.
    Later(tokio::sync::oneshot::Receiver<Answer>),
}

/// Asks the user; the REPL does, one-shot mode cannot.
pub trait Asker {
    /// Ask; the answer is given or awaited by the caller.
    fn ask(&mut self, question: &Question<'_>) -> Asked;
    /// Whether anyone can be asked (false in one-shot mode): when not, the
    /// call is denied before anything is built for a prompt.
    fn can_ask(&self) -> bool {
        true
    }
}

/// Parse an answer typed at the prompt.
pub fn parse_answer(line: &str) -> Answer {
    match line.trim() {
        "y" | "Y" | "yes" => Answer::Once,
        "a" | "A" | "always" => Answer::Always,
        "" | "n" | "N" | "no" => Answer::Deny(None),
        other => Answer::Deny(Some(other.to_string())),
    }
}

/// A session allowance from an `a` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    Tool(String),
    /// `bash` and this exact command.
    Exact(String, String),
}

/// The permission state of one chat.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    allow_all: bool,
    session: Vec<Allowed>,
}

impl Permissions {
    /// From `permissions.allow`/`deny` in the config and the command line.
    /// A bad rule is an error naming where it was written.
    pub fn new(
        config_allow: &[String],
        config_deny: &[String],
        flags: &[String],
        allow_all: bool,
    ) -> Result<Permissions> {
        let mut p = Permissions { allow_all, ..Permissions::default() };
        for (i, text) in config_allow.iter().enumerate() {
            p.allow.push(Rule::parse(text).map_err(|e| anyhow::anyhow!("permissions.allow[{i}]: {e}"))?);
        }
        for (i, text) in config_deny.iter().enumerate() {
            p.deny.push(Rule::parse(text).map_err(|e| anyhow::anyhow!("permissions.deny[{i}]: {e}"))?);
        }
        for text in flags {
            p.allow.push(Rule::parse(text).map_err(|e| anyhow::anyhow!("--allow {text:?}: {e}"))?);
        }
        Ok(p)
    }

    /// The rules without what was allowed for this session (`a`): what a
    /// new or resumed session in the same chat starts with.
    pub fn without_session(&self) -> Permissions {
        Permissions { session: Vec::new(), ..self.clone() }
    }

    /// The `permissions.deny` rules, which also hold for every file a tool
    /// opens (`guard::ReadGuard`).
    pub fn deny_rules(&self) -> &[Rule] {
        &self.deny
    }

    /// Everything is allowed (tests of other parts, `--allow-all`).
    pub fn allow_all() -> Permissions {
        Permissions { allow_all: true, ..Permissions::default() }
    }

    /// Whether a call of `tool` on `subject` runs, is refused, or needs asking: deny rules first, then allow rules and earlier answers.
    pub fn decide(&self, tool: &str, needs_permission: bool, subject: Option<&str>) -> Decision {
        if let Some(rule) = self.deny.iter().find(|r| r.matches(tool, subject)) {
            return Decision::Deny(format!(
                "denied: the rule {:?} in permissions.deny (the config) forbids this call; it was not run",
                rule.text()
            ));
        }
        if !needs_permission || self.allow_all || self.allow.iter().any(|r| r.matches(tool, subject)) {
            return Decision::Allow;
        }
        let session = self.session.iter().any(|a| match a {
            Allowed::Tool(t) => t == tool,
            Allowed::Exact(t, s) => t == tool && subject == Some(s.as_str()),
        });
        if session { Decision::Allow } else { Decision::Ask }
    }

    /// `a` at the prompt: the tool for the rest of the session; for `bash`,
    /// only this exact command.
    pub fn allow_for_session(&mut self, tool: &str, subject: Option<&str>) {
        let allowed = match (tool, subject) {
            ("bash", Some(command)) => Allowed::Exact(tool.into(), command.into()),
            _ => Allowed::Tool(tool.into()),
        };
        self.session.push(allowed);
    }
}

/// Quote for a shell: the rule as the user would type it after `--allow`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Escape glob characters so a rule matches this text only.
pub fn escape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The result of a call that would ask, with no terminal to ask.
pub fn no_terminal(tool: &str, subject: Option<&str>) -> String {
    let exact = subject.map(|s| format!("{tool}:{}", escape_glob(s)));
    let mut text =
        format!("permission denied: {tool} needs permission and there is no terminal to ask, so it was not run. ");
    match exact {
        Some(rule) => text.push_str(&format!(
            "To allow it, run glrs-chat with --allow {} (this call) or --allow {tool} (every {tool} call), or add the rule to permissions.allow in the config.",
            shell_quote(&rule)
        )),
        None => text.push_str(&format!(
            "To allow it, run glrs-chat with --allow {tool}, or add \"{tool}\" to permissions.allow in the config."
        )),
    }
    text
}

/// The result of a call the user denied.
pub fn denied_by_user(reason: Option<&str>) -> String {
    match reason {
        Some(r) => format!("denied by the user, who said: {r}"),
        None => "denied by the user: it was not run".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(allow: &[&str], deny: &[&str], flags: &[&str], all: bool) -> Permissions {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Permissions::new(&v(allow), &v(deny), &v(flags), all).unwrap()
    }

    #[test]
    fn rules_match_tools_and_subjects() {
        let r = Rule::parse("bash:git *").unwrap();
        assert!(r.matches("bash", Some("git status")) && r.matches("bash", Some("git log -- src/a.rs")));
        assert!(!r.matches("bash", Some("rm -rf /")) && !r.matches("edit", Some("git x")) && !r.matches("bash", None));
        let r = Rule::parse("edit:src/**").unwrap();
        assert!(r.matches("edit", Some("src/auth/login.rs")) && !r.matches("edit", Some("tests/a.rs")));
        let r = Rule::parse("mcp__fs__*").unwrap();
        assert!(r.matches("mcp__fs__read", None) && !r.matches("mcp__git__log", None));
        assert!(Rule::parse(":x").is_err());
        assert!(
            Permissions::new(&["bash:[".into()], &[], &[], false)
                .unwrap_err()
                .to_string()
                .contains("permissions.allow[0]")
        );
    }

    #[test]
    fn deny_wins_then_allow_then_ask() {
        let perms =
            p(&["bash:cargo *"], &["bash:cargo publish*", "write:/etc/**"], &["write", "bash:cargo publish"], true);
        assert!(
            matches!(perms.decide("bash", true, Some("cargo publish")), Decision::Deny(t) if t.contains("cargo publish*"))
        );
        assert!(matches!(perms.decide("write", true, Some("/etc/passwd")), Decision::Deny(_)));
        assert_eq!(perms.decide("bash", true, Some("cargo test")), Decision::Allow);
        let perms = p(&[], &["read:secret/**"], &["bash:cargo test*"], false);
        assert!(matches!(perms.decide("read", false, Some("secret/key")), Decision::Deny(_)), "deny reaches read too");
        assert_eq!(perms.decide("read", false, Some("src/a.rs")), Decision::Allow);
        assert_eq!(perms.decide("bash", true, Some("cargo test --all")), Decision::Allow);
        assert_eq!(perms.decide("bash", true, Some("rm x")), Decision::Ask);
        assert_eq!(perms.decide("mcp__x__y", true, None), Decision::Ask);
    }

    #[test]
    fn session_allowances_and_answers() {
        let mut perms = p(&[], &[], &[], false);
        perms.allow_for_session("bash", Some("make"));
        perms.allow_for_session("write", Some("a.txt"));
        assert_eq!(perms.decide("bash", true, Some("make")), Decision::Allow);
        assert_eq!(perms.decide("bash", true, Some("make install")), Decision::Ask, "bash: this exact command");
        assert_eq!(perms.decide("write", true, Some("b.txt")), Decision::Allow, "write: the tool");
        assert_eq!(parse_answer("y"), Answer::Once);
        assert_eq!(parse_answer(" a "), Answer::Always);
        assert_eq!(parse_answer("n"), Answer::Deny(None));
        assert_eq!(parse_answer("use git mv"), Answer::Deny(Some("use git mv".into())));
        let text = no_terminal("bash", Some("rm *.o"));
        assert!(text.contains(r"--allow 'bash:rm \*.o'") && text.contains("--allow bash"), "{text}");
        assert!(Rule::parse(r"bash:rm \*.o").unwrap().matches("bash", Some("rm *.o")));
        assert!(!Rule::parse(r"bash:rm \*.o").unwrap().matches("bash", Some("rm a.o")));
    }
}
