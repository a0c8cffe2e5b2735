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
use crate::replicated_subscriptions::markers;
use crate::transaction::buffer::TransactionBuffer;
use crate::transaction::pending_ack::{AckedId, PositionInPendingAck};
use crate::transaction::{TxnAction, TxnId};

impl Subscription {
    /// Where the message at `position` (with `batch_index`, that message of a batch entry)
    /// stands in this subscription's acks (Pulsar's `checkPositionInPendingAckState`).
    #[must_use]
    pub fn position_in_pending_ack(
        &self,
        position: Position,
        batch_index: Option<u32>,
    ) -> PositionInPendingAck {
        if position <= self.cursor.mark_delete_position() {
            return PositionInPendingAck::MarkDelete;
        }
        self.pending_acks.state_of(position, batch_index)
    }

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
    /// Replicated subscriptions' markers are hidden too, their snapshots read on the way.
    pub(super) fn filter_transactional(&self, entries: Vec<Entry>) -> Vec<Entry> {
        let tb = self.txn_buffer.get();
        if tb.is_none() && !self.may_hold_markers() {
            return entries;
        }
        let mut hidden = Vec::new();
        let kept: Vec<Entry> = entries
            .into_iter()
            .filter(|e| {
                let info = entry_info(&e.data);
                if let Some(marker) = info.marker {
                    if markers::is_replicated_subscription_marker(marker) {
                        if let Ok((_, payload)) = pulsar_rs_proto::parse_stored_entry(&e.data) {
                            self.read_marker(marker, &payload);
                        }
                    }
                    hidden.push(e.position);
                    return false;
                }
                if tb.is_some_and(|tb| tb.hides(&info)) {
                    hidden.push(e.position);
                    return false;
                }
                tb.is_none() || !self.held_entirely(e.position)
            })
            .collect();
        if !hidden.is_empty() {
            self.cursor.delete(&hidden);
        }
        kept
    }

    /// Whether nothing of the entry at `position` is left to deliver: held whole by a
    /// transaction, or every message of its batch acknowledged or held.
    fn held_entirely(&self, position: Position) -> bool {
        if self.pending_acks.holds(position) {
            return true;
        }
        let Some(held) = self.pending_acks.held_ack_set(position) else {
            return false;
        };
        let left = match self.cursor.batch_ack_set(position) {
            Some(acked) => acked.iter().zip(&held).any(|(a, h)| a & h != 0),
            None => held.iter().any(|h| *h != 0),
        };
        !left
    }

    /// An individual ack in transaction `txn`: held until the transaction ends, and the
    /// entries leave the consumer's unacknowledged list (a batch entry once all its messages
    /// are acknowledged or held).
    ///
    /// # Errors
    /// TransactionConflict (acknowledged before, or held by a transaction).
    pub fn ack_individual_txn(
        &self,
        consumer: &Consumer,
        txn: TxnId,
        ids: &[AckedId],
    ) -> Result<(), BrokerError> {
        // A batch's size from the delivery when the client did not say it.
        let ids: Vec<AckedId> = ids
            .iter()
            .map(|id| match id.batch_size {
                0 if id.is_batch_index() => AckedId {
                    batch_size: consumer.pending_messages(id.position).unwrap_or(0),
                    ..id.clone()
                },
                _ => id.clone(),
            })
            .collect();
        self.pending_acks.add_individual(
            txn,
            &ids,
            |p| self.cursor.is_acked(p),
            |p| self.cursor.batch_ack_set(p),
        )?;
        let positions: Vec<Position> = ids
            .iter()
            .filter(|id| !id.is_batch_index() || self.held_entirely(id.position))
            .map(|id| id.position)
            .collect();
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
    /// Key_Shared, as Pulsar ignores it). A message inside a batch (an ack set) covers the
    /// entries before its own and its batch's messages up to it.
    ///
    /// # Errors
    /// TransactionConflict (at or before mark-delete, another transaction's cumulative ack).
    pub fn ack_cumulative_txn(
        &self,
        consumer: &Consumer,
        txn: TxnId,
        id: &AckedId,
    ) -> Result<(), BrokerError> {
        if self.sub_type().is_some_and(SubType::is_multi) {
            return Ok(());
        }
        self.pending_acks
            .add_cumulative(txn, id, self.cursor.mark_delete_position())?;
        let upto = if id.is_batch_index() {
            self.cursor.ledger().previous_position(id.position)
        } else {
            id.position
        };
        consumer.settle_upto(upto, self.unacked_limit());
        Ok(())
    }

    /// Holds acks of `txn` recovered from the pending-ack log when the topic loads.
    pub fn restore_txn_acks(&self, txn: TxnId, ids: &[AckedId], cumulative: bool) {
        self.pending_acks.restore(txn, ids, cumulative);
    }

    /// Undoes acks `txn` just made that could not be made durable: they are no longer held and
    /// the messages are delivered again.
    pub fn release_txn_acks(&self, txn: TxnId, ids: &[AckedId], cumulative: bool) {
        self.pending_acks.release(txn, ids, cumulative);
        let positions: Vec<Position> = ids.iter().map(|id| id.position).collect();
        self.redeliver_released(&positions, cumulative);
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
                if !acks.individual.is_empty() || !acks.batch.is_empty() {
                    let before = self.cursor.mark_delete_position();
                    self.cursor.delete(&acks.individual);
                    let mut whole = Vec::new();
                    for (p, set) in &acks.batch {
                        if self.cursor.ack_batch_index(*p, set) {
                            whole.push(*p);
                        }
                    }
                    self.note_ack(before);
                    self.settle_anywhere(&whole);
                }
                if let Some((p, set)) = acks.cumulative {
                    let before = self.cursor.mark_delete_position();
                    // Inside a batch: the entries before it, and its ack set on its own entry.
                    let upto = if set.is_empty() {
                        p
                    } else {
                        self.cursor.ledger().previous_position(p)
                    };
                    if upto > before {
                        self.cursor.mark_delete(upto)?;
                    }
                    if !set.is_empty() && self.cursor.ack_batch_index(p, &set) {
                        self.settle_anywhere(&[p]);
                    }
                    self.note_ack(before);
                }
                // A committed transaction's acks are durable before the commit is.
                self.cursor.flush()?;
                self.poke();
            }
            TxnAction::Abort => {
                let mut positions = acks.individual;
                positions.extend(acks.batch.keys());
                self.redeliver_released(&positions, acks.cumulative.is_some());
            }
        }
        Ok(())
    }

    /// Takes entries a commit acknowledged whole off whichever consumer has them pending.
    fn settle_anywhere(&self, positions: &[Position]) {
        if positions.is_empty() {
            return;
        }
        let limit = self.unacked_limit();
        for c in self.consumers() {
            for p in positions {
                c.settle(*p, limit);
            }
        }
    }
}
