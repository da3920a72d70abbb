//! `config.json` (SPEC section 13): every key the specification names,
//! strictly checked. An unknown key or a bad value is an error naming the
//! file and the full key path (`memoryFlush.enabled`), never a silent
//! default. A missing file means defaults; `GLRS_MODEL` overrides `model`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

mod checkpoints;
pub mod keys;
pub mod mcp;
mod pruning;
mod session;
mod thinking;
pub use checkpoints::{CheckpointsConfig, DEFAULT_MAX_FILE_BYTES};
pub use pruning::{
    DEFAULT_HARD_CLEAR_RATIO, DEFAULT_SOFT_TRIM_RATIO, HardClearConfig, PruneMode, PruningConfig, SoftTrimConfig,
    ToolGlobs,
};
pub use session::{
    Amount, MAX_DURATION_SECS, Maintenance, MaintenanceMode, Reset, ResetMode, SessionConfig, parse_count_rule,
    parse_duration_rule, parse_size_bytes,
};
pub use thinking::Thinking;

/// The built-in provider ids: a provider configured under one of these
/// needs no `type`.
pub const BUILTIN_PROVIDERS: &[&str] = &["openai", "anthropic", "azure", "ollama"];

/// Whether `id` is a built-in provider.
pub fn is_builtin_provider(id: &str) -> bool {
    BUILTIN_PROVIDERS.contains(&id)
}

/// `providers.<id>.cache` (what it does: `provider::cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum CacheTtl {
    #[default]
    #[serde(rename = "5m")]
    /// `"5m"`: the provider's default cache lifetime.
    FiveMinutes,
    #[serde(rename = "1h")]
    /// `"1h"`: the longer cache lifetime.
    OneHour,
    #[serde(rename = "off")]
    /// `"off"`: no cache marks.
    Off,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
/// The whole configuration file (SPEC 13); a key not set is `None` and means the default.
pub struct Config {
    /// `model`: the default model, `provider/model-id`.
    pub model: Option<String>,
    /// `systemPrompt`: the system prompt of new sessions.
    pub system_prompt: Option<String>,
    /// `compactAt`: the compaction trigger as a fraction of the window.
    pub compact_at: Option<f64>,
    /// `compactWindow`: the most of a model's window glrs plans against.
    pub compact_window: Option<u64>,
    /// `compactModel`: the model that writes briefs.
    pub compact_model: Option<String>,
    /// `keepRecentTokens`: how much recent conversation compaction keeps verbatim.
    pub keep_recent_tokens: Option<u64>,
    /// `reserveTokens`: room kept free for the answer.
    pub reserve_tokens: Option<u64>,
    /// `reserveTokensFloor`: the least reserve.
    pub reserve_tokens_floor: Option<u64>,
    /// `parentForkMaxTokens`: the largest parent a new keyed session starts as a copy of.
    pub parent_fork_max_tokens: Option<u64>,
    #[serde(default)]
    /// `memoryFlush.*`.
    pub memory_flush: MemoryFlush,
    #[serde(default)]
    /// `session.*`: resets and maintenance.
    pub session: SessionConfig,
    #[serde(default)]
    /// `providers.<id>`.
    pub providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    /// `retry.*`.
    pub retry: Retry,
    /// Model calls in one turn before it ends with a notice (SPEC 13).
    pub max_steps_per_turn: Option<u64>,
    /// The thinking level of new sessions (SPEC 16).
    pub thinking: Option<Thinking>,
    /// Session pruning (SPEC 16).
    #[serde(default)]
    pub context_pruning: PruningConfig,
    #[serde(default)]
    /// `tools.*`.
    pub tools: ToolsConfig,
    #[serde(default)]
    /// `permissions.*`.
    pub permissions: PermissionsConfig,
    #[serde(default)]
    /// `redact.*`.
    pub redact: RedactConfig,
    #[serde(default)]
    /// `childEnv.*`: the key variables children do not inherit.
    pub child_env: ChildEnvConfig,
    #[serde(default)]
    /// `hooks.<event>` (SPEC 15).
    pub hooks: crate::hooks::HooksConfig,
    #[serde(default)]
    /// `sandbox.*` (SPEC 17).
    pub sandbox: crate::sandbox::SandboxConfig,
    #[serde(default)]
    /// `mcpServers.<name>` (SPEC 15).
    pub mcp_servers: BTreeMap<String, crate::config::mcp::ServerConfig>,
    #[serde(default)]
    /// `checkpoints.*` (SPEC 19).
    pub checkpoints: CheckpointsConfig,
    #[serde(default)]
    /// `subagents.*` (SPEC 20).
    pub subagents: SubagentsConfig,
}

/// `subagents.{maxParallel}` (SPEC 20).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SubagentsConfig {
    /// `maxParallel`: how many `task` calls of one answer run at once.
    pub max_parallel: Option<u64>,
}

/// The most `subagents.maxParallel` may be: each is a process with a model
/// stream of its own.
pub const MAX_PARALLEL_SUBAGENTS: u64 = 64;

/// The default of `subagents.maxParallel`.
pub const DEFAULT_MAX_PARALLEL_SUBAGENTS: usize = 4;

/// `tools.{enabled, disabled}` (SPEC 14, 15).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolsConfig {
    /// `enabled`: false offers the model no tools.
    pub enabled: Option<bool>,
    #[serde(default)]
    /// `disabled`: tools never offered.
    pub disabled: Vec<String>,
}

/// `childEnv.{withhold, pass}`: the variables `bash` commands, exec tools,
/// hooks and `apiKeyCommand` do not inherit are the providers' key
/// variables and `withhold`, less those `pass` names.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChildEnvConfig {
    #[serde(default)]
    /// `withhold`: more variables to keep from children (a token, a password).
    pub withhold: Vec<String>,
    #[serde(default)]
    /// `pass`: key variables children get after all.
    pub pass: Vec<String>,
}

/// `permissions.{allow, deny}`: `TOOL` or `TOOL:GLOB` rules.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PermissionsConfig {
    #[serde(default)]
    /// `allow`: rules whose calls run without asking.
    pub allow: Vec<String>,
    #[serde(default)]
    /// `deny`: rules whose calls are refused.
    pub deny: Vec<String>,
}

/// `redact.{enabled, patterns}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RedactConfig {
    /// `enabled`: false turns redaction off.
    pub enabled: Option<bool>,
    #[serde(default)]
    /// `patterns`: more regexes whose matches are redacted.
    pub patterns: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
/// `memoryFlush`: the silent turn before compaction (SPEC 7).
pub struct MemoryFlush {
    /// `enabled`: false turns the flush off.
    pub enabled: Option<bool>,
    /// `softThresholdTokens`: how far below the trigger the flush runs.
    pub soft_threshold_tokens: Option<u64>,
    /// `prompt`: the flush turn's user message.
    pub prompt: Option<String>,
    /// `systemPrompt`: appended to the system prompt for the flush.
    pub system_prompt: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
/// `providers.<id>.type`: the protocol of a provider that is not built in.
pub enum ProviderType {
    /// OpenAI-compatible chat completions.
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
/// `providers.<id>`: how to reach a provider.
pub struct ProviderConfig {
    #[serde(rename = "type")]
    /// `type`.
    pub kind: Option<ProviderType>,
    /// `baseUrl`.
    pub base_url: Option<String>,
    /// `apiKeyEnv`: the variable holding the key.
    pub api_key_env: Option<String>,
    /// `apiKeyCommand`: a command printing the key.
    pub api_key_command: Option<String>,
    /// `endpoint` (Azure).
    pub endpoint: Option<String>,
    /// `apiVersion` (Azure).
    pub api_version: Option<String>,
    #[serde(default)]
    /// `models.<id>`.
    pub models: BTreeMap<String, ModelConfig>,
    /// Prompt caching for Claude models: `"5m"` (default), `"1h"`, `"off"`.
    pub cache: Option<CacheTtl>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
/// `providers.<id>.models.<model>`.
pub struct ModelConfig {
    #[serde(default)]
    /// `metadata`.
    pub metadata: ModelMetadata,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
/// `…models.<model>.metadata`: what glrs cannot ask the provider.
pub struct ModelMetadata {
    /// `context`: the context window, in tokens.
    pub context: Option<u64>,
    /// `costPerMTokIn`: US dollars per million input tokens.
    pub cost_per_m_tok_in: Option<f64>,
    /// `costPerMTokOut`: US dollars per million output tokens.
    pub cost_per_m_tok_out: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
/// `retry`: how model calls are retried.
pub struct Retry {
    /// `attempts`: tries in all.
    pub attempts: Option<u32>,
    /// `baseDelayMs`: the first backoff, doubling after.
    pub base_delay_ms: Option<u64>,
}

impl Config {
    /// Read the config file at `path`; a missing file is the defaults. The
    /// `GLRS_MODEL` override is applied by [`Config::load_env`].
    pub fn load(path: &Path) -> Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(e).with_context(|| format!("cannot read config {}", path.display())),
        };
        let config = Config::parse(&text).with_context(|| format!("config {}", path.display()))?;
        Ok(config)
    }

    /// The config named by the environment, with `GLRS_MODEL` applied.
    pub fn load_env(paths: &crate::Paths) -> Result<Config> {
        // A file named on purpose must be there: a typo is no silent
        // "no config" (issue 24). Only the default place may be missing.
        let named = std::env::var_os("GLRS_CONFIG").is_some_and(|v| !v.is_empty());
        if named && !paths.config.exists() {
            bail!("GLRS_CONFIG names {}, which does not exist", paths.config.display());
        }
        let mut config = Config::load(&paths.config)?;
        if let Some(model) = std::env::var("GLRS_MODEL").ok().filter(|m| !m.is_empty()) {
            check_model_name("GLRS_MODEL", &model)?;
            config.model = Some(model);
        }
        Ok(config)
    }

    /// Parse and check config text.
    pub fn parse(text: &str) -> Result<Config> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let config: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            // A syntax error has no key path (`?`, or `.` at the top): the
            // message's line and column say where.
            if path == "." || path.contains('?') {
                anyhow::anyhow!("{inner}")
            } else {
                anyhow::anyhow!("{path}: {inner}")
            }
        })?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<()> {
        if let Some(m) = &self.model {
            check_model_name("model", m)?;
        }
        if let Some(m) = &self.compact_model {
            check_model_name("compactModel", m)?;
        }
        if let Some(v) = self.compact_at
            && !(0.0..=1.0).contains(&v)
        {
            bail!("compactAt: must be between 0 and 1 (0 turns automatic compaction off), got {v}");
        }
        if let Some(h) = self.session.reset.at_hour
            && h > 23
        {
            bail!("session.reset.atHour: must be an hour from 0 to 23, got {h}");
        }
        let m = &self.session.maintenance;
        for (key, value) in [
            ("pruneAfter", &m.prune_after),
            ("cronRetention", &m.cron_retention),
            ("checkEvery", &m.check_every),
            ("outputRetention", &m.output_retention),
        ] {
            if let Some(v) = value {
                parse_duration_rule(v).with_context(|| format!("session.maintenance.{key}"))?;
            }
        }
        if let Some(v) = &m.max_entries {
            parse_count_rule(v).context("session.maintenance.maxEntries")?;
        }
        for (key, value) in [("maxDiskBytes", &m.max_disk_bytes), ("highWaterBytes", &m.high_water_bytes)] {
            if let Some(v) = value {
                parse_size_bytes(v).with_context(|| format!("session.maintenance.{key}"))?;
            }
        }
        for (id, p) in &self.providers {
            if id.is_empty() || id.contains('/') {
                bail!("providers.{id}: a provider id is a name without '/'");
            }
            for (key, url) in [("baseUrl", &p.base_url), ("endpoint", &p.endpoint)] {
                if let Some(url) = url
                    && !(url.starts_with("http://") || url.starts_with("https://"))
                {
                    bail!("providers.{id}.{key}: must be an http:// or https:// URL, got {url:?}");
                }
            }
            if p.kind.is_none() && !is_builtin_provider(id) {
                bail!(
                    "providers.{id}.type: required for a provider that is not built in (\"openai\" or \"anthropic\")"
                );
            }
        }
        pruning::validate_pruning(&self.context_pruning)?;
        self.checkpoints.max_file_bytes()?;
        crate::sandbox::policy::check_config(&self.sandbox)?;
        self.check_ranges()
    }

    /// Every number in its range, so no arithmetic on a config value can
    /// overflow, wrap or panic (issue 14: `idleMinutes: 1000000000000`
    /// panicked, `retry.baseDelayMs` at its maximum overflowed a duration,
    /// `compactWindow: 0` compacted at every turn).
    fn check_ranges(&self) -> Result<()> {
        let mut numbers: Vec<(String, Option<u64>, u64, u64)> = vec![
            ("compactWindow".into(), self.compact_window, MIN_WINDOW, MAX_TOKENS),
            ("keepRecentTokens".into(), self.keep_recent_tokens, 0, MAX_TOKENS),
            ("reserveTokens".into(), self.reserve_tokens, 0, MAX_TOKENS),
            ("reserveTokensFloor".into(), self.reserve_tokens_floor, 0, MAX_TOKENS),
            ("parentForkMaxTokens".into(), self.parent_fork_max_tokens, 0, MAX_TOKENS),
            ("memoryFlush.softThresholdTokens".into(), self.memory_flush.soft_threshold_tokens, 0, MAX_TOKENS),
            ("session.reset.idleMinutes".into(), self.session.reset.idle_minutes, 1, MAX_DURATION_SECS / 60),
            ("retry.attempts".into(), self.retry.attempts.map(u64::from), 1, MAX_ATTEMPTS),
            ("retry.baseDelayMs".into(), self.retry.base_delay_ms, 0, MAX_BASE_DELAY_MS),
            ("maxStepsPerTurn".into(), self.max_steps_per_turn, 1, MAX_STEPS),
            ("subagents.maxParallel".into(), self.subagents.max_parallel, 1, MAX_PARALLEL_SUBAGENTS),
        ];
        let pruning = &self.context_pruning;
        for (key, value) in [
            ("keepLastAssistants", pruning.keep_last_assistants),
            ("minPrunableToolChars", pruning.min_prunable_tool_chars),
            ("softTrim.maxChars", pruning.soft_trim.max_chars),
            ("softTrim.headChars", pruning.soft_trim.head_chars),
            ("softTrim.tailChars", pruning.soft_trim.tail_chars),
        ] {
            numbers.push((format!("contextPruning.{key}"), value, 0, MAX_CHARS));
        }
        for (id, p) in &self.providers {
            for (model, m) in &p.models {
                let key = format!("providers.{id}.models.{model}.metadata");
                numbers.push((format!("{key}.context"), m.metadata.context, MIN_WINDOW, MAX_TOKENS));
                for (name, cost) in
                    [("costPerMTokIn", m.metadata.cost_per_m_tok_in), ("costPerMTokOut", m.metadata.cost_per_m_tok_out)]
                {
                    if let Some(c) = cost
                        && !(c.is_finite() && (0.0..=MAX_COST_PER_M).contains(&c))
                    {
                        bail!("{key}.{name}: must be a price in USD from 0 to {MAX_COST_PER_M}, got {c}");
                    }
                }
            }
        }
        for (key, value, min, max) in numbers {
            if let Some(v) = value
                && !(min..=max).contains(&v)
            {
                bail!("{key}: must be from {min} to {max}, got {v}");
            }
        }
        self.disabled_tools()?;
        crate::permissions::Permissions::new(&self.permissions.allow, &self.permissions.deny, &[], false)?;
        self.redactor()?;
        self.hooks.validate()?;
        crate::config::mcp::check_all(&self.mcp_servers)?;
        Ok(())
    }

    /// `subagents.maxParallel`, else its default.
    pub fn max_parallel_subagents(&self) -> usize {
        self.subagents.max_parallel.map_or(DEFAULT_MAX_PARALLEL_SUBAGENTS, |n| n as usize)
    }

    /// `tools.disabled` as one glob set over tool names (`None` when empty);
    /// the error names the entry.
    pub fn disabled_tools(&self) -> Result<Option<globset::GlobSet>> {
        let mut set = globset::GlobSetBuilder::new();
        for (i, pattern) in self.tools.disabled.iter().enumerate() {
            set.add(globset::Glob::new(pattern).map_err(|e| anyhow::anyhow!("tools.disabled[{i}]: {e}"))?);
        }
        let disabled = set.build().map_err(|e| anyhow::anyhow!("tools.disabled: {e}"))?;
        Ok((!self.tools.disabled.is_empty()).then_some(disabled))
    }

    /// The redactor `redact.*` and the providers' key variables ask for.
    pub fn redactor(&self) -> Result<crate::redact::Redactor> {
        if self.redact.enabled == Some(false) {
            return Ok(crate::redact::Redactor::off());
        }
        let envs = self.providers.values().filter_map(|p| p.api_key_env.clone());
        crate::redact::Redactor::new(true, &self.redact.patterns, crate::redact::key_values(envs))
    }

    /// The variables children do not inherit (`childEnv`): every
    /// provider's `apiKeyEnv`, the key variables glrs reads by default and
    /// `childEnv.withhold`, less `childEnv.pass`.
    pub fn withheld_env(&self) -> Vec<String> {
        let configured = self.providers.values().filter_map(|p| p.api_key_env.clone());
        let mut names: Vec<String> = crate::redact::KEY_VARIABLES.iter().map(|s| s.to_string()).collect();
        names.extend(configured.chain(self.child_env.withhold.iter().cloned()));
        names.retain(|n| !self.child_env.pass.contains(n));
        names.sort();
        names.dedup();
        names
    }

    /// The metadata configured for `provider/model`, if any.
    pub fn model_metadata(&self, provider: &str, model: &str) -> Option<&ModelMetadata> {
        self.providers.get(provider)?.models.get(model).map(|m| &m.metadata)
    }
}

/// The largest token count a key takes (a hundred times today's largest
/// windows): token arithmetic stays far from overflow.
pub const MAX_TOKENS: u64 = 100_000_000;
/// The smallest context window that leaves room to work in.
pub const MIN_WINDOW: u64 = 1_000;
/// The most characters a `contextPruning` count takes (about a billion):
/// `headChars + tailChars` cannot overflow.
const MAX_CHARS: u64 = 1_000_000_000;
const MAX_ATTEMPTS: u64 = 100;
/// Two minutes: the longest wait between attempts anyway.
const MAX_BASE_DELAY_MS: u64 = 120_000;
const MAX_STEPS: u64 = 100_000;
const MAX_COST_PER_M: f64 = 1_000_000.0;

/// `maxStepsPerTurn` when not configured.
pub const DEFAULT_MAX_STEPS: u64 = 100;

fn check_model_name(key: &str, name: &str) -> Result<(), MisnamedModel> {
    match name.split_once('/') {
        Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok(()),
        _ => Err(MisnamedModel(format!("{key}: {}", misnamed_model(name)))),
    }
}

/// A model named without its provider (`GLRS_MODEL=gpt-4.1`): a mistake in
/// how glrs was called (the programs exit 2), not a failure.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MisnamedModel(pub String);

/// What to say about a model name without a provider: the likely provider
/// when the name says it (`gpt-4.1` is OpenAI's), else the form. The one
/// wording for `--model`, `GLRS_MODEL` and the config's `model`.
pub fn misnamed_model(name: &str) -> String {
    let bare = name.trim_matches('/');
    let lower = bare.to_ascii_lowercase();
    let provider = if lower.starts_with("gpt-")
        || lower.starts_with("chatgpt")
        || lower.starts_with('o') && lower[1..].starts_with(|c: char| c.is_ascii_digit())
    {
        Some("openai")
    } else if lower.starts_with("claude") {
        Some("anthropic")
    } else if ["llama", "qwen", "mistral", "gemma", "phi", "deepseek"].iter().any(|p| lower.starts_with(p)) {
        Some("ollama")
    } else {
        None
    };
    match provider {
        Some(p) if !bare.is_empty() && !bare.contains('/') => {
            format!("a model is named provider/model-id: did you mean {p}/{bare}? (got {name:?})")
        }
        _ => format!(
            "a model is named provider/model-id (e.g. openai/gpt-4.1, anthropic/claude-sonnet-4-5), got {name:?}"
        ),
    }
}

#[cfg(test)]
mod tests;
