//! Pending acks of one subscription (Pulsar's `PendingAckHandleImpl`): acknowledgements made in
//! a transaction are held here, not applied to the cursor, until the transaction commits
//! (then they are applied) or aborts (then the messages are delivered again). A held message is
//! not dispatched meanwhile. Conflicting acks are refused with TransactionConflict, as Pulsar
//! refuses them.
//!
//! An ack may name some messages of a batch entry (a batch-index ack, Pulsar's ack set: bit `i`
//! set while message `i` is not acknowledged): the transaction holds those indexes only, other
//! transactions and plain acks may take the rest, and an index held twice is a conflict.
//!
//! The held acks are made durable in the subscription's pending-ack log
//! ([`super::pending_ack_store`]), which a topic load replays into them.

use std::collections::HashMap;

use parking_lot::Mutex;
use pulsar_rs_ledger::Position;

use super::TxnId;
use crate::error::BrokerError;

/// One message id of a transactional ack: a whole entry, or some messages of a batch entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckedId {
    /// The entry.
    pub position: Position,
    /// Pulsar's ack set of a batch-index ack (bit `i` set: message `i` not acknowledged;
    /// words past the end are all acknowledged); empty for the whole entry.
    pub ack_set: Vec<u64>,
    /// The batch's size when known (the client's `batch_size`, or what was delivered), else 0.
    pub batch_size: u32,
}

impl AckedId {
    /// A whole entry.
    #[must_use]
    pub fn whole(position: Position) -> Self {
        AckedId {
            position,
            ack_set: Vec::new(),
            batch_size: 0,
        }
    }

    /// Whether it names some messages of a batch only.
    #[must_use]
    pub fn is_batch_index(&self) -> bool {
        !self.ack_set.is_empty()
    }

    /// The messages it acknowledges, as a bitset (bit `i` set: message `i` acknowledged),
    /// bounded by the batch size (by the ack set's words when that is unknown).
    fn acked_bits(&self) -> Vec<u64> {
        acked_bits(&self.ack_set, self.batch_size)
    }
}

/// The acknowledged messages of `ack_set` below `size` (0: the ack set's own length).
fn acked_bits(ack_set: &[u64], size: u32) -> Vec<u64> {
    let size = if size == 0 {
        ack_set.len() * 64
    } else {
        size as usize
    };
    (0..size.div_ceil(64))
        .map(|w| {
            let below = if (w + 1) * 64 <= size {
                u64::MAX
            } else {
                (1u64 << (size - w * 64)) - 1
            };
            !ack_set.get(w).copied().unwrap_or(0) & below
        })
        .collect()
}

/// Whether two bitsets share a bit.
fn overlap(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).any(|(x, y)| x & y != 0)
}

/// `a` AND `b`, word by word (missing words are all acknowledged: zero).
fn and(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().zip(b).map(|(x, y)| x & y).collect()
}

/// The acks one transaction holds on the subscription.
#[derive(Clone, Debug, Default)]
pub struct TxnAcks {
    /// Individually acknowledged entries.
    pub individual: Vec<Position>,
    /// Batch-index acks: entry → the AND of its ack sets in this transaction.
    pub batch: HashMap<Position, Vec<u64>>,
    /// The cumulative ack position, if any (Exclusive/Failover), and its ack set when it is a
    /// message inside a batch (empty: the whole entry).
    pub cumulative: Option<(Position, Vec<u64>)>,
}

/// The messages of one batch entry transactions hold.
#[derive(Default)]
struct HeldBatch {
    /// The batch's size as the acks gave it (0: unknown).
    size: u32,
    /// Per transaction, the AND of its ack sets.
    by_txn: HashMap<TxnId, Vec<u64>>,
}

impl HeldBatch {
    /// Every held message, as acknowledged bits.
    fn held_bits(&self) -> Vec<u64> {
        let mut out: Vec<u64> = Vec::new();
        for set in self.by_txn.values() {
            let bits = acked_bits(set, self.size);
            if out.len() < bits.len() {
                out.resize(bits.len(), 0);
            }
            for (o, b) in out.iter_mut().zip(bits) {
                *o |= b;
            }
        }
        out
    }

    /// The ack set with every held message cleared.
    fn ack_set(&self) -> Option<Vec<u64>> {
        self.by_txn.values().cloned().reduce(|a, b| and(&a, &b))
    }
}

#[derive(Default)]
struct State {
    /// Held individual acks of whole entries: position → transaction.
    individual: HashMap<Position, TxnId>,
    /// Held batch-index acks.
    batch: HashMap<Position, HeldBatch>,
    /// Per transaction.
    by_txn: HashMap<TxnId, TxnAcks>,
    /// The transaction holding a cumulative ack, if any.
    cumulative_owner: Option<TxnId>,
}

impl State {
    fn hold(&mut self, txn: TxnId, id: &AckedId) {
        if id.is_batch_index() {
            let held = self.batch.entry(id.position).or_default();
            held.size = held.size.max(id.batch_size);
            let set = held.by_txn.entry(txn).or_insert_with(|| id.ack_set.clone());
            *set = and(set, &id.ack_set);
            let mine = self.by_txn.entry(txn).or_default();
            mine.batch.insert(id.position, set.clone());
        } else {
            self.individual.insert(id.position, txn);
            self.by_txn
                .entry(txn)
                .or_default()
                .individual
                .push(id.position);
        }
    }

    /// Drops what `txn` holds of `position` (whole or batch indexes).
    fn unhold(&mut self, txn: TxnId, position: Position) {
        if self.individual.get(&position) == Some(&txn) {
            self.individual.remove(&position);
        }
        if let Some(held) = self.batch.get_mut(&position) {
            held.by_txn.remove(&txn);
            if held.by_txn.is_empty() {
                self.batch.remove(&position);
            }
        }
    }
}

/// Where a message stands in a subscription's pending acks: Pulsar's
/// `PositionInPendingAckStats.State`, answered by `positionStatsInPendingAck`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PositionInPendingAck {
    /// A transaction holds an ack of it.
    PendingAck,
    /// At or below the subscription's mark-delete position: acknowledged for good.
    MarkDelete,
    /// No transaction holds it.
    NotInPendingAck,
    /// The pending acks are not recovered yet (never here: a topic load replays them first).
    PendingAckNotReady,
    /// A batch index past the size of the batch the acks named.
    InvalidPosition,
}

impl PositionInPendingAck {
    /// Pulsar's name of the state.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            PositionInPendingAck::PendingAck => "PendingAck",
            PositionInPendingAck::MarkDelete => "MarkDelete",
            PositionInPendingAck::NotInPendingAck => "NotInPendingAck",
            PositionInPendingAck::PendingAckNotReady => "PendingAckNotReady",
            PositionInPendingAck::InvalidPosition => "InvalidPosition",
        }
    }
}

/// The pending acks of one subscription.
#[derive(Default)]
pub struct PendingAcks {
    /// Short lock, never held across `.await` or storage I/O.
    state: Mutex<State>,
}

fn conflict(txn: TxnId, what: String) -> BrokerError {
    BrokerError::TransactionConflict(format!("[{txn}] {what}"))
}

impl PendingAcks {
    /// Holds individual acks of `ids` for `txn`, all or none. `acked` says whether the cursor
    /// already acknowledged an entry; `batch_acked` gives the cursor's ack set of a partly
    /// acknowledged batch entry.
    ///
    /// # Errors
    /// TransactionConflict when a message was acknowledged before or is held by a transaction
    /// (this one included, as Pulsar's).
    pub fn add_individual(
        &self,
        txn: TxnId,
        ids: &[AckedId],
        acked: impl Fn(Position) -> bool,
        batch_acked: impl Fn(Position) -> Option<Vec<u64>>,
    ) -> Result<(), BrokerError> {
        let mut st = self.state.lock();
        for (i, id) in ids.iter().enumerate() {
            let p = id.position;
            let before = || {
                conflict(
                    txn,
                    format!("Transaction ack position {p} has been acked before."),
                )
            };
            let pending = || {
                conflict(
                    txn,
                    format!("Transaction ack position {p} is in pending ack status."),
                )
            };
            if acked(p) {
                return Err(before());
            }
            if st.individual.contains_key(&p) {
                return Err(pending());
            }
            // An id twice in one command counts as held by the first.
            let earlier = &ids[..i];
            if id.is_batch_index() {
                let bits = id.acked_bits();
                if let Some(cursor) = batch_acked(p) {
                    if overlap(&bits, &acked_bits(&cursor, id.batch_size)) {
                        return Err(before());
                    }
                }
                let held = st.batch.get(&p).map(HeldBatch::held_bits);
                if held.is_some_and(|h| overlap(&bits, &h))
                    || earlier.iter().any(|e| {
                        e.position == p && (!e.is_batch_index() || overlap(&bits, &e.acked_bits()))
                    })
                {
                    return Err(pending());
                }
            } else if st.batch.contains_key(&p) || earlier.iter().any(|e| e.position == p) {
                return Err(pending());
            }
        }
        for id in ids {
            st.hold(txn, id);
        }
        Ok(())
    }

    /// Holds a cumulative ack at `id` for `txn`; `mark_delete` is the cursor's.
    ///
    /// # Errors
    /// TransactionConflict at or below mark-delete, when another transaction holds a cumulative
    /// ack, or when it is not past this transaction's previous one.
    pub fn add_cumulative(
        &self,
        txn: TxnId,
        id: &AckedId,
        mark_delete: Position,
    ) -> Result<(), BrokerError> {
        let position = id.position;
        let mut st = self.state.lock();
        if position <= mark_delete {
            return Err(conflict(
                txn,
                format!("Transaction cumulative ack position {position} is at or before the mark-delete position {mark_delete}."),
            ));
        }
        if let Some(owner) = st.cumulative_owner {
            if owner != txn {
                return Err(conflict(
                    txn,
                    format!("Transaction {owner} holds a pending cumulative ack."),
                ));
            }
        }
        let acks = st.by_txn.entry(txn).or_default();
        if let Some((before, set)) = &acks.cumulative {
            if !cumulative_after(id, *before, set) {
                return Err(conflict(
                    txn,
                    format!(
                        "Transaction cumulative ack position {position} is not after its previous one."
                    ),
                ));
            }
        }
        acks.cumulative = Some((position, id.ack_set.clone()));
        st.cumulative_owner = Some(txn);
        Ok(())
    }

    /// Holds acks recovered from the pending-ack log at topic load (no conflict checks: they
    /// were checked when made).
    pub fn restore(&self, txn: TxnId, ids: &[AckedId], cumulative: bool) {
        let mut st = self.state.lock();
        if cumulative {
            for id in ids {
                let acks = st.by_txn.entry(txn).or_default();
                let further = match &acks.cumulative {
                    Some((p, set)) => cumulative_after(id, *p, set),
                    None => true,
                };
                if further {
                    acks.cumulative = Some((id.position, id.ack_set.clone()));
                }
                st.cumulative_owner = Some(txn);
            }
            return;
        }
        for id in ids {
            st.hold(txn, id);
        }
    }

    /// Drops acks `txn` just made that could not be made durable (`ids`, or its cumulative ack
    /// when `cumulative`).
    pub fn release(&self, txn: TxnId, ids: &[AckedId], cumulative: bool) {
        let mut st = self.state.lock();
        if cumulative {
            if let Some(acks) = st.by_txn.get_mut(&txn) {
                acks.cumulative = None;
            }
            if st.cumulative_owner == Some(txn) {
                st.cumulative_owner = None;
            }
            return;
        }
        for id in ids {
            st.unhold(txn, id.position);
        }
        if let Some(acks) = st.by_txn.get_mut(&txn) {
            acks.individual
                .retain(|p| !ids.iter().any(|id| id.position == *p));
            acks.batch
                .retain(|p, _| !ids.iter().any(|id| id.position == *p));
        }
    }

    /// Removes and returns what `txn` holds (on commit or abort).
    pub fn take(&self, txn: TxnId) -> TxnAcks {
        let mut st = self.state.lock();
        let acks = st.by_txn.remove(&txn).unwrap_or_default();
        for p in acks.individual.iter().chain(acks.batch.keys()) {
            st.unhold(txn, *p);
        }
        if st.cumulative_owner == Some(txn) {
            st.cumulative_owner = None;
        }
        acks
    }

    /// Whether the whole entry at `position` is held by a transaction.
    #[must_use]
    pub fn holds(&self, position: Position) -> bool {
        let st = self.state.lock();
        !st.individual.is_empty() && st.individual.contains_key(&position)
    }

    /// The ack set of a batch entry some of whose messages transactions hold (held messages
    /// cleared), if any: what a delivery of the entry must leave out.
    #[must_use]
    pub fn held_ack_set(&self, position: Position) -> Option<Vec<u64>> {
        let st = self.state.lock();
        if st.batch.is_empty() {
            return None;
        }
        st.batch.get(&position).and_then(HeldBatch::ack_set)
    }

    /// Whether a transaction holds an ack of the entry at `position` or, with `batch_index`, of
    /// that message of the batch entry (Pulsar's `checkPositionInPendingAckState`, past its
    /// mark-delete check, which is the subscription's): the individual acks only, as Pulsar's.
    #[must_use]
    pub fn state_of(&self, position: Position, batch_index: Option<u32>) -> PositionInPendingAck {
        let st = self.state.lock();
        if st.individual.contains_key(&position) {
            return PositionInPendingAck::PendingAck;
        }
        let Some(held) = st.batch.get(&position) else {
            return PositionInPendingAck::NotInPendingAck;
        };
        let Some(i) = batch_index else {
            return PositionInPendingAck::PendingAck;
        };
        if held.size > 0 && i >= held.size {
            return PositionInPendingAck::InvalidPosition;
        }
        let word = held.held_bits().get(i as usize / 64).copied().unwrap_or(0);
        if word >> (i % 64) & 1 == 1 {
            PositionInPendingAck::PendingAck
        } else {
            PositionInPendingAck::NotInPendingAck
        }
    }

    /// The cumulative ack `txn` holds here, if any (Pulsar's `TransactionInPendingAckStats`).
    #[must_use]
    pub fn cumulative_of(&self, txn: TxnId) -> Option<Position> {
        self.state
            .lock()
            .by_txn
            .get(&txn)
            .and_then(|a| a.cumulative.as_ref().map(|(p, _)| *p))
    }

    /// Transactions of coordinator `most` with a sequence at or below `least` holding acks.
    #[must_use]
    pub fn transactions_at_or_below(&self, most: u64, least: u64) -> Vec<TxnId> {
        super::at_or_below(self.state.lock().by_txn.keys(), most, least)
    }

    /// Transactions holding acks.
    #[must_use]
    pub fn transactions(&self) -> usize {
        self.state.lock().by_txn.len()
    }
}

/// Whether a cumulative ack at `id` is past one at `before` with ack set `set` (Pulsar's
/// `compareToWithAckSet`: in the same batch entry, the one acknowledging more messages).
fn cumulative_after(id: &AckedId, before: Position, set: &[u64]) -> bool {
    if id.position != before {
        return id.position > before;
    }
    match (set.is_empty(), id.ack_set.is_empty()) {
        (true, _) => false,
        (false, true) => true,
        (false, false) => {
            let left = |s: &[u64]| s.iter().map(|w| w.count_ones()).sum::<u32>();
            left(&id.ack_set) < left(set)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(entry_id: i64, acked: &[u32], size: u32) -> AckedId {
        let mut set = vec![0u64; (size as usize).div_ceil(64)];
        for i in 0..size {
            if !acked.contains(&i) {
                set[(i / 64) as usize] |= 1 << (i % 64);
            }
        }
        // As Java's BitSet.toLongArray: trailing zero words are left out.
        while set.last() == Some(&0) {
            set.pop();
        }
        AckedId {
            position: Position::new(1, entry_id),
            ack_set: set,
            batch_size: size,
        }
    }

    #[test]
    fn batch_indexes_are_held_per_message_and_conflict_per_message() {
        let acks = PendingAcks::default();
        let (a, b) = (TxnId::new(0, 1), TxnId::new(0, 2));
        let none = |_| None;
        // The last index of a 3-message batch: its ack set has one word with bits 0 and 1.
        acks.add_individual(a, &[batch(0, &[2], 3)], |_| false, none)
            .unwrap();
        // Another index of the same batch in another transaction: no conflict (the bits
        // beyond the batch's size are not messages).
        acks.add_individual(b, &[batch(0, &[1], 3)], |_| false, none)
            .unwrap();
        assert!(!acks.holds(Position::new(1, 0)), "index 0 is still free");
        assert_eq!(acks.held_ack_set(Position::new(1, 0)), Some(vec![0b001]));
        // The same index again, in either transaction: in pending ack status.
        for t in [a, b] {
            let e = acks
                .add_individual(t, &[batch(0, &[1], 3)], |_| false, none)
                .unwrap_err();
            assert!(e.to_string().contains("pending ack status"), "{e}");
        }
        // The whole entry while indexes of it are held.
        assert!(acks
            .add_individual(a, &[AckedId::whole(Position::new(1, 0))], |_| false, none)
            .is_err());
        // An index the cursor acknowledged before.
        let e = acks
            .add_individual(a, &[batch(0, &[0], 3)], |_| false, |_| Some(vec![0b110]))
            .unwrap_err();
        assert!(e.to_string().contains("acked before"), "{e}");
        // Abort of b frees index 1 again; commit of a hands back its ack set.
        let taken_b = acks.take(b);
        assert_eq!(taken_b.batch.get(&Position::new(1, 0)), Some(&vec![0b101]));
        assert_eq!(acks.held_ack_set(Position::new(1, 0)), Some(vec![0b011]));
        acks.add_individual(b, &[batch(0, &[1], 3)], |_| false, none)
            .unwrap();
        let taken_a = acks.take(a);
        assert_eq!(taken_a.batch.get(&Position::new(1, 0)), Some(&vec![0b011]));
        acks.take(b);
        assert_eq!(acks.held_ack_set(Position::new(1, 0)), None);
    }

    #[test]
    fn a_positions_state_in_the_pending_acks_is_pulsars() {
        use PositionInPendingAck::{InvalidPosition, NotInPendingAck, PendingAck};
        let acks = PendingAcks::default();
        let a = TxnId::new(0, 1);
        let none = |_| None;
        acks.add_individual(a, &[AckedId::whole(Position::new(1, 3))], |_| false, none)
            .unwrap();
        acks.add_individual(a, &[batch(0, &[2], 3)], |_| false, none)
            .unwrap();
        assert_eq!(acks.state_of(Position::new(1, 3), None), PendingAck);
        assert_eq!(acks.state_of(Position::new(1, 4), None), NotInPendingAck);
        // Index 2 of the batch is held, 0 and 1 are not, 3 is past the batch.
        assert_eq!(acks.state_of(Position::new(1, 0), None), PendingAck);
        assert_eq!(acks.state_of(Position::new(1, 0), Some(2)), PendingAck);
        assert_eq!(acks.state_of(Position::new(1, 0), Some(1)), NotInPendingAck);
        assert_eq!(acks.state_of(Position::new(1, 0), Some(3)), InvalidPosition);
        // A cumulative ack is not looked at (as Pulsar's), and a taken transaction holds none.
        acks.take(a);
        assert_eq!(acks.state_of(Position::new(1, 3), None), NotInPendingAck);
        assert_eq!(acks.state_of(Position::new(1, 0), Some(2)), NotInPendingAck);
    }

    #[test]
    fn a_cumulative_ack_in_a_batch_must_move_forward() {
        let acks = PendingAcks::default();
        let a = TxnId::new(0, 1);
        let md = Position::new(1, -1);
        acks.add_cumulative(a, &batch(0, &[0, 1], 4), md).unwrap();
        assert!(acks.add_cumulative(a, &batch(0, &[0], 4), md).is_err());
        assert!(acks.add_cumulative(a, &batch(0, &[0, 1], 4), md).is_err());
        acks.add_cumulative(a, &batch(0, &[0, 1, 2], 4), md)
            .unwrap();
        acks.add_cumulative(a, &AckedId::whole(Position::new(1, 0)), md)
            .unwrap();
        assert!(acks
            .add_cumulative(a, &batch(0, &[0, 1, 2], 4), md)
            .is_err());
        assert_eq!(acks.cumulative_of(a), Some(Position::new(1, 0)));
    }
}
