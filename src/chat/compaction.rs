//! Compaction inside a running chat (SPEC 6 "When", SPEC 7): the checks at
//! idle and after every step, compaction run as `glrs-compact` in a child
//! process (so it can be abandoned, and the chat reloads the session when it
//! lands), overflow recovery, and the memory flush at idle (the flush
//! itself is the agent's, [`Agent::memory_flush`]). The chat's part in a
//! turn, [`ChatDriver`], is here too.

use super::{Automatic, Chat, ChatDriver};
use crate::agent::{Agent, Driver, TurnUi};
use crate::compact::flush;
use crate::compact::report::Report;
use crate::process::Background;
use crate::provider::{CallError, Cancel};
use crate::store::Entry;
use crate::time;

/// Printed when a turn stops at the compaction line (SPEC 6).
pub const STOP_MESSAGE: &str = "(compacting to make room: send \"continue\" to resume)";

/// Printed when a one-shot turn compacts at the line and goes on by itself.
pub const GO_ON_MESSAGE: &str = "(compacting to make room; the turn goes on after)";

/// `glrs-compact ID --no-flush --json [--auto] [--instruction TEXT]`: the
/// chat has flushed (or will not) by the time it compacts, and reads the
/// result as a [`Report`], never the line meant for people. `automatic`
/// (`--auto`): not asked for by the user, so a `before_compact` hook may
/// cancel it. glrs-compact runs the compaction hooks, wherever it is started.
pub fn compact_command(id: &crate::SessionId, instruction: Option<&str>, automatic: bool) -> std::process::Command {
    let mut cmd = std::process::Command::new(crate::programs::program_path("glrs-compact"));
    cmd.args([id.as_str(), "--no-flush", "--json"]);
    if automatic {
        cmd.arg("--auto");
    }
    if let Some(i) = instruction.filter(|i| !i.trim().is_empty()) {
        cmd.args(["--instruction", i]);
    }
    cmd
}

/// `/compact [instruction]`, the one reading of it (the prompt and the key
/// watcher both use this): `Some(instruction)` for the command, `None` for
/// any other line (`/compaction please` is not it).
pub fn parse_compact(line: &str) -> Option<Option<&str>> {
    let rest = line.trim().strip_prefix("/compact")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let instruction = rest.trim();
    Some((!instruction.is_empty()).then_some(instruction))
}

/// What the chat says when a compaction starts during a turn.
pub const BACKGROUND_NOTE: &str = "(compacting in the background: the brief lands with the turn's next write)";

/// Start `glrs-compact` without waiting (`/compact` during a turn): the one
/// place this is done, for the turn loop and the REPL's key watcher. A
/// [`Background`] child: in a process group of its own (which also keeps
/// the terminal's Ctrl-C, which stops the chat waiting for it, from
/// reaching it), guarded by the watchdog until the chat sees it exit, since
/// the key watcher is a short-lived thread whose children the parent-death
/// signal cannot cover. `long_lived`: the calling thread lives as long as
/// the chat (the main thread), so it also asks for the parent-death signal.
pub fn start_background(
    id: &crate::SessionId,
    instruction: Option<&str>,
    long_lived: bool,
) -> std::io::Result<Background> {
    let mut cmd = compact_command(id, instruction, false);
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    Background::start(cmd, long_lived)
}

/// How a finished `glrs-compact` went, from its exit status and output.
fn outcome_of(success: bool, stdout: &[u8], stderr: &[u8]) -> CompactOutcome {
    if !success {
        return CompactOutcome::Failed(String::from_utf8_lossy(stderr).trim().to_string());
    }
    match serde_json::from_slice::<Report>(stdout) {
        Ok(report) if report.landed() => CompactOutcome::Landed(report.line()),
        Ok(Report::Cancelled { reason, .. }) => CompactOutcome::Cancelled(reason),
        Ok(_) => CompactOutcome::Nothing,
        Err(e) => CompactOutcome::Failed(format!("glrs-compact gave no result the chat can read: {e}")),
    }
}

/// How a compaction run by the chat ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactOutcome {
    /// It landed; the line glrs-compact printed.
    Landed(String),
    /// There was nothing to compact.
    Nothing,
    /// Esc or Ctrl-C: the child was stopped and nothing was written.
    Abandoned,
    /// glrs-compact failed; its message.
    Failed(String),
    /// A `before_compact` hook cancelled it (exit 2); the hook's reason.
    Cancelled(String),
}

/// What glrs-compact printed on stderr though it succeeded (a hook that
/// failed, a warning), one notice a line.
fn relay_warnings(stderr: &[u8], ui: &mut dyn TurnUi) {
    for line in String::from_utf8_lossy(stderr).lines().filter(|l| !l.trim().is_empty()) {
        ui.notice(line);
    }
}

impl CompactOutcome {
    /// Whether a brief landed.
    pub fn landed(&self) -> bool {
        matches!(self, CompactOutcome::Landed(_))
    }
}

impl Automatic {
    /// True when the context is over the trigger and this user message has
    /// not had its automatic compaction yet.
    fn compaction_due(&self, agent: &Agent) -> bool {
        self.count == 0 && agent.trigger().is_over(agent.context_tokens()) && !self.nothing_to_compact_yet(agent)
    }

    /// True while an earlier automatic compaction found nothing to compact
    /// and the context has not changed enough for the cut to find anything
    /// now: the cut needs a user message with `keepRecentTokens` after it,
    /// so the context must grow by at least that much (or be rebuilt from
    /// the file, which clears the memory). Without this, every message
    /// started glrs-compact again and printed "(nothing to compact)".
    fn nothing_to_compact_yet(&self, agent: &Agent) -> bool {
        let keep = agent.trigger().keep_recent;
        let too_soon = |at: u64| agent.context_tokens() < at.saturating_add(keep);
        // A hook's "no" is in the file (`compactionCancelled`): it holds for
        // the next process too (one-shot runs), until the cycle ends.
        self.nothing_at.is_some_and(|(at, rebuilds)| rebuilds == agent.rebuilds() && too_soon(at))
            || agent.cancelled_at().is_some_and(too_soon)
    }
}

impl Driver for ChatDriver<'_> {
    /// Typed lines join as steers; a `/compact [instruction]` among them
    /// starts a compaction in the background instead (it holds nothing).
    fn steers(&mut self, agent: &mut Agent, ui: &mut dyn TurnUi) -> Vec<String> {
        let mut joined = Vec::new();
        for line in (self.typed)() {
            match parse_compact(&line) {
                Some(instruction) => compact_in_background(agent, self.automatic, instruction, ui),
                None => joined.push(line),
            }
        }
        joined
    }

    /// Compact (automatically, once per user message), then retry.
    async fn make_room(&mut self, agent: &mut Agent, cancel: &Cancel, ui: &mut dyn TurnUi) -> bool {
        if self.automatic.count > 0 {
            return false;
        }
        ui.notice("(the request is larger than the model's window: compacting, then trying again)");
        compact_waiting(agent, self.automatic, None, true, cancel, ui).await.landed()
    }

    /// A turn that passed the line stops rather than take another step; in
    /// one-shot (no one to send "continue") it compacts and goes on.
    async fn stop_at_line(&mut self, agent: &mut Agent, cancel: &Cancel, ui: &mut dyn TurnUi) -> bool {
        if !self.automatic.compaction_due(agent) {
            return false;
        }
        let text = if self.automatic.goes_on_at_line { GO_ON_MESSAGE } else { STOP_MESSAGE };
        ui.notice(text);
        agent.record(Entry::Notice { at: time::now(), text: text.into() });
        if !self.automatic.goes_on_at_line {
            return true;
        }
        // Whatever came of it (nothing to compact, a failure: said), the turn
        // goes on; at most one automatic compaction per user message.
        compact_waiting(agent, self.automatic, None, true, cancel, ui).await;
        false
    }

    async fn after_turn(&mut self, agent: &mut Agent, cancel: &Cancel, ui: &mut dyn TurnUi) {
        wait_for_background(agent, self.automatic, cancel, ui).await;
    }
}

/// Why a compaction found nothing to do, in the user's terms.
fn why_nothing(agent: &Agent) -> String {
    let keep = agent.trigger().keep_recent;
    let tokens = agent.context_tokens();
    if tokens <= keep {
        format!(
            "(nothing to compact: the context is {tokens} tokens, and the newest {keep} (keepRecentTokens) are always \
             kept verbatim)"
        )
    } else {
        format!(
            "(nothing to compact: the newest {keep} tokens (keepRecentTokens) are kept, and no user message \
             before them starts a turn to cut at)"
        )
    }
}

impl Chat {
    /// True when the context is over the trigger and this user message has
    /// not had its automatic compaction yet.
    pub fn compaction_due(&self) -> bool {
        self.automatic.compaction_due(&self.agent)
    }

    /// True when the memory flush should run now: on, within
    /// `softThresholdTokens` of the trigger, once per compaction cycle.
    pub fn flush_due(&self) -> bool {
        flush::due(
            self.agent().config(),
            &self.agent().trigger(),
            self.agent().context_tokens(),
            (self.agent().compactions(), self.agent().flushed_cycle()),
            self.automatic.overflowed,
        )
    }

    /// Compact now, as the user asked (`/compact [instruction]`), with
    /// `glrs-compact` in a child process, and wait for it; `cancel` stops it
    /// (nothing is written). Reloads the session after.
    pub async fn compact_child(
        &mut self,
        instruction: Option<&str>,
        cancel: &Cancel,
        ui: &mut dyn TurnUi,
    ) -> CompactOutcome {
        compact_waiting(&mut self.agent, &mut self.automatic, instruction, false, cancel, ui).await
    }

    /// An automatic compaction (at the line, at idle, on an overflow): as
    /// [`Chat::compact_child`], but a `before_compact` hook may cancel it.
    pub async fn compact_auto(&mut self, cancel: &Cancel, ui: &mut dyn TurnUi) -> CompactOutcome {
        compact_waiting(&mut self.agent, &mut self.automatic, None, true, cancel, ui).await
    }

    /// Take over compactions started elsewhere (the REPL's key watcher).
    pub fn adopt_background(&mut self, children: Vec<Background>) {
        self.automatic.background.extend(children);
    }

    /// Wait for background compactions and reload what they wrote
    /// ([`wait_for_background`]).
    pub async fn wait_for_background(&mut self, cancel: &Cancel, ui: &mut dyn TurnUi) {
        wait_for_background(&mut self.agent, &mut self.automatic, cancel, ui).await;
    }

    /// What runs at idle after a turn: the flush when due, then compaction
    /// when due (or when the turn stopped at the line).
    pub async fn at_idle(
        &mut self,
        stopped_at_line: bool,
        cancel: &Cancel,
        ui: &mut dyn TurnUi,
    ) -> Option<CompactOutcome> {
        // The server the turn could not reach is not asked again (and again)
        // for the flush and the brief: they wait for a turn that reaches it.
        if self.automatic.unreachable {
            if self.flush_due() || stopped_at_line || self.compaction_due() {
                ui.notice("(no memory flush or compaction now: the model's server did not answer; they run after the next turn that reaches it)");
            }
            return None;
        }
        // A flush that overflowed the window says the context is fuller
        // than estimated: the compaction runs now, not at the next overflow.
        let mut overflowed = false;
        if self.flush_due() {
            match self.agent.memory_flush(cancel, ui).await {
                Some(CallError::Cancelled { .. }) | None => {}
                Some(e) => {
                    ui.notice(&format!("(memory flush failed: {e})"));
                    overflowed = matches!(e, CallError::Overflow(_)) && self.automatic.count == 0;
                }
            }
        }
        if stopped_at_line || overflowed || self.compaction_due() {
            return Some(self.compact_auto(cancel, ui).await);
        }
        None
    }
}

/// Run `glrs-compact` and wait for it (`automatic`: a `before_compact`
/// hook may cancel it); `cancel` stops it, and nothing is written.
/// Reloads the session after, and says how it went.
async fn compact_waiting(
    agent: &mut Agent,
    chat: &mut Automatic,
    instruction: Option<&str>,
    automatic: bool,
    cancel: &Cancel,
    ui: &mut dyn TurnUi,
) -> CompactOutcome {
    chat.count += 1;
    match agent.save_pending() {
        Err(problem) => return CompactOutcome::Failed(problem.to_string()),
        Ok(Some(warning)) => ui.notice(&warning),
        Ok(None) => {}
    }
    ui.notice(&format!("(compacting {}…)", agent.id()));
    let mut cmd = tokio::process::Command::from(compact_command(agent.id(), instruction, automatic));
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).kill_on_drop(true);
    crate::process::die_with_parent(cmd.as_std_mut());
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return CompactOutcome::Failed(format!("cannot run glrs-compact: {e}")),
    };
    let output = tokio::select! {
        out = child.wait_with_output() => out,
        () = cancel.cancelled() => {
            ui.notice("(compaction abandoned: nothing was written)");
            return CompactOutcome::Abandoned;
        }
    };
    let outcome = match output {
        Ok(out) => {
            if out.status.success() {
                relay_warnings(&out.stderr, ui);
            }
            outcome_of(out.status.success(), &out.stdout, &out.stderr)
        }
        Err(e) => CompactOutcome::Failed(format!("glrs-compact: {e}")),
    };
    if let Err(e) = agent.sync_from_disk() {
        ui.notice(&format!("could not re-read the session: {}", e.report()));
    }
    // Neither nothing to compact nor a hook's "no" is asked again at
    // every message: not until the context has grown enough for the
    // cut to find more (or is rebuilt from the file).
    chat.nothing_at = match outcome {
        CompactOutcome::Nothing | CompactOutcome::Cancelled(_) if instruction.is_none() => {
            Some((agent.context_tokens(), agent.rebuilds()))
        }
        _ => None,
    };
    match &outcome {
        CompactOutcome::Landed(line) => {
            ui.notice(&format!("(compaction #{}: {line})", agent.compactions()));
            if agent.trigger().is_over(agent.context_tokens()) {
                // Reported, never repeated.
                ui.notice(&format!(
                    "(still over the compaction trigger: {} tokens; /compact with an instruction, or /clear, makes more room)",
                    agent.context_tokens()
                ));
            }
        }
        CompactOutcome::Nothing => ui.notice(&why_nothing(agent)),
        CompactOutcome::Failed(why) => ui.notice(&format!("(compaction failed: {why})")),
        CompactOutcome::Cancelled(reason) => {
            let keep = agent.trigger().keep_recent;
            let text = format!(
                "automatic compaction cancelled by a before_compact hook: {}; asked again once the context \
                 grows by {keep} tokens (keepRecentTokens), or now with /compact",
                crate::limits::one_line(reason, 200)
            );
            ui.notice(&format!("({text})"));
            let data = flush::cancelled_data(agent.context_tokens(), reason);
            agent.record(Entry::Custom { at: time::now(), name: flush::CANCELLED.into(), data });
            agent.record(Entry::Notice { at: time::now(), text });
            if let Some(problem) = agent.save_or_report() {
                ui.notice(&problem.to_string());
            }
        }
        CompactOutcome::Abandoned => {}
    }
    outcome
}

/// Start `glrs-compact` without waiting: `/compact` typed during a turn.
fn compact_in_background(agent: &mut Agent, chat: &mut Automatic, instruction: Option<&str>, ui: &mut dyn TurnUi) {
    match agent.save_pending() {
        Err(problem) => {
            ui.notice(&problem.to_string());
            return;
        }
        Ok(Some(warning)) => ui.notice(&warning),
        Ok(None) => {}
    }
    match start_background(agent.id(), instruction, true) {
        Ok(child) => {
            ui.notice(BACKGROUND_NOTE);
            chat.background.push(child);
        }
        Err(e) => ui.notice(&format!("(cannot run glrs-compact: {e})")),
    }
}

/// All that is left in a finished child's pipe (nothing if it has none).
fn read_all(pipe: Option<impl std::io::Read>) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(mut pipe) = pipe {
        let _ = pipe.read_to_end(&mut bytes);
    }
    bytes
}

/// Wait for background compactions and reload what they wrote. The
/// wait yields to the runtime; `cancel` (Esc, Ctrl-C) stops waiting and
/// leaves them to finish (SPEC 6): what they write is read before the
/// next model call.
async fn wait_for_background(agent: &mut Agent, chat: &mut Automatic, cancel: &Cancel, ui: &mut dyn TurnUi) {
    let mut waiting = std::mem::take(&mut chat.background);
    let mut landed = agent.compactions();
    while !waiting.is_empty() {
        // The first to exit, seen on its pidfd ([`Background::exit`]).
        let first = {
            let exits = waiting.iter_mut().map(|child| Box::pin(child.exit()));
            tokio::select! {
                (exited, index, _) = futures_util::future::select_all(exits) => Some((exited, index)),
                () = cancel.cancelled() => None,
            }
        };
        let Some((exited, index)) = first else {
            ui.notice("(the compaction goes on; its brief lands before the next model call)");
            chat.background = waiting;
            break;
        };
        let mut child = waiting.remove(index);
        match exited {
            Ok(status) => {
                // It has exited: its pipes hold all it wrote. Read off the
                // runtime's other tasks (a pipe read is a blocking call).
                let (stdout, stderr) = (child.child().stdout.take(), child.child().stderr.take());
                let (out, err) = crate::runtime::blocking(|| (read_all(stdout), read_all(stderr)));
                if status.success() {
                    relay_warnings(&err, ui);
                }
                match outcome_of(status.success(), &out, &err) {
                    CompactOutcome::Landed(line) => {
                        landed += 1;
                        ui.notice(&format!("(compaction #{landed}: {line})"))
                    }
                    CompactOutcome::Nothing => ui.notice("(nothing to compact)"),
                    CompactOutcome::Failed(why) => ui.notice(&format!("(compaction failed: {why})")),
                    // Only an automatic compaction can be cancelled.
                    CompactOutcome::Abandoned | CompactOutcome::Cancelled(_) => {}
                }
            }
            Err(e) => ui.notice(&format!("(compaction failed: {e})")),
        }
    }
    let _ = agent.sync_from_disk();
}

#[cfg(test)]
mod tests {
    use super::parse_compact;

    #[test]
    fn compact_is_read_one_way() {
        assert_eq!(parse_compact("/compact"), Some(None));
        assert_eq!(parse_compact("  /compact  "), Some(None));
        assert_eq!(parse_compact("/compact keep the auth work"), Some(Some("keep the auth work")));
        assert_eq!(parse_compact("/compaction please"), None);
        assert_eq!(parse_compact("please /compact"), None);
    }
}
