//! What the file tools may read (issue 20, SPEC 17). The registry judges a
//! call's own path; but `grep` and `find` open and list many files, and
//! `edit` shows a file's lines back, so a deny rule that names a file must
//! hold for every file any tool opens. The [`ReadGuard`] is handed to each
//! call (in [`Judged`]) and the tools ask it about every real path they
//! open or list: `permissions.deny` rules of the tool itself and of `read`
//! (so `read:~/.ssh/**` also keeps `grep`, `find`, `ls` and `edit` out),
//! and a process's environment under `/proc` (it holds the API keys).
//! Rules starting with `~/` or `$HOME/` are judged against the real home.

use std::path::{Component, Path};
use std::sync::Arc;

use super::fs::real::Target;
use crate::permissions::Rule;

use crate::sandbox::{Mode, Policy};

/// The paths one call may not read.
#[derive(Debug, Clone, Default)]
pub struct ReadGuard {
    deny: Vec<Rule>,
    /// The session's sandbox policy: `sandbox.denyRead` (resolved) when
    /// the sandbox is on, as the file tools obey the same roots as the
    /// commands (SPEC 17 "File tools"); glrs's data folder in every mode.
    sandbox: Option<Arc<Policy>>,
}

/// A name no file has: a folder is skipped whole when a rule denies this
/// name inside it (`~/.ssh/**` denies everything in `~/.ssh`).
const ANY_NAME: &str = "\u{0}";

impl ReadGuard {
    /// A guard from the `permissions.deny` rules.
    pub fn new(deny: Vec<Rule>) -> ReadGuard {
        ReadGuard { deny, sandbox: None }
    }

    /// This guard, keeping out `sandbox.denyRead` too unless the mode is
    /// `off`, and glrs's data folder in every mode.
    pub fn with_sandbox(self, policy: Arc<Policy>) -> ReadGuard {
        ReadGuard { sandbox: Some(policy), ..self }
    }

    /// Why `tool` may not read `target`, as the model is told; `None` when
    /// it may.
    pub fn refuses(&self, tool: &str, target: &Target) -> Option<String> {
        if is_process_environment(&target.real) {
            return Some(format!("denied: {} is a process's environment, which holds secrets", target.shown));
        }
        if self.sandbox.as_ref().is_some_and(|p| p.is_glrs_data(&target.real)) {
            return Some(format!(
                "denied: {} is in glrs's data folder (every session's transcript and checkpoints), \
                 which no tool reads; it was not read",
                target.shown
            ));
        }
        if self.sandbox.as_ref().is_some_and(|p| p.mode() != Mode::Off && p.is_denied_read(&target.real)) {
            return Some(format!(
                "denied: {} is under sandbox.denyRead (the user's secrets); it was not read",
                target.shown
            ));
        }
        let rule = self
            .deny
            .iter()
            .find(|r| r.matches(tool, Some(&target.shown)) || r.matches("read", Some(&target.shown)))?;
        Some(format!(
            "denied: the rule {:?} in permissions.deny (the config) forbids reading {}",
            rule.text(),
            target.shown
        ))
    }

    /// Whether a walk by `tool` should not enter `folder` at all.
    pub fn prunes(&self, tool: &str, folder: &Target) -> bool {
        self.refuses(tool, folder).is_some() || self.refuses(tool, &folder.child(ANY_NAME)).is_some()
    }
}

/// `/proc/PID/environ` (or a task's): whoever reads it gets the keys.
fn is_process_environment(real: &Path) -> bool {
    let mut parts = real.components();
    parts.next() == Some(Component::RootDir)
        && parts.next() == Some(Component::Normal("proc".as_ref()))
        && real.file_name().is_some_and(|n| n == "environ")
}

/// What the registry decided for one call, handed to its run.
#[derive(Debug, Clone, Default)]
pub struct Judged {
    /// The subject rules were judged against (the resolved path); a file
    /// tool refuses to run when its path resolves elsewhere by the time it
    /// runs (a link swapped in meanwhile). `None`: nothing was judged
    /// (a benchmark or test calling a tool directly).
    pub subject: Option<String>,
    /// What the call may not read.
    pub reads: Arc<ReadGuard>,
    /// The session's permission state when the call was allowed: what a
    /// child agent (the `task` tool) is given, never more.
    pub permissions: Arc<super::Permissions>,
    /// Where a long call reports how far it got (a child agent's tool
    /// calls), when someone watches.
    pub progress: Option<Arc<super::Progress>>,
}

impl Judged {
    /// The refusal when `target` is not what was judged.
    pub fn moved(&self, target: &Target) -> Option<String> {
        let judged = self.subject.as_deref()?;
        (judged != target.shown).then(|| {
            format!("{judged} changed while it was checked (it now leads to {}): it was not opened", target.shown)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_rules_of_read_hold_for_every_tool_and_folders_are_pruned() {
        let guard = ReadGuard::new(vec![Rule::parse("read:secret/**").unwrap(), Rule::parse("grep:*.env").unwrap()]);
        let t = |shown: &str| Target { real: Path::new("/w").join(shown), shown: shown.into() };
        assert!(guard.refuses("grep", &t("secret/k")).unwrap().contains("\"read:secret/**\""));
        assert!(guard.refuses("find", &t("secret/k")).is_some());
        assert!(guard.refuses("grep", &t("a.env")).is_some());
        assert!(guard.refuses("find", &t("a.env")).is_none(), "a grep rule is grep's only");
        assert!(guard.refuses("grep", &t("src/a.rs")).is_none());
        assert!(guard.prunes("grep", &t("secret")) && !guard.prunes("grep", &t("src")));
        let environ = Target { real: "/proc/42/environ".into(), shown: "/proc/42/environ".into() };
        assert!(ReadGuard::default().refuses("read", &environ).is_some());
        let judged = Judged { subject: Some("src/a.rs".into()), ..Judged::default() };
        assert!(judged.moved(&t("src/a.rs")).is_none() && judged.moved(&t("/home/u/.bashrc")).is_some());
    }
}
