//! API keys: a [`Secret`] never prints, and [`Secret::scrub`] removes a key
//! from any text that may be shown or recorded, in the forms a server may
//! echo it (as sent, JSON-escaped `\/`, percent-encoded), before the text
//! is cut short, and then removes a key's start (8 characters or more) left
//! at the cut, so no part of a key long enough to matter survives.

use std::fmt;

/// How much of a server's error text is kept.
pub const MAX_MESSAGE_CHARS: usize = 300;

/// The shortest start of a key that is removed where a text was cut.
const MIN_PREFIX: usize = 8;

const REDACTED: &str = "[redacted]";

/// A key that never prints.
#[derive(Clone)]
pub struct Secret(String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl Secret {
    /// Wrap a key.
    pub fn new(key: String) -> Secret {
        Secret(key)
    }

    /// The key itself, for a request header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The forms of the key a server may echo back.
    fn forms(&self) -> Vec<String> {
        let key = &self.0;
        let mut forms = vec![key.clone(), key.replace('/', "\\/"), percent(key, false), percent(key, true)];
        forms.sort();
        forms.dedup();
        // Longest first, so a form containing another is replaced whole.
        forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        forms
    }

    /// `text` with every whole form of the key replaced.
    pub fn scrub(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_string();
        }
        let mut out = text.to_string();
        for form in self.forms() {
            if out.contains(&form) {
                out = out.replace(&form, REDACTED);
            }
        }
        out
    }

    /// `text` scrubbed, then cut to `max` characters (marked `…`), then
    /// without a start of the key left at its end.
    pub fn scrub_and_cut(&self, text: &str, max: usize) -> String {
        let scrubbed = self.scrub(text);
        let (mut out, cut) = match scrubbed.char_indices().nth(max) {
            Some((at, _)) => (scrubbed[..at].to_string(), true),
            None => (scrubbed, false),
        };
        if self.0.len() >= MIN_PREFIX {
            for form in self.forms() {
                if let Some(len) = prefix_at_end(&out, &form) {
                    out.truncate(out.len() - len);
                    out.push_str(REDACTED);
                }
            }
        }
        if cut {
            out.push('…');
        }
        out
    }
}

/// The length of the longest start of `key` (at least [`MIN_PREFIX`]
/// bytes) that `text` ends with.
fn prefix_at_end(text: &str, key: &str) -> Option<usize> {
    (MIN_PREFIX..=key.len().min(text.len())).rev().find(|&n| key.is_char_boundary(n) && text.ends_with(&key[..n]))
}

/// Every byte outside the URL-unreserved set as `%XX`.
fn percent(text: &str, lower: bool) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else if lower {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-proj/AbCdEf+GhIjKlMnOpQrStUvWxYz0123456789";

    #[test]
    fn secrets_do_not_print() {
        assert_eq!(format!("{:?}", Secret::new("sk-live".into())), "Secret(***)");
    }

    #[test]
    fn escaped_and_encoded_forms_are_scrubbed() {
        let s = Secret::new(KEY.into());
        let escaped = KEY.replace('/', "\\/");
        let text =
            format!(r#"{{"error":"bad key {escaped}"}} url=?key={} {}"#, percent(KEY, false), percent(KEY, true));
        let out = s.scrub(&text);
        assert!(!out.contains("AbCdEf"), "{out}");
        assert_eq!(out.matches(REDACTED).count(), 3, "{out}");
    }

    #[test]
    fn a_key_across_the_cut_leaves_nothing_behind() {
        let s = Secret::new(KEY.into());
        // The key starts at character 256: a cut at 300 keeps 44 of its characters.
        for start in [250, 256, 280, 292, 299] {
            let text = format!("{}{KEY} trailing", "x".repeat(start));
            let out = s.scrub_and_cut(&text, MAX_MESSAGE_CHARS);
            assert!(!out.contains("sk-proj/"), "start {start}: {out}");
            assert!(out.chars().count() <= MAX_MESSAGE_CHARS + REDACTED.len() + 1);
        }
        // A key's start that the server itself cut off, at the end of its text.
        let out = s.scrub_and_cut(&format!("invalid key {}", &KEY[..20]), MAX_MESSAGE_CHARS);
        assert_eq!(out, "invalid key [redacted]");
        // Fewer than 8 characters are not a secret.
        assert_eq!(s.scrub_and_cut("model sk-proj", 300), "model sk-proj");
    }
}
