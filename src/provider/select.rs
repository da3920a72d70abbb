//! Which model to use: `--model`, else `GLRS_MODEL` or `model` in the
//! config, else the first that works of an OpenAI key, an Anthropic key, and
//! an Ollama server on localhost (SPEC section 4).

use std::time::Duration;

use anyhow::{Result, bail};

use crate::config::Config;

/// A model named `provider/model-id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    /// The provider id.
    pub provider: String,
    /// The model id at that provider.
    pub model: String,
}

impl ModelRef {
    /// Read `provider/model-id`.
    pub fn parse(name: &str) -> Result<ModelRef> {
        match name.split_once('/') {
            Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok(ModelRef { provider: p.into(), model: m.into() }),
            _ => bail!("{}", crate::config::misnamed_model(name)),
        }
    }

    /// For clap's `value_parser`: a `--model` that is not `provider/model-id`
    /// is a usage error (exit 2) that suggests the provider.
    pub fn check_arg(name: &str) -> Result<String, String> {
        ModelRef::parse(name).map(|_| name.to_string()).map_err(|_| crate::config::misnamed_model(name))
    }

    /// `provider/model-id`.
    pub fn full(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }
}

/// The default models of the auto-pick.
pub const OPENAI_DEFAULT: &str = "openai/gpt-4.1";
/// The model picked when only `ANTHROPIC_API_KEY` is set.
pub const ANTHROPIC_DEFAULT: &str = "anthropic/claude-sonnet-4-5";

/// The models the configuration names, as `provider/model-id`, sorted:
/// `model`, `compactModel`, every `providers.<id>.models.<m>`, and the
/// defaults of the providers whose key is in the environment.
pub fn configured_models(config: &Config) -> Vec<String> {
    let set = |var: &str| std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
    let mut names: Vec<String> = [config.model.clone(), config.compact_model.clone()].into_iter().flatten().collect();
    for (id, provider) in &config.providers {
        names.extend(provider.models.keys().map(|m| format!("{id}/{m}")));
    }
    if set("OPENAI_API_KEY") {
        names.push(OPENAI_DEFAULT.to_string());
    }
    if set("ANTHROPIC_API_KEY") {
        names.push(ANTHROPIC_DEFAULT.to_string());
    }
    names.sort();
    names.dedup();
    names
}

/// Decide the model for a chat.
pub async fn choose(config: &Config, explicit: Option<&str>, config_path: &std::path::Path) -> Result<ModelRef> {
    if let Some(name) = explicit.or(config.model.as_deref()) {
        return ModelRef::parse(name);
    }
    let set = |var: &str| std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
    if set("OPENAI_API_KEY") {
        return ModelRef::parse(OPENAI_DEFAULT);
    }
    if set("ANTHROPIC_API_KEY") {
        return ModelRef::parse(ANTHROPIC_DEFAULT);
    }
    if let Some(model) = ollama_model(config).await {
        return Ok(ModelRef { provider: "ollama".into(), model });
    }
    bail!(
        "no model configured, and none found to use: no OPENAI_API_KEY, no ANTHROPIC_API_KEY, no Ollama server \
         answering with a model. Set one of those keys, or name a model with --model provider/model-id, \
         GLRS_MODEL, or {{\"model\": \"openai/gpt-4.1\"}} in {path}. For a local server (llama.cpp, vLLM, \
         LM Studio) give its address as providers.<id>.baseUrl in {path}: {{\"model\": \"local/MODEL\", \
         \"providers\": {{\"local\": {{\"type\": \"openai\", \"baseUrl\": \"http://127.0.0.1:8080/v1\"}}}}}}",
        path = config_path.display()
    )
}

/// The first model an Ollama server offers, if one answers quickly.
async fn ollama_model(config: &Config) -> Option<String> {
    let base = config
        .providers
        .get("ollama")
        .and_then(|p| p.base_url.clone())
        .unwrap_or_else(|| "http://localhost:11434/v1".to_string());
    let root = base.trim_end_matches('/').trim_end_matches("/v1").to_string();
    let client = super::http_client().timeout(Duration::from_millis(700)).build().ok()?;
    let tags: serde_json::Value = client.get(format!("{root}/api/tags")).send().await.ok()?.json().await.ok()?;
    tags.get("models")?.as_array()?.first()?.get("name")?.as_str().map(str::to_string)
}
