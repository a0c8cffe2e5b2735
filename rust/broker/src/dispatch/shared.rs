//! Shared dispatch helpers: the round-robin picker and the replay set.
//!
//! Round-robin (Pulsar's `PersistentDispatcherMultipleConsumers`): consumers are sorted by
//! priority level; the best level that has a consumer able to take messages is served, each
//! consumer in turn receiving a chunk of at most `dispatcherMaxRoundRobinBatchSize` entries. The
//! picker remembers where it is and which level is best, so a pick costs O(1) while the current
//! consumer can take more, and a scan only when it switches consumer: the cost per message does
//! not grow with the number of consumers.
//!
//! The replay set holds positions to deliver again (redeliveries, a leaving consumer's pending
//! messages, entries nobody could take, Key_Shared entries waiting for their key, delayed entries
//! that became due), in position order, with the Key_Shared slot of each when known.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use pulsar_rs_ledger::Position;

use crate::consumer::Consumer;

/// Round-robin position over a priority-sorted consumer list.
#[derive(Default)]
pub struct RoundRobin {
    /// Index of the consumer currently served.
    next: usize,
    /// Entries given to it in the current chunk.
    given: u32,
    /// The best priority level with a consumer able to take, if known.
    best: Option<i32>,
}

impl RoundRobin {
    /// Forgets the cached best level (call when consumers or permits changed).
    pub fn refresh(&mut self) {
        self.best = None;
    }

    /// Picks the consumer for the next entry, or `None` if no consumer can take one.
    /// `consumers` must be sorted by priority level.
    pub fn pick(&mut self, consumers: &[Arc<Consumer>], chunk: u32) -> Option<Arc<Consumer>> {
        let n = consumers.len();
        if n == 0 {
            return None;
        }
        if self.next >= n {
            self.next = 0;
            self.given = 0;
        }
        let cur = &consumers[self.next];
        if self.given < chunk && Some(cur.priority_level) == self.best && cur.can_take() {
            self.given += 1;
            return Some(Arc::clone(cur));
        }
        for _ in 0..2 {
            let best = match self.best {
                Some(b) => b,
                None => {
                    let b = consumers
                        .iter()
                        .filter(|c| c.can_take())
                        .map(|c| c.priority_level)
                        .min()?;
                    self.best = Some(b);
                    b
                }
            };
            let lo = consumers.partition_point(|c| c.priority_level < best);
            let hi = consumers.partition_point(|c| c.priority_level <= best);
            let len = hi - lo;
            let start = if (lo..hi).contains(&self.next) {
                let cur = &consumers[self.next];
                if self.given >= chunk || !cur.can_take() {
                    self.next + 1
                } else {
                    self.next
                }
            } else {
                lo
            };
            for i in 0..len {
                let idx = lo + (start - lo + i) % len;
                if consumers[idx].can_take() {
                    if idx != self.next {
                        self.given = 0;
                    }
                    self.next = idx;
                    self.given += 1;
                    return Some(Arc::clone(&consumers[idx]));
                }
            }
            // Nobody left in that level: find the best level again.
            self.best = None;
        }
        None
    }
}

/// Positions waiting to be delivered again, in order, with their Key_Shared slot if known.
#[derive(Default)]
pub struct ReplaySet {
    /// Position → slot (Key_Shared, once the entry's key is known).
    entries: BTreeMap<Position, Option<u16>>,
    /// Slot → entries of it in the set (Key_Shared ordering: newer entries of a slot that has
    /// entries waiting here must wait too).
    slots: HashMap<u16, u32>,
}

impl ReplaySet {
    /// Adds a position (kept once).
    pub fn insert(&mut self, position: Position, slot: Option<u16>) {
        if let Some(old) = self.entries.insert(position, slot) {
            self.forget_slot(old);
        }
        if let Some(s) = slot {
            *self.slots.entry(s).or_insert(0) += 1;
        }
    }

    fn forget_slot(&mut self, slot: Option<u16>) {
        if let Some(s) = slot {
            if let Some(n) = self.slots.get_mut(&s) {
                *n -= 1;
                if *n == 0 {
                    self.slots.remove(&s);
                }
            }
        }
    }

    /// Whether entries of `slot` are waiting.
    #[must_use]
    pub fn has_slot(&self, slot: u16) -> bool {
        self.slots.contains_key(&slot)
    }

    /// Entries waiting.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing waits.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.slots.clear();
    }

    /// Takes up to `n` positions, in order, whose slot `ready` accepts (an unknown slot is always
    /// taken). Once an entry of a slot is passed over, later entries of that slot are too, so a
    /// key's entries leave in order.
    pub fn take_ready(
        &mut self,
        n: usize,
        mut ready: impl FnMut(u16) -> bool,
    ) -> Vec<(Position, Option<u16>)> {
        let mut skipped: HashSet<u16> = HashSet::new();
        let mut out = Vec::with_capacity(n.min(self.entries.len()));
        for (&p, &slot) in &self.entries {
            if out.len() >= n {
                break;
            }
            match slot {
                Some(s) if skipped.contains(&s) => {}
                Some(s) if !ready(s) => {
                    skipped.insert(s);
                }
                _ => out.push((p, slot)),
            }
        }
        for (p, _) in &out {
            if let Some(slot) = self.entries.remove(p) {
                self.forget_slot(slot);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_keeps_slot_order() {
        let mut r = ReplaySet::default();
        let p = |e| Position::new(1, e);
        r.insert(p(1), Some(5));
        r.insert(p(2), Some(6));
        r.insert(p(3), Some(5));
        r.insert(p(4), None);
        r.insert(p(4), None);
        assert_eq!(r.len(), 4);
        assert!(r.has_slot(5));
        // Slot 5 is not ready: neither of its entries leaves, the others do.
        let got = r.take_ready(10, |s| s != 5);
        assert_eq!(got, vec![(p(2), Some(6)), (p(4), None)]);
        assert!(!r.has_slot(6));
        assert_eq!(r.take_ready(1, |_| true), vec![(p(1), Some(5))]);
        assert!(r.has_slot(5));
        assert_eq!(r.take_ready(5, |_| true), vec![(p(3), Some(5))]);
        assert!(r.is_empty() && !r.has_slot(5));
    }
}
