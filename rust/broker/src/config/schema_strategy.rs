//! Pulsar's `SchemaCompatibilityStrategy`: how a new schema version must relate to the stored
//! ones, with Pulsar's names (`BACKWARD`, `FULL_TRANSITIVE`, ...). It is the value of the
//! broker setting `schemaCompatibilityStrategy` (checked when the settings are validated) and of
//! a namespace's policy, and the schema registry applies it; it stands with the settings, below
//! both.

use serde::{Deserialize, Serialize};

/// A schema compatibility strategy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Strategy {
    /// Not set here: inherit (namespace → broker `schemaCompatibilityStrategy`).
    #[default]
    Undefined,
    /// Every change is refused.
    AlwaysIncompatible,
    /// Every change is accepted.
    AlwaysCompatible,
    /// The new schema reads data written with the latest one.
    Backward,
    /// The latest schema reads data written with the new one.
    Forward,
    /// Both.
    Full,
    /// The new schema reads data written with every stored one.
    BackwardTransitive,
    /// Every stored schema reads data written with the new one.
    ForwardTransitive,
    /// Both, against every stored schema.
    FullTransitive,
}

impl Strategy {
    /// Every strategy, in Pulsar's order.
    pub const ALL: [Strategy; 9] = [
        Strategy::Undefined,
        Strategy::AlwaysIncompatible,
        Strategy::AlwaysCompatible,
        Strategy::Backward,
        Strategy::Forward,
        Strategy::Full,
        Strategy::BackwardTransitive,
        Strategy::ForwardTransitive,
        Strategy::FullTransitive,
    ];

    /// Pulsar's name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Undefined => "UNDEFINED",
            Strategy::AlwaysIncompatible => "ALWAYS_INCOMPATIBLE",
            Strategy::AlwaysCompatible => "ALWAYS_COMPATIBLE",
            Strategy::Backward => "BACKWARD",
            Strategy::Forward => "FORWARD",
            Strategy::Full => "FULL",
            Strategy::BackwardTransitive => "BACKWARD_TRANSITIVE",
            Strategy::ForwardTransitive => "FORWARD_TRANSITIVE",
            Strategy::FullTransitive => "FULL_TRANSITIVE",
        }
    }

    /// Parses Pulsar's name (case-insensitive, as Java's enum lookup in the admin CLI).
    #[must_use]
    pub fn parse(s: &str) -> Option<Strategy> {
        Strategy::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(s.trim()))
    }

    /// Whether new schemas are checked against every stored version, not only the latest.
    #[must_use]
    pub fn is_transitive(self) -> bool {
        matches!(
            self,
            Strategy::BackwardTransitive | Strategy::ForwardTransitive | Strategy::FullTransitive
        )
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
