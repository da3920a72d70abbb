//! Session ids: 8 lowercase hex characters, random, unique in the store.
//! Text from a user is checked here, before any path is built from it, so
//! `../x`, `3f9a/..` or a NUL can never reach the file system.

use std::fmt;
use std::io::Read;

use crate::error::StoreError;

/// The length of a full id.
pub const ID_LEN: usize = 8;
/// The shortest prefix accepted in place of an id.
pub const MIN_PREFIX: usize = 4;

/// A valid, full session id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(String);

impl SessionId {
    /// Check a full id (exactly 8 lowercase hex characters).
    pub fn parse(text: &str) -> Result<SessionId, StoreError> {
        let prefix = IdPrefix::parse(text)?;
        if prefix.0.len() != ID_LEN {
            return Err(StoreError::InvalidId { input: text.to_string(), reason: "a session id is 8 hex characters" });
        }
        Ok(SessionId(prefix.0))
    }

    /// A new random id. The caller checks it is unused (see `Store::create`).
    pub fn random() -> std::io::Result<SessionId> {
        let mut bytes = [0u8; 4];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(SessionId(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// True when `name` is a full id: used to tell session files from the
    /// other files in the sessions folder (`prompts.json`, `keys.json`).
    pub fn is_id(name: &str) -> bool {
        name.len() == ID_LEN && name.bytes().all(is_lower_hex)
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A checked id or id prefix (4 to 8 hex characters), as typed by a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdPrefix(String);

impl IdPrefix {
    /// Check user text. Upper-case hex is accepted and folded to lower case;
    /// anything else that is not hex is refused.
    pub fn parse(text: &str) -> Result<IdPrefix, StoreError> {
        let invalid = |reason| StoreError::InvalidId { input: text.to_string(), reason };
        if text.is_empty() {
            return Err(invalid("it is empty"));
        }
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid("only hex characters 0-9 and a-f are allowed"));
        }
        if text.len() < MIN_PREFIX {
            return Err(invalid("give at least 4 characters of the id"));
        }
        if text.len() > ID_LEN {
            return Err(invalid("a session id is 8 hex characters"));
        }
        Ok(IdPrefix(text.to_ascii_lowercase()))
    }

    /// The prefix as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The full id when the prefix is one.
    pub fn as_full(&self) -> Option<SessionId> {
        (self.0.len() == ID_LEN).then(|| SessionId(self.0.clone()))
    }

    /// Whether `id` starts with this prefix.
    pub fn matches(&self, id: &SessionId) -> bool {
        id.0.starts_with(&self.0)
    }
}

fn is_lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_ids_and_prefixes() {
        assert_eq!(SessionId::parse("3f9a1c2b").unwrap().as_str(), "3f9a1c2b");
        assert_eq!(SessionId::parse("3F9A1C2B").unwrap().as_str(), "3f9a1c2b");
        assert!(SessionId::parse("3f9a").is_err());
        assert_eq!(IdPrefix::parse("3f9a").unwrap().as_str(), "3f9a");
    }

    #[test]
    fn path_tricks_are_refused() {
        for bad in ["../x", "3f9a/..", "..", "3f9a1c2b/", "3f9a\0", "", "3f9", "3f9a1c2b0", "3f9g"] {
            let err = IdPrefix::parse(bad).unwrap_err();
            assert!(matches!(err, StoreError::InvalidId { .. }), "{bad}");
        }
    }

    #[test]
    fn random_ids_are_valid() {
        for _ in 0..100 {
            let id = SessionId::random().unwrap();
            assert!(SessionId::is_id(id.as_str()), "{id}");
        }
        assert!(!SessionId::is_id("prompts"));
    }
}
