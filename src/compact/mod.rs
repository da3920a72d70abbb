//! Compaction (SPEC section 6): summarise the older part of a session into
//! one `compacted` entry (the brief), keep the recent part verbatim, and
//! write what was replaced, whole, to an artifact. Nothing is deleted from
//! the session: the replay boundary moves.
//!
//! - `mod` (here): the settings and the trigger;
//! - `plan`: the cut, and the replaced part as artifact blocks;
//! - `brief`: asking the model for the brief (in pieces when needed) and
//!   the mechanical "Exact references" section;
//! - `artifact`: artifact files: names, front matter, listing;
//! - `flush`: the memory flush's rules (when, which cycle, its prompts);
//! - `run`: one compaction from snapshot to landing.

pub mod artifact;
pub mod brief;
pub mod flush;
#[cfg(test)]
mod fuzz;
pub mod plan;
pub mod references;
pub mod report;
pub mod run;

use crate::config::Config;
use crate::provider::catalogue;

/// Compaction settings, with the specification's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// `compactAt`: the trigger as a fraction of the window (0 turns automatic compaction off).
    pub compact_at: f64,
    /// `compactWindow`: the most of a model's window glrs plans against.
    pub compact_window: u64,
    /// `keepRecentTokens`: how much recent conversation survives verbatim.
    pub keep_recent_tokens: u64,
    /// `reserveTokens`: room kept free for the answer.
    pub reserve_tokens: u64,
    /// `reserveTokensFloor`: the least reserve (0 turns the reserve rule off).
    pub reserve_tokens_floor: u64,
}

impl Settings {
    /// The settings of `config`, defaults filled in.
    pub fn from_config(config: &Config) -> Settings {
        Settings {
            compact_at: config.compact_at.unwrap_or(0.75),
            compact_window: config.compact_window.unwrap_or(256_000),
            keep_recent_tokens: config.keep_recent_tokens.unwrap_or(20_000),
            reserve_tokens: config.reserve_tokens.unwrap_or(16_384),
            reserve_tokens_floor: config.reserve_tokens_floor.unwrap_or(20_000),
        }
    }

    /// What the cut keeps verbatim on a model whose window is `window`:
    /// `keepRecentTokens`, never more than a quarter of the window (SPEC 6,
    /// "The cut"). The default 20k is for the default 256k window; kept
    /// whole on a 16k model it would leave nothing to summarise.
    pub fn keep_recent_for(&self, window: u64) -> u64 {
        self.keep_recent_tokens.min(window / 4)
    }
}

/// Where automatic compaction starts for one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trigger {
    /// The window glrs plans against.
    pub window: u64,
    /// `compactAt × window`, when automatic compaction is on.
    pub fraction_line: Option<u64>,
    /// `window − reserve`, unless ignored for a small model.
    pub reserve_line: Option<u64>,
    /// True when the reserve rule was dropped because it would leave too
    /// little to summarise (say so once).
    pub reserve_ignored: bool,
    /// What the cut keeps verbatim on this window ([`Settings::keep_recent_for`]).
    pub keep_recent: u64,
}

impl Trigger {
    /// The trigger for `provider/model` under `config` (SPEC 6, "When").
    pub fn for_model(config: &Config, provider: &str, model: &str) -> Trigger {
        let settings = Settings::from_config(config);
        let configured = config.model_metadata(provider, model).and_then(|m| m.context);
        let window = configured
            .unwrap_or_else(|| catalogue::context_window(config, provider, model).min(settings.compact_window));
        Trigger::new(settings, window)
    }

    /// The trigger of a session that last used `model` (`provider/model-id`),
    /// else the configured model; with neither, the default window.
    pub fn for_session(config: &Config, model: Option<&str>) -> Trigger {
        let named = model.or(config.model.as_deref()).and_then(|m| m.split_once('/'));
        match named {
            Some((provider, model)) if !provider.is_empty() && !model.is_empty() => {
                Trigger::for_model(config, provider, model)
            }
            _ => {
                let settings = Settings::from_config(config);
                Trigger::new(settings, catalogue::DEFAULT_WINDOW.min(settings.compact_window))
            }
        }
    }

    /// The trigger for `s` on a model whose window is `window`.
    pub fn new(s: Settings, window: u64) -> Trigger {
        let keep_recent = s.keep_recent_for(window);
        if s.compact_at <= 0.0 {
            return Trigger { window, fraction_line: None, reserve_line: None, reserve_ignored: false, keep_recent };
        }
        let fraction_line = Some((s.compact_at * window as f64) as u64);
        let reserve = s.reserve_tokens.max(s.reserve_tokens_floor);
        let line = window.saturating_sub(reserve);
        // A small model: compacting at `line` would summarise no more than
        // what the cut keeps verbatim, so the reserve rule goes.
        let small = line.saturating_sub(keep_recent) <= keep_recent;
        Trigger { window, fraction_line, reserve_line: (!small).then_some(line), reserve_ignored: small, keep_recent }
    }

    /// The configured values that cannot work on this trigger's window, one
    /// sentence each naming its key: said once when a chat starts (SPEC 6).
    /// Defaults scale with the window silently; only what the person set is
    /// named.
    pub fn misfits(&self, config: &Config, model: &str) -> Vec<String> {
        let mut said = Vec::new();
        let window = self.window;
        if let Some(keep) = config.keep_recent_tokens.filter(|k| *k > self.keep_recent) {
            said.push(format!(
                "keepRecentTokens ({keep}) is more than a quarter of {model}'s {window}-token window: compaction keeps \
                 the newest {} tokens verbatim",
                self.keep_recent
            ));
        }
        let reserve_set = config.reserve_tokens.is_some() || config.reserve_tokens_floor.is_some();
        if self.reserve_ignored && reserve_set {
            let reserve = Settings::from_config(config);
            said.push(format!(
                "reserveTokens/reserveTokensFloor ({}) leave too little of {model}'s {window}-token window to \
                 summarise: the reserve rule is ignored, and compaction starts at compactAt ({}) of the window",
                reserve.reserve_tokens.max(reserve.reserve_tokens_floor),
                reserve.compact_at
            ));
        }
        said
    }

    /// The context size past which compaction starts; `None` when off.
    pub fn threshold(&self) -> Option<u64> {
        match (self.fraction_line, self.reserve_line) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// True when a context of this size should be compacted.
    pub fn is_over(&self, context_tokens: u64) -> bool {
        self.threshold().is_some_and(|t| context_tokens > t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings::from_config(&Config::default())
    }

    #[test]
    fn the_earlier_line_wins() {
        // 200k: 0.75 × 200k = 150k; 200k − 20k = 180k.
        let t = Trigger::new(settings(), 200_000);
        assert_eq!(t.threshold(), Some(150_000));
        assert!(t.is_over(150_001) && !t.is_over(150_000));
        // 0.95 on 200k is 190k: the reserve line (180k) comes first.
        let t = Trigger::new(Settings { compact_at: 0.95, ..settings() }, 200_000);
        assert_eq!(t.threshold(), Some(180_000));
        // The floor lifts a small reserve; a floor of 0 leaves reserveTokens.
        let t = Trigger::new(Settings { compact_at: 0.95, reserve_tokens: 1000, ..settings() }, 200_000);
        assert_eq!(t.reserve_line, Some(180_000));
        let t = Trigger::new(
            Settings { compact_at: 0.95, reserve_tokens: 1000, reserve_tokens_floor: 0, ..settings() },
            200_000,
        );
        assert_eq!(t.reserve_line, Some(199_000));
    }

    #[test]
    fn zero_turns_it_off_and_small_models_drop_the_reserve() {
        assert_eq!(Trigger::new(Settings { compact_at: 0.0, ..settings() }, 200_000).threshold(), None);
        let t = Trigger::new(settings(), 32_768);
        assert!(t.reserve_ignored);
        assert_eq!(t.threshold(), Some(24_576));
    }

    #[test]
    fn the_kept_part_scales_with_the_window() {
        assert_eq!(Trigger::new(settings(), 256_000).keep_recent, 20_000);
        // Issue 33: a 16k model keeps about 4k, so a compaction at 12k has 8k to summarise.
        let t = Trigger::new(settings(), 16_384);
        assert_eq!((t.keep_recent, t.threshold()), (4_096, Some(12_288)));
        let quiet = Config::parse(r#"{}"#).unwrap();
        assert!(t.misfits(&quiet, "local/m").is_empty(), "defaults scale silently");
        let set = Config::parse(r#"{"keepRecentTokens": 20000, "reserveTokensFloor": 20000}"#).unwrap();
        let said = Trigger::new(Settings::from_config(&set), 16_384).misfits(&set, "local/m");
        assert!(said[0].starts_with("keepRecentTokens (20000)") && said[0].contains("4096"), "{said:?}");
        assert!(said[1].starts_with("reserveTokens/reserveTokensFloor (20000)"), "{said:?}");
    }

    #[test]
    fn windows_come_from_metadata_else_the_smaller_of_model_and_compact_window() {
        let config =
            Config::parse(r#"{"providers": {"openai": {"models": {"x": {"metadata": {"context": 500000}}}}}}"#)
                .unwrap();
        assert_eq!(Trigger::for_model(&config, "openai", "x").window, 500_000);
        assert_eq!(Trigger::for_model(&config, "openai", "gpt-4.1").window, 256_000);
        assert_eq!(Trigger::for_model(&config, "openai", "gpt-4o").window, 128_000);
    }
}
