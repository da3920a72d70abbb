//! Redaction at the persist point (SPEC 14): text shaped like a credential,
//! and the value of every configured key variable, becomes
//! `[REDACTED:kind]` before it reaches a session file, an artifact or
//! `prompts.json`. A leaf module: it knows text and JSON only, so the chat
//! and glrs-compact apply it to what they hand the store, and the store
//! stays ignorant of it. The model still sees the real text in memory; only
//! what is written is redacted.

mod scan;

use std::borrow::Cow;

use anyhow::{Result, anyhow};
use regex::Regex;
use serde_json::Value;

/// The built-in credential shapes, most specific first: the first that
/// matches a span names it.
const SHAPES: &[(&str, &str)] = &[
    ("private-key", r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----"),
    ("anthropic", r"\bsk-ant-[A-Za-z0-9_-]{10,}"),
    ("openrouter", r"\bsk-or-[A-Za-z0-9_-]{10,}"),
    ("openai", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("aws", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    ("aws", r"(?i)(?:aws_secret_access_key|secretaccesskey)[\x22']?\s*[:=]\s*[\x22']?[A-Za-z0-9/+=]{40}"),
    ("github", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"),
    ("github", r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    ("gitlab", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("slack", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("slack", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
    ("google", r"\bAIza[0-9A-Za-z_-]{35}"),
];

/// `Authorization:` headers keep their name and lose their value.
const AUTHORIZATION: &str =
    r#"(?i)(\bauthorization[\x22']?\s*[:=]\s*[\x22']?)(?:(?:bearer|basic|token|digest)\s+)?[^\s\x22',\\]+"#;

/// Key values shorter than this are not redacted: they would match
/// ordinary words.
const MIN_VALUE_LEN: usize = 8;

/// What to redact.
#[derive(Debug, Clone)]
pub struct Redactor {
    enabled: bool,
    shapes: Vec<(String, Regex)>,
    authorization: Option<Regex>,
    /// (kind, value): configured key values.
    values: Vec<(String, String)>,
}

impl Default for Redactor {
    fn default() -> Redactor {
        Redactor::new(true, &[], Vec::new()).unwrap_or_else(|_| Redactor::off())
    }
}

impl Redactor {
    /// `extra`: `redact.patterns` (their kind is `pattern`); `values`: (kind,
    /// value) pairs such as (`OPENAI_API_KEY`, its value).
    pub fn new(enabled: bool, extra: &[String], values: Vec<(String, String)>) -> Result<Redactor> {
        let mut shapes = Vec::new();
        for (kind, pattern) in SHAPES {
            shapes.push((kind.to_string(), Regex::new(pattern)?));
        }
        for (i, pattern) in extra.iter().enumerate() {
            let re = Regex::new(pattern).map_err(|e| anyhow!("redact.patterns[{i}] is not a valid regex: {e}"))?;
            shapes.push(("pattern".into(), re));
        }
        let values = values.into_iter().filter(|(_, v)| v.len() >= MIN_VALUE_LEN).collect();
        Ok(Redactor { enabled, shapes, authorization: Some(Regex::new(AUTHORIZATION)?), values })
    }

    /// Redacts nothing (`redact.enabled: false`).
    pub fn off() -> Redactor {
        Redactor { enabled: false, shapes: Vec::new(), authorization: None, values: Vec::new() }
    }

    /// True when `text` holds anything to redact.
    pub fn hit(&self, text: &str) -> bool {
        self.enabled
            && (self.values.iter().any(|(_, v)| text.contains(v.as_str()))
                || self.shapes.iter().any(|(_, re)| re.is_match(text))
                || self.authorization.as_ref().is_some_and(|re| re.is_match(text)))
    }

    /// True when one of `value`'s string values holds a secret: what
    /// [`Redactor::json`] would change, asked without serializing `value`.
    pub fn hit_in<T: serde::Serialize + ?Sized>(&self, value: &T) -> bool {
        self.enabled && scan::any_string(value, &mut |s| self.hit(s))
    }

    /// `text` with every secret replaced by `[REDACTED:kind]`.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.hit(text) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_string();
        // Exact values first: a configured key may not look like any shape.
        for (kind, value) in &self.values {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), &format!("[REDACTED:{kind}]"));
            }
        }
        for (kind, re) in &self.shapes {
            if re.is_match(&out) {
                out = re.replace_all(&out, format!("[REDACTED:{kind}]").as_str()).into_owned();
            }
        }
        if let Some(re) = &self.authorization {
            out = re.replace_all(&out, "${1}[REDACTED:authorization]").into_owned();
        }
        Cow::Owned(out)
    }

    /// Redact every string in a JSON value, in place. Returns true when
    /// anything changed.
    pub fn json(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => match self.text(s) {
                Cow::Owned(new) => {
                    *s = new;
                    true
                }
                Cow::Borrowed(_) => false,
            },
            Value::Array(items) => items.iter_mut().fold(false, |changed, v| self.json(v) | changed),
            Value::Object(map) => map.values_mut().fold(false, |changed, v| self.json(v) | changed),
            _ => false,
        }
    }
}

/// The key variables whose values are redacted: each provider's
/// `apiKeyEnv` and the variables glrs reads by default, with their values
/// from the environment.
pub fn key_values(env_names: impl IntoIterator<Item = String>) -> Vec<(String, String)> {
    let defaults = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY", "OPENROUTER_API_KEY"];
    let mut names: Vec<String> = defaults.iter().map(|s| s.to_string()).collect();
    names.extend(env_names);
    names.sort();
    names.dedup();
    names.into_iter().filter_map(|name| std::env::var(&name).ok().map(|v| (name, v))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_values_are_redacted() {
        let r = Redactor::new(
            true,
            &["internal-[0-9]{4}".into()],
            vec![("MY_KEY".into(), "hunter2hunter2".into()), ("SHORT".into(), "abc".into())],
        )
        .unwrap();
        let ant = format!("sk-ant-api03-{}", "A".repeat(40));
        let cases = [
            (format!("key {ant} here"), "key [REDACTED:anthropic] here"),
            (format!("sk-proj-{}", "x1".repeat(20)), "[REDACTED:openai]"),
            (format!("sk-or-v1-{}", "ab12".repeat(8)), "[REDACTED:openrouter]"),
            ("AKIAABCDEFGHIJKLMNOP".into(), "[REDACTED:aws]"),
            (format!("ghp_{}", "a".repeat(36)), "[REDACTED:github]"),
            (format!("glpat-{}", "b".repeat(20)), "[REDACTED:gitlab]"),
            ("xoxb-1234567890-abcdef".into(), "[REDACTED:slack]"),
            (format!("AIza{}", "c".repeat(35)), "[REDACTED:google]"),
            ("Authorization: Bearer abc.def".into(), "Authorization: [REDACTED:authorization]"),
            ("curl -H 'authorization: token zzz'".into(), "curl -H 'authorization: [REDACTED:authorization]'"),
            (
                "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\ny".into(),
                "x\n[REDACTED:private-key]\ny",
            ),
            ("pw=hunter2hunter2;".into(), "pw=[REDACTED:MY_KEY];"),
            ("internal-1234".into(), "[REDACTED:pattern]"),
            ("abc and sk-short".into(), "abc and sk-short"),
        ];
        for (input, want) in cases {
            assert_eq!(r.text(&input), want, "{input}");
        }
        let mut v = serde_json::json!({"a": ["ok", format!("Bearer {ant}")], "n": 1});
        assert!(r.json(&mut v));
        assert_eq!(v, serde_json::json!({"a": ["ok", "Bearer [REDACTED:anthropic]"], "n": 1}));
        assert!(!Redactor::off().hit(&ant));
        assert!(Redactor::new(true, &["(".into()], Vec::new()).unwrap_err().to_string().contains("redact.patterns[0]"));
    }
}
