//! Every config key, with its default and range, where users look (issue
//! 24): `glrs config keys` prints this table and the README's "Config keys"
//! section is it as Markdown. It sits beside the loader, and a test asks
//! the loader itself (through its unknown-key errors) which keys it
//! accepts, so the two cannot drift apart.

/// One key of `config.json`.
pub struct Key {
    /// The full path: `memoryFlush.enabled`; `<id>` and `<name>` stand for
    /// names the user picks.
    pub path: &'static str,
    /// Its default, as the user writes it (or what happens without it).
    pub default: &'static str,
    /// The values it takes.
    pub range: &'static str,
}

/// Every key the loader accepts, in the order of the README.
pub const KEYS: &[Key] = &[
    Key {
        path: "model",
        default: "the first that works: OPENAI_API_KEY, ANTHROPIC_API_KEY, a local Ollama",
        range: "provider/model-id",
    },
    Key { path: "systemPrompt", default: "none", range: "text" },
    Key { path: "thinking", default: "off", range: "off, low, medium, high" },
    Key { path: "maxStepsPerTurn", default: "100", range: "1-100,000 model calls" },
    Key { path: "compactAt", default: "0.75", range: "0-1 of the window (0: no automatic compaction)" },
    Key { path: "compactWindow", default: "256,000", range: "1,000-100,000,000 tokens" },
    Key { path: "compactModel", default: "the session's model", range: "provider/model-id" },
    Key { path: "keepRecentTokens", default: "20,000", range: "0-100,000,000 tokens" },
    Key { path: "reserveTokens", default: "16,384", range: "0-100,000,000 tokens" },
    Key { path: "reserveTokensFloor", default: "20,000", range: "0-100,000,000 tokens" },
    Key { path: "parentForkMaxTokens", default: "100,000", range: "0-100,000,000 tokens" },
    Key { path: "memoryFlush.enabled", default: "true", range: "true, false" },
    Key { path: "memoryFlush.softThresholdTokens", default: "4,000", range: "0-100,000,000 tokens" },
    Key { path: "memoryFlush.prompt", default: "the built-in flush prompt", range: "text" },
    Key { path: "memoryFlush.systemPrompt", default: "the built-in flush system prompt", range: "text" },
    Key { path: "session.reset.mode", default: "daily", range: "daily, idle, manual" },
    Key { path: "session.reset.atHour", default: "4", range: "0-23 (local time)" },
    Key { path: "session.reset.idleMinutes", default: "60 with mode idle, else none", range: "1 minute to 100 years" },
    Key { path: "session.maintenance.mode", default: "warn", range: "warn, enforce" },
    Key { path: "session.maintenance.pruneAfter", default: "30d", range: "a duration (30d, 12h)" },
    Key { path: "session.maintenance.maxEntries", default: "500", range: "a count" },
    Key { path: "session.maintenance.maxDiskBytes", default: "none", range: "a size (1gb, 800mb)" },
    Key { path: "session.maintenance.highWaterBytes", default: "80% of maxDiskBytes", range: "a size" },
    Key { path: "session.maintenance.cronRetention", default: "24h", range: "a duration" },
    Key { path: "session.maintenance.checkEvery", default: "1d", range: "a duration" },
    Key { path: "session.maintenance.outputRetention", default: "7d", range: "a duration, or false (keep)" },
    Key {
        path: "providers.<id>.type",
        default: "built in for openai, anthropic, azure, ollama",
        range: "openai, anthropic",
    },
    Key { path: "providers.<id>.baseUrl", default: "the provider's own", range: "a URL" },
    Key {
        path: "providers.<id>.apiKeyEnv",
        default: "OPENAI_API_KEY, ANTHROPIC_API_KEY, AZURE_OPENAI_API_KEY",
        range: "a variable name",
    },
    Key { path: "providers.<id>.apiKeyCommand", default: "none", range: "a sh -c command (killed after 30 s)" },
    Key { path: "providers.<id>.endpoint", default: "none (azure needs it)", range: "a URL" },
    Key { path: "providers.<id>.apiVersion", default: "2024-10-21 (azure)", range: "text" },
    Key { path: "providers.<id>.cache", default: "5m", range: "5m, 1h, off (Anthropic prompt caching)" },
    Key {
        path: "providers.<id>.models.<id>.metadata.context",
        default: "the catalogue's, else 256,000",
        range: "1,000-100,000,000 tokens",
    },
    Key {
        path: "providers.<id>.models.<id>.metadata.costPerMTokIn",
        default: "none",
        range: "0-1,000,000 USD per million tokens",
    },
    Key {
        path: "providers.<id>.models.<id>.metadata.costPerMTokOut",
        default: "none",
        range: "0-1,000,000 USD per million tokens",
    },
    Key { path: "retry.attempts", default: "4", range: "1-100" },
    Key { path: "retry.baseDelayMs", default: "500", range: "0-120,000 ms (doubling)" },
    Key { path: "tools.enabled", default: "true", range: "true, false" },
    Key { path: "tools.disabled", default: "[]", range: "tool names" },
    Key { path: "permissions.allow", default: "[]", range: "rules (bash:git status, edit:src/**)" },
    Key { path: "permissions.deny", default: "[]", range: "rules" },
    Key { path: "redact.enabled", default: "true", range: "true, false" },
    Key { path: "redact.patterns", default: "[]", range: "regexes, redacted besides the built-in shapes" },
    Key {
        path: "childEnv.withhold",
        default: "[] (the providers' key variables are always withheld)",
        range: "variable names kept from commands, tools and hooks",
    },
    Key { path: "childEnv.pass", default: "[]", range: "key variables commands, tools and hooks get after all" },
    Key {
        path: "sandbox.mode",
        default: "workspace-write",
        range: "workspace-write, read-only, off (the sandbox the model's commands run in)",
    },
    Key {
        path: "sandbox.writableRoots",
        default: "none (commands get private caches)",
        range: "paths (/…, ~/…, $HOME/…), replacing the default",
    },
    Key {
        path: "sandbox.denyRead",
        default: "~/.ssh, ~/.gnupg, ~/.aws, ~/.config/gcloud, ~/.netrc, ~/.docker/config.json",
        range: "paths, replacing the default (glrs's config folder is always added)",
    },
    Key { path: "sandbox.network", default: "false", range: "true, false" },
    Key {
        path: "sandbox.allowUnixSockets",
        default: "[] (no Unix socket can be made)",
        range: "socket paths commands may connect to; on Linux any entry allows every Unix socket",
    },
    Key { path: "contextPruning.mode", default: "cache-ttl for Claude models, else off", range: "cache-ttl, off" },
    Key { path: "contextPruning.ttl", default: "5m", range: "a duration" },
    Key { path: "contextPruning.keepLastAssistants", default: "3", range: "a count" },
    Key { path: "contextPruning.softTrimRatio", default: "0.3", range: "0-1 of the window" },
    Key { path: "contextPruning.hardClearRatio", default: "0.5", range: "0-1 of the window" },
    Key { path: "contextPruning.minPrunableToolChars", default: "50,000", range: "characters" },
    Key { path: "contextPruning.softTrim.maxChars", default: "4,000", range: "characters" },
    Key { path: "contextPruning.softTrim.headChars", default: "1,500", range: "characters" },
    Key { path: "contextPruning.softTrim.tailChars", default: "1,500", range: "characters" },
    Key { path: "contextPruning.hardClear.enabled", default: "true", range: "true, false" },
    Key { path: "contextPruning.hardClear.placeholder", default: "a note that the result was cleared", range: "text" },
    Key { path: "contextPruning.tools.allow", default: "every tool", range: "tool name globs" },
    Key { path: "contextPruning.tools.deny", default: "[]", range: "tool name globs" },
    Key { path: "hooks.<event>[].command", default: "none", range: "a sh -c command" },
    Key { path: "hooks.<event>[].matcher", default: "every call", range: "a rule (bash:rm -rf*)" },
    Key { path: "hooks.<event>[].timeout", default: "60", range: "seconds" },
    Key { path: "hooks.<event>[].cwd", default: "/", range: "a folder (. is the session's)" },
    Key { path: "mcpServers.<name>.type", default: "stdio, or http with a url", range: "stdio, http" },
    Key { path: "mcpServers.<name>.command", default: "none", range: "a program" },
    Key { path: "mcpServers.<name>.args", default: "[]", range: "arguments" },
    Key { path: "mcpServers.<name>.env", default: "{}", range: "variables (${VAR} expanded)" },
    Key { path: "mcpServers.<name>.cwd", default: "/", range: "a folder (. is the session's)" },
    Key { path: "mcpServers.<name>.url", default: "none", range: "a URL (streamable HTTP)" },
    Key { path: "mcpServers.<name>.headers", default: "{}", range: "HTTP headers" },
    Key { path: "mcpServers.<name>.startupTimeoutSec", default: "30", range: "more than 0 seconds" },
    Key { path: "mcpServers.<name>.toolTimeoutSec", default: "600", range: "more than 0 seconds" },
    Key { path: "checkpoints.enabled", default: "true", range: "true, false (rewind of files off)" },
    Key { path: "checkpoints.exclude", default: "[]", range: "gitignore patterns left out of checkpoints" },
    Key { path: "checkpoints.maxFileBytes", default: "10mb", range: "a size (larger files are left out)" },
    Key { path: "subagents.maxParallel", default: "4", range: "1-64 task calls of one answer at once" },
];

/// The table as Markdown, as the README shows it.
pub fn markdown() -> String {
    let mut out = String::from("| key | default | values |\n|---|---|---|\n");
    for k in KEYS {
        out.push_str(&format!("| `{}` | {} | {} |\n", k.path, k.default, k.range));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields the loader accepts at `path` (a struct), from its error
    /// for a key it does not know; `None` when `path` is no struct.
    fn fields_at(path: &[&str]) -> Option<Vec<String>> {
        let mut value = serde_json::json!({"__probe__": 1});
        for part in path.iter().rev() {
            value = if *part == "[]" { serde_json::json!([value]) } else { serde_json::json!({*part: value}) };
        }
        let err = format!("{:#}", crate::config::Config::parse(&value.to_string()).err()?);
        let (_, expected) = err.split_once("unknown field `__probe__`, expected ")?;
        Some(expected.split('`').skip(1).step_by(2).map(str::to_string).collect())
    }

    /// Every key the loader accepts below `path`, its map levels named as
    /// in [`KEYS`] (`<id>`, `<name>`, `<event>`) and filled with a name.
    fn loader_keys(path: &mut Vec<&'static str>, out: &mut Vec<String>) {
        let maps: &[(&str, &str, &'static str)] = &[
            ("providers", "<id>", "openai"),
            ("providers.openai.models", "<id>", "gpt-4.1"),
            ("mcpServers", "<name>", "s"),
        ];
        let Some(fields) = fields_at(path) else {
            out.push(path.join("."));
            return;
        };
        for field in fields {
            let field: &'static str = Box::leak(field.into_boxed_str());
            path.push(field);
            let here = path.join(".");
            if let Some((_, _, name)) = maps.iter().find(|(at, _, _)| *at == here) {
                path.push(name);
                loader_keys(path, out);
                path.pop();
            } else if path.first() == Some(&"hooks") && path.len() == 2 {
                path.push("[]");
                loader_keys(path, out);
                path.pop();
            } else {
                loader_keys(path, out);
            }
            path.pop();
        }
    }

    #[test]
    fn the_table_holds_every_key_the_loader_accepts_and_no_other() {
        let mut found = Vec::new();
        loader_keys(&mut Vec::new(), &mut found);
        // Named as the table names them.
        let found: std::collections::BTreeSet<String> = found
            .iter()
            .map(|k| {
                let k = k.replacen("providers.openai.models.gpt-4.1.", "providers.<id>.models.<id>.", 1);
                let k = k.replacen("providers.openai.", "providers.<id>.", 1);
                let k = k.replacen("mcpServers.s.", "mcpServers.<name>.", 1);
                match k.strip_prefix("hooks.") {
                    Some(rest) => match rest.split_once(".[].") {
                        Some((_, field)) => format!("hooks.<event>[].{field}"),
                        None => k,
                    },
                    None => k,
                }
            })
            .collect();
        let documented: std::collections::BTreeSet<String> = KEYS.iter().map(|k| k.path.to_string()).collect();
        let missing: Vec<_> = found.difference(&documented).collect();
        let extra: Vec<_> = documented.difference(&found).collect();
        assert!(missing.is_empty() && extra.is_empty(), "not documented: {missing:?}; not accepted: {extra:?}");
    }
}
