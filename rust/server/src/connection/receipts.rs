//! One producer's receipts, answered in SEND order as soon as each write is durable.
//!
//! The connection task queues every SEND it could not answer at once; the thread that completes
//! the write (the journal flusher, through [`pulsar_rs_ledger::AddCompletion::then`]) settles it
//! and hands every receipt that is now at the front straight to the connection's writer. No task
//! sits in between, so a durable SEND costs one wake-up (the writer's) instead of two.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_broker::dedup::Ticket;
use pulsar_rs_ledger::{AddCompletion, Position};
use pulsar_rs_proto::{commands, ServerError as Wire};
use tokio::sync::mpsc;

use super::{frame, Inflight};
use crate::writer::{Outbound, Receipt};
use crate::ServerContext;

/// The outcome of one SEND: where it was stored, or the error to answer.
pub(super) type Outcome = Result<Position, (Wire, String)>;

/// A SEND as the receipt needs it.
pub(super) struct Send {
    pub(super) sequence_id: u64,
    pub(super) highest_sequence_id: Option<u64>,
    /// Bytes held in the broker-wide publish buffer until the receipt goes out.
    pub(super) bytes: usize,
    /// Deduplication's record of the write, told the outcome before the receipt goes out.
    pub(super) ticket: Option<Ticket>,
}

struct Slot {
    send: Send,
    /// `None` while the write is in flight.
    outcome: Option<Outcome>,
}

#[derive(Default)]
struct Queue {
    /// Sequence number (in this queue) of `slots[0]`.
    front: u64,
    /// SENDs not answered yet, oldest first.
    slots: VecDeque<Slot>,
}

/// The ordered receipt queue of one producer; shared by the connection task and the
/// completions of its in-flight writes.
pub(super) struct Receipts {
    /// Immutable.
    producer_id: u64,
    /// The connection's writer queue; sending never blocks.
    tx: mpsc::UnboundedSender<Outbound>,
    /// The connection's count of unanswered SENDs (its backpressure).
    inflight: Arc<Inflight>,
    /// For the broker-wide publish buffer.
    ctx: Arc<ServerContext>,
    /// Lock: taken by the connection task to queue a SEND and by completing threads to settle
    /// one. Held only to move slots and hand receipts to `tx` (never blocks, no I/O, no
    /// `.await`); receipts are handed on under it so that two settling threads keep SEND order.
    queue: Mutex<Queue>,
}

impl Receipts {
    pub(super) fn new(
        producer_id: u64,
        tx: mpsc::UnboundedSender<Outbound>,
        inflight: Arc<Inflight>,
        ctx: Arc<ServerContext>,
    ) -> Arc<Self> {
        Arc::new(Receipts {
            producer_id,
            tx,
            inflight,
            ctx,
            queue: Mutex::new(Queue::default()),
        })
    }

    /// Answers a SEND whose outcome is known now (stored without waiting, duplicate, refused):
    /// at once if nothing of this producer is waiting, else behind the earlier SENDs.
    pub(super) fn answer(self: &Arc<Self>, send: Send, outcome: Outcome) {
        let mut q = self.queue.lock();
        if q.slots.is_empty() {
            drop(q);
            self.send_receipt(send, outcome);
            return;
        }
        self.hold(&send);
        q.slots.push_back(Slot {
            send,
            outcome: Some(outcome),
        });
    }

    /// Queues a SEND stored at `position` and answers it when `done` resolves.
    pub(super) fn answer_when_durable(
        self: &Arc<Self>,
        send: Send,
        position: Position,
        done: AddCompletion,
    ) {
        self.hold(&send);
        let seq = {
            let mut q = self.queue.lock();
            q.slots.push_back(Slot {
                send,
                outcome: None,
            });
            q.front + q.slots.len() as u64 - 1
        };
        // Not under the lock: an append that already completed runs this here, at once.
        let me = Arc::clone(self);
        done.then(move |r| {
            let outcome = r
                .map(|()| position)
                .map_err(|e| (Wire::PersistenceError, e.to_string()));
            me.settle(seq, outcome);
        });
    }

    /// Counts a queued SEND against the connection and the broker-wide publish buffer.
    fn hold(&self, send: &Send) {
        // Release: pairs with the reader's Acquire load in the backpressure check.
        self.inflight.count.fetch_add(1, Ordering::Release);
        // Release: pairs with the reader's Acquire load in the buffer check.
        self.ctx
            .publish_buffer
            .bytes
            .fetch_add(send.bytes, Ordering::Release);
    }

    /// Tells deduplication the outcome, then queues the receipt to the writer.
    fn send_receipt(&self, send: Send, outcome: Outcome) {
        if let Some(t) = send.ticket {
            t.persisted(outcome.is_ok());
        }
        let _ = self.tx.send(receipt(
            self.producer_id,
            send.sequence_id,
            send.highest_sequence_id,
            outcome,
        ));
    }

    /// Records the outcome of queued SEND `seq` and sends every receipt now at the front.
    fn settle(&self, seq: u64, outcome: Outcome) {
        let mut q = self.queue.lock();
        let Some(i) = seq
            .checked_sub(q.front)
            .and_then(|i| usize::try_from(i).ok())
        else {
            return;
        };
        if let Some(slot) = q.slots.get_mut(i) {
            slot.outcome = Some(outcome);
        }
        let mut answered = 0;
        while let Some(Slot {
            send,
            outcome: Some(outcome),
        }) = q.slots.pop_front_if(|s| s.outcome.is_some())
        {
            q.front += 1;
            let bytes = send.bytes;
            self.send_receipt(send, outcome);
            self.ctx.publish_buffer.release(bytes);
            answered += 1;
        }
        drop(q);
        if answered > 0 {
            // Release: the receipts are queued before the count says so; pairs with the
            // connection's Acquire load in its backpressure check.
            self.inflight.count.fetch_sub(answered, Ordering::Release);
            self.inflight.drained.notify_one();
        }
    }
}

/// SEND_RECEIPT for a stored entry (encoded by the writer), or SEND_ERROR.
fn receipt(
    producer_id: u64,
    sequence_id: u64,
    highest_sequence_id: Option<u64>,
    outcome: Outcome,
) -> Outbound {
    match outcome {
        Ok(pos) => Outbound::Receipt(Receipt {
            producer_id,
            sequence_id,
            highest_sequence_id,
            ledger_id: pos.ledger_id as u64,
            entry_id: pos.entry_id as u64,
        }),
        Err((code, msg)) => frame(&commands::send_error(producer_id, sequence_id, code, msg)),
    }
}
