//! The read-ahead threads and memory budget of one storage, shared by every cursor's read-ahead
//! (see the managed ledger's `cursor::read_ahead`): the threads run the reads queued ahead of
//! cursors, and the budget bounds the bytes those reads may hold at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use parking_lot::Mutex;

/// Threads running the reads queued ahead, per storage.
const THREADS: usize = 2;

/// Bytes all read-ahead slots of one storage may reserve together.
pub(crate) const BUDGET: u64 = 64 << 20;

/// One queued read-ahead: reads a slot of a cursor's read-ahead.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The read-ahead threads and budget of one storage. Owned by its `Shared`.
#[derive(Default)]
pub(crate) struct ReadAheads {
    /// Bytes reserved by live slots. Relaxed: a budget, no memory is published through it.
    pub(crate) reserved: Arc<AtomicU64>,
    /// Entries handed to cursors from read-ahead slots. Relaxed: a statistic.
    pub(crate) served: AtomicU64,
    /// The queue to the read-ahead threads, started by the first read-ahead. Held only to send
    /// or to start them.
    queue: Mutex<Option<mpsc::Sender<Job>>>,
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

    /// Hands `job` to the read-ahead threads, starting them if needed. If they cannot be
    /// started, the job is dropped (its cursor reads for itself).
    pub(crate) fn send(&self, job: Job) {
        let mut queue = self.queue.lock();
        let job = match queue.as_ref() {
            Some(tx) => match tx.send(job) {
                Ok(()) => return,
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        let (tx, rx) = mpsc::channel();
        // The threads share the receiver; whoever holds its lock waits in `recv` for the next job.
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..THREADS {
            let rx = Arc::clone(&rx);
            let spawned = std::thread::Builder::new()
                .name(format!("pulsar-rs-read-ahead-{i}"))
                .spawn(move || run(&rx));
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "cannot start a read-ahead thread");
                if i == 0 {
                    return;
                }
            }
        }
        let _ = tx.send(job);
        *queue = Some(tx);
    }
}

/// A read-ahead thread: runs queued reads until its storage is dropped.
fn run(rx: &Mutex<mpsc::Receiver<Job>>) {
    loop {
        // Lock: held only while waiting for the next job (see `ReadAheads::send`).
        let Ok(job) = rx.lock().recv() else { return };
        job();
    }
}
