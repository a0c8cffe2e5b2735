//! Read-ahead for cursors catching up from disk: while a dispatcher sends what it read, the
//! next read of its cursor is already running on a read-ahead thread.
//!
//! A consumer catching up on a backlog the entry cache no longer holds is fed one cursor read at a
//! time: the dispatcher reads (waiting for the device), hands the entries to the connection, and
//! reads again once the connection is writable. Done in turn, the device idles while the socket
//! drains and the socket idles while the device reads. BookKeeper hides this with its bookies'
//! read-ahead cache (`dbStorage_readAheadCacheBatchSize`); here the cursor does it itself:
//! after a large read from disk it queues the next read of the same size from where it stopped,
//! and its next read at that position takes the entries from there.
//!
//! * A slot belongs to one cursor and is keyed by the position it starts at. A read elsewhere
//!   (a rewind, a reset, a seek) drops it; entries are immutable once confirmed, so a slot is
//!   never stale for its position, and acknowledged entries are filtered when it is taken.
//! * Memory is bounded by one budget per storage ([`BUDGET`]): each slot reserves the bytes it
//!   may read (at most [`MAX_SLOT_BYTES`]; one entry larger than that can still exceed it), a
//!   read that does not fit is not read ahead, and a slot gives its reservation back when dropped.
//! * A slot still queued when its cursor wants it is cancelled and the cursor reads itself; one
//!   whose read is running is waited for, on threads that may block only.
//! * A read-ahead that fails is forgotten: the cursor's own read meets the error again.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Weak};

use parking_lot::{Condvar, Mutex};

use crate::managed_ledger::{Entry, ManagedLedger};
use crate::Position;

/// Reads smaller than this are not followed by a read-ahead: small catch-up reads gain little,
/// and a one-off read should not trigger a second one.
pub(crate) const MIN_BYTES: u64 = 128 << 10;

/// Bytes all read-ahead slots of one storage may reserve together.
pub(crate) const BUDGET: u64 = 64 << 20;

/// Bytes one slot reads at most (besides a first entry larger than that): reads without a byte
/// bound are read ahead this far.
pub(crate) const MAX_SLOT_BYTES: u64 = 8 << 20;

/// The read-ahead thread and budget of one storage. Owned by its `Shared`.
#[derive(Default)]
pub(crate) struct ReadAheads {
    /// Bytes reserved by live slots. Relaxed: a budget, no memory is published through it.
    reserved: Arc<AtomicU64>,
    /// Entries handed to cursors from read-ahead slots. Relaxed: a statistic.
    served: AtomicU64,
    /// The queue to the read-ahead thread, started by the first read-ahead. Held only to send
    /// or to start it.
    queue: Mutex<Option<mpsc::Sender<Job>>>,
}

/// One queued read-ahead.
struct Job {
    ml: Weak<ManagedLedger>,
    slot: Arc<Slot>,
}

/// What a slot holds.
enum Phase {
    /// Waiting for the read-ahead thread.
    Queued,
    /// Being read.
    Running,
    /// Read: the entries not yet taken, in position order.
    Ready(VecDeque<Entry>),
    /// Cancelled, failed, or found nothing.
    Gone,
}

/// A read ahead of one cursor.
pub(crate) struct Slot {
    /// The read's entry and byte bounds; immutable.
    max_entries: usize,
    max_bytes: u64,
    /// Where it starts and what it holds. Held briefly: never across the read.
    state: Mutex<SlotState>,
    /// Signalled when the read ends (ready or gone).
    done: Condvar,
    /// The budget its reservation of `max_bytes` returns to when dropped.
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
        self.budget.fetch_sub(self.max_bytes, Ordering::Relaxed);
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

/// A cursor's read-ahead: at most one slot. Owned by the cursor.
#[derive(Default)]
pub(crate) struct CursorReadAhead {
    /// The slot. Held briefly, never across a read or a wait; taken before a slot's lock.
    slot: Mutex<Option<Arc<Slot>>>,
}

impl CursorReadAhead {
    /// Entries read ahead from `from`: at most `max_entries`, and at most `max_bytes` after the
    /// first. Waits for a running read only if `block`. The rest of a slot stays for the next
    /// read; a slot emptied here queues the next read-ahead after it.
    pub(crate) fn take(
        &self,
        ml: &Arc<ManagedLedger>,
        from: Position,
        max_entries: usize,
        max_bytes: u64,
        block: bool,
    ) -> Take {
        let Some(slot) = self.slot.lock().take() else {
            return Take::Miss;
        };
        let mut st = slot.state.lock();
        if st.start != from {
            return Take::Miss;
        }
        while block && matches!(st.phase, Phase::Running) {
            slot.done.wait(&mut st);
        }
        let mut out = Vec::new();
        match &mut st.phase {
            Phase::Queued | Phase::Running if !block => {
                drop(st);
                *self.slot.lock() = Some(slot);
                return Take::Pending;
            }
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
        let Some(last) = out.last().map(|e| e.position) else {
            st.phase = Phase::Gone;
            return Take::Miss;
        };
        // Relaxed: a statistic.
        ml.shared
            .read_ahead
            .served
            .fetch_add(out.len() as u64, Ordering::Relaxed);
        // One slot's read stays within one ledger, so what is left starts right after `last`.
        let rest = match &st.phase {
            Phase::Ready(ready) => ready.front().map(|e| e.position),
            _ => None,
        };
        if let Some(next) = rest {
            st.start = next;
            drop(st);
            *self.slot.lock() = Some(slot);
        } else {
            drop(st);
            self.start(ml, ml.next_valid_position(last), max_entries, max_bytes);
        }
        Take::Entries(out)
    }

    /// Queues a read of up to `max_entries` entries (about `max_bytes`, at most
    /// [`MAX_SLOT_BYTES`]) from `start`, replacing any slot; nothing is queued when the
    /// storage's budget cannot take it or nothing is there.
    pub(crate) fn start(
        &self,
        ml: &Arc<ManagedLedger>,
        start: Position,
        max_entries: usize,
        max_bytes: u64,
    ) {
        // A replaced slot gives its reservation back when dropped (now, or when its running
        // read ends), so the budget below counts it no more.
        self.clear();
        if start > ml.last_confirmed() {
            return;
        }
        let ra = &ml.shared.read_ahead;
        let max_bytes = max_bytes.min(MAX_SLOT_BYTES);
        // Relaxed: see `ReadAheads::reserved`.
        let before = ra.reserved.fetch_add(max_bytes, Ordering::Relaxed);
        let slot = Arc::new(Slot {
            max_entries,
            max_bytes,
            state: Mutex::new(SlotState {
                start,
                phase: Phase::Queued,
            }),
            done: Condvar::new(),
            budget: Arc::clone(&ra.reserved),
        });
        if before + max_bytes > BUDGET {
            return; // dropping `slot` gives the reservation back
        }
        *self.slot.lock() = Some(Arc::clone(&slot));
        ra.send(Job {
            ml: Arc::downgrade(ml),
            slot,
        });
    }

    /// Waits until the slot's read, if any, has ended (tests: a dispatcher sending meanwhile).
    #[cfg(test)]
    pub(crate) fn settle(&self) {
        let slot = self.slot.lock().clone();
        if let Some(slot) = slot {
            let mut st = slot.state.lock();
            while matches!(st.phase, Phase::Queued | Phase::Running) {
                slot.done
                    .wait_for(&mut st, std::time::Duration::from_millis(10));
            }
        }
    }

    /// Drops the slot (the cursor closed, or its read is replaced).
    pub(crate) fn clear(&self) {
        let old = self.slot.lock().take();
        drop(old);
    }
}

impl ReadAheads {
    /// Entries handed to cursors from read-ahead slots so far.
    pub(crate) fn served(&self) -> u64 {
        // Relaxed: a statistic.
        self.served.load(Ordering::Relaxed)
    }

    /// Bytes reserved by live slots.
    #[cfg(test)]
    pub(crate) fn reserved(&self) -> u64 {
        // Relaxed: a statistic.
        self.reserved.load(Ordering::Relaxed)
    }

    /// Hands `job` to the read-ahead thread, starting it if needed. If it cannot be started, the
    /// job is dropped (its cursor reads for itself).
    fn send(&self, job: Job) {
        let mut queue = self.queue.lock();
        let job = match queue.as_ref() {
            Some(tx) => match tx.send(job) {
                Ok(()) => return,
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("pulsar-rs-read-ahead".into())
            .spawn(move || run(&rx));
        match spawned {
            Ok(_) => {
                let _ = tx.send(job);
                *queue = Some(tx);
            }
            Err(e) => tracing::warn!(error = %e, "cannot start the read-ahead thread"),
        }
    }
}

/// The read-ahead thread: runs queued reads until its storage is dropped.
fn run(rx: &mpsc::Receiver<Job>) {
    while let Ok(job) = rx.recv() {
        let start = {
            let mut st = job.slot.state.lock();
            // Only the job holds a slot its cursor dropped: not worth reading.
            if !matches!(st.phase, Phase::Queued) || Arc::strong_count(&job.slot) == 1 {
                continue;
            }
            st.phase = Phase::Running;
            st.start
        };
        let read = job.ml.upgrade().map(|ml| {
            ml.read_entries_from(
                start,
                job.slot.max_entries,
                job.slot.max_bytes,
                Position::LATEST,
                true,
            )
        });
        let next = match read {
            Some(Ok(Some(entries))) if !entries.is_empty() => Phase::Ready(entries.into()),
            Some(Err(e)) => {
                tracing::debug!(error = %e, "read-ahead failed; the cursor will read itself");
                Phase::Gone
            }
            _ => Phase::Gone,
        };
        job.slot.state.lock().phase = next;
        job.slot.done.notify_all();
    }
}

#[cfg(test)]
#[path = "read_ahead_tests.rs"]
mod tests;
