//! The transaction buffer of one topic (Pulsar's `TopicTransactionBuffer`). Transactional
//! messages are appended straight into the topic's ledger; the buffer remembers the first
//! position of every ongoing transaction and the aborted ones, which gives
//! * the max read position: dispatch stops before the first message of the oldest ongoing
//!   transaction (at the last confirmed entry when none is ongoing);
//! * which transactional entries are aborted and never delivered.
//!
//! Commit and abort append a marker entry (`marker_type` TXN_COMMIT / TXN_ABORT, producer
//! `pulsar.txn.marker`, empty payload) and only then update the state, so the ledger alone says
//! what happened: [`TransactionBuffer::replay`] rebuilds the state from it at topic load (no
//! snapshot yet: the whole retained ledger is read).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;
use pulsar_rs_ledger::Position;
use pulsar_rs_proto::pb;

use super::{TxnAction, TxnId, MARKER_PRODUCER, MARKER_TXN_ABORT};
use crate::dispatch::entry::EntryInfo;
use crate::error::BrokerError;

#[derive(Default)]
struct State {
    /// Ongoing transactions and the position of their first message.
    ongoing: HashMap<TxnId, Position>,
    /// `ongoing` ordered by first position.
    order: BTreeSet<(Position, TxnId)>,
    /// Transactions aborted on this topic.
    aborted: HashSet<TxnId>,
    /// Transactions committed on this topic (refused if they send again).
    committed: HashSet<TxnId>,
}

impl State {
    fn begin(&mut self, txn: TxnId, at: Position) {
        if let std::collections::hash_map::Entry::Vacant(e) = self.ongoing.entry(txn) {
            e.insert(at);
            self.order.insert((at, txn));
        }
    }

    fn end(&mut self, txn: TxnId, action: TxnAction) {
        if let Some(at) = self.ongoing.remove(&txn) {
            self.order.remove(&(at, txn));
        }
        match action {
            TxnAction::Commit => self.committed.insert(txn),
            TxnAction::Abort => self.aborted.insert(txn),
        };
    }
}

/// Counters (Pulsar's `pulsar_txn_tb_*`); Relaxed: statistics.
#[derive(Debug, Default)]
pub struct BufferStats {
    /// Transactions committed on the topic.
    pub committed: AtomicU64,
    /// Transactions aborted on the topic.
    pub aborted: AtomicU64,
}

/// One topic's transaction buffer.
#[derive(Default)]
pub struct TransactionBuffer {
    /// Ongoing, aborted and committed transactions. Short lock; it is also held across the
    /// (non-blocking, no fsync) start of a transactional append, so a dispatcher computing the
    /// max read position never sees a transaction's first entry before the buffer does.
    state: Mutex<State>,
    /// Its counters.
    pub stats: BufferStats,
}

impl TransactionBuffer {
    /// An empty buffer.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a message of `txn` with `add` (which starts the ledger append and returns the
    /// position), recording its position if it is the transaction's first here.
    ///
    /// # Errors
    /// NotAllowed for a transaction already ended on this topic; whatever `add` returns.
    pub fn append<R>(
        &self,
        txn: TxnId,
        add: impl FnOnce() -> Result<(Position, R), BrokerError>,
    ) -> Result<R, BrokerError> {
        let mut st = self.state.lock();
        if st.aborted.contains(&txn) || st.committed.contains(&txn) {
            return Err(BrokerError::NotAllowed(format!(
                "Transaction {txn} has been ended. Please use a new transaction to send message."
            )));
        }
        let (position, r) = add()?;
        st.begin(txn, position);
        Ok(r)
    }

    /// The last position dispatch may read, given the ledger's last confirmed entry `lac`
    /// (read by `lac` under the buffer's lock, see the `state` field).
    pub fn max_read_position(&self, lac: impl FnOnce() -> Position) -> Position {
        let st = self.state.lock();
        let lac = lac();
        match st.order.iter().next() {
            Some((first, _)) => {
                let before = Position::new(first.ledger_id, first.entry_id - 1);
                before.min(lac)
            }
            None => lac,
        }
    }

    /// Whether `txn` was aborted here.
    #[must_use]
    pub fn is_aborted(&self, txn: TxnId) -> bool {
        self.state.lock().aborted.contains(&txn)
    }

    /// Whether an entry is never delivered: a marker, or a message of an aborted transaction.
    #[must_use]
    pub fn hides(&self, info: &EntryInfo) -> bool {
        if info.marker.is_some() {
            return true;
        }
        info.txn
            .is_some_and(|(most, least)| self.is_aborted(TxnId::new(most, least)))
    }

    /// Records the end of `txn`, once its marker is durable.
    pub fn end(&self, txn: TxnId, action: TxnAction) {
        self.state.lock().end(txn, action);
        let counter = match action {
            TxnAction::Commit => &self.stats.committed,
            TxnAction::Abort => &self.stats.aborted,
        };
        // Relaxed: a statistic.
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Replays one entry of the topic's ledger at load.
    pub fn replay(&self, position: Position, info: &EntryInfo) {
        let Some(txn) = info.txn.map(|(most, least)| TxnId::new(most, least)) else {
            return;
        };
        let mut st = self.state.lock();
        match info.marker {
            Some(m) => st.end(
                txn,
                if m == MARKER_TXN_ABORT {
                    TxnAction::Abort
                } else {
                    TxnAction::Commit
                },
            ),
            None => {
                if !st.aborted.contains(&txn) && !st.committed.contains(&txn) {
                    st.begin(txn, position);
                }
            }
        }
    }

    /// Ongoing transactions.
    #[must_use]
    pub fn ongoing_count(&self) -> usize {
        self.state.lock().ongoing.len()
    }

    /// The first position of `txn` if it is ongoing here, and whether it was aborted.
    #[must_use]
    pub fn txn_state(&self, txn: TxnId) -> (Option<Position>, bool) {
        let st = self.state.lock();
        (st.ongoing.get(&txn).copied(), st.aborted.contains(&txn))
    }
}

/// The stored entry of a commit or abort marker for `txn`.
#[must_use]
pub fn marker_entry(txn: TxnId, action: TxnAction, now_ms: u64) -> Bytes {
    let metadata = pb::MessageMetadata {
        producer_name: MARKER_PRODUCER.to_owned(),
        // Pulsar's −1 on a uint64.
        sequence_id: u64::MAX,
        publish_time: now_ms,
        marker_type: Some(action.marker_type()),
        txnid_most_bits: Some(txn.most),
        txnid_least_bits: Some(txn.least),
        ..Default::default()
    };
    pulsar_rs_proto::build_stored_entry(&metadata, &[])
}
