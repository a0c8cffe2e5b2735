//! The replay set of the multiple-consumers dispatchers: positions to deliver again
//! (redeliveries, a leaving consumer's pending messages, entries nobody could take, Key_Shared
//! entries waiting for their key, delayed entries that became due), in position order, with the
//! Key_Shared slot of each when known. Served before new entries are read.

use std::collections::{BTreeMap, HashMap, HashSet};

use pulsar_rs_ledger::Position;

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

    /// The waiting positions with their slots, in position order.
    pub fn iter(&self) -> impl Iterator<Item = (Position, Option<u16>)> + '_ {
        self.entries.iter().map(|(&p, &s)| (p, s))
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
