//! [`SeamBacking`]: the ledger storage and metadata store a [`crate::Storage`] keeps its managed
//! ledgers on instead of the local journal (Apache BookKeeper and ZooKeeper, from
//! `pulsar_rs_ledger_bk`), with the Tokio runtime their clients run on.
//!
//! The managed ledger's own interface is synchronous where the journal's is (reads from disk,
//! rollovers, metadata writes run on threads that may block), so the backing runs its clients on
//! a runtime of its own and [`SeamBacking::block`] waits for one of their futures on the calling
//! thread, never inside that runtime: a caller on another runtime's worker (the broker's) blocks
//! that worker for one round trip, as a local fsync would, and can never deadlock the clients.
//! Appends do not block: their completion is reported from the backing's runtime.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::sync::Semaphore;

use super::{LedgerStorage, QuorumSource, Quorums, VersionedStore};
use crate::{LedgerError, Result};

/// Ledgers and metadata somewhere else than the data directory.
pub struct SeamBacking {
    /// Where ledgers live (bookies); shared, immutable.
    pub ledgers: Arc<dyn LedgerStorage>,
    /// Where ledger lists and cursors live (ZooKeeper); shared, immutable.
    pub store: Arc<dyn VersionedStore>,
    /// Where the clients' tasks run: dropped (shut down in the background) with the backing.
    runtime: Option<tokio::runtime::Runtime>,
    /// A handle to `runtime`, for spawning; immutable.
    handle: tokio::runtime::Handle,
    /// A short description for logs and stats (`bookkeeper zk:127.0.0.1:2181`); immutable.
    pub describe: String,
    /// Where new ledgers' quorums come from (the broker's persistence policies); set once by
    /// whoever owns the policies, read when a ledger is created.
    quorums: OnceLock<QuorumSource>,
    /// PIP-444's `managedLedgerDeleteMaxConcurrentRequests`: the permits a ledger deletion takes
    /// before it goes to the storage, shared by every managed ledger on the backing (the broker
    /// level). Set once by the broker; unset, deletions are not limited.
    deletion_permits: OnceLock<Arc<Semaphore>>,
    /// Deletions waiting for a permit: raised and lowered by each deletion's task, read by stats.
    deletions_waiting: Arc<AtomicUsize>,
    /// Deletions at the storage now: raised and lowered by each deletion's task, read by stats.
    deletions_in_flight: Arc<AtomicUsize>,
}

impl SeamBacking {
    /// A backing whose clients run on `runtime` (which it owns from now on).
    #[must_use]
    pub fn new(
        ledgers: Arc<dyn LedgerStorage>,
        store: Arc<dyn VersionedStore>,
        runtime: tokio::runtime::Runtime,
        describe: String,
    ) -> SeamBacking {
        SeamBacking {
            ledgers,
            store,
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
            describe,
            quorums: OnceLock::new(),
            deletion_permits: OnceLock::new(),
            deletions_waiting: Arc::new(AtomicUsize::new(0)),
            deletions_in_flight: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Limits the ledger deletions under way at once to `max` (PIP-444,
    /// `managedLedgerDeleteMaxConcurrentRequests`; 0 or less: no limit); a second call is ignored.
    pub fn set_max_concurrent_deletions(&self, max: i64) {
        if let Ok(max) = usize::try_from(max) {
            if max > 0 {
                let _ = self
                    .deletion_permits
                    .set(Arc::new(Semaphore::new(max.min(Semaphore::MAX_PERMITS))));
            }
        }
    }

    /// Ledger deletions (waiting for a permit, at the storage) now.
    #[must_use]
    pub fn ledger_deletions(&self) -> (usize, usize) {
        // Relaxed: figures for stats and tests, nothing is ordered by them.
        (
            self.deletions_waiting.load(Ordering::Relaxed),
            self.deletions_in_flight.load(Ordering::Relaxed),
        )
    }

    /// Deletes `ledger_id` from the storage in the background, once a deletion permit is free;
    /// a failure is logged.
    pub fn delete_ledger_later(&self, ledger_id: i64) {
        let ledgers = Arc::clone(&self.ledgers);
        let permits = self.deletion_permits.get().cloned();
        let waiting = Arc::clone(&self.deletions_waiting);
        let in_flight = Arc::clone(&self.deletions_in_flight);
        self.handle.spawn(async move {
            // Relaxed (all four): counters for stats and tests only.
            waiting.fetch_add(1, Ordering::Relaxed);
            let permit = match permits {
                Some(p) => p.acquire_owned().await.ok(),
                None => None,
            };
            waiting.fetch_sub(1, Ordering::Relaxed);
            in_flight.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = ledgers.delete_ledger(ledger_id).await {
                tracing::warn!(ledger_id, error = %e, "deleting a ledger failed");
            }
            in_flight.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
        });
    }

    /// Sets where new ledgers' quorums come from; a second call is ignored (the first owner of the
    /// policies keeps them).
    pub fn set_quorum_source(&self, source: QuorumSource) {
        let _ = self.quorums.set(source);
    }

    /// The quorums of the next ledger of managed ledger `ml_name` (`None`: the storage's defaults).
    #[must_use]
    pub fn quorums_for(&self, ml_name: &str) -> Option<Quorums> {
        self.quorums.get().and_then(|source| source(ml_name))
    }

    /// The runtime the clients run on.
    #[must_use]
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// Runs `fut` on the backing's runtime and waits for it on this thread.
    ///
    /// # Errors
    /// The future's own error, or [`LedgerError::Closed`] when the runtime is shutting down.
    pub fn block<T: Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().unwrap_or_else(|_| {
            Err(LedgerError::Closed {
                what: format!("{} (client runtime stopped)", self.describe),
            })
        })
    }

    /// Runs `fut` on the backing's runtime without waiting.
    pub fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        self.handle.spawn(fut);
    }
}

impl Drop for SeamBacking {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            // Never blocks, so dropping the last handle on an async thread is safe.
            rt.shutdown_background();
        }
    }
}

impl std::fmt::Debug for SeamBacking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeamBacking")
            .field("describe", &self.describe)
            .finish_non_exhaustive()
    }
}
