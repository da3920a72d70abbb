//! Session pruning in the agent (SPEC 16): right before a model call,
//! when the session's last call is older than `contextPruning.ttl`, old tool
//! results in the agent's in-memory context are trimmed or cleared
//! ([`crate::prune`]). The file is never touched.

use jiff::Timestamp;

use super::Agent;
use crate::provider::cache;
use crate::provider::{Protocol, ToolSpec};
use crate::prune::{self, PruneMode, PruneReport, Pruning};

/// The last pruning pass that changed something, for `/status`.
#[derive(Debug, Clone, PartialEq)]
pub struct LastPrune {
    /// When it ran.
    pub at: Timestamp,
    /// What it did.
    pub report: PruneReport,
}

impl Agent {
    /// The pruning settings for the current model.
    pub fn pruning(&self) -> Pruning {
        let claude =
            self.binding.provider.protocol == Protocol::Anthropic || cache::is_claude(&self.binding.model.model);
        Pruning::from_config(&self.config.context_pruning, claude)
    }

    /// Prune the context before a call, when due. `system` and `tools` are
    /// what the request carries besides the messages.
    pub fn prune_before_call(&mut self, system: Option<&str>, tools: &[ToolSpec], now: Timestamp) {
        let settings = self.pruning();
        if settings.mode == PruneMode::Off {
            return;
        }
        let Some(last) = self.binding.last_call else { return };
        let idle = now.as_second().saturating_sub(last.as_second());
        if idle <= i64::try_from(settings.ttl_secs).unwrap_or(i64::MAX) {
            return;
        }
        let fixed = system.map_or(0, |s| s.chars().count())
            + tools.iter().map(|t| serde_json::to_string(t).map_or(0, |s| s.chars().count())).sum::<usize>();
        let window = self.trigger().window;
        let report = prune::prune(&mut self.context.messages, &settings, fixed, window);
        if report.changed() {
            self.context.last_prune = Some(LastPrune { at: now, report });
        }
    }

    /// `/status`'s line about pruning.
    pub fn pruning_status(&self) -> String {
        let settings = self.pruning();
        let mode = match settings.mode {
            PruneMode::Off => return "pruning off".into(),
            PruneMode::CacheTtl => format!("pruning cache-ttl {}s", settings.ttl_secs),
        };
        match &self.context.last_prune {
            None => format!("{mode}, nothing pruned yet"),
            Some(LastPrune { at, report }) => format!(
                "{mode}, last pruned {}: {} results trimmed, {} cleared, {} → {} characters",
                crate::time::format_ts(*at),
                report.trimmed,
                report.cleared,
                report.chars_before,
                report.chars_after
            ),
        }
    }
}
