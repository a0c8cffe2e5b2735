//! A replicated subscription's completed snapshots (Pulsar 4.0.8's
//! `ReplicatedSubscriptionSnapshotCache`): fed by its dispatcher as it reads SNAPSHOT markers,
//! kept in position order, at most `replicatedSubscriptionsSnapshotMaxCachedPerSubscription`
//! (the oldest goes first); when the mark-delete passes some, the newest of them is the one the
//! other clusters move to.

use std::collections::BTreeMap;

use pulsar_rs_ledger::Position;

/// A completed snapshot: this cluster's position and each other cluster's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Where the snapshot was completed in this cluster's ledger.
    pub local: Position,
    /// `(cluster, position in that cluster's ledger)`.
    pub clusters: Vec<(String, Position)>,
}

/// The snapshots a subscription has read and not yet passed.
#[derive(Debug)]
pub struct SnapshotCache {
    by_position: BTreeMap<Position, Snapshot>,
    max: usize,
}

impl SnapshotCache {
    /// An empty cache of at most `max` snapshots (at least one).
    #[must_use]
    pub fn new(max: usize) -> Self {
        SnapshotCache {
            by_position: BTreeMap::new(),
            max: max.max(1),
        }
    }

    /// Adds a snapshot read from the topic.
    pub fn add(&mut self, snapshot: Snapshot) {
        self.by_position.insert(snapshot.local, snapshot);
        while self.by_position.len() > self.max {
            self.by_position.pop_first();
        }
    }

    /// The mark-delete moved to `mark_delete`: drops every snapshot at or before it and returns
    /// the newest of them.
    pub fn advanced(&mut self, mark_delete: Position) -> Option<Snapshot> {
        let mut newest = None;
        while let Some(entry) = self.by_position.first_entry() {
            if *entry.key() > mark_delete {
                break;
            }
            newest = Some(entry.remove());
        }
        newest
    }

    /// Snapshots held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_position.len()
    }

    /// Whether none is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_position.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(e: i64) -> Snapshot {
        Snapshot {
            local: Position::new(1, e),
            clusters: vec![("west".into(), Position::new(9, e * 10))],
        }
    }

    #[test]
    fn the_newest_snapshot_passed_is_the_one_used() {
        let mut c = SnapshotCache::new(10);
        for e in [5, 10, 15] {
            c.add(at(e));
        }
        assert_eq!(c.advanced(Position::new(1, 4)), None);
        assert_eq!(c.advanced(Position::new(1, 12)), Some(at(10)));
        assert_eq!(c.len(), 1, "the passed ones are gone");
        assert_eq!(c.advanced(Position::new(1, 12)), None);
        assert_eq!(c.advanced(Position::new(2, 0)), Some(at(15)));
        assert!(c.is_empty());
    }

    #[test]
    fn the_oldest_goes_when_full() {
        let mut c = SnapshotCache::new(2);
        for e in [1, 2, 3] {
            c.add(at(e));
        }
        assert_eq!(c.len(), 2);
        assert_eq!(c.advanced(Position::new(1, 1)), None, "1 was evicted");
        assert_eq!(c.advanced(Position::new(1, 3)), Some(at(3)));
    }
}
