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
use std::sync::{Arc, OnceLock};

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
        }
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
