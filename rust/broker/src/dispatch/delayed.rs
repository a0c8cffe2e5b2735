//! Delayed delivery: entries whose `deliver_at_time` is in the future wait here, ordered by
//! time, until they are due (Shared and Key_Shared only; Exclusive and Failover ignore the
//! field, as Pulsar does).
//!
//! Nothing is persisted: the dispatcher reads the backlog again from mark-delete when a
//! subscription gets its first consumer (after a restart too), and every delayed entry it meets
//! comes back here. As Pulsar with `delayedDeliveryDeliverAtTimeStrict = false`, an entry due
//! within one tick (`delayedDeliveryTickTimeMillis`) counts as due.

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use pulsar_rs_ledger::Position;

/// Time-ordered delayed entries.
#[derive(Default)]
pub struct DelayedTracker {
    /// (deliver at ms, position), earliest first.
    by_time: BTreeSet<(i64, Position)>,
    /// Positions held, so an entry read twice is held once.
    held: HashSet<Position>,
}

impl DelayedTracker {
    /// Holds `position` until `deliver_at` if that is after `cutoff`; false if it is due already.
    pub fn add(&mut self, position: Position, deliver_at: i64, cutoff: i64) -> bool {
        if deliver_at <= cutoff {
            return false;
        }
        if self.held.insert(position) {
            self.by_time.insert((deliver_at, position));
        }
        true
    }

    /// Removes and returns the entries due at `cutoff`, in position order.
    pub fn take_due(&mut self, cutoff: i64) -> Vec<Position> {
        let mut due = Vec::new();
        while let Some(&(at, p)) = self.by_time.first() {
            if at > cutoff {
                break;
            }
            self.by_time.pop_first();
            self.held.remove(&p);
            due.push(p);
        }
        due.sort_unstable();
        due
    }

    /// The earliest delivery time held (ms), if any.
    #[must_use]
    pub fn next_at(&self) -> Option<i64> {
        self.by_time.first().map(|&(at, _)| at)
    }

    /// How long until the next held entry's delivery time. The timer aims at the delivery time
    /// itself, as Pulsar's `AbstractDelayedDeliveryTracker.updateTimer`: the tick's slack only
    /// lets an entry read within a tick of its time go out at once (`add`), it does not wake
    /// the dispatcher a tick early.
    #[must_use]
    pub fn next_due_in(&self, now_ms: i64) -> Option<Duration> {
        self.by_time
            .first()
            .map(|&(at, _)| Duration::from_millis(u64::try_from(at - now_ms).unwrap_or(0)))
    }

    /// Entries held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether nothing is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Forgets everything (the dispatcher will read the backlog again).
    pub fn clear(&mut self) {
        self.by_time.clear();
        self.held.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_until_due_in_time_order() {
        let mut t = DelayedTracker::default();
        let p = |e| Position::new(1, e);
        assert!(!t.add(p(0), 100, 100), "due at the cutoff: not held");
        assert!(t.add(p(3), 300, 100));
        assert!(t.add(p(1), 200, 100));
        assert!(t.add(p(2), 200, 100));
        assert!(t.add(p(2), 200, 100), "held once");
        assert_eq!(t.len(), 3);
        assert_eq!(t.next_due_in(150), Some(Duration::from_millis(50)));
        assert_eq!(t.take_due(199), Vec::<Position>::new());
        assert_eq!(t.take_due(250), vec![p(1), p(2)]);
        assert_eq!(t.next_due_in(1000), Some(Duration::ZERO));
        assert_eq!(t.take_due(1000), vec![p(3)]);
        assert!(t.is_empty());
    }
}
