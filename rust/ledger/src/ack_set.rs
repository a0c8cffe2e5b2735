//! Individually deleted (acknowledged) entries after a cursor's mark-delete position: the "ack
//! holes" of Pulsar's `individualDeletedMessages`, as closed ranges of entry ids per ledger.
//!
//! Ranges never span ledgers (apache/pulsar#7861), adjacent ranges are merged on insert, and the
//! number of acknowledged entries is kept up to date so backlog is O(1) to compute.

use std::collections::BTreeMap;

use crate::Position;

/// A set of acknowledged entries, stored as `(ledger, first) → last` closed ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AckSet {
    ranges: BTreeMap<(i64, i64), i64>,
    count: u64,
}

impl AckSet {
    /// An empty set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of acknowledged entries held.
    #[must_use]
    pub fn entry_count(&self) -> u64 {
        self.count
    }

    /// Number of ranges (holes are between them).
    #[must_use]
    pub fn range_count(&self) -> usize {
        self.ranges.len()
    }

    /// Whether nothing is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether `p` is acknowledged.
    #[must_use]
    pub fn contains(&self, p: Position) -> bool {
        self.range_containing(p).is_some()
    }

    /// The range holding `p`, as (first, last) positions.
    #[must_use]
    pub fn range_containing(&self, p: Position) -> Option<(Position, Position)> {
        let (&(l, s), &e) = self
            .ranges
            .range(..=(p.ledger_id, p.entry_id))
            .next_back()?;
        (l == p.ledger_id && e >= p.entry_id).then_some((Position::new(l, s), Position::new(l, e)))
    }

    /// Adds one entry; returns false if it was already there.
    pub fn insert(&mut self, p: Position) -> bool {
        self.insert_range(p.ledger_id, p.entry_id, p.entry_id) > 0
    }

    /// Adds entries `first..=last` of one ledger; returns how many were new.
    pub fn insert_range(&mut self, ledger: i64, first: i64, last: i64) -> u64 {
        if last < first {
            return 0;
        }
        let (mut s, mut e) = (first, last);
        let mut removed = 0u64;
        // Absorb a range that starts before and touches or overlaps [s, e].
        if let Some((&(l, ps), &pe)) = self.ranges.range(..=(ledger, s)).next_back() {
            if l == ledger && pe >= s - 1 {
                if pe >= e {
                    return 0;
                }
                self.ranges.remove(&(l, ps));
                removed += (pe - ps + 1) as u64;
                s = ps;
                e = e.max(pe);
            }
        }
        // Absorb ranges starting inside or right after [s, e].
        while let Some((&(l, ns), &ne)) = self.ranges.range((ledger, s)..).next() {
            if l != ledger || ns > e + 1 {
                break;
            }
            self.ranges.remove(&(l, ns));
            removed += (ne - ns + 1) as u64;
            e = e.max(ne);
        }
        self.ranges.insert((ledger, s), e);
        let added = (e - s + 1) as u64 - removed;
        self.count += added;
        added
    }

    /// Drops everything at or before `p` (the mark-delete moved there).
    pub fn remove_up_to(&mut self, p: Position) {
        while let Some((&(l, s), &e)) = self.ranges.iter().next() {
            if (l, s) > (p.ledger_id, p.entry_id) {
                break;
            }
            self.ranges.remove(&(l, s));
            if l == p.ledger_id && e > p.entry_id {
                self.ranges.insert((l, p.entry_id + 1), e);
                self.count -= (p.entry_id - s + 1) as u64;
                break;
            }
            self.count -= (e - s + 1) as u64;
        }
    }

    /// Every range as `(ledger, first, last)`, in order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, i64, i64)> + '_ {
        self.ranges.iter().map(|(&(l, s), &e)| (l, s, e))
    }

    /// Acknowledged entries of one ledger within `first..=last`.
    #[must_use]
    pub fn count_in(&self, ledger: i64, first: i64, last: i64) -> u64 {
        let mut n = 0;
        let start = self
            .ranges
            .range(..(ledger, first))
            .next_back()
            .filter(|((l, _), e)| *l == ledger && **e >= first);
        let tail = self.ranges.range((ledger, first)..=(ledger, last));
        for (&(_, s), &e) in start.into_iter().chain(tail) {
            n += (e.min(last) - s.max(first) + 1).max(0) as u64;
        }
        n
    }

    /// Clears the set.
    pub fn clear(&mut self) {
        self.ranges.clear();
        self.count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_counts() {
        let mut s = AckSet::new();
        assert!(s.insert(Position::new(1, 5)));
        assert!(s.insert(Position::new(1, 7)));
        assert!(!s.insert(Position::new(1, 7)));
        assert_eq!(s.range_count(), 2);
        assert!(s.insert(Position::new(1, 6)));
        assert_eq!(s.range_count(), 1);
        assert_eq!(s.entry_count(), 3);
        s.insert(Position::new(2, 0));
        assert_eq!(s.range_count(), 2, "ranges never span ledgers");
        assert_eq!(s.insert_range(1, 0, 10), 8);
        assert_eq!(s.entry_count(), 12);
        assert_eq!(s.count_in(1, 3, 20), 8);
        assert_eq!(
            s.range_containing(Position::new(1, 4)),
            Some((Position::new(1, 0), Position::new(1, 10)))
        );
        s.remove_up_to(Position::new(1, 4));
        assert_eq!(s.entry_count(), 7);
        assert!(!s.contains(Position::new(1, 4)));
        assert!(s.contains(Position::new(1, 5)));
        s.remove_up_to(Position::new(5, 0));
        assert!(s.is_empty());
        assert_eq!(s.entry_count(), 0);
    }

    #[test]
    fn matches_a_naive_model() {
        let mut s = AckSet::new();
        let mut model = std::collections::BTreeSet::new();
        let mut x: u64 = 12345;
        for _ in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let ledger = (x >> 60) as i64 % 3;
            let first = ((x >> 20) % 200) as i64;
            let last = first + ((x >> 40) % 4) as i64;
            s.insert_range(ledger, first, last);
            for e in first..=last {
                model.insert((ledger, e));
            }
        }
        assert_eq!(s.entry_count(), model.len() as u64);
        for &(l, e) in &model {
            assert!(s.contains(Position::new(l, e)));
        }
    }
}
