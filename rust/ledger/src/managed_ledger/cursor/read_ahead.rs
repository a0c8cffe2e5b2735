//! Read-ahead for cursors catching up from disk: while a dispatcher sends what it read, the
//! next reads of its cursor are already running on the storage's read-ahead threads (see
//! [`crate::read_ahead_pool`], which also keeps the memory budget).
//!
//! A consumer catching up on a backlog the entry cache no longer holds is fed one cursor read at a
//! time: the dispatcher reads (waiting for the device), hands the entries to the connection, and
//! reads again once the connection is writable. Done in turn, the device idles while the socket
//! drains and the socket idles while the device reads; and one read at a time leaves most of a
//! virtual disk's bandwidth unused. BookKeeper hides this with its bookies' read-ahead cache
//! (`dbStorage_readAheadCacheBatchSize`); here the cursor does it itself: after a large read
//! from disk it queues the next [`DEPTH`] reads of the same bounds, each planned from the ledger's
//! index to start right after the one before, and its next read at that position takes the
//! entries from the first.
//!
//! * Slots belong to one cursor and are keyed by the position they start at. A read elsewhere
//!   (a rewind, a reset, a seek) drops them; entries are immutable once confirmed, so a slot is
//!   never stale for its position, and acknowledged entries are filtered when it is taken.
//! * Memory is bounded by one budget per storage ([`BUDGET`]): each slot reserves the bytes it
//!   will read (at most [`MAX_SLOT_BYTES`], or one entry larger than that), a read that does
//!   not fit is not read ahead, and a slot gives its reservation back when dropped.
//! * A slot still queued when its cursor wants it is cancelled and the cursor reads itself; one
//!   whose read is running is waited for, on threads that may block only.
//! * A read-ahead that fails is forgotten: the cursor's own read meets the error again.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Condvar, Mutex};

use crate::managed_ledger::{Entry, ManagedLedger};
use crate::read_ahead_pool::BUDGET;
use crate::Position;

/// Reads smaller than this are not followed by a read-ahead: small catch-up reads gain little,
/// and a one-off read should not trigger more.
pub(crate) const MIN_BYTES: u64 = 128 << 10;

/// Reads queued ahead of one cursor at most.
pub(crate) const DEPTH: usize = 2;

/// Bytes one slot reads at most (besides a first entry larger than that): reads without a byte
/// bound are read ahead this far.
pub(crate) const MAX_SLOT_BYTES: u64 = 8 << 20;

/// One queued read-ahead.
struct Job {
    ml: Weak<ManagedLedger>,
    slot: Arc<Slot>,
}

/// What a slot holds.
enum Phase {
    /// Waiting for a read-ahead thread.
    Queued,
    /// Being read.
    Running,
    /// Read: the entries not yet taken, in position order.
    Ready(VecDeque<Entry>),
    /// Cancelled, failed, or found nothing.
    Gone,
}

/// One read ahead of a cursor.
pub(crate) struct Slot {
    /// The last entry it reads (the next slot starts after it); immutable.
    last: Position,
    /// Entries and bytes it reads, as planned from the index; immutable. The bytes are its
    /// reservation.
    entries: usize,
    bytes: u64,
    /// Where it starts and what it holds. Held briefly: never across the read.
    state: Mutex<SlotState>,
    /// Signalled when the read ends (ready or gone).
    done: Condvar,
    /// The budget its reservation returns to when dropped.
    budget: Arc<AtomicU64>,
}

struct SlotState {
    /// The first position it holds: where its read starts, then the first entry not taken.
    start: Position,
    phase: Phase,
}

impl Drop for Slot {
    fn drop(&mut self) {
        // Relaxed: see `ReadAheads::reserved`.
        self.budget.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// The outcome of looking for read-ahead entries at a position.
pub(crate) enum Take {
    /// Entries read ahead, starting at the position (possibly fewer than asked for).
    Entries(Vec<Entry>),
    /// The read is still running and the caller may not block: read on a thread that may.
    Pending,
    /// Nothing read ahead there: read it yourself.
    Miss,
}

/// A cursor's read-ahead. Owned by the cursor.
#[derive(Default)]
pub(crate) struct CursorReadAhead {
    /// The queued slots, in position order, each starting right after the one before. Held
    /// briefly, never across a read or a wait; taken before a slot's lock, never after it.
    slots: Mutex<VecDeque<Arc<Slot>>>,
}

impl CursorReadAhead {
    /// Entries read ahead from `from`: at most `max_entries`, and at most `max_bytes` after the
    /// first. Waits for a running read only if `block`. The rest of a slot stays for the next
    /// read; a slot emptied here is replaced by one more at the end of the queue.
    pub(crate) fn take(
        &self,
        ml: &Arc<ManagedLedger>,
        from: Position,
        max_entries: usize,
        max_bytes: u64,
        block: bool,
    ) -> Take {
        let Some(slot) = self.slots.lock().front().cloned() else {
            return Take::Miss;
        };
        let mut st = slot.state.lock();
        if st.start != from {
            drop(st);
            self.clear();
            return Take::Miss;
        }
        while block && matches!(st.phase, Phase::Running) {
            slot.done.wait(&mut st);
        }
        let mut out = Vec::new();
        match &mut st.phase {
            Phase::Queued | Phase::Running if !block => return Take::Pending,
            Phase::Ready(ready) => {
                let mut bytes = 0u64;
                while let Some(e) = ready.front() {
                    let len = e.data.len() as u64;
                    if out.len() == max_entries || (!out.is_empty() && bytes + len > max_bytes) {
                        break;
                    }
                    bytes += len;
                    out.extend(ready.pop_front());
                }
            }
            // Queued (cancelled: the caller reads it sooner itself), or gone.
            _ => {}
        }
        // One slot's read stays within one ledger, so what is left starts right after `out`.
        let rest = match &st.phase {
            Phase::Ready(ready) => ready.front().map(|e| e.position),
            _ => None,
        };
        if out.is_empty() {
            st.phase = Phase::Gone;
        }
        match rest {
            Some(next) => st.start = next,
            None => {
                drop(st);
                self.pop(&slot);
            }
        }
        if out.is_empty() {
            return Take::Miss;
        }
        // Relaxed: a statistic.
        ml.shared
            .read_ahead
            .served
            .fetch_add(out.len() as u64, Ordering::Relaxed);
        if rest.is_none() {
            let next = ml.next_valid_position(out[out.len() - 1].position);
            self.start(ml, next, max_entries, max_bytes);
        }
        Take::Entries(out)
    }

    /// Removes `slot` from the front of the queue, if it is still there.
    fn pop(&self, slot: &Arc<Slot>) {
        let mut slots = self.slots.lock();
        if slots.front().is_some_and(|s| Arc::ptr_eq(s, slot)) {
            let popped = slots.pop_front();
            drop(slots);
            drop(popped);
        }
    }

    /// Reads ahead from `from`: keeps the queued slots if the first starts there (else drops
    /// them), then queues more, each of up to `max_entries` entries and about `max_bytes` (at
    /// most [`MAX_SLOT_BYTES`]), until [`DEPTH`] are queued, the ledger's confirmed entries run
    /// out, or the storage's budget cannot take one more.
    pub(crate) fn start(
        &self,
        ml: &Arc<ManagedLedger>,
        from: Position,
        max_entries: usize,
        max_bytes: u64,
    ) {
        let max_bytes = max_bytes.min(MAX_SLOT_BYTES);
        let ra = &ml.shared.read_ahead;
        let mut slots = self.slots.lock();
        let keep = slots.front().is_some_and(|s| s.state.lock().start == from);
        let dropped = if keep {
            VecDeque::new()
        } else {
            std::mem::take(&mut *slots)
        };
        // Lock order: the slots, then the ledger's state (planning) — never the reverse.
        while slots.len() < DEPTH {
            let next = slots
                .back()
                .map_or(from, |s| ml.next_valid_position(s.last));
            let Some((start, entries, bytes)) = ml.plan_read(next, max_entries, max_bytes) else {
                break;
            };
            // Relaxed: see `ReadAheads::reserved`.
            let before = ra.reserved.fetch_add(bytes, Ordering::Relaxed);
            let slot = Arc::new(Slot {
                last: Position::new(start.ledger_id, start.entry_id + entries as i64 - 1),
                entries,
                bytes,
                state: Mutex::new(SlotState {
                    start,
                    phase: Phase::Queued,
                }),
                done: Condvar::new(),
                budget: Arc::clone(&ra.reserved),
            });
            // Slots replaced above are still counted until dropped below: the budget is
            // checked against the worst case.
            if before + bytes > BUDGET {
                break; // dropping `slot` gives the reservation back
            }
            slots.push_back(Arc::clone(&slot));
            let job = Job {
                ml: Arc::downgrade(ml),
                slot,
            };
            ra.send(Box::new(move || job.run()));
        }
        drop(slots);
        drop(dropped);
    }

    /// Waits until the queued reads have ended (tests: a dispatcher sending meanwhile).
    #[cfg(test)]
    pub(crate) fn settle(&self) {
        let slots: Vec<_> = self.slots.lock().iter().cloned().collect();
        for slot in slots {
            let mut st = slot.state.lock();
            while matches!(st.phase, Phase::Queued | Phase::Running) {
                slot.done
                    .wait_for(&mut st, std::time::Duration::from_millis(10));
            }
        }
    }

    /// Drops the slots (the cursor closed or moved).
    pub(crate) fn clear(&self) {
        let old = std::mem::take(&mut *self.slots.lock());
        drop(old);
    }
}

impl Job {
    /// Reads the slot on a read-ahead thread (see [`crate::read_ahead_pool`]).
    fn run(self) {
        let start = {
            let mut st = self.slot.state.lock();
            // Only the job holds a slot its cursor dropped: not worth reading.
            if !matches!(st.phase, Phase::Queued) || Arc::strong_count(&self.slot) == 1 {
                return;
            }
            st.phase = Phase::Running;
            st.start
        };
        let read = self.ml.upgrade().map(|ml| {
            ml.read_entries_from(
                start,
                self.slot.entries,
                self.slot.bytes,
                Position::LATEST,
                true,
            )
        });
        let next = match read {
            Some(Ok(Some((entries, _)))) if !entries.is_empty() => Phase::Ready(entries.into()),
            Some(Err(e)) => {
                tracing::debug!(error = %e, "read-ahead failed; the cursor will read itself");
                Phase::Gone
            }
            _ => Phase::Gone,
        };
        self.slot.state.lock().phase = next;
        self.slot.done.notify_all();
    }
}

#[cfg(test)]
#[path = "read_ahead_tests.rs"]
mod tests;
