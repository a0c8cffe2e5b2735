//! Pending acks of one subscription (Pulsar's `PendingAckHandleImpl`): acknowledgements made in
//! a transaction are held here, not applied to the cursor, until the transaction commits
//! (then they are applied) or aborts (then the messages are delivered again). A held message is
//! not dispatched meanwhile. Conflicting acks are refused with TransactionConflict, as Pulsar
//! refuses them.
//!
//! The held acks are made durable in the subscription's pending-ack log
//! ([`super::pending_ack_store`]), which a topic load replays into them.

use std::collections::HashMap;

use parking_lot::Mutex;
use pulsar_rs_ledger::Position;

use super::TxnId;
use crate::error::BrokerError;

/// The acks one transaction holds on the subscription.
#[derive(Clone, Debug, Default)]
pub struct TxnAcks {
    /// Individually acknowledged positions.
    pub individual: Vec<Position>,
    /// The cumulative ack position, if any (Exclusive/Failover).
    pub cumulative: Option<Position>,
}

#[derive(Default)]
struct State {
    /// Held individual acks: position → transaction.
    individual: HashMap<Position, TxnId>,
    /// Per transaction.
    by_txn: HashMap<TxnId, TxnAcks>,
    /// The transaction holding a cumulative ack, if any.
    cumulative_owner: Option<TxnId>,
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
    /// Holds individual acks of `positions` for `txn`, all or none. `acked` says whether the
    /// cursor already acknowledged a position.
    ///
    /// # Errors
    /// TransactionConflict when a position was acknowledged before or is held by a transaction.
    pub fn add_individual(
        &self,
        txn: TxnId,
        positions: &[Position],
        acked: impl Fn(Position) -> bool,
    ) -> Result<(), BrokerError> {
        let mut st = self.state.lock();
        for p in positions {
            if acked(*p) {
                return Err(conflict(
                    txn,
                    format!("Transaction ack position {p} has been acked before."),
                ));
            }
            if st.individual.contains_key(p) {
                return Err(conflict(
                    txn,
                    format!("Transaction ack position {p} is in pending ack status."),
                ));
            }
        }
        for p in positions {
            st.individual.insert(*p, txn);
        }
        st.by_txn
            .entry(txn)
            .or_default()
            .individual
            .extend_from_slice(positions);
        Ok(())
    }

    /// Holds a cumulative ack at `position` for `txn`; `mark_delete` is the cursor's.
    ///
    /// # Errors
    /// TransactionConflict at or below mark-delete, when another transaction holds a cumulative
    /// ack, or when it is not past this transaction's previous one.
    pub fn add_cumulative(
        &self,
        txn: TxnId,
        position: Position,
        mark_delete: Position,
    ) -> Result<(), BrokerError> {
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
        if acks.cumulative.is_some_and(|c| position <= c) {
            return Err(conflict(
                txn,
                format!(
                    "Transaction cumulative ack position {position} is not after its previous one."
                ),
            ));
        }
        acks.cumulative = Some(position);
        st.cumulative_owner = Some(txn);
        Ok(())
    }

    /// Holds acks recovered from the coordinator's log at topic load (no conflict checks: they
    /// were checked when made).
    pub fn restore(&self, txn: TxnId, positions: &[Position], cumulative: bool) {
        let mut st = self.state.lock();
        if cumulative {
            if let Some(p) = positions.first() {
                let acks = st.by_txn.entry(txn).or_default();
                acks.cumulative = Some(acks.cumulative.map_or(*p, |c| c.max(*p)));
                st.cumulative_owner = Some(txn);
            }
            return;
        }
        for p in positions {
            st.individual.insert(*p, txn);
        }
        st.by_txn
            .entry(txn)
            .or_default()
            .individual
            .extend_from_slice(positions);
    }

    /// Drops acks `txn` just made that could not be made durable (`positions`, or its
    /// cumulative ack when `cumulative`).
    pub fn release(&self, txn: TxnId, positions: &[Position], cumulative: bool) {
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
        for p in positions {
            if st.individual.get(p) == Some(&txn) {
                st.individual.remove(p);
            }
        }
        if let Some(acks) = st.by_txn.get_mut(&txn) {
            acks.individual.retain(|p| !positions.contains(p));
        }
    }

    /// Removes and returns what `txn` holds (on commit or abort).
    pub fn take(&self, txn: TxnId) -> TxnAcks {
        let mut st = self.state.lock();
        let acks = st.by_txn.remove(&txn).unwrap_or_default();
        for p in &acks.individual {
            st.individual.remove(p);
        }
        if st.cumulative_owner == Some(txn) {
            st.cumulative_owner = None;
        }
        acks
    }

    /// Whether `position` is held by a transaction.
    #[must_use]
    pub fn holds(&self, position: Position) -> bool {
        let st = self.state.lock();
        !st.individual.is_empty() && st.individual.contains_key(&position)
    }

    /// The cumulative ack `txn` holds here, if any (Pulsar's `TransactionInPendingAckStats`).
    #[must_use]
    pub fn cumulative_of(&self, txn: TxnId) -> Option<Position> {
        self.state
            .lock()
            .by_txn
            .get(&txn)
            .and_then(|a| a.cumulative)
    }

    /// Transactions holding acks.
    #[must_use]
    pub fn transactions(&self) -> usize {
        self.state.lock().by_txn.len()
    }
}
