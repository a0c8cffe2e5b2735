//! The transaction buffer of one topic (Pulsar's `TopicTransactionBuffer`). Transactional
//! messages are appended straight into the topic's ledger; the buffer remembers the first
//! position of every ongoing transaction and the aborted ones, which gives
//! * the max read position: dispatch stops before the first message of the oldest ongoing
//!   transaction (at the last confirmed entry when none is ongoing);
//! * which transactional entries are aborted and never delivered.
//!
//! Commit and abort append a marker entry (`marker_type` TXN_COMMIT / TXN_ABORT, producer
//! `pulsar.txn.marker`, empty payload) and only then update the state, so the ledger alone says
//! what happened: [`TransactionBuffer::replay`] rebuilds the state from it at topic load.
//!
//! A [`Snapshot`] (Pulsar's `TransactionBufferSnapshot`: the max read position and the aborted
//! transactions with their abort markers) is taken every so many ended transactions, or once
//! some ended and some time passed; a load starts from it and replays only the entries after
//! its max read position. Nothing before that position belongs to a transaction still open (it
//! is before the oldest one's first message), so the snapshot and those entries say it all.
//! Aborted transactions whose marker the ledger no longer retains are forgotten.

use std::collections::{BTreeSet, HashMap};
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
    /// Transactions aborted on this topic, with the position of their abort marker.
    aborted: HashMap<TxnId, Position>,
    /// Transactions committed on this topic since it loaded (refused if they send again), with
    /// the position of their commit marker.
    committed: HashMap<TxnId, Position>,
}

impl State {
    fn begin(&mut self, txn: TxnId, at: Position) {
        if let std::collections::hash_map::Entry::Vacant(e) = self.ongoing.entry(txn) {
            e.insert(at);
            self.order.insert((at, txn));
        }
    }

    fn end(&mut self, txn: TxnId, action: TxnAction, marker: Position) {
        if let Some(at) = self.ongoing.remove(&txn) {
            self.order.remove(&(at, txn));
        }
        match action {
            TxnAction::Commit => self.committed.insert(txn, marker),
            TxnAction::Abort => self.aborted.insert(txn, marker),
        };
    }

    fn ended(&self, txn: TxnId) -> bool {
        self.aborted.contains_key(&txn) || self.committed.contains_key(&txn)
    }
}

/// What a snapshot holds (Pulsar's `TransactionBufferSnapshot`), stored as JSON.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    /// The max read position when it was taken: `[ledger, entry]`.
    #[serde(rename = "maxReadPosition")]
    pub max_read_position: (i64, i64),
    /// Aborted transactions: `[most, least, marker ledger, marker entry]`.
    pub aborts: Vec<(u64, u64, i64, i64)>,
}

impl Snapshot {
    /// The max read position.
    #[must_use]
    pub fn position(&self) -> Position {
        Position::new(self.max_read_position.0, self.max_read_position.1)
    }
}

/// Counters (Pulsar's `pulsar_txn_tb_*`); Relaxed: statistics and a trigger.
#[derive(Debug, Default)]
pub struct BufferStats {
    /// Transactions committed on the topic.
    pub committed: AtomicU64,
    /// Transactions aborted on the topic.
    pub aborted: AtomicU64,
    /// Transactions ended since the last snapshot: raised by `end`, reset by the snapshot.
    pub ended_since_snapshot: AtomicU64,
    /// When the last snapshot was taken, ms (0: none yet); written by the snapshot.
    pub last_snapshot_ms: AtomicU64,
    /// Entries the last load replayed (after its snapshot, if any); written by the load.
    pub replayed_at_load: AtomicU64,
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
    /// Coordinator id → the last low watermark it sent. Short lock, for stats.
    low_water_marks: Mutex<HashMap<u64, u64>>,
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
        if st.ended(txn) {
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

    /// The oldest ongoing transaction and the position of its first message here: what holds
    /// dispatch back (the max read position is just before it).
    #[must_use]
    pub fn oldest_ongoing(&self) -> Option<(TxnId, Position)> {
        let st = self.state.lock();
        st.order.iter().next().map(|&(at, txn)| (txn, at))
    }

    /// Whether `txn` was aborted here.
    #[must_use]
    pub fn is_aborted(&self, txn: TxnId) -> bool {
        self.state.lock().aborted.contains_key(&txn)
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

    /// Records the end of `txn`, once its marker (at `marker`) is durable.
    pub fn end(&self, txn: TxnId, action: TxnAction, marker: Position) {
        self.state.lock().end(txn, action, marker);
        let counter = match action {
            TxnAction::Commit => &self.stats.committed,
            TxnAction::Abort => &self.stats.aborted,
        };
        // Relaxed: statistics, and a trigger read by `snapshot_due` only.
        counter.fetch_add(1, Ordering::Relaxed);
        self.stats
            .ended_since_snapshot
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Whether a snapshot is due at `now_ms`: `max_count` transactions ended since the last
    /// one, or some did and `min_ms` passed.
    #[must_use]
    pub fn snapshot_due(&self, now_ms: u64, max_count: u64, min_ms: u64) -> bool {
        // Relaxed: a heuristic; a snapshot taken twice or a little late is harmless.
        let ended = self.stats.ended_since_snapshot.load(Ordering::Relaxed);
        let last = self.stats.last_snapshot_ms.load(Ordering::Relaxed);
        ended >= max_count.max(1) || (ended > 0 && now_ms.saturating_sub(last) >= min_ms)
    }

    /// A snapshot of the state, given the ledger's last confirmed entry; first forgets the
    /// ended transactions whose marker is before `first` (the ledger no longer has them).
    pub fn snapshot(&self, lac: impl FnOnce() -> Position, first: Position) -> Snapshot {
        let mut st = self.state.lock();
        st.aborted.retain(|_, at| *at >= first);
        st.committed.retain(|_, at| *at >= first);
        let lac = lac();
        let max = match st.order.iter().next() {
            Some((p, _)) => Position::new(p.ledger_id, p.entry_id - 1).min(lac),
            None => lac,
        };
        let mut aborts: Vec<(u64, u64, i64, i64)> = st
            .aborted
            .iter()
            .map(|(t, at)| (t.most, t.least, at.ledger_id, at.entry_id))
            .collect();
        aborts.sort_unstable();
        Snapshot {
            max_read_position: (max.ledger_id, max.entry_id),
            aborts,
        }
    }

    /// Notes that a snapshot was stored at `now_ms`.
    pub fn snapshot_taken(&self, now_ms: u64) {
        // Relaxed: see `snapshot_due`.
        self.stats.ended_since_snapshot.store(0, Ordering::Relaxed);
        self.stats.last_snapshot_ms.store(now_ms, Ordering::Relaxed);
    }

    /// Starts a load from `snapshot` (before replaying what follows its max read position).
    pub fn restore(&self, snapshot: &Snapshot) {
        let mut st = self.state.lock();
        for &(most, least, ledger_id, entry_id) in &snapshot.aborts {
            st.aborted
                .insert(TxnId::new(most, least), Position::new(ledger_id, entry_id));
        }
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
                position,
            ),
            None => {
                if !st.ended(txn) {
                    st.begin(txn, position);
                }
            }
        }
    }

    /// Ongoing transactions of coordinator `most` with a sequence at or below `least`.
    #[must_use]
    pub fn ongoing_at_or_below(&self, most: u64, least: u64) -> Vec<TxnId> {
        super::at_or_below(self.state.lock().ongoing.keys(), most, least)
    }

    /// Records the low watermark coordinator `most` last sent (for the buffer's stats).
    pub fn note_low_water_mark(&self, most: u64, least: u64) {
        self.low_water_marks.lock().insert(most, least);
    }

    /// The low watermark each coordinator last sent (Pulsar's `lowWaterMarks`).
    #[must_use]
    pub fn low_water_marks(&self) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = self
            .low_water_marks
            .lock()
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect();
        v.sort_unstable();
        v
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
        (st.ongoing.get(&txn).copied(), st.aborted.contains_key(&txn))
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
