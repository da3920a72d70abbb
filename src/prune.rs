//! Session pruning (SPEC 16, `contextPruning`): old tool results trimmed or
//! cleared from the context in memory, right before a request. The session
//! file is never changed; only what the chat sends is.
//!
//! It runs in `cache-ttl` mode (the default for Claude models) when the
//! session's last model call is older than `ttl`, so the provider's prompt
//! cache has expired and rewriting old messages costs nothing extra. The
//! pruned messages stay in the chat's memory, so the calls that follow send
//! the same prefix and read it from the cache again.
//!
//! Order: results in the newest `keepLastAssistants` assistant turns are
//! kept; of the others (those whose tool the `tools.allow`/`deny` globs
//! let be pruned), when the context is over `softTrimRatio` of the window,
//! each result over `softTrim.maxChars` keeps its head and tail with a note
//! of its size; then, when the context is still over `hardClearRatio` and
//! the prunable results total at least `minPrunableToolChars`, the oldest
//! results are replaced by the placeholder until it is not.

pub use crate::config::{PruneMode, PruningConfig};
use crate::provider::Message;

/// `hardClear.placeholder` by default.
pub const DEFAULT_PLACEHOLDER: &str = "[Old tool result content cleared]";

/// The settings in force, defaults filled in.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)] // each field is the `contextPruning` key of the same name
pub struct Pruning {
    pub mode: PruneMode,
    pub ttl_secs: u64,
    pub keep_last_assistants: usize,
    pub soft_trim_ratio: f64,
    pub hard_clear_ratio: f64,
    pub min_prunable_tool_chars: usize,
    pub max_chars: usize,
    pub head_chars: usize,
    pub tail_chars: usize,
    pub hard_clear: bool,
    pub placeholder: String,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

impl Pruning {
    /// The settings for a model; `claude` picks the default mode. The
    /// config was checked at load, so a bad value here falls back to the
    /// default rather than failing a request.
    pub fn from_config(c: &PruningConfig, claude: bool) -> Pruning {
        let n = |v: Option<u64>, d: usize| v.map_or(d, |v| usize::try_from(v).unwrap_or(usize::MAX));
        Pruning {
            mode: c.mode.unwrap_or(if claude { PruneMode::CacheTtl } else { PruneMode::Off }),
            ttl_secs: c.ttl.as_ref().and_then(|t| crate::config::parse_duration_rule(t).ok().flatten()).unwrap_or(300),
            keep_last_assistants: n(c.keep_last_assistants, 3),
            soft_trim_ratio: c.soft_trim_ratio.unwrap_or(crate::config::DEFAULT_SOFT_TRIM_RATIO),
            hard_clear_ratio: c.hard_clear_ratio.unwrap_or(crate::config::DEFAULT_HARD_CLEAR_RATIO),
            min_prunable_tool_chars: n(c.min_prunable_tool_chars, 50_000),
            max_chars: n(c.soft_trim.max_chars, 4_000),
            head_chars: n(c.soft_trim.head_chars, 1_500),
            tail_chars: n(c.soft_trim.tail_chars, 1_500),
            hard_clear: c.hard_clear.enabled.unwrap_or(true),
            placeholder: c.hard_clear.placeholder.clone().unwrap_or_else(|| DEFAULT_PLACEHOLDER.to_string()),
            allow: c.tools.allow.clone(),
            deny: c.tools.deny.clone(),
        }
    }

    /// True when results of `tool` may be pruned: deny wins, and an empty
    /// allow list allows every tool.
    pub fn may_prune(&self, tool: &str) -> bool {
        if self.deny.iter().any(|g| glob_match(g, tool)) {
            return false;
        }
        self.allow.is_empty() || self.allow.iter().any(|g| glob_match(g, tool))
    }
}

/// `*` (any run of characters) and `?` (one character) over a tool name.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Iterative matching with one backtrack point: linear for tool names.
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// What one pruning pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Results cut to head and tail.
    pub trimmed: usize,
    /// Results replaced by the placeholder.
    pub cleared: usize,
    /// The request's size in characters before.
    pub chars_before: usize,
    /// The size after.
    pub chars_after: usize,
}

impl PruneReport {
    /// True when the pass changed anything.
    pub fn changed(&self) -> bool {
        self.trimmed + self.cleared > 0
    }
}

fn chars(m: &Message) -> usize {
    match m {
        Message::User { content } | Message::Tool { content, .. } => content.chars().count(),
        Message::Assistant { content, reasoning, tool_calls } => {
            content.chars().count()
                + reasoning.iter().map(|r| r.text.chars().count()).sum::<usize>()
                + tool_calls.iter().map(|c| c.name.chars().count() + c.input.to_string().chars().count()).sum::<usize>()
        }
    }
}

/// Prune `messages` in place. `fixed_chars` is what the request carries
/// besides the messages (the system prompt, tools); `window` is in tokens.
pub fn prune(messages: &mut [Message], p: &Pruning, fixed_chars: usize, window: u64) -> PruneReport {
    let total = |ms: &[Message]| fixed_chars + ms.iter().map(chars).sum::<usize>();
    let window_chars = (window as f64) * 4.0;
    let ratio = |c: usize| if window_chars > 0.0 { c as f64 / window_chars } else { 0.0 };
    let mut report = PruneReport { chars_before: total(messages), ..PruneReport::default() };
    report.chars_after = report.chars_before;
    if p.mode == PruneMode::Off || ratio(report.chars_before) <= p.soft_trim_ratio {
        return report;
    }
    // Results after the newest `keepLastAssistants` assistant messages stay.
    let protected_from = messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| matches!(m, Message::Assistant { .. }))
        .nth(p.keep_last_assistants.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    let protected_from = if p.keep_last_assistants == 0 { messages.len() } else { protected_from };
    let prunable: Vec<usize> = (0..protected_from)
        .filter(|&i| {
            matches!(&messages[i], Message::Tool { name, content, .. }
            if p.may_prune(name) && content != &p.placeholder)
        })
        .collect();
    for &i in &prunable {
        if let Message::Tool { content, .. } = &mut messages[i] {
            let size = content.chars().count();
            // Saturating: the settings are public, and usize::MAX for either
            // (a config's huge value) means "keep it all", not an overflow.
            if size > p.max_chars && size > p.head_chars.saturating_add(p.tail_chars) {
                let head: String = content.chars().take(p.head_chars).collect();
                let tail: String = content.chars().skip(size - p.tail_chars).collect();
                *content = format!(
                    "{head}\n…\n{tail}\n[tool result trimmed: kept the first {} and last {} of {size} characters]",
                    p.head_chars, p.tail_chars
                );
                report.trimmed += 1;
            }
        }
    }
    let prunable_chars: usize = prunable.iter().map(|&i| chars(&messages[i])).sum();
    if p.hard_clear && prunable_chars >= p.min_prunable_tool_chars {
        for &i in &prunable {
            if ratio(total(messages)) <= p.hard_clear_ratio {
                break;
            }
            if let Message::Tool { content, .. } = &mut messages[i] {
                *content = p.placeholder.clone();
                report.cleared += 1;
            }
        }
    }
    report.chars_after = total(messages);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, size: usize) -> Message {
        Message::Tool { tool_call_id: "c".into(), name: name.into(), content: "x".repeat(size), is_error: false }
    }
    fn assistant() -> Message {
        Message::Assistant { content: "a".into(), reasoning: vec![], tool_calls: vec![] }
    }
    fn settings() -> Pruning {
        Pruning::from_config(&PruningConfig::default(), true)
    }

    #[test]
    fn globs() {
        assert!(glob_match("*", "bash") && glob_match("mcp__*", "mcp__fs__read") && glob_match("re?d", "read"));
        assert!(!glob_match("mcp__*", "bash") && !glob_match("read", "reads"));
        let mut p = settings();
        p.deny = vec!["bash".into()];
        assert!(!p.may_prune("bash") && p.may_prune("read"));
        p.allow = vec!["read".into()];
        assert!(!p.may_prune("grep"));
    }

    #[test]
    fn huge_head_and_tail_keep_a_result_whole_rather_than_overflow() {
        let mut p = settings();
        (p.head_chars, p.tail_chars, p.hard_clear) = (usize::MAX, 10, false);
        let mut ms = vec![tool("read", 10_000), assistant(), assistant(), assistant(), assistant()];
        let before = ms.clone();
        assert!(!prune(&mut ms, &p, 0, 1_000).changed());
        assert_eq!(ms, before);
    }

    #[test]
    fn under_the_soft_ratio_or_off_nothing_changes() {
        let mut ms = vec![tool("read", 10_000), assistant(), assistant(), assistant()];
        let before = ms.clone();
        // 10,000 chars of a 100,000-token (400,000-char) window: 2.5%.
        assert!(!prune(&mut ms, &settings(), 0, 100_000).changed());
        let mut off = settings();
        off.mode = PruneMode::Off;
        assert!(!prune(&mut ms, &off, 0, 1_000).changed());
        assert_eq!(ms, before);
    }

    #[test]
    fn oversized_results_trimmed_then_the_oldest_cleared_and_the_newest_turns_kept() {
        // Window 50,000 tokens = 200,000 chars; the hard line is 100,000.
        let mut ms: Vec<Message> = (0..20).map(|_| tool("bash", 3_900)).collect();
        ms.extend([assistant(), tool("read", 60_000), assistant(), tool("read", 30_000), assistant()]);
        ms.extend([tool("read", 30_000), assistant()]);
        let r = prune(&mut ms, &settings(), 0, 50_000);
        let content = |m: &Message| match m {
            Message::Tool { content, .. } => content.clone(),
            _ => String::new(),
        };
        assert!(content(&ms[21]).starts_with(&"x".repeat(1_500)));
        assert!(
            content(&ms[21]).ends_with("[tool result trimmed: kept the first 1500 and last 1500 of 60000 characters]")
        );
        // Still over the hard line after trimming: the oldest go first.
        assert_eq!(content(&ms[0]), DEFAULT_PLACEHOLDER);
        assert_eq!(content(&ms[10]), DEFAULT_PLACEHOLDER);
        assert_eq!(content(&ms[11]).len(), 3_900, "cleared only until under the line");
        assert_eq!(content(&ms[23]).len(), 30_000, "inside the newest three assistant turns");
        assert_eq!(content(&ms[25]).len(), 30_000);
        assert_eq!((r.trimmed, r.cleared), (1, 11));
        assert!(r.chars_after <= 100_000 && r.chars_before > 190_000);
        // Pruning again changes nothing more.
        let again = prune(&mut ms, &settings(), 0, 50_000);
        assert_eq!((again.trimmed, again.cleared), (0, 0));
    }
}
