//! A subscription's side of transactions: the max read position its dispatcher reads up to,
//! the entries it never delivers (markers, aborted messages, messages held by pending acks),
//! transactional acks and their end (END_TXN_ON_SUBSCRIPTION).

use std::sync::Arc;

use pulsar_rs_ledger::{Entry, Position};

use super::{State, Subscription};
use crate::consumer::{Consumer, SubType};
use crate::dispatch::entry::entry_info;
use crate::dispatch::Dispatcher;
use crate::error::BrokerError;
use crate::transaction::buffer::TransactionBuffer;
use crate::transaction::{TxnAction, TxnId};

impl Subscription {
    /// Gives the subscription its topic's transaction buffer (once; later calls are ignored).
    pub fn set_transaction_buffer(&self, tb: Arc<TransactionBuffer>) {
        let _ = self.txn_buffer.set(tb);
    }

    /// The last position the dispatcher may read.
    pub(super) fn max_read_position(&self) -> Position {
        match self.txn_buffer.get() {
            Some(tb) => tb.max_read_position(|| self.cursor.ledger().last_confirmed()),
            None => Position::LATEST,
        }
    }

    /// Drops what must not be delivered: markers and aborted messages (acknowledged, as Pulsar
    /// acknowledges them) and messages held by a transaction's pending ack (left as they are).
    pub(super) fn filter_transactional(&self, entries: Vec<Entry>) -> Vec<Entry> {
        let Some(tb) = self.txn_buffer.get() else {
            return entries;
        };
        let mut hidden = Vec::new();
        let kept: Vec<Entry> = entries
            .into_iter()
            .filter(|e| {
                if tb.hides(&entry_info(&e.data)) {
                    hidden.push(e.position);
                    return false;
                }
                !self.pending_acks.holds(e.position)
            })
            .collect();
        if !hidden.is_empty() {
            self.cursor.delete(&hidden);
        }
        kept
    }

    /// An individual ack in transaction `txn`: held until the transaction ends, and the
    /// messages leave the consumer's unacknowledged list.
    ///
    /// # Errors
    /// TransactionConflict (acknowledged before, or held by a transaction); NotAllowed for a
    /// batch-index ack (not supported in a transaction here).
    pub fn ack_individual_txn(
        &self,
        consumer: &Consumer,
        txn: TxnId,
        ids: &[(Position, Option<Vec<i64>>)],
    ) -> Result<(), BrokerError> {
        if ids
            .iter()
            .any(|(_, set)| set.as_ref().is_some_and(|s| !s.is_empty()))
        {
            return Err(BrokerError::NotAllowed(
                "Batch index acknowledgements in a transaction are not supported".into(),
            ));
        }
        let positions: Vec<Position> = ids.iter().map(|(p, _)| *p).collect();
        self.pending_acks
            .add_individual(txn, &positions, |p| self.cursor.is_acked(p))?;
        let limit = self.unacked_limit();
        self.settle_acked(consumer, &positions, limit);
        {
            let mut st = self.state.lock();
            if let Some(Dispatcher::StickyKey(k)) = st.dispatcher.as_mut() {
                for p in &positions {
                    k.release(*p);
                }
            }
        }
        self.poke();
        Ok(())
    }

    /// A cumulative ack in transaction `txn` (Exclusive/Failover; ignored on Shared and
    /// Key_Shared, as Pulsar ignores it).
    ///
    /// # Errors
    /// TransactionConflict (at or before mark-delete, another transaction's cumulative ack).
    pub fn ack_cumulative_txn(
        &self,
        consumer: &Consumer,
        txn: TxnId,
        position: Position,
    ) -> Result<(), BrokerError> {
        if self.sub_type().is_some_and(SubType::is_multi) {
            return Ok(());
        }
        self.pending_acks
            .add_cumulative(txn, position, self.cursor.mark_delete_position())?;
        consumer.settle_upto(position, self.unacked_limit());
        Ok(())
    }

    /// Holds acks of `txn` recovered from the coordinator's log when the topic loads.
    pub fn restore_txn_acks(&self, txn: TxnId, positions: &[Position], cumulative: bool) {
        self.pending_acks.restore(txn, positions, cumulative);
    }

    /// Undoes acks `txn` just made that could not be made durable: they are no longer held and
    /// the messages are delivered again.
    pub fn release_txn_acks(&self, txn: TxnId, positions: &[Position], cumulative: bool) {
        self.pending_acks.release(txn, positions, cumulative);
        self.redeliver_released(positions, cumulative);
    }

    /// Delivers released messages again: replayed on Shared/Key_Shared, a rewind on
    /// Exclusive/Failover.
    fn redeliver_released(&self, positions: &[Position], cumulative: bool) {
        // Read before the state lock: `unacked_limit` takes that lock itself (parking_lot's
        // mutex is not reentrant; taking it inside deadlocked an abort on Exclusive/Failover).
        let limit = self.unacked_limit();
        let mut st = self.state.lock();
        if st.sub_type.is_some_and(SubType::is_multi) {
            let positions: Vec<Position> = positions
                .iter()
                .copied()
                .filter(|p| !self.cursor.is_acked(*p))
                .collect();
            let st: &mut State = &mut st;
            self.queue_replay_locked(st, &positions, false);
        } else if !positions.is_empty() || cumulative {
            for c in st.consumers.all() {
                c.take_pending(None, limit);
            }
            self.cursor.rewind();
        }
        drop(st);
        self.poke();
    }

    /// END_TXN_ON_SUBSCRIPTION: a commit applies the held acks to the cursor and persists it
    /// (blocking I/O) before the coordinator may record the commit; an abort delivers the
    /// messages again.
    ///
    /// # Errors
    /// Storage failures applying a cumulative ack or persisting the cursor.
    pub fn end_txn(&self, txn: TxnId, action: TxnAction) -> Result<(), BrokerError> {
        let acks = self.pending_acks.take(txn);
        match action {
            TxnAction::Commit => {
                if !acks.individual.is_empty() {
                    let before = self.cursor.mark_delete_position();
                    self.cursor.delete(&acks.individual);
                    self.note_ack(before);
                }
                if let Some(p) = acks.cumulative {
                    let before = self.cursor.mark_delete_position();
                    if p > before {
                        self.cursor.mark_delete(p)?;
                    }
                    self.note_ack(before);
                }
                // A committed transaction's acks are durable before the commit is.
                self.cursor.flush()?;
                self.poke();
            }
            TxnAction::Abort => {
                self.redeliver_released(&acks.individual, acks.cumulative.is_some());
            }
        }
        Ok(())
    }
}
