//! One producer's receipts, answered in SEND order as soon as each write is durable.
//!
//! The connection task queues every SEND it could not answer at once. The queue is the SENDs'
//! [`AddWaiter`]: each durable write names it with the SEND's sequence number in the queue, and
//! the journal flusher tells it, once per round, that every write up to a number is durable. It
//! settles those SENDs and hands every receipt now at the front straight to the connection's
//! writer. No task sits in between, so a durable SEND costs one wake-up (the writer's) instead
//! of two, and no allocation.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_broker::topic::dedup::Ticket;
use pulsar_rs_ledger::{AddWaiter, LedgerError, Position};
use pulsar_rs_proto::{commands, ServerError as Wire};

use super::{frame, Inflight};
use crate::context::ServerContext;
use crate::writer::{Outbound, Receipt};

/// The outcome of one SEND: where it was stored, or the error to answer.
pub(super) type Outcome = Result<Position, (Wire, String)>;

/// A SEND as the receipt needs it.
pub(super) struct Send {
    pub(super) sequence_id: u64,
    pub(super) highest_sequence_id: Option<u64>,
    /// What a receipt (not an error) names instead of the two above: the source position of a
    /// message from a replicator deduplicated by it ([`super::replicated_send`]).
    pub(super) receipt_ids: Option<(u64, Option<u64>)>,
    /// Bytes held in the broker-wide publish buffer until the receipt goes out.
    pub(super) bytes: usize,
    /// Deduplication's record of the write, told the outcome before the receipt goes out.
    pub(super) ticket: Option<Ticket>,
}

struct Slot {
    send: Send,
    answer: Answer,
}

enum Answer {
    /// Stored here; the write is in flight.
    Waiting(Position),
    /// Ready to go out once every earlier SEND has.
    Ready(Outcome),
}

#[derive(Default)]
struct Queue {
    /// Sequence number (in this queue) of `slots[0]`. Only popping advances it, so `front +
    /// slots.len()` (the next SEND's number) changes only when the connection task queues one.
    front: u64,
    /// SENDs not answered yet, oldest first.
    slots: VecDeque<Slot>,
    /// A report that came before its SEND was queued (the write completed while the connection
    /// task was still between the append and [`Receipts::answer_when_durable`]): through which
    /// number, and the outcome.
    early: Option<(u64, Result<(), String>)>,
    /// Frames to send once every SEND numbered below theirs is answered (CLOSE_PRODUCER's
    /// SUCCESS), in order.
    after: Vec<(u64, Outbound)>,
}

/// The ordered receipt queue of one producer; shared by the connection task and the
/// completions of its in-flight writes.
pub(super) struct Receipts {
    /// Immutable.
    producer_id: u64,
    /// The connection's writer queue; sending never blocks.
    tx: crate::outbound::OutboundTx,
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
        tx: crate::outbound::OutboundTx,
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

    /// The number the next queued SEND gets: the token its durable write names this queue with.
    pub(super) fn next_token(&self) -> u64 {
        self.queue.lock().next_token()
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
            answer: Answer::Ready(outcome),
        });
    }

    /// Queues a SEND stored at `position` whose write named this queue with `token` (from
    /// [`Receipts::next_token`], no SEND queued since); answered once the write is durable.
    pub(super) fn answer_when_durable(&self, send: Send, position: Position, token: u64) {
        self.hold(&send);
        let mut q = self.queue.lock();
        if q.push_durable(send, position, token) {
            self.drain(q);
        }
    }

    /// Sends `item` once every SEND queued so far is answered, at once if none waits: Pulsar
    /// answers CLOSE_PRODUCER only after the producer's pending publishes, so a client does
    /// not fail as closed a SEND the broker then stores.
    pub(super) fn after_pending(&self, item: Outbound) {
        let mut q = self.queue.lock();
        if q.slots.is_empty() {
            drop(q);
            let _ = self.tx.send(item);
            return;
        }
        let token = q.next_token();
        q.after.push((token, item));
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
        let _ = self.tx.send(self.settled(send, outcome));
    }

    /// Tells deduplication the outcome; returns the receipt.
    fn settled(&self, send: Send, outcome: Outcome) -> Outbound {
        if let Some(t) = send.ticket {
            t.persisted(outcome.is_ok());
        }
        let (sequence_id, highest_sequence_id) = match (&outcome, send.receipt_ids) {
            (Ok(_), Some(ids)) => ids,
            _ => (send.sequence_id, send.highest_sequence_id),
        };
        receipt(self.producer_id, sequence_id, highest_sequence_id, outcome)
    }

    /// Sends every receipt now at the front, then releases the lock. Receipts go to the writer
    /// as one queue item (errors, rare, each in its own, in order).
    fn drain(&self, mut q: parking_lot::MutexGuard<'_, Queue>) {
        let mut answered = 0;
        let mut stored: Vec<Receipt> = Vec::new();
        while let Some((send, outcome)) = q.pop_ready() {
            let bytes = send.bytes;
            match self.settled(send, outcome) {
                Outbound::Receipt(r) => stored.push(r),
                other => {
                    self.hand_on(&mut stored);
                    let _ = self.tx.send(other);
                }
            }
            self.ctx.publish_buffer.release(bytes);
            answered += 1;
            while q.after.first().is_some_and(|(t, _)| *t <= q.front) {
                let (_, item) = q.after.remove(0);
                self.hand_on(&mut stored);
                let _ = self.tx.send(item);
            }
        }
        self.hand_on(&mut stored);
        drop(q);
        if answered > 0 {
            // Release: the receipts are queued before the count says so; pairs with the
            // connection's Acquire load in its backpressure check.
            self.inflight.count.fetch_sub(answered, Ordering::Release);
            self.inflight.drained.notify_one();
        }
    }

    /// Queues `stored` receipts to the writer, as one item.
    fn hand_on(&self, stored: &mut Vec<Receipt>) {
        match stored.len() {
            0 => {}
            1 => {
                let _ = self.tx.send(Outbound::Receipt(stored[0]));
                stored.clear();
            }
            _ => {
                let _ = self.tx.send(Outbound::Receipts(std::mem::take(stored)));
            }
        }
    }
}

impl AddWaiter for Receipts {
    /// Every SEND numbered up to `token` still waiting for its write is settled with `result`.
    /// Runs on the journal flusher.
    fn added_through(&self, token: u64, result: Result<(), LedgerError>) {
        let mut q = self.queue.lock();
        q.settle_through(token, result.map_err(|e| e.to_string()));
        self.drain(q);
    }
}

impl Queue {
    /// The number of the next SEND queued.
    fn next_token(&self) -> u64 {
        self.front + self.slots.len() as u64
    }

    /// Queues SEND `token` stored at `position`, waiting for its write unless that was already
    /// reported; returns whether it is ready.
    fn push_durable(&mut self, send: Send, position: Position, token: u64) -> bool {
        debug_assert_eq!(token, self.next_token(), "a SEND queued meanwhile");
        let answer = match self.early.take() {
            Some((through, r)) if through >= token => Answer::Ready(outcome(r, position)),
            _ => Answer::Waiting(position),
        };
        let ready = matches!(answer, Answer::Ready(_));
        self.slots.push_back(Slot { send, answer });
        ready
    }

    /// Settles every SEND numbered up to `token` still waiting for its write.
    fn settle_through(&mut self, token: u64, result: Result<(), String>) {
        let covered = usize::try_from((token + 1).saturating_sub(self.front)).unwrap_or(usize::MAX);
        for slot in self.slots.iter_mut().take(covered) {
            if let Answer::Waiting(position) = slot.answer {
                slot.answer = Answer::Ready(outcome(result.clone(), position));
            }
        }
        if token >= self.next_token() {
            // The SEND numbered `token` is not queued yet: it takes the outcome when it is.
            self.early = Some((token, result));
        }
    }

    /// The front SEND, if its answer is ready.
    fn pop_ready(&mut self) -> Option<(Send, Outcome)> {
        let slot = self
            .slots
            .pop_front_if(|s| matches!(s.answer, Answer::Ready(_)))?;
        self.front += 1;
        match slot.answer {
            Answer::Ready(outcome) => Some((slot.send, outcome)),
            Answer::Waiting(_) => unreachable!("popped only when ready"),
        }
    }
}

/// A write's outcome as the receipt answers it.
fn outcome(r: Result<(), String>, position: Position) -> Outcome {
    r.map(|()| position)
        .map_err(|e| (Wire::PersistenceError, e))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn send(sequence_id: u64) -> Send {
        Send {
            sequence_id,
            highest_sequence_id: None,
            receipt_ids: None,
            bytes: 1,
            ticket: None,
        }
    }

    fn answered(q: &mut Queue) -> Vec<(u64, Outcome)> {
        std::iter::from_fn(|| q.pop_ready())
            .map(|(s, o)| (s.sequence_id, o))
            .collect()
    }

    #[test]
    fn one_report_settles_every_write_up_to_it_in_send_order() {
        let mut q = Queue::default();
        for seq in 0..3 {
            let token = q.next_token();
            assert!(!q.push_durable(send(seq), Position::new(5, seq as i64), token));
        }
        q.settle_through(1, Ok(()));
        assert_eq!(
            answered(&mut q),
            vec![(0, Ok(Position::new(5, 0))), (1, Ok(Position::new(5, 1)))]
        );
        q.settle_through(2, Err("disk full".into()));
        let rest = answered(&mut q);
        assert_eq!(rest.len(), 1);
        assert!(matches!(&rest[0], (2, Err((Wire::PersistenceError, m))) if m == "disk full"));
        assert_eq!(q.next_token(), 3);
    }

    #[test]
    fn a_report_before_its_send_is_queued_is_kept_for_it() {
        let mut q = Queue::default();
        let token = q.next_token();
        // The flusher reports the write while the connection task is between the append and
        // queueing the SEND.
        q.settle_through(token, Ok(()));
        assert!(answered(&mut q).is_empty());
        assert!(
            q.push_durable(send(7), Position::new(3, 9), token),
            "the SEND waits for a report that already came"
        );
        assert_eq!(answered(&mut q), vec![(7, Ok(Position::new(3, 9)))]);
        // The kept report is used once: the next SEND waits for its own.
        let token = q.next_token();
        assert!(!q.push_durable(send(8), Position::new(3, 10), token));
        assert!(answered(&mut q).is_empty());
    }
}
