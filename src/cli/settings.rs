//! `glrs config path | show` and `glrs models` (SPEC section 11): where the
//! config is, what it says (secrets as `***`), and which models can be
//! used with which key.

use std::io::Write;

use anyhow::{Context, Result};
use clap::Subcommand;
use serde::Serialize;
use serde_json::Value;

use crate::config::Config;
use crate::exit::ExitCode;
use crate::output::{field, stdout_is_terminal};
use crate::paths::Paths;
use crate::provider::{BUILTIN, catalogue};

#[derive(Debug, Subcommand)]
/// The subcommands of `glrs config`.
pub enum ConfigCommand {
    /// Print the config file's path (when there is no file there, defaults apply)
    Path,
    /// Print the config as glrs reads it (GLRS_MODEL applied), secrets as ***
    Show,
    /// List every config key with its default and the values it takes
    Keys {
        /// The table as Markdown (the README's "Config keys" section)
        #[arg(long)]
        markdown: bool,
    },
}

/// `glrs config path | show`.
pub fn config(cmd: ConfigCommand, out: &mut dyn Write) -> Result<ExitCode> {
    let paths = Paths::from_env()?;
    match cmd {
        ConfigCommand::Path => writeln!(out, "{}", paths.config.display())?,
        ConfigCommand::Keys { markdown: true } => write!(out, "{}", crate::config::keys::markdown())?,
        ConfigCommand::Keys { markdown: false } => {
            let rows: Vec<Vec<String>> = crate::config::keys::KEYS
                .iter()
                .map(|k| vec![k.path.to_string(), k.default.to_string(), k.range.to_string()])
                .collect();
            if stdout_is_terminal() {
                crate::output::write_table(out, &["KEY", "DEFAULT", "VALUES"], &rows)?;
            } else {
                for row in rows {
                    writeln!(out, "{}", row.join("\t"))?;
                }
            }
        }
        ConfigCommand::Show => {
            // Checked as every program checks it: a bad file is the same error.
            Config::load_env(&paths)?;
            let mut value = match std::fs::read_to_string(&paths.config) {
                Ok(text) => {
                    serde_json::from_str(&text).with_context(|| format!("config {}", paths.config.display()))?
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    eprintln!("glrs: no config file at {}: defaults apply", paths.config.display());
                    Value::Object(Default::default())
                }
                Err(e) => return Err(e).with_context(|| format!("cannot read config {}", paths.config.display())),
            };
            if let (Some(model), Value::Object(map)) =
                (std::env::var("GLRS_MODEL").ok().filter(|m| !m.is_empty()), &mut value)
            {
                map.insert("model".into(), Value::from(model));
            }
            mask_secrets(&mut value, false);
            writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        }
    }
    Ok(ExitCode::Success)
}

/// Replace every secret-bearing string with `***`: keys, tokens,
/// passwords, the key command (it may hold the key itself), and every value
/// under `env` or `headers` (an MCP server's credentials). `apiKeyEnv` only
/// names a variable and stays.
fn mask_secrets(value: &mut Value, all: bool) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                let lower = key.to_ascii_lowercase();
                let secret = all
                    || (lower != "apikeyenv"
                        && ["apikey", "api_key", "secret", "password", "token", "authorization", "credential"]
                            .iter()
                            .any(|s| lower.contains(s)));
                if secret && v.is_string() {
                    *v = Value::from("***");
                } else {
                    mask_secrets(v, all || lower == "env" || lower == "headers");
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| mask_secrets(v, all)),
        Value::String(s) if all => *s = "***".into(),
        _ => {}
    }
}

/// One usable model (or a provider with no model listed: `provider/*`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ModelRow {
    model: String,
    /// The context window, when a model is named.
    window: Option<u64>,
    /// Where the key comes from: a variable, `apiKeyCommand`, or none.
    key: String,
    /// `set`, `not set`, `command` (not run here), or `none needed`.
    key_status: String,
}

/// `glrs models`: the configured providers and models, their windows and keys.
pub fn models(json: bool, out: &mut dyn Write) -> Result<ExitCode> {
    let paths = Paths::from_env()?;
    let config = Config::load_env(&paths)?;
    let mut providers: Vec<String> = BUILTIN.iter().map(|s| s.to_string()).collect();
    providers.extend(config.providers.keys().filter(|id| !BUILTIN.contains(&id.as_str())).cloned());
    let named: Vec<&str> = [config.model.as_deref(), config.compact_model.as_deref()].into_iter().flatten().collect();
    let mut rows = Vec::new();
    for id in &providers {
        let pc = config.providers.get(id).cloned().unwrap_or_default();
        let default_env = match id.as_str() {
            "openai" if pc.kind.is_none() => Some("OPENAI_API_KEY"),
            "anthropic" if pc.kind.is_none() => Some("ANTHROPIC_API_KEY"),
            "azure" if pc.kind.is_none() => Some("AZURE_OPENAI_API_KEY"),
            _ => None,
        };
        let (key, key_status) = match (&pc.api_key_command, pc.api_key_env.as_deref().or(default_env)) {
            (Some(_), _) => ("apiKeyCommand".to_string(), "command".to_string()),
            (None, Some(var)) => {
                let set = std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
                (var.to_string(), if set { "set" } else { "not set" }.to_string())
            }
            (None, None) => ("-".to_string(), "none needed".to_string()),
        };
        let mut models: Vec<String> = pc.models.keys().cloned().collect();
        let default = match id.as_str() {
            "openai" => Some(crate::provider::select::OPENAI_DEFAULT),
            "anthropic" => Some(crate::provider::select::ANTHROPIC_DEFAULT),
            _ => None,
        };
        for full in named.iter().copied().chain(default) {
            if let Some((p, m)) = full.split_once('/')
                && p == id
                && !models.iter().any(|x| x == m)
            {
                models.push(m.to_string());
            }
        }
        if models.is_empty() {
            rows.push(ModelRow {
                model: format!("{id}/*"),
                window: None,
                key: key.clone(),
                key_status: key_status.clone(),
            });
        }
        for m in models {
            rows.push(ModelRow {
                window: Some(catalogue::context_window(&config, id, &m)),
                model: format!("{id}/{m}"),
                key: key.clone(),
                key_status: key_status.clone(),
            });
        }
    }
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(ExitCode::Success);
    }
    let lines: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            let window = r.window.map_or("-".to_string(), |w| w.to_string());
            [field(&r.model), window, field(&r.key), r.key_status.clone()]
        })
        .collect();
    if stdout_is_terminal() {
        // Aligned for a person; plain tabs for a pipe.
        let header = ["model", "window", "key", "keyStatus"].map(String::from);
        let all: Vec<&[String; 4]> = std::iter::once(&header).chain(&lines).collect();
        let widths: Vec<usize> = (0..4).map(|i| all.iter().map(|l| l[i].chars().count()).max().unwrap_or(0)).collect();
        for line in all {
            let cells: Vec<String> = line.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
            writeln!(out, "{}", cells.join("  ").trim_end())?;
        }
    } else {
        for line in lines {
            writeln!(out, "{}", line.join("\t"))?;
        }
    }
    Ok(ExitCode::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_and_names_of_variables_are_not() {
        let mut v = serde_json::json!({
            "model": "openai/gpt-4.1",
            "keepRecentTokens": 20000,
            "providers": {"anthropic": {"apiKeyCommand": "echo sk-ant-SECRET", "apiKeyEnv": "MY_KEY"}},
            "mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_PAT": "ghp_SECRET"}, "args": ["--token", "x"]}},
            "other": {"authToken": "SECRET", "password": "SECRET"}
        });
        mask_secrets(&mut v, false);
        let text = v.to_string();
        assert!(!text.contains("SECRET"), "{text}");
        assert_eq!(v["providers"]["anthropic"]["apiKeyEnv"], "MY_KEY");
        assert_eq!(v["providers"]["anthropic"]["apiKeyCommand"], "***");
        assert_eq!(v["mcpServers"]["gh"]["env"]["GITHUB_PAT"], "***");
        assert_eq!(v["keepRecentTokens"], 20000);
        assert_eq!(v["model"], "openai/gpt-4.1");
    }
}
