//! Key_Shared routing: which consumer owns a key, and when an entry of that key may go to it.
//!
//! A key (ordering key, else partition key, else `NONE_KEY`) maps to a *slot* within the
//! selector's key hash range, as Pulsar 4.x's `StickyKeyConsumerSelectorUtils.makeStickyKeyHash`
//! computes it: `(Murmur3_x86_32(key) & 0x7fffffff) % size + start`, with 0 remapped to 1. The
//! consistent-hash ring's range is 1..=65535 (`% 65535 + 1`); the others' is 0..=65535 (`% 65536`).
//! Ownership of slots comes from a [`Selector`]:
//! * AUTO_SPLIT with consistent hashing (`subscriptionKeySharedUseConsistentHashing`, the
//!   default): a ring with `subscriptionKeySharedConsistentHashingReplicaPoints` points per
//!   consumer at `slot(name + "\0" + nameIndex + "\0" + i)`, where `nameIndex` is the lowest index
//!   not held by a live consumer of the same name (Pulsar's `ConsumerNameIndexTracker`); a slot
//!   belongs to the first point at or after it, wrapping around; on a point both consumers hash to,
//!   the one added first keeps it;
//! * AUTO_SPLIT without it: the first consumer owns every slot, each new one takes the upper half
//!   of the largest range, and a leaving consumer's range merges into a neighbour's;
//! * STICKY: the ranges the client gave (inclusive); overlapping ranges are refused.
//!
//! The selector is materialised into a 65536-entry table, so routing costs one lookup whatever
//! the number of consumers or keys.
//!
//! Ordering when ownership moves (PIP-379 "draining hashes"): [`Draining`] records, per slot, the
//! one consumer holding delivered and unacknowledged entries of it and how many. An entry of a
//! slot held by another consumer than its owner waits (in the replay set) until those are
//! acknowledged, redelivered, or their consumer leaves; nobody waits on anything else, so no
//! consumer is ever stuck behind a consumer that joined or left.

use std::collections::{BTreeMap, HashMap};

use pulsar_rs_ledger::Position;

use crate::error::BrokerError;
use crate::hash::key_hash;

/// Number of slots (Pulsar's `DEFAULT_RANGE_SIZE`, 2 << 15).
pub const SLOTS: usize = 65536;

/// Key used for entries without one (Pulsar's `NONE_KEY`).
pub const NONE_KEY: &[u8] = b"NONE_KEY";

/// A Key_Shared mode, as sent in `KeySharedMeta`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySharedMode {
    /// The broker splits the slots between consumers.
    AutoSplit,
    /// Each consumer names its slot ranges.
    Sticky,
}

/// A consumer's Key_Shared settings (`KeySharedMeta` on SUBSCRIBE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySharedMeta {
    /// AUTO_SPLIT or STICKY.
    pub mode: KeySharedMode,
    /// STICKY: inclusive slot ranges within 0..=65535.
    pub ranges: Vec<(u32, u32)>,
    /// Deliver without waiting for the previous owner of a key to acknowledge.
    pub allow_out_of_order_delivery: bool,
}

impl Default for KeySharedMeta {
    fn default() -> Self {
        KeySharedMeta {
            mode: KeySharedMode::AutoSplit,
            ranges: Vec::new(),
            allow_out_of_order_delivery: false,
        }
    }
}

impl KeySharedMode {
    /// The mode's name on the wire and in Pulsar's messages.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            KeySharedMode::AutoSplit => "AUTO_SPLIT",
            KeySharedMode::Sticky => "STICKY",
        }
    }
}

/// Whether a consumer may join a Key_Shared subscription whose consumers joined with `active`'s
/// mode and out-of-order setting (Pulsar ≥ 4.0.1, `checkForConsumerCompatibilityErrorWithDispatcher`,
/// on persistent and non-persistent topics alike).
///
/// # Errors
/// [`BrokerError::ConsumerBusy`] (Pulsar's `SubscriptionBusyException`) with Pulsar's message.
pub fn check_compatible(
    active: &KeySharedMeta,
    connecting: &KeySharedMeta,
) -> Result<(), BrokerError> {
    if active.mode != connecting.mode {
        return Err(BrokerError::ConsumerBusy(format!(
            "Subscription is of different type. Active subscription key_shared mode of '{}' is \
             different than the connecting consumer's key_shared mode '{}'.",
            active.mode.as_str(),
            connecting.mode.as_str()
        )));
    }
    if active.allow_out_of_order_delivery != connecting.allow_out_of_order_delivery {
        return Err(BrokerError::ConsumerBusy(
            if active.allow_out_of_order_delivery {
                "Subscription is of different type. Active subscription allows out of order \
                 delivery while the connecting consumer does not allow it."
            } else {
                "Subscription is of different type. Active subscription does not allow out of \
                 order delivery while the connecting consumer allows it."
            }
            .into(),
        ));
    }
    Ok(())
}

/// The slot of a key (`None` = no key) in the 0..=65535 range of the STICKY and the split
/// AUTO_SPLIT selectors. A subscription routes with [`Selector::slot_of`], which knows its range.
#[must_use]
pub fn slot_of(key: Option<&[u8]>) -> u16 {
    slot_of_hash(key_hash(key.unwrap_or(NONE_KEY)))
}

fn slot_of_hash(h: u32) -> u16 {
    // `% 65536` fits in u16; 0 is remapped to 1 as in Pulsar 4.x.
    let s = (h % SLOTS as u32) as u16;
    s.max(1)
}

/// The slot of a hash in the consistent-hash ring's range 1..=65535 (`% 65535 + 1`, never 0).
fn ring_slot_of_hash(h: u32) -> u16 {
    // `% 65535` is at most 65534, so `+ 1` fits in u16.
    (h % (SLOTS as u32 - 1)) as u16 + 1
}

/// Marks a slot with no owner in the table.
const NOBODY: u16 = u16::MAX;

/// One member of the selector.
#[derive(Clone, Debug)]
struct Member {
    handle: u64,
    name: String,
    /// The lowest index no live member of the same name held when this one joined.
    name_index: u32,
    ranges: Vec<(u32, u32)>,
}

/// Slot → consumer assignment of a Key_Shared subscription.
pub struct Selector {
    mode: KeySharedMode,
    consistent: bool,
    replica_points: u32,
    /// Members in join order (AUTO_SPLIT without consistent hashing splits in this order).
    members: Vec<Member>,
    /// AUTO_SPLIT without consistent hashing: range end (inclusive) → member handle.
    split: BTreeMap<u32, u64>,
    /// Slot → index into `members`, or [`NOBODY`]; rebuilt when members change.
    table: Vec<u16>,
}

impl Selector {
    /// An empty selector.
    #[must_use]
    pub fn new(mode: KeySharedMode, consistent: bool, replica_points: u32) -> Self {
        Selector {
            mode,
            consistent,
            replica_points: replica_points.max(1),
            members: Vec::new(),
            split: BTreeMap::new(),
            table: vec![NOBODY; SLOTS],
        }
    }

    /// The mode all members share.
    #[must_use]
    pub fn mode(&self) -> KeySharedMode {
        self.mode
    }

    /// The slot of a key (`None` = no key) in this selector's key hash range.
    #[must_use]
    pub fn slot_of(&self, key: Option<&[u8]>) -> u16 {
        let h = key_hash(key.unwrap_or(NONE_KEY));
        if self.mode == KeySharedMode::AutoSplit && self.consistent {
            ring_slot_of_hash(h)
        } else {
            slot_of_hash(h)
        }
    }

    /// Adds a consumer.
    ///
    /// # Errors
    /// [`BrokerError::ConsumerAssign`] for STICKY ranges that are empty, out of 0..=65535 or
    /// overlap another consumer's (or each other).
    pub fn add(
        &mut self,
        handle: u64,
        name: &str,
        meta: &KeySharedMeta,
    ) -> Result<(), BrokerError> {
        if meta.mode != self.mode {
            let active = KeySharedMeta {
                mode: self.mode,
                ..meta.clone()
            };
            check_compatible(&active, meta)?;
        }
        if self.members.len() >= usize::from(NOBODY) {
            return Err(BrokerError::ConsumerAssign(
                "too many Key_Shared consumers".into(),
            ));
        }
        if self.mode == KeySharedMode::Sticky {
            check_ranges(
                &meta.ranges,
                self.members.iter().flat_map(|m| m.ranges.iter()),
            )?;
        }
        let name_index = (0u32..)
            .find(|i| {
                !self
                    .members
                    .iter()
                    .any(|m| m.name == name && m.name_index == *i)
            })
            .unwrap_or(0);
        self.members.push(Member {
            handle,
            name: name.to_owned(),
            name_index,
            ranges: meta.ranges.clone(),
        });
        if self.mode == KeySharedMode::AutoSplit && !self.consistent {
            self.split_for(handle);
        }
        self.rebuild();
        Ok(())
    }

    /// Removes a consumer (no-op if absent).
    pub fn remove(&mut self, handle: u64) {
        let Some(i) = self.members.iter().position(|m| m.handle == handle) else {
            return;
        };
        self.members.remove(i);
        if self.mode == KeySharedMode::AutoSplit && !self.consistent {
            self.merge_from(handle);
        }
        self.rebuild();
    }

    /// The owner of `slot`, as a consumer handle.
    #[must_use]
    pub fn owner(&self, slot: u16) -> Option<u64> {
        match self.table[usize::from(slot)] {
            NOBODY => None,
            i => self.members.get(usize::from(i)).map(|m| m.handle),
        }
    }

    /// The inclusive slot ranges owned by `handle` (for stats and tests).
    #[must_use]
    pub fn ranges_of(&self, handle: u64) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for (s, &i) in self.table.iter().enumerate() {
            let own = i != NOBODY && self.members[usize::from(i)].handle == handle;
            if !own {
                continue;
            }
            let s = s as u32;
            match out.last_mut() {
                Some((_, end)) if *end + 1 == s => *end = s,
                _ => out.push((s, s)),
            }
        }
        out
    }

    /// AUTO_SPLIT without consistent hashing: the newcomer takes the upper half of the largest
    /// range (the first one on ties); the first member owns everything.
    fn split_for(&mut self, handle: u64) {
        if self.split.is_empty() {
            self.split.insert((SLOTS - 1) as u32, handle);
            return;
        }
        let mut best: Option<(u32, u32)> = None; // (start, end)
        let mut start = 0u32;
        for &end in self.split.keys() {
            if best.is_none_or(|(s, e)| end - start > e - s) {
                best = Some((start, end));
            }
            start = end + 1;
        }
        let Some((s, e)) = best else { return };
        if s == e {
            return; // nothing left to split: the newcomer owns nothing
        }
        let mid = s + (e - s) / 2;
        let old = self.split[&e];
        self.split.insert(mid, old);
        self.split.insert(e, handle);
    }

    /// AUTO_SPLIT without consistent hashing: a leaving member's ranges go to the member owning
    /// the range after each (or before, for the last range).
    fn merge_from(&mut self, handle: u64) {
        let ends: Vec<u32> = self
            .split
            .iter()
            .filter(|(_, h)| **h == handle)
            .map(|(e, _)| *e)
            .collect();
        for e in ends {
            let next = self.split.range(e + 1..).next().map(|(_, h)| *h);
            self.split.remove(&e);
            if next.is_none() {
                // Last range: the previous range grows up to the end.
                if let Some((&pe, &ph)) = self.split.range(..e).next_back() {
                    self.split.remove(&pe);
                    self.split.insert(e, ph);
                }
            }
        }
    }

    fn rebuild(&mut self) {
        self.table.fill(NOBODY);
        if self.members.is_empty() {
            self.split.clear();
            return;
        }
        let index: HashMap<u64, u16> = self
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| (m.handle, u16::try_from(i).unwrap_or(NOBODY)))
            .collect();
        match (self.mode, self.consistent) {
            (KeySharedMode::Sticky, _) => {
                for (i, m) in self.members.iter().enumerate() {
                    for &(s, e) in &m.ranges {
                        for slot in s..=e.min((SLOTS - 1) as u32) {
                            self.table[slot as usize] = u16::try_from(i).unwrap_or(NOBODY);
                        }
                    }
                }
            }
            (KeySharedMode::AutoSplit, false) => {
                let mut start = 0usize;
                for (&end, h) in &self.split {
                    let i = index.get(h).copied().unwrap_or(NOBODY);
                    self.table[start..=end as usize].fill(i);
                    start = end as usize + 1;
                }
            }
            (KeySharedMode::AutoSplit, true) => {
                let ring = self.ring();
                let Some((_, &first)) = ring.iter().next() else {
                    return;
                };
                // The ring's key hash range starts at 1: slot 0 is never a key's.
                let mut slot = 1usize;
                for (&point, &member) in &ring {
                    let upto = usize::from(point);
                    if slot <= upto {
                        self.table[slot..=upto].fill(member);
                        slot = upto + 1;
                    }
                }
                // Past the last point: wrap around to the first.
                if slot < SLOTS {
                    self.table[slot..].fill(first);
                }
            }
        }
    }

    /// The consistent-hash ring: point → member index. Points are
    /// `ring_slot(name + "\0" + nameIndex + "\0" + i)`. Members are placed in join order, so on
    /// a point two members share the one that joined first keeps it, and when it leaves the next
    /// one in join order takes it (Pulsar's colliding-consumers list).
    fn ring(&self) -> BTreeMap<u16, u16> {
        let mut ring = BTreeMap::new();
        for (i, m) in self.members.iter().enumerate() {
            for p in 0..self.replica_points {
                let key = format!("{}\0{}\0{p}", m.name, m.name_index);
                let point = ring_slot_of_hash(key_hash(key.as_bytes()));
                ring.entry(point)
                    .or_insert_with(|| u16::try_from(i).unwrap_or(NOBODY));
            }
        }
        ring
    }
}

/// Checks STICKY ranges against each other and against those already taken.
fn check_ranges<'a>(
    ranges: &[(u32, u32)],
    taken: impl Iterator<Item = &'a (u32, u32)>,
) -> Result<(), BrokerError> {
    if ranges.is_empty() {
        return Err(BrokerError::ConsumerAssign(
            "Ranges for KeyShared policy must not be empty.".into(),
        ));
    }
    for &(s, e) in ranges {
        if s > e || e >= SLOTS as u32 {
            return Err(BrokerError::ConsumerAssign(format!(
                "Fixed hash range start > end or out of 0..65535: [{s}, {e}]"
            )));
        }
    }
    let mut all: Vec<(u32, u32, bool)> = ranges.iter().map(|&(s, e)| (s, e, true)).collect();
    all.extend(taken.map(|&(s, e)| (s, e, false)));
    all.sort_unstable();
    for w in all.windows(2) {
        if w[1].0 <= w[0].1 {
            return Err(BrokerError::ConsumerAssign(format!(
                "Range conflict with the existing consumers: [{}, {}] overlaps [{}, {}]",
                w[1].0, w[1].1, w[0].0, w[0].1
            )));
        }
    }
    Ok(())
}

/// Per-slot record of the consumer holding delivered, unacknowledged entries (PIP-379).
#[derive(Default)]
pub struct Draining {
    /// Slot → (consumer handle, pending entries of that slot at it).
    holders: HashMap<u16, (u64, u32)>,
    /// Pending position → its slot.
    pending: HashMap<Position, u16>,
}

impl Draining {
    /// The consumer holding pending entries of `slot`, if any.
    #[must_use]
    pub fn holder(&self, slot: u16) -> Option<u64> {
        self.holders.get(&slot).map(|(h, _)| *h)
    }

    /// Records `position` (of `slot`) as delivered to `handle`.
    pub fn delivered(&mut self, position: Position, slot: u16, handle: u64) {
        if self.pending.insert(position, slot).is_some() {
            return;
        }
        let e = self.holders.entry(slot).or_insert((handle, 0));
        e.1 += 1;
    }

    /// Forgets `position` (acknowledged, redelivered, or its consumer left). Returns its slot and
    /// whether that slot is now free of pending entries.
    pub fn release(&mut self, position: Position) -> Option<(u16, bool)> {
        let slot = self.pending.remove(&position)?;
        let freed = match self.holders.get_mut(&slot) {
            Some(e) if e.1 > 1 => {
                e.1 -= 1;
                false
            }
            Some(_) => {
                self.holders.remove(&slot);
                true
            }
            None => true,
        };
        Some((slot, freed))
    }

    /// The slot of a pending position.
    #[must_use]
    pub fn slot_of_pending(&self, position: Position) -> Option<u16> {
        self.pending.get(&position).copied()
    }

    /// The oldest pending position of `slot` (what its holder has not acknowledged yet).
    #[must_use]
    pub fn oldest_pending_of(&self, slot: u16) -> Option<Position> {
        self.pending
            .iter()
            .filter(|&(_, &s)| s == slot)
            .map(|(&p, _)| p)
            .min()
    }

    /// Slots currently held (draining or not), for stats.
    #[must_use]
    pub fn held_slots(&self) -> usize {
        self.holders.len()
    }

    /// Forgets everything (the subscription was reset).
    pub fn clear(&mut self) {
        self.holders.clear();
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto() -> KeySharedMeta {
        KeySharedMeta::default()
    }

    fn sticky(ranges: &[(u32, u32)]) -> KeySharedMeta {
        KeySharedMeta {
            mode: KeySharedMode::Sticky,
            ranges: ranges.to_vec(),
            allow_out_of_order_delivery: false,
        }
    }

    fn counts(sel: &Selector, handles: &[u64]) -> Vec<usize> {
        handles
            .iter()
            .map(|h| {
                (0..SLOTS)
                    .filter(|&s| sel.owner(s as u16) == Some(*h))
                    .count()
            })
            .collect()
    }

    /// Pulsar 4.x's own vectors (`ConsistentHashingStickyKeyConsumerSelectorTest`, three points
    /// per consumer): consumer1 at 18366/39817/60442, consumer2 at 6668/52979/63679, consumer3 at
    /// 14358/29990/65183, each owning the slots up to its points.
    #[test]
    fn consistent_ring_matches_pulsar_vectors() {
        let mut sel = Selector::new(KeySharedMode::AutoSplit, true, 3);
        for (h, name) in [(1, "consumer1"), (2, "consumer2"), (3, "consumer3")] {
            sel.add(h, name, &KeySharedMeta::default()).unwrap();
        }
        assert_eq!(
            sel.ranges_of(1),
            vec![(14359, 18366), (29991, 39817), (52980, 60442)]
        );
        assert_eq!(
            sel.ranges_of(2),
            vec![(1, 6668), (39818, 52979), (60443, 63679), (65184, 65535)]
        );
        assert_eq!(
            sel.ranges_of(3),
            vec![(6669, 14358), (18367, 29990), (63680, 65183)]
        );
        assert_eq!(sel.owner(0), None, "slot 0 is outside the ring's range");
    }

    /// A second consumer of the same name takes name index 1 (its own points); when the first
    /// leaves and another joins, that one reuses index 0 and so the first one's points.
    #[test]
    fn same_name_consumers_get_the_lowest_free_name_index() {
        let mut sel = Selector::new(KeySharedMode::AutoSplit, true, 3);
        let meta = KeySharedMeta::default();
        sel.add(1, "c", &meta).unwrap();
        let first = sel.ranges_of(1);
        sel.add(2, "c", &meta).unwrap();
        assert_ne!(sel.ranges_of(2), Vec::new());
        sel.remove(1);
        sel.add(3, "c", &meta).unwrap();
        let mut alone = Selector::new(KeySharedMode::AutoSplit, true, 3);
        alone.add(9, "c", &meta).unwrap();
        assert_eq!(alone.ranges_of(9), first);
        // Handle 3 holds index 0 again: its points are the first consumer's.
        let mut pair = Selector::new(KeySharedMode::AutoSplit, true, 3);
        pair.add(1, "c", &meta).unwrap();
        pair.add(2, "c", &meta).unwrap();
        assert_eq!(sel.ranges_of(3), pair.ranges_of(1));
        assert_eq!(sel.ranges_of(2), pair.ranges_of(2));
    }

    #[test]
    fn incompatible_key_shared_policies_are_refused_with_pulsars_message() {
        let auto = KeySharedMeta::default();
        let ooo = KeySharedMeta {
            allow_out_of_order_delivery: true,
            ..KeySharedMeta::default()
        };
        let sticky = KeySharedMeta {
            mode: KeySharedMode::Sticky,
            ranges: vec![(0, 9)],
            allow_out_of_order_delivery: false,
        };
        assert!(check_compatible(&auto, &auto).is_ok());
        let e = check_compatible(&auto, &sticky).unwrap_err().to_string();
        assert!(e.contains("key_shared mode of 'AUTO_SPLIT' is different than the connecting consumer's key_shared mode 'STICKY'"), "{e}");
        let e = check_compatible(&auto, &ooo).unwrap_err().to_string();
        assert!(
            e.contains(
                "does not allow out of order delivery while the connecting consumer allows it"
            ),
            "{e}"
        );
        let e = check_compatible(&ooo, &auto).unwrap_err().to_string();
        assert!(
            e.contains("allows out of order delivery while the connecting consumer does not"),
            "{e}"
        );
    }

    #[test]
    fn slots_follow_pulsar() {
        assert_eq!(slot_of_hash(0), 1, "0 is remapped to 1");
        assert_eq!(slot_of_hash(65536 * 3 + 7), 7);
        assert_eq!(slot_of(None), slot_of(Some(NONE_KEY)));
        let s = slot_of(Some(b"hello"));
        assert_eq!(u32::from(s), (0x248B_FA47u32 & 0x7fff_ffff) % 65536);
    }

    #[test]
    fn consistent_ring_covers_every_slot_and_is_balanced() {
        let mut sel = Selector::new(KeySharedMode::AutoSplit, true, 100);
        assert_eq!(sel.owner(5), None);
        let handles: Vec<u64> = (1..=4).collect();
        for h in &handles {
            sel.add(*h, &format!("consumer-{h}"), &auto()).unwrap();
        }
        let c = counts(&sel, &handles);
        // The ring's range is 1..=65535: every slot of it has an owner, slot 0 none.
        assert_eq!(
            c.iter().sum::<usize>(),
            SLOTS - 1,
            "every slot has an owner"
        );
        for n in &c {
            assert!(*n > SLOTS / 4 / 3, "roughly balanced: {c:?}");
        }
    }

    #[test]
    fn consistent_ring_moves_only_the_leavers_slots() {
        let mut sel = Selector::new(KeySharedMode::AutoSplit, true, 100);
        for h in 1..=3u64 {
            sel.add(h, &format!("c{h}"), &auto()).unwrap();
        }
        let before: Vec<Option<u64>> = (0..SLOTS).map(|s| sel.owner(s as u16)).collect();
        sel.remove(2);
        for (s, b) in before.iter().enumerate() {
            let now = sel.owner(s as u16);
            if *b == Some(2) {
                assert!(now == Some(1) || now == Some(3));
            } else {
                assert_eq!(now, *b, "slot {s} moved although its owner stayed");
            }
        }
        // Joining again restores the same assignment (points depend only on the name).
        sel.add(2, "c2", &auto()).unwrap();
        let again: Vec<Option<u64>> = (0..SLOTS).map(|s| sel.owner(s as u16)).collect();
        assert_eq!(again, before);
    }

    #[test]
    fn same_names_do_not_collide() {
        let mut sel = Selector::new(KeySharedMode::AutoSplit, true, 100);
        sel.add(1, "same", &auto()).unwrap();
        sel.add(2, "same", &auto()).unwrap();
        let c = counts(&sel, &[1, 2]);
        assert!(c[0] > 0 && c[1] > 0, "{c:?}");
    }

    #[test]
    fn auto_split_halves_the_largest_range() {
        let mut sel = Selector::new(KeySharedMode::AutoSplit, false, 100);
        sel.add(1, "a", &auto()).unwrap();
        assert_eq!(sel.ranges_of(1), vec![(0, 65535)]);
        sel.add(2, "b", &auto()).unwrap();
        assert_eq!(sel.ranges_of(1), vec![(0, 32767)]);
        assert_eq!(sel.ranges_of(2), vec![(32768, 65535)]);
        sel.add(3, "c", &auto()).unwrap();
        assert_eq!(sel.ranges_of(1), vec![(0, 16383)]);
        assert_eq!(sel.ranges_of(3), vec![(16384, 32767)]);
        sel.remove(3);
        assert_eq!(
            sel.ranges_of(2),
            vec![(16384, 65535)],
            "merged into the next range"
        );
        sel.remove(2);
        assert_eq!(
            sel.ranges_of(1),
            vec![(0, 65535)],
            "last range merges backwards"
        );
    }

    #[test]
    fn sticky_ranges_and_conflicts() {
        let mut sel = Selector::new(KeySharedMode::Sticky, true, 100);
        sel.add(1, "a", &sticky(&[(0, 999), (2000, 2999)])).unwrap();
        sel.add(2, "b", &sticky(&[(1000, 1999)])).unwrap();
        assert_eq!(sel.owner(500), Some(1));
        assert_eq!(sel.owner(1500), Some(2));
        assert_eq!(sel.owner(2500), Some(1));
        assert_eq!(sel.owner(40000), None, "uncovered slots have no owner");
        for bad in [
            &[(999, 1000)][..],
            &[(2999, 3000)],
            &[(5, 4)],
            &[(0, 70000)],
            &[],
        ] {
            let e = sel.add(3, "c", &sticky(bad)).unwrap_err();
            assert!(matches!(e, BrokerError::ConsumerAssign(_)), "{bad:?}: {e}");
        }
        let e = sel
            .add(3, "c", &sticky(&[(3000, 3010), (3005, 3020)]))
            .unwrap_err();
        assert!(
            matches!(e, BrokerError::ConsumerAssign(_)),
            "self-overlap: {e}"
        );
        assert!(matches!(
            sel.add(3, "c", &auto()).unwrap_err(),
            BrokerError::ConsumerBusy(_)
        ));
        sel.remove(2);
        sel.add(3, "c", &sticky(&[(1000, 1999)])).unwrap();
        assert_eq!(sel.owner(1500), Some(3));
    }

    #[test]
    fn draining_counts_per_slot() {
        let mut d = Draining::default();
        let (p1, p2, p3) = (
            Position::new(1, 1),
            Position::new(1, 2),
            Position::new(1, 3),
        );
        d.delivered(p1, 7, 10);
        d.delivered(p2, 7, 10);
        d.delivered(p3, 8, 11);
        d.delivered(p3, 8, 11); // a duplicate does not count twice
        assert_eq!(d.holder(7), Some(10));
        assert_eq!(d.release(p1), Some((7, false)));
        assert_eq!(d.holder(7), Some(10));
        assert_eq!(d.release(p2), Some((7, true)));
        assert_eq!(d.holder(7), None);
        assert_eq!(d.release(p2), None);
        assert_eq!(d.release(p3), Some((8, true)));
        assert_eq!(d.held_slots(), 0);
    }
}
