//! A topic's side of transactions: rebuilding its transaction buffer at load (from its last
//! snapshot, then the ledger after it), taking those snapshots, appending a transaction's
//! commit or abort marker (END_TXN_ON_PARTITION), and the last message id a reader may see
//! while transactions are open or aborted.

use std::sync::Arc;

use pulsar_rs_ledger::Position;

use super::Topic;
use crate::dispatch::entry::entry_info;
use crate::error::BrokerError;
use crate::transaction::buffer::{marker_entry, Snapshot};
use crate::transaction::{TxnAction, TxnId};

/// Entries read per batch while replaying the ledger into the transaction buffer.
const REPLAY_BATCH: usize = 1000;

/// The managed-ledger property holding the transaction buffer's snapshot (JSON).
pub const SNAPSHOT_PROPERTY: &str = "pulsar-rs.transactionBufferSnapshot";

impl Topic {
    /// The transaction buffer's last snapshot, if one was stored and reads.
    fn txn_buffer_snapshot(&self) -> Option<Snapshot> {
        let text = self.ledger.properties().remove(SNAPSHOT_PROPERTY)?;
        match serde_json::from_str(&text) {
            Ok(s) => Some(s),
            Err(e) => {
                // The ledger has everything: replay it all.
                tracing::warn!(topic = %self.name, error = %e, "an unreadable transaction buffer snapshot; replaying the whole ledger");
                None
            }
        }
    }

    /// Rebuilds the transaction buffer: its last snapshot, then the retained entries after
    /// the snapshot's max read position (all of them without one). Blocking I/O: topics are
    /// loaded off the async workers.
    pub(super) fn recover_transaction_buffer(&self) {
        let Some(tb) = &self.txn_buffer else { return };
        let lac = self.ledger.last_confirmed();
        let first = self.ledger.first_position();
        let mut from = self.ledger.next_valid_position(first);
        if let Some(snapshot) = self.txn_buffer_snapshot() {
            tb.restore(&snapshot);
            let after = self.ledger.next_valid_position(snapshot.position());
            from = from.max(after);
        }
        let mut replayed = 0u64;
        if lac.entry_id < 0 {
            return;
        }
        while from <= lac {
            let entries = match self.ledger.read_entries(from, REPLAY_BATCH, u64::MAX, lac) {
                Ok(e) => e,
                Err(e) => {
                    tracing::error!(topic = %self.name, error = %e, "replaying the transaction buffer");
                    return;
                }
            };
            let Some(last) = entries.last().map(|e| e.position) else {
                break;
            };
            for e in &entries {
                tb.replay(e.position, &entry_info(&e.data));
            }
            replayed += entries.len() as u64;
            from = self.ledger.next_valid_position(last);
        }
        // Relaxed: a statistic.
        tb.stats
            .replayed_at_load
            .store(replayed, std::sync::atomic::Ordering::Relaxed);
        tracing::debug!(topic = %self.name, ongoing = tb.ongoing_count(), replayed, "transaction buffer recovered");
    }

    /// Whether the transaction buffer's snapshot is due (see
    /// [`crate::transaction::buffer::TransactionBuffer::snapshot_due`]).
    #[must_use]
    pub fn txn_buffer_snapshot_due(&self) -> bool {
        let Some(tb) = &self.txn_buffer else {
            return false;
        };
        let c = &self.config;
        tb.snapshot_due(
            self.ledger.clock().now_ms(),
            c.transaction_buffer_snapshot_max_transaction_count,
            c.transaction_buffer_snapshot_min_time_in_millis,
        )
    }

    /// Stores a snapshot of the transaction buffer in the ledger's properties (blocking I/O).
    ///
    /// # Errors
    /// Storage failures writing the ledger's metadata.
    pub fn take_txn_buffer_snapshot(&self) -> Result<(), BrokerError> {
        let Some(tb) = &self.txn_buffer else {
            return Ok(());
        };
        let now = self.ledger.clock().now_ms();
        let snapshot = tb.snapshot(
            || self.ledger.last_confirmed(),
            self.ledger
                .next_valid_position(self.ledger.first_position()),
        );
        let text = serde_json::to_string(&snapshot)
            .map_err(|e| BrokerError::NotAllowed(format!("encoding a snapshot: {e}")))?;
        self.ledger.set_property(SNAPSHOT_PROPERTY, &text)?;
        tb.snapshot_taken(now);
        Ok(())
    }

    /// The last position dispatch may read: the max read position with transactions enabled,
    /// else the last confirmed entry.
    #[must_use]
    pub fn max_read_position(&self) -> Position {
        match &self.txn_buffer {
            Some(tb) => tb.max_read_position(|| self.ledger.last_confirmed()),
            None => self.ledger.last_confirmed(),
        }
    }

    /// END_TXN_ON_PARTITION: appends the commit or abort marker of `txn`, waits until it is
    /// durable, then makes the transaction's messages visible (commit) or hidden for good
    /// (abort) and wakes the dispatchers.
    ///
    /// # Errors
    /// NotAllowed without transactions; storage failures appending the marker.
    pub async fn end_txn(&self, txn: TxnId, action: TxnAction) -> Result<(), BrokerError> {
        let Some(tb) = &self.txn_buffer else {
            return Err(BrokerError::NotAllowed(
                "Transactions are not enabled.".into(),
            ));
        };
        let marker = marker_entry(txn, action, self.ledger.clock().now_ms());
        let at = Arc::clone(&self.ledger).add_entry(marker).await?;
        tb.end(txn, action, at);
        for sub in self.subscriptions() {
            sub.poke();
        }
        Ok(())
    }

    /// Aborts the transactions of `ended`'s coordinator this topic still holds open with a
    /// sequence at or below `low_water_mark` (their coordinator ended them all: a message that
    /// arrived after its transaction ended leaves one open here, which would hold dispatch back
    /// for good), as Pulsar's `TopicTransactionBuffer.handleLowWaterMark`.
    ///
    /// # Errors
    /// Storage failures appending an abort marker.
    pub async fn abort_stale_txns(
        &self,
        ended: TxnId,
        low_water_mark: u64,
    ) -> Result<(), BrokerError> {
        let Some(tb) = &self.txn_buffer else {
            return Ok(());
        };
        tb.note_low_water_mark(ended.most, low_water_mark);
        for stale in tb.ongoing_at_or_below(ended.most, low_water_mark) {
            if stale != ended {
                tracing::info!(topic = %self.name, txn = %stale, "aborting a transaction below the low watermark");
                self.end_txn(stale, TxnAction::Abort).await?;
            }
        }
        Ok(())
    }

    /// The last message a reader may be told of with transactions: at or before the max read
    /// position, skipping markers and aborted messages. `None` when nothing is visible.
    /// Blocking I/O.
    ///
    /// # Errors
    /// Storage failures.
    /// Replicated subscriptions' markers are skipped too.
    pub(super) fn last_visible_position(&self) -> Result<Option<Position>, BrokerError> {
        let tb = self.txn_buffer.as_ref();
        // Relaxed: see the field.
        let markers = self
            .may_hold_markers
            .load(std::sync::atomic::Ordering::Relaxed);
        if tb.is_none() && !markers {
            let lac = self.ledger.last_confirmed();
            return Ok((lac.entry_id >= 0).then_some(lac));
        }
        let first = self.ledger.first_position();
        let mut p = self.max_read_position();
        while p.entry_id >= 0 && p > first {
            let Some(e) = self
                .ledger
                .read_entries(p, 1, u64::MAX, p)?
                .into_iter()
                .next()
            else {
                return Ok(None);
            };
            let info = entry_info(&e.data);
            if info.marker.is_none() && !tb.is_some_and(|tb| tb.hides(&info)) {
                return Ok(Some(p));
            }
            p = self.ledger.previous_position(p);
        }
        Ok(None)
    }
}
