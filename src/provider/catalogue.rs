//! The built-in catalogue of context windows (SPEC section 4, last
//! paragraph): config `metadata.context` wins, then this table, then
//! 256,000.

/// The window assumed for a model nobody knows.
pub const DEFAULT_WINDOW: u64 = 256_000;

/// Model id prefixes and their windows; the longest matching prefix wins.
const WINDOWS: &[(&str, u64)] = &[
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude-", 200_000),
    ("llama3", 128_000),
    ("llama-3", 128_000),
    ("qwen2.5", 32_768),
    ("qwen3", 40_960),
    ("mistral", 32_768),
    ("gemma3", 128_000),
    ("deepseek", 128_000),
];

/// The catalogue's window for a model id (without the provider), if known.
pub fn known_window(model_id: &str) -> Option<u64> {
    // Routers name models `vendor/model` (OpenRouter): look at the last part too.
    let candidates = [model_id, model_id.rsplit('/').next().unwrap_or(model_id)];
    candidates
        .iter()
        .flat_map(|id| WINDOWS.iter().filter(move |(prefix, _)| id.starts_with(prefix)))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| *window)
}

/// The context window of `provider/model` per SPEC section 4.
pub fn context_window(config: &crate::config::Config, provider: &str, model_id: &str) -> u64 {
    config
        .model_metadata(provider, model_id)
        .and_then(|m| m.context)
        .or_else(|| known_window(model_id))
        .unwrap_or(DEFAULT_WINDOW)
}

/// What to do about a context overflow compaction could not fix (issue
/// 24): start afresh, or a model with a larger window; and when glrs only
/// assumed the window of a model it does not know, the key to set.
pub fn overflow_advice(config: &crate::config::Config, provider: &str, model_id: &str) -> String {
    let mut advice = "start the context afresh with /clear, or use a model with a larger window (/model, or \
                      --model)"
        .to_string();
    let configured = config.model_metadata(provider, model_id).and_then(|m| m.context).is_some();
    if !configured && known_window(model_id).is_none() {
        advice.push_str(&format!(
            "; glrs does not know {provider}/{model_id} and assumed a window of {} tokens: set its real window in \
             providers.{provider}.models.{model_id}.metadata.context",
            crate::output::thousands(DEFAULT_WINDOW)
        ));
    }
    advice
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_advice_names_the_assumed_window_only_for_a_model_glrs_does_not_know() {
        let config = crate::config::Config::default();
        let unknown = overflow_advice(&config, "local", "mystery");
        assert!(unknown.contains("/clear") && unknown.contains("larger window"), "{unknown}");
        assert!(unknown.contains("assumed a window of 256,000 tokens"), "{unknown}");
        assert!(unknown.contains("providers.local.models.mystery.metadata.context"), "{unknown}");
        let known = overflow_advice(&config, "openai", "gpt-4.1");
        assert!(known.contains("/clear") && !known.contains("assumed"), "{known}");
    }

    #[test]
    fn longest_prefix_wins_and_unknown_is_default() {
        assert_eq!(known_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_window("gpt-4-0613"), Some(8_192));
        assert_eq!(known_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(known_window("meta-llama/llama-3.1-70b"), Some(128_000));
        assert_eq!(known_window("mystery"), None);
        let config = crate::config::Config::parse(
            r#"{"providers": {"openai": {"models": {"gpt-4.1": {"metadata": {"context": 1000}}}}}}"#,
        )
        .unwrap();
        assert_eq!(context_window(&config, "openai", "gpt-4.1"), 1000);
        assert_eq!(context_window(&config, "openai", "mystery"), DEFAULT_WINDOW);
    }
}
