//! `Position`: the address of an entry in a managed ledger, `(ledger_id, entry_id)`.
//!
//! Positions are totally ordered by ledger id, then entry id. Ledger ids grow monotonically inside
//! a data directory, so the order of positions is the order in which entries were appended.
//! `entry_id == -1` names the slot *before* the first entry of a ledger, which is how Pulsar spells
//! "nothing acknowledged yet" for a fresh cursor.

use std::fmt;

/// The address of one entry: which ledger, and which entry inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    /// Id of the ledger holding the entry (unique within a data directory).
    pub ledger_id: i64,
    /// Index of the entry inside its ledger, from 0; -1 means "before the first entry".
    pub entry_id: i64,
}

impl Position {
    /// The smallest position: before every entry of every ledger (Pulsar's `earliest`).
    pub const EARLIEST: Position = Position {
        ledger_id: -1,
        entry_id: -1,
    };
    /// The largest position: after every entry (Pulsar's `latest`).
    pub const LATEST: Position = Position {
        ledger_id: i64::MAX,
        entry_id: i64::MAX,
    };

    /// Builds a position.
    #[must_use]
    pub const fn new(ledger_id: i64, entry_id: i64) -> Self {
        Position {
            ledger_id,
            entry_id,
        }
    }

    /// Reads `ledger:entry` (as [`fmt::Display`] writes it).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let (l, e) = text.split_once(':')?;
        Some(Position::new(l.parse().ok()?, e.parse().ok()?))
    }

    /// The next entry slot in the same ledger (it may not exist).
    #[must_use]
    pub const fn next(self) -> Self {
        Position {
            ledger_id: self.ledger_id,
            entry_id: self.entry_id + 1,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.ledger_id, self.entry_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_by_ledger_then_entry() {
        let mut v = vec![
            Position::new(3, 0),
            Position::new(1, 9),
            Position::new(1, 2),
            Position::EARLIEST,
        ];
        v.sort();
        assert_eq!(
            v,
            vec![
                Position::EARLIEST,
                Position::new(1, 2),
                Position::new(1, 9),
                Position::new(3, 0)
            ]
        );
        assert!(Position::LATEST > Position::new(i64::MAX - 1, 0));
        assert_eq!(Position::new(4, 1).to_string(), "4:1");
    }
}
