//! The thinking level, spelled once: `--thinking` takes it through clap's
//! `ValueEnum`, config `thinking` and the session header's `thinking`
//! through serde, `/thinking` through [`Thinking::parse`], and every message
//! names it through `Display`. What a level means for a request (a budget,
//! an effort) is the provider's (`provider::cache`).

use serde::{Deserialize, Serialize};

/// A thinking level: `--thinking` (clap), config `thinking` and the session
/// header's `thinking` (serde), `/thinking` ([`Thinking::parse`]). Its names
/// are the variants' own, lowercased by both derives (a test checks they
/// agree); what a level means for a request is `provider::cache`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
#[value(rename_all = "lowercase")]
pub enum Thinking {
    #[default]
    /// No extended thinking.
    Off,
    /// A small thinking budget.
    Low,
    /// A medium thinking budget.
    Medium,
    /// A large thinking budget.
    High,
}

impl Thinking {
    /// Read a level's name in any case (`/thinking HIGH`, the session header).
    pub fn parse(text: &str) -> Result<Thinking, String> {
        let text = text.trim();
        <Thinking as clap::ValueEnum>::from_str(text, true)
            .map_err(|_| format!("unknown thinking level {:?}: use {}", text.to_ascii_lowercase(), Thinking::choices()))
    }

    /// The levels as a sentence: `off, low, medium or high`.
    pub fn choices() -> String {
        let names: Vec<String> =
            <Thinking as clap::ValueEnum>::value_variants().iter().map(Thinking::to_string).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.concat(),
        }
    }
}

impl std::fmt::Display for Thinking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = clap::ValueEnum::to_possible_value(self);
        f.write_str(value.as_ref().map_or("", clap::builder::PossibleValue::get_name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Thinking; 4] = [Thinking::Off, Thinking::Low, Thinking::Medium, Thinking::High];

    #[test]
    fn clap_serde_and_display_spell_each_level_alike() {
        for level in ALL {
            let name = level.to_string();
            assert_eq!(serde_json::to_value(level).ok(), Some(serde_json::Value::String(name.clone())));
            assert_eq!(serde_json::from_value::<Thinking>(name.clone().into()).ok(), Some(level));
            assert_eq!(<Thinking as clap::ValueEnum>::from_str(&name, false), Ok(level));
            assert_eq!(Thinking::parse(&name.to_uppercase()), Ok(level));
        }
        assert_eq!(<Thinking as clap::ValueEnum>::value_variants(), ALL);
    }

    #[test]
    fn an_unknown_level_is_named_with_the_choices() {
        assert_eq!(Thinking::choices(), "off, low, medium or high");
        assert_eq!(
            Thinking::parse(" MAX "),
            Err("unknown thinking level \"max\": use off, low, medium or high".into())
        );
    }

    #[test]
    fn the_config_keys_table_lists_the_levels() {
        let key = crate::config::keys::KEYS.iter().find(|k| k.path == "thinking");
        let names: Vec<String> = ALL.iter().map(Thinking::to_string).collect();
        assert_eq!(key.map(|k| k.range), Some(names.join(", ").as_str()));
        assert_eq!(key.map(|k| k.default), Some(Thinking::default().to_string().as_str()));
    }
}
