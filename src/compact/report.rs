//! What `glrs-compact` says about one session, as a type: printed as a line
//! for people, or as JSON (`--json`) for programs. The chat runs
//! `glrs-compact --json` and reads this type back, so it never parses the
//! human line.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::run::{Landed, Outcome};
use crate::SessionId;
use crate::output::thousands;

/// The result for one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum Report {
    /// A brief landed.
    #[serde(rename_all = "camelCase")]
    Compacted {
        /// The session.
        id: String,
        /// The context estimate before.
        tokens_before: u64,
        /// The context estimate after.
        tokens_after: u64,
        /// The artifact written.
        artifact: PathBuf,
        /// The brief's label.
        label: String,
        /// The first entry kept verbatim.
        first_kept: u64,
        /// The model that wrote the brief.
        model: String,
    },
    /// No user message gives anything to summarise (success, nothing written).
    Nothing {
        /// The session.
        id: String,
    },
    /// Another compaction of the session landed while this one waited for
    /// it (nothing written).
    CompactedMeanwhile {
        /// The session.
        id: String,
    },
    /// A `before_compact` hook cancelled this automatic compaction
    /// (nothing written).
    Cancelled {
        /// The session.
        id: String,
        /// The hook's reason (its stderr).
        reason: String,
    },
    /// `--if-needed`: the session is under its trigger (nothing written).
    #[serde(rename_all = "camelCase")]
    UnderTrigger {
        /// The session.
        id: String,
        /// Its `contextTokens`.
        tokens: u64,
        /// The trigger, or none when automatic compaction is off.
        trigger: Option<u64>,
    },
}

impl Report {
    /// The report of a compaction's outcome.
    pub fn of(id: &SessionId, outcome: &Outcome) -> Report {
        let id = id.to_string();
        match outcome {
            Outcome::Nothing => Report::Nothing { id },
            Outcome::CompactedMeanwhile => Report::CompactedMeanwhile { id },
            Outcome::Compacted(Landed { tokens_before, tokens_after, artifact, label, first_kept, model, .. }) => {
                Report::Compacted {
                    id,
                    tokens_before: *tokens_before,
                    tokens_after: *tokens_after,
                    artifact: artifact.clone(),
                    label: label.clone(),
                    first_kept: *first_kept,
                    model: model.clone(),
                }
            }
        }
    }

    /// Whether a brief landed.
    pub fn landed(&self) -> bool {
        matches!(self, Report::Compacted { .. })
    }

    /// The line glrs-compact prints for people.
    pub fn line(&self) -> String {
        match self {
            Report::Compacted { id, tokens_before, tokens_after, artifact, .. } => format!(
                "{id}: compacted, {} → {} tokens, artifact {}",
                thousands(*tokens_before),
                thousands(*tokens_after),
                artifact.display()
            ),
            Report::Nothing { id } => format!("{id}: nothing to compact"),
            Report::CompactedMeanwhile { id } => {
                format!("{id}: another compaction landed meanwhile; nothing to compact")
            }
            Report::Cancelled { id, reason } => {
                let reason = crate::limits::one_line(reason, 200);
                format!("{id}: compaction cancelled by a before_compact hook: {reason}")
            }
            Report::UnderTrigger { id, tokens, trigger } => {
                let line =
                    trigger.map_or("automatic compaction is off".into(), |t| format!("trigger {}", thousands(t)));
                let noun = if *tokens == 1 { "token" } else { "tokens" };
                format!("{id}: {} {noun}, under its {line}; nothing to do", thousands(*tokens))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_line() {
        let r = Report::Compacted {
            id: "3f9a1c2b".into(),
            tokens_before: 250_000,
            tokens_after: 18_250,
            artifact: PathBuf::from("/a/b.md"),
            label: "l".into(),
            first_kept: 7,
            model: "openai/gpt-4.1".into(),
        };
        assert_eq!(r.line(), "3f9a1c2b: compacted, 250,000 → 18,250 tokens, artifact /a/b.md");
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            json,
            r#"{"outcome":"compacted","id":"3f9a1c2b","tokensBefore":250000,"tokensAfter":18250,"artifact":"/a/b.md","label":"l","firstKept":7,"model":"openai/gpt-4.1"}"#
        );
        assert_eq!(serde_json::from_str::<Report>(&json).unwrap(), r);
        let nothing = Report::Nothing { id: "3f9a1c2b".into() };
        assert_eq!(serde_json::to_string(&nothing).unwrap(), r#"{"outcome":"nothing","id":"3f9a1c2b"}"#);
        assert_eq!(nothing.line(), "3f9a1c2b: nothing to compact");
    }
}
