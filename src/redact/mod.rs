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
use regex::{Regex, RegexSet};
use serde_json::Value;

/// What may stand just before a key whose shape alone is not distinctive
/// enough to be found mid-word: the start, a non-alphanumeric character, or
/// what an escape or URL encoding leaves there (`\n`, `\t`, `%3D`), so a key
/// inside escaped JSON or a query string is still found (`json\nsk-…`).
macro_rules! after {
    ($key:literal) => {
        concat!(r"(?:^|[^A-Za-z0-9]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<k>", $key, ")")
    };
}

/// A line break, raw or escaped (a key inside a JSON string).
macro_rules! newline {
    () => {
        r"(?:\r?\n|(?:\\r)?\\n)"
    };
}

/// What may stand before each line of a private key's body: an indent,
/// and a line number as `cat -n`, `nl` or a read tool prints it (`   2\t`,
/// `2:`, `2|`, `2→`), raw or inside escaped JSON (`\t`).
macro_rules! line_leader {
    () => {
        r"(?:[ \t]|\\t)*(?:[0-9]+(?:[ \t:|→]|\\t)(?:[ \t]|\\t)*)?"
    };
}

/// The built-in credential shapes, most specific first: the first that
/// matches a span names it. Where a shape has a group `k`, only that group
/// is the secret (the rest is context it needed to be found).
const SHAPES: &[(&str, &str)] = &[
    // A private key block (PEM, OpenSSH, PGP), with or without its END
    // line: a read cut short (`limit: 4`) shows only the start, and the
    // body lines are the secret.
    (
        "private-key",
        concat!(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?:",
            newline!(),
            line_leader!(),
            r"(?:[A-Za-z0-9+/=]+|[A-Za-z-]+:[^\r\n\\]*|=[A-Za-z0-9+/]+|))*)"
        ),
    ),
    ("anthropic", r"sk-ant-[A-Za-z0-9_-]{10,}"),
    ("openrouter", r"sk-or-[A-Za-z0-9_-]{10,}"),
    ("openai", after!(r"sk-[A-Za-z0-9_-]{20,}")),
    ("aws", concat!(after!(r"(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}"), r"(?:[^0-9A-Z]|$)")),
    // The secret key under any spelling of its name: `aws_secret_access_key`,
    // `SecretAccessKey`, YAML's `secret-access-key:`, `secret access key =`.
    (
        "aws",
        r"(?i)(?:aws[_.\s-]?)?secret[_.\s-]?access[_.\s-]?key(?:\\?[\x22'])?\s*[:=]\s*(?:\\?[\x22'])?(?P<k>[A-Za-z0-9/+=]{40})",
    ),
    ("github", after!(r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}")),
    ("github", r"github_pat_[A-Za-z0-9_]{22,}"),
    ("gitlab", r"glpat-[A-Za-z0-9_-]{20,}"),
    ("slack", after!(r"xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("slack", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
    ("google", r"AIza[0-9A-Za-z_-]{35}"),
];

/// `Authorization:` headers keep their name and lose their value, also
/// inside escaped JSON (`\"Authorization\": \"Bearer …\"`).
const AUTHORIZATION: &str = r#"(?i)(\bauthorization(?:\\?[\x22'])?\s*[:=]\s*(?:\\?[\x22'])?)(?:(?:bearer|basic|token|digest)\s+)?[^\s\x22',\\]+"#;

/// Key values shorter than this are not redacted: they would match
/// ordinary words.
const MIN_VALUE_LEN: usize = 8;

/// What to redact.
#[derive(Debug, Clone)]
pub struct Redactor {
    enabled: bool,
    shapes: Vec<(String, Regex)>,
    authorization: Option<Regex>,
    /// Every shape and the authorization pattern at once: whether a string
    /// holds anything is one pass over it, not one per shape.
    any: Option<RegexSet>,
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
        let authorization = Regex::new(AUTHORIZATION)?;
        let any = RegexSet::new(shapes.iter().map(|(_, re)| re.as_str()).chain([authorization.as_str()]))?;
        let values = values.into_iter().filter(|(_, v)| v.len() >= MIN_VALUE_LEN).collect();
        Ok(Redactor { enabled, shapes, authorization: Some(authorization), any: Some(any), values })
    }

    /// Redacts nothing (`redact.enabled: false`).
    pub fn off() -> Redactor {
        Redactor { enabled: false, shapes: Vec::new(), authorization: None, any: None, values: Vec::new() }
    }

    /// True when `text` holds anything to redact.
    pub fn hit(&self, text: &str) -> bool {
        self.enabled
            && (self.values.iter().any(|(_, v)| text.contains(v.as_str()))
                || self.any.as_ref().is_some_and(|set| set.is_match(text)))
    }

    /// True when one of `value`'s strings (map keys included) holds a
    /// secret: what [`Redactor::json`] would change, asked without
    /// serializing `value`.
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
                out = replace_secret(re, &out, kind);
            }
        }
        if let Some(re) = &self.authorization {
            out = re.replace_all(&out, "${1}[REDACTED:authorization]").into_owned();
        }
        Cow::Owned(out)
    }

    /// Redact every string in a JSON value, object keys included, in place.
    /// Returns true when anything changed.
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
            Value::Object(map) => {
                let keys = self.object_keys(map);
                map.values_mut().fold(keys, |changed, v| self.json(v) | changed)
            }
            _ => false,
        }
    }

    /// Redacts the keys of `map` (a secret used as a key, as some tools'
    /// JSON does), keeping their order. Two keys that redact alike are kept
    /// apart by a number, so no value is lost.
    fn object_keys(&self, map: &mut serde_json::Map<String, Value>) -> bool {
        if !map.keys().any(|k| self.hit(k)) {
            return false;
        }
        let old = std::mem::take(map);
        for (key, value) in old {
            let mut key = self.text(&key).into_owned();
            let base = key.clone();
            let mut n = 1;
            while map.contains_key(&key) {
                n += 1;
                key = format!("{base}#{n}");
            }
            map.insert(key, value);
        }
        true
    }
}

/// `text` with each match of `re` redacted: only its group `k` where it has
/// one (the characters matched around the key are kept), else all of it.
fn replace_secret(re: &Regex, text: &str, kind: &str) -> String {
    re.replace_all(text, |caps: &regex::Captures| {
        let whole = caps.get(0).map_or("", |m| m.as_str());
        match (caps.get(0), caps.name("k")) {
            (Some(m), Some(k)) => {
                format!("{}[REDACTED:{kind}]{}", &whole[..k.start() - m.start()], &whole[k.end() - m.start()..])
            }
            _ => format!("[REDACTED:{kind}]"),
        }
    })
    .into_owned()
}

/// The key variables glrs reads by default: redacted, and kept from
/// children (`Config::withheld_env`).
pub const KEY_VARIABLES: &[&str] =
    &["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY", "OPENROUTER_API_KEY"];

/// The key variables whose values are redacted: each provider's
/// `apiKeyEnv` and the variables glrs reads by default, with their values
/// from the environment.
pub fn key_values(env_names: impl IntoIterator<Item = String>) -> Vec<(String, String)> {
    let mut names: Vec<String> = KEY_VARIABLES.iter().map(|s| s.to_string()).collect();
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

    /// The shapes that reached the session file before (issue 20, item 8).
    #[test]
    fn keys_in_escaped_json_encoded_urls_and_after_word_characters_are_redacted() {
        let r = Redactor::default();
        let ant = format!("sk-ant-api03-{}", "Qw7".repeat(20));
        let proj = format!("sk-proj-{}", "Rt5".repeat(20));
        let google = format!("AIza{}", "d".repeat(35));
        let github = format!("ghp_{}", "e".repeat(36));
        let cases = [
            format!(r#"{{"text":"json\n{ant}"}}"#),
            format!("https://x.test/?key%3D{ant}&a=1"),
            format!("key_{google}"),
            format!(r#""a\t{proj}""#),
            format!(r#"token\n{github}"#),
            format!("id=AKIA{}", "Z".repeat(16)),
        ];
        for case in cases {
            let out = r.text(&case);
            assert!(out.contains("[REDACTED:"), "not redacted: {case}");
            for secret in [&ant, &proj, &google, &github] {
                assert!(!out.contains(secret.as_str()), "{secret} left in {out}");
            }
            assert!(!out.contains("ZZZZZZZZZZZZZZZZ"), "{out}");
        }
        // What stood before the key is kept.
        assert_eq!(r.text(&format!(r"json\n{ant}")), r"json\n[REDACTED:anthropic]");
        assert_eq!(r.text(&format!("a {proj} b")), "a [REDACTED:openai] b");
        // Words that merely contain `sk-` are not keys.
        let word = "the risk-assessment-framework-version-two";
        assert_eq!(r.text(word), word);
    }

    #[test]
    fn a_private_key_cut_before_its_end_line_and_pgp_blocks_are_redacted() {
        let r = Redactor::default();
        let cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAAAABAAABlwAAAAdzc2gtcn\nNhAAAAAwEAAQAAAYEAu\n[more follows: read id_ed25519 with offset=5 to read on]\n";
        let out = r.text(cut);
        assert!(!out.contains("b3BlbnNzaC1rZXkt") && !out.contains("NhAAAAAwEAAQ"), "{out}");
        assert!(out.starts_with("[REDACTED:private-key]") && out.contains("[more follows"), "{out}");
        let pgp = "x\n-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF0Jb2sBCADXq\n=Ab12\n-----END PGP PRIVATE KEY BLOCK-----\ny";
        assert_eq!(r.text(pgp), "x\n[REDACTED:private-key]\ny");
        let escaped = r#"{"key":"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nq83Hh\n"}"#;
        let out = r.text(escaped);
        assert!(!out.contains("MIIEowIBAAKCAQEA") && !out.contains("q83Hh"), "{out}");
    }

    /// Issue 31, item 17: a key body behind `cat -n` line numbers or an
    /// indent, with no END line in view, and the AWS secret under YAML's
    /// `secret-access-key:`.
    #[test]
    fn a_numbered_or_indented_key_body_and_every_spelling_of_the_aws_secret_are_redacted() {
        let r = Redactor::default();
        let body = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "AAAAAAABAAABlwAAAAdzc2gtcn", "NhAAAAAwEAAQAAAYEAu"];
        let numbered: String = std::iter::once("-----BEGIN OPENSSH PRIVATE KEY-----")
            .chain(body)
            .enumerate()
            .map(|(i, line)| format!("{:>6}\t{line}\n", i + 1))
            .collect();
        let indented: String = std::iter::once("-----BEGIN RSA PRIVATE KEY-----")
            .chain(body)
            .map(|line| format!("    {line}\n"))
            .collect();
        let arrows = format!("1→-----BEGIN PRIVATE KEY-----\n2→{}\n3: {}\n", body[0], body[1]);
        let escaped = serde_json::to_string(&numbered).unwrap();
        for text in [&numbered, &indented, &arrows, &escaped] {
            let out = r.text(text);
            assert!(out.contains("[REDACTED:private-key]"), "{out}");
            for line in body {
                assert!(!out.contains(line), "{line} left in {out}");
            }
        }
        let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        for line in [
            format!("secret-access-key: {secret}"),
            format!("  aws-secret-access-key: \"{secret}\""),
            format!("SecretAccessKey={secret}"),
            format!("aws_secret_access_key = {secret}"),
            format!(r#"{{\"secret_access_key\": \"{secret}\"}}"#),
        ] {
            let out = r.text(&line);
            assert!(!out.contains(secret) && out.contains("[REDACTED:aws]"), "{out}");
        }
        assert_eq!(r.text(&format!("secret-access-key: {secret}")), "secret-access-key: [REDACTED:aws]");
    }

    #[test]
    fn escaped_json_authorization_and_secrets_used_as_keys_are_redacted() {
        let r = Redactor::default();
        let header = r#"{\"Authorization\": \"Bearer abc.def-ghi\", \"x\": 1}"#;
        let out = r.text(header);
        assert!(!out.contains("abc.def-ghi") && out.contains("[REDACTED:authorization]"), "{out}");
        let ant = format!("sk-ant-api03-{}", "K".repeat(30));
        let mut v = serde_json::json!({"command": "ls", (ant.clone()): {"inner": ant.clone()}, "z": 2});
        assert!(r.hit_in(&v));
        assert!(r.json(&mut v));
        let text = v.to_string();
        assert!(!text.contains(&ant), "{text}");
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["command", "[REDACTED:anthropic]", "z"], "order kept");
        // Two secret keys that redact alike are both kept.
        let other = format!("sk-ant-api03-{}", "L".repeat(30));
        let mut two = serde_json::json!({(ant.clone()): 1, (other): 2});
        r.json(&mut two);
        assert_eq!(two.as_object().unwrap().len(), 2, "{two}");
    }
}
