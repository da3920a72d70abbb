//! Permissions (SPEC 14, 17): whether a tool call may run. Rules are `TOOL`
//! or `TOOL:GLOB` (`bash:git *`, `edit:src/**`, `mcp__fs__*`), the glob
//! matched against the call's subject (the file path; `*` matches any
//! characters, `/` included). A `bash` command line is parsed and judged
//! command by command ([`command`]). `permissions.deny` wins over
//! everything, `--allow-all` included; then `permissions.allow`, `--allow`
//! and what the user allowed for the session (`a`); then `--allow-all`;
//! else a tool that needs permission asks, and without a terminal to ask
//! it is denied with a result naming the rule that would allow it.

mod command;
mod forms;
mod hidden;
mod words;

#[cfg(test)]
mod command_tests;

use std::borrow::Cow;
use std::path::Path;

use anyhow::{Result, bail};
use globset::{GlobBuilder, GlobMatcher};

pub use command::{CommandLine, Hidden, Unjudgeable, WritableRoots};

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
            Some(s) => Some(glob(&expand_home(s)).map_err(|e| anyhow::anyhow!("rule {text:?}: {e}"))?),
            None => None,
        };
        Ok(Rule { text: text.to_string(), tool: tool_glob, subject })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a call concerns this rule, as a hook's `matcher` asks: for a
    /// `bash` line, when any command anywhere in it matches (as deny rules
    /// are judged, SPEC 17) or the line hides what it runs; otherwise as
    /// [`Rule::matches`].
    pub fn concerns(&self, tool: &str, subject: Option<&str>) -> bool {
        match (tool, subject, &self.subject) {
            ("bash", Some(line), Some(glob)) if self.tool.is_match(tool) => {
                let read = command::read(line, Path::new("/"), &WritableRoots::none());
                read.hidden.is_some() || read.everywhere.iter().any(|form| glob.is_match(form))
            }
            _ => self.matches(tool, subject),
        }
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
    /// The whole call, shown before asking: every line of the command,
    /// every argument of an extension tool (`None`: the summary and the
    /// preview say it all).
    pub full: Option<String>,
    /// What `a` grants for the rest of the session, in words ("this exact
    /// command", "every edit call inside the writable roots").
    pub always: String,
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
    /// Tell the one asked something they should know (a hook that failed);
    /// nothing where no one is told.
    fn tell(&mut self, _text: &str) {}
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
    /// `bash` and this exact command line (or a parent's `--grant`).
    Exact(String, String),
    /// Past the sandbox: `bash` and this exact command line run outside
    /// it, `write`/`edit` of this resolved path outside the writable roots.
    Beyond(String, String),
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

    /// Whether a call of `tool` on `subject` runs, is refused, or needs
    /// asking: deny rules first, then allow rules and earlier answers. A
    /// `bash` command line is judged command by command (SPEC 17), with
    /// redirections judged against the writable roots of `cwd`.
    pub fn decide(&self, tool: &str, needs_permission: bool, subject: Option<&str>, cwd: &Path) -> Decision {
        if let ("bash", Some(line)) = (tool, subject) {
            return self.decide_command(line, needs_permission, cwd);
        }
        if let Some(rule) = self.deny.iter().find(|r| r.matches(tool, subject)) {
            return Decision::Deny(format!(
                "denied: the rule {:?} in permissions.deny (the config) forbids this call; it was not run",
                rule.text()
            ));
        }
        if !needs_permission || self.allow_all || self.allow.iter().any(|r| r.matches(tool, subject)) {
            return Decision::Allow;
        }
        if self.allowed_for_session(tool, subject) { Decision::Allow } else { Decision::Ask }
    }

    /// `decide` for a `bash` command line: a deny rule forbids it when any
    /// command anywhere in it matches, or when the line hides what it runs;
    /// allow rules allow it when each of its simple commands matches one.
    fn decide_command(&self, line: &str, needs_permission: bool, cwd: &Path) -> Decision {
        let read = command::read(line, cwd, &redirect_roots(cwd));
        let deny: Vec<&Rule> = self.deny.iter().filter(|r| r.tool.is_match("bash")).collect();
        for rule in &deny {
            let hit = match &rule.subject {
                None => Some(None),
                Some(glob) => read.everywhere.iter().find(|form| glob.is_match(form)).map(Some),
            };
            if let Some(hit) = hit {
                let runs = hit.map(|form| format!(": it runs {form:?}")).unwrap_or_default();
                return Decision::Deny(format!(
                    "denied: the rule {:?} in permissions.deny (the config) forbids this call{runs}; it was not run",
                    rule.text()
                ));
            }
        }
        if let (Some(hidden), Some(rule)) = (&read.hidden, deny.first()) {
            return Decision::Deny(format!(
                "denied: {hidden}, so it cannot be checked against the rule {:?} in permissions.deny (the config); it was not run",
                rule.text()
            ));
        }
        let bash_rules: Vec<&Rule> = self.allow.iter().filter(|r| r.tool.is_match("bash")).collect();
        let by_rules = bash_rules.iter().any(|r| r.subject.is_none())
            || read.allowable.as_ref().is_ok_and(|commands| {
                commands.iter().all(|c| bash_rules.iter().any(|r| r.subject.as_ref().is_some_and(|g| g.is_match(c))))
            });
        if !needs_permission || self.allow_all || by_rules || self.allowed_for_session("bash", Some(line)) {
            Decision::Allow
        } else {
            Decision::Ask
        }
    }

    fn allowed_for_session(&self, tool: &str, subject: Option<&str>) -> bool {
        self.session.iter().any(|a| match a {
            Allowed::Tool(t) => t == tool,
            Allowed::Exact(t, s) => t == tool && subject == Some(s.as_str()),
            Allowed::Beyond(..) => false,
        })
    }

    /// Whether `a` was answered for this call past the sandbox (`key`: the
    /// command line, or the write's resolved path).
    pub fn allowed_beyond(&self, tool: &str, key: &str) -> bool {
        self.session.contains(&Allowed::Beyond(tool.into(), key.into()))
    }

    /// `a` at a prompt for a call past the sandbox: this exact command
    /// outside it, or this tool on this resolved path outside the roots.
    pub fn allow_beyond(&mut self, tool: &str, key: &str) {
        self.session.push(Allowed::Beyond(tool.into(), key.into()));
    }

    /// The arguments a child agent (`glrs-chat`, SPEC 20) is started with so
    /// that it may do what this session may, never more: every allow rule
    /// (the config's too: the child reads the same config, so they are only
    /// repeated), `--allow-all` when it is set, and each allowance the user
    /// gave this session (`a`) as a `--grant`, which the child takes exactly
    /// as it was given ([`Permissions::grant`]). Deny rules come from the
    /// config the child reads.
    pub fn child_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for rule in &self.allow {
            args.push("--allow".to_string());
            args.push(rule.text().to_string());
        }
        if self.allow_all {
            args.push("--allow-all".to_string());
        }
        // What was allowed past the sandbox stays with the session that
        // asked: a child cannot ask, and is not given it.
        for allowed in &self.session {
            let grant = match allowed {
                Allowed::Tool(tool) => tool.clone(),
                Allowed::Exact(tool, subject) => format!("{tool}:{subject}"),
                Allowed::Beyond(..) => continue,
            };
            args.extend(["--grant".to_string(), grant]);
        }
        args
    }

    /// Take an allowance of the parent's session (`--grant`, from
    /// [`Permissions::child_args`]): `TOOL` (that tool) or `TOOL:SUBJECT`
    /// (that exact command line or path, no glob). Tool names hold no `:`.
    pub fn grant(&mut self, text: &str) -> Result<()> {
        let allowed = match text.split_once(':') {
            Some((tool, subject)) if !tool.is_empty() => Allowed::Exact(tool.into(), subject.into()),
            None if !text.is_empty() => Allowed::Tool(text.into()),
            _ => bail!("--grant {text:?} names no tool (TOOL or TOOL:SUBJECT)"),
        };
        self.session.push(allowed);
        Ok(())
    }

    /// `a` at the prompt (SPEC 14): for `bash`, this exact command line;
    /// for any other tool (`write` and `edit` too), the tool.
    pub fn allow_for_session(&mut self, tool: &str, subject: Option<&str>) {
        let allowed = match (tool, subject) {
            ("bash", Some(subject)) => Allowed::Exact(tool.into(), subject.into()),
            _ => Allowed::Tool(tool.into()),
        };
        self.session.push(allowed);
    }

    /// `--allow` rules must name a tool there is (`bsh:ls` is a typo, not
    /// a rule): each rule's tool glob must match one of `known`, or name
    /// an MCP tool (`mcp__SERVER__…`) of a server in `servers`.
    pub fn check_flag_tools(flags: &[String], known: &[String], servers: &[String]) -> Result<()> {
        for text in flags {
            let rule = Rule::parse(text).map_err(|e| anyhow::anyhow!("--allow {text:?}: {e}"))?;
            let tool = text.split_once(':').map_or(text.as_str(), |(tool, _)| tool);
            let server = tool.strip_prefix("mcp__").map(|rest| rest.split("__").next().unwrap_or(rest));
            let mcp = server.is_some_and(|s| glob(s).is_ok_and(|g| servers.iter().any(|name| g.is_match(name))));
            if !mcp && !known.iter().any(|name| rule.tool.is_match(name)) {
                let mut listed = known.to_vec();
                listed.extend(servers.iter().map(|s| format!("mcp__{s}__*")));
                bail!("--allow {text:?} names no tool there is ({tool:?}); the tools: {}", listed.join(", "));
            }
        }
        Ok(())
    }
}

/// Where a redirection in an allowed `bash` line may write: nowhere but
/// `/dev/null`. With `bash:echo *` and `bash:cargo test*`, `echo … >
/// build.rs` would let the allowed `cargo test` run what the model wrote.
/// Rules decide only where no kernel sandbox holds the command (mode
/// `off`, or the kernel cannot): with one, a sandboxed call needs no rule
/// (SPEC 17 "Asking"), so there is never a sandbox to widen this for.
fn redirect_roots(_cwd: &Path) -> WritableRoots {
    WritableRoots::none()
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

/// The `--allow` arguments that would allow this call exactly (for
/// `bash`, one per command of the line), or why no `bash:GLOB` rule can;
/// none for a tool without a subject (only `--allow TOOL` does).
pub fn allow_flags(tool: &str, subject: Option<&str>, cwd: &Path) -> Result<Vec<String>, Unjudgeable> {
    let subjects = match (tool, subject) {
        ("bash", Some(line)) => command::read(line, cwd, &redirect_roots(cwd)).allowable?,
        (_, Some(s)) => vec![s.to_string()],
        (_, None) => Vec::new(),
    };
    Ok(subjects.iter().map(|s| format!("--allow {}", shell_quote(&format!("{tool}:{}", escape_glob(s))))).collect())
}

/// The result of a call that would ask, with no terminal to ask: which
/// rules would allow it (for `bash`, one per command of the line, or why
/// no `bash:GLOB` rule can).
pub fn no_terminal(tool: &str, subject: Option<&str>, cwd: &Path) -> String {
    let mut text =
        format!("permission denied: {tool} needs permission and there is no terminal to ask, so it was not run. ");
    match allow_flags(tool, subject, cwd) {
        Ok(rules) if !rules.is_empty() => {
            let which = if rules.len() == 1 { "this call" } else { "each command of this call" };
            text.push_str(&format!(
                "To allow it, run glrs-chat with {} ({which}) or --allow {tool} (every {tool} call), or add the rule to permissions.allow in the config.",
                rules.join(" ")
            ));
        }
        Err(why) => text.push_str(&format!(
            "No {tool}:GLOB rule can allow this call, because {why}; --allow {tool} allows every {tool} call."
        )),
        Ok(_) => text.push_str(&format!(
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

/// A rule's path glob with a leading `~/`, `$HOME/` or `${HOME}/` made the
/// real home folder (escaped), as resolved paths are matched.
pub fn expand_home(glob: &str) -> Cow<'_, str> {
    let rest = ["~/", "$HOME/", "${HOME}/"].iter().find_map(|p| glob.strip_prefix(p));
    let (Some(rest), Some(home)) = (rest, dirs::home_dir()) else { return Cow::Borrowed(glob) };
    let home = crate::sandbox::real::real_path(&home).unwrap_or(home);
    let home = escape_glob(&home.to_string_lossy());
    Cow::Owned(format!("{}/{rest}", home.trim_end_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_in_rules_is_expanded() {
        let Some(home) = dirs::home_dir() else { return };
        let home = crate::sandbox::real::real_path(&home).unwrap_or(home);
        assert_eq!(expand_home("~/.ssh/**"), format!("{}/.ssh/**", escape_glob(&home.to_string_lossy())));
        assert_eq!(expand_home("$HOME/.aws/*"), format!("{}/.aws/*", escape_glob(&home.to_string_lossy())));
        assert_eq!(expand_home("src/**"), "src/**");
        assert_eq!(expand_home("git ~/x"), "git ~/x");
    }

    fn cwd() -> &'static Path {
        Path::new("/nonexistent/project")
    }

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
    fn allow_rules_name_tools_there_are() {
        let known = ["bash".to_string(), "edit".into(), "read".into()];
        let servers = ["fs".to_string()];
        let check = |rule: &str| Permissions::check_flag_tools(&[rule.to_string()], &known, &servers);
        for rule in ["bash:ls", "bash", "edit:src/**", "re*", "mcp__fs__read", "mcp__f*__x", "mcp__fs"] {
            assert!(check(rule).is_ok(), "{rule}");
        }
        for rule in ["bsh:ls", "Bash", "mcp__git__log", "write"] {
            let err = check(rule).unwrap_err().to_string();
            assert!(err.contains(&format!("{rule:?}")) && err.contains("bash, edit, read, mcp__fs__*"), "{err}");
        }
    }

    #[test]
    fn deny_wins_then_allow_then_ask() {
        let perms =
            p(&["bash:cargo *"], &["bash:cargo publish*", "write:/etc/**"], &["write", "bash:cargo publish"], true);
        assert!(
            matches!(perms.decide("bash", true, Some("cargo publish"), cwd()), Decision::Deny(t) if t.contains("cargo publish*"))
        );
        assert!(matches!(perms.decide("write", true, Some("/etc/passwd"), cwd()), Decision::Deny(_)));
        assert_eq!(perms.decide("bash", true, Some("cargo test"), cwd()), Decision::Allow);
        let perms = p(&[], &["read:secret/**"], &["bash:cargo test*"], false);
        assert!(
            matches!(perms.decide("read", false, Some("secret/key"), cwd()), Decision::Deny(_)),
            "deny reaches read too"
        );
        assert_eq!(perms.decide("read", false, Some("src/a.rs"), cwd()), Decision::Allow);
        assert_eq!(perms.decide("bash", true, Some("cargo test --all"), cwd()), Decision::Allow);
        assert_eq!(perms.decide("bash", true, Some("rm x"), cwd()), Decision::Ask);
        assert_eq!(perms.decide("mcp__x__y", true, None, cwd()), Decision::Ask);
    }

    #[test]
    fn session_allowances_and_answers() {
        let mut perms = p(&[], &[], &[], false);
        perms.allow_for_session("bash", Some("make"));
        perms.allow_for_session("write", Some("a.txt"));
        assert_eq!(perms.decide("bash", true, Some("make"), cwd()), Decision::Allow);
        assert_eq!(perms.decide("bash", true, Some("make install"), cwd()), Decision::Ask, "bash: this exact command");
        assert_eq!(perms.decide("write", true, Some("a.txt"), cwd()), Decision::Allow, "write: the tool");
        assert_eq!(perms.decide("write", true, Some("b.txt"), cwd()), Decision::Allow, "write: every file (SPEC 14)");
        assert_eq!(perms.decide("edit", true, Some("b.txt"), cwd()), Decision::Ask, "edit is another tool");
        // Past the sandbox: that exact call, and never for a child.
        perms.allow_beyond("bash", "make deploy");
        assert!(perms.allowed_beyond("bash", "make deploy") && !perms.allowed_beyond("bash", "make"));
        assert!(!perms.allowed_beyond("write", "make deploy"));
        assert_eq!(perms.decide("bash", true, Some("make deploy"), cwd()), Decision::Ask, "only past the sandbox");
        perms.allow_for_session("mcp__fs__read", None);
        assert_eq!(perms.decide("mcp__fs__read", true, None, cwd()), Decision::Allow, "other tools: the tool");
        // A child agent gets the same allowances, exactly (SPEC 20).
        let mut child = p(&[], &[], &[], false);
        let args = perms.child_args();
        for pair in args.chunks(2) {
            assert_eq!(pair[0], "--grant", "{args:?}");
            child.grant(&pair[1]).unwrap();
        }
        for (tool, subject) in [("bash", "make"), ("bash", "make install"), ("write", "a.txt"), ("write", "b.txt")] {
            assert_eq!(child.decide(tool, true, Some(subject), cwd()), perms.decide(tool, true, Some(subject), cwd()));
        }
        assert_eq!(child.decide("mcp__fs__read", true, None, cwd()), Decision::Allow);
        assert!(child.grant(":x").is_err() && child.grant("").is_err());
        let ruled = p(&["bash:git *"], &[], &["edit:src/**"], true).child_args();
        assert_eq!(ruled, ["--allow", "bash:git *", "--allow", "edit:src/**", "--allow-all"]);
        assert!(!perms.child_args().iter().any(|a| a.contains("deploy")), "{:?}", perms.child_args());
        assert_eq!(parse_answer("y"), Answer::Once);
        assert_eq!(parse_answer(" a "), Answer::Always);
        assert_eq!(parse_answer("n"), Answer::Deny(None));
        assert_eq!(parse_answer("use git mv"), Answer::Deny(Some("use git mv".into())));
        let text = no_terminal("bash", Some("rm *.o"), cwd());
        assert!(text.contains(r"--allow 'bash:rm \*.o'") && text.contains("--allow bash"), "{text}");
        assert!(Rule::parse(r"bash:rm \*.o").unwrap().matches("bash", Some("rm *.o")));
        assert!(!Rule::parse(r"bash:rm \*.o").unwrap().matches("bash", Some("rm a.o")));
        // A hook's matcher sees every command of a line.
        let rm = Rule::parse("bash:rm *").unwrap();
        assert!(rm.concerns("bash", Some("ls; /bin/rm x")) && rm.concerns("bash", Some("$x y")));
        assert!(!rm.concerns("bash", Some("ls -la")) && !rm.concerns("edit", Some("rm x")));
    }
}
