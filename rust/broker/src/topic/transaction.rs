//! A topic's side of transactions: rebuilding its transaction buffer from the ledger at load,
//! appending a transaction's commit or abort marker (END_TXN_ON_PARTITION), and the last
//! message id a reader may see while transactions are open or aborted.

use std::sync::Arc;

use pulsar_rs_ledger::Position;

use super::Topic;
use crate::dispatch::entry::entry_info;
use crate::error::BrokerError;
use crate::transaction::buffer::marker_entry;
use crate::transaction::{TxnAction, TxnId};

/// Entries read per batch while replaying the ledger into the transaction buffer.
const REPLAY_BATCH: usize = 1000;

impl Topic {
    /// Replays the whole retained ledger into the transaction buffer (no snapshot yet). Blocking
    /// I/O: topics are loaded off the async workers.
    pub(super) fn recover_transaction_buffer(&self) {
        let Some(tb) = &self.txn_buffer else { return };
        let lac = self.ledger.last_confirmed();
        if lac.entry_id < 0 {
            return;
        }
        let mut from = self
            .ledger
            .next_valid_position(self.ledger.first_position());
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
            from = self.ledger.next_valid_position(last);
        }
        tracing::debug!(topic = %self.name, ongoing = tb.ongoing_count(), "transaction buffer recovered");
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
        Arc::clone(&self.ledger).add_entry(marker).await?;
        tb.end(txn, action);
        for sub in self.subscriptions() {
            sub.poke();
        }
        Ok(())
    }

    /// The last message a reader may be told of with transactions: at or before the max read
    /// position, skipping markers and aborted messages. `None` when nothing is visible.
    /// Blocking I/O.
    ///
    /// # Errors
    /// Storage failures.
    pub(super) fn last_visible_position(&self) -> Result<Option<Position>, BrokerError> {
        let Some(tb) = &self.txn_buffer else {
            let lac = self.ledger.last_confirmed();
            return Ok((lac.entry_id >= 0).then_some(lac));
        };
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
            if !tb.hides(&entry_info(&e.data)) {
                return Ok(Some(p));
            }
            p = self.ledger.previous_position(p);
        }
        Ok(None)
    }
}
