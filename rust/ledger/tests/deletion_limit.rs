//! PIP-444 (`managedLedgerDeleteMaxConcurrentRequests`): ledger deletions on a seam backing take
//! a permit of the backing's limit first, so deleting a managed ledger of many ledgers puts at most
//! that many deletions at the storage (the bookies and ZooKeeper) at once; the rest wait, and all
//! are done in the end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pulsar_rs_ledger::seam::{
    BoxFut, LedgerStorage, Quorums, ReadLedger, SeamBacking, VersionedStore, WriteLedger,
};
use pulsar_rs_ledger::{LedgerConfig, Result, Storage, StorageConfig, SystemClock};
use tokio::sync::Semaphore;

const NAME: &str = "public/default/persistent/many-ledgers";
const LIMIT: usize = 2;

/// The journal's ledgers, whose deletions wait at a gate the test opens.
struct Gated {
    inner: Arc<dyn LedgerStorage>,
    /// Closed (no permits) until the test opens it.
    gate: Semaphore,
    /// Deletions inside `delete_ledger` now, and the most seen at once.
    inside: AtomicUsize,
    most: AtomicUsize,
    done: AtomicUsize,
}

impl LedgerStorage for Gated {
    fn create_ledger(
        &self,
        ml_name: &str,
        quorums: Option<Quorums>,
    ) -> BoxFut<'_, Result<Arc<dyn WriteLedger>>> {
        self.inner.create_ledger(ml_name, quorums)
    }

    fn open_ledger(
        &self,
        ledger_id: i64,
        recover: bool,
    ) -> BoxFut<'_, Result<Arc<dyn ReadLedger>>> {
        self.inner.open_ledger(ledger_id, recover)
    }

    fn delete_ledger(&self, ledger_id: i64) -> BoxFut<'_, Result<()>> {
        Box::pin(async move {
            // SeqCst: the test reads these from another thread while the deletions run.
            let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            self.gate.acquire().await.expect("gate").forget();
            let r = self.inner.delete_ledger(ledger_id).await;
            self.inside.fetch_sub(1, Ordering::SeqCst);
            self.done.fetch_add(1, Ordering::SeqCst);
            r
        })
    }
}

/// Polls `cond` until it holds, for at most 20 s.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..2000 {
        if cond() {
            return;
        }
        // Waiting for the backing's runtime threads: nothing to await on from this thread.
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("never: {what}");
}

#[test]
fn deleting_many_ledgers_keeps_at_most_the_limit_at_the_storage() {
    let base_dir = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = Storage::open(base_dir.path(), StorageConfig::default()).unwrap();
    let gated = Arc::new(Gated {
        inner: base.seam_ledgers() as Arc<dyn LedgerStorage>,
        gate: Semaphore::new(0),
        inside: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let backing = Arc::new(SeamBacking::new(
        Arc::clone(&gated) as Arc<dyn LedgerStorage>,
        base.seam_store() as Arc<dyn VersionedStore>,
        runtime,
        "gated local seam".into(),
    ));
    backing.set_max_concurrent_deletions(LIMIT as i64);
    let storage = Storage::open_on_backing(
        dir.path(),
        StorageConfig::default(),
        Arc::clone(&backing),
        Arc::new(SystemClock),
        false,
    )
    .unwrap();
    let config = LedgerConfig {
        max_entries_per_ledger: 1,
        min_rollover_time: Duration::ZERO,
        ..LedgerConfig::default()
    };
    let ml = storage.open_ledger(NAME, config).unwrap();
    for i in 0..6 {
        ml.add_entry_blocking(Bytes::from(format!("m{i}"))).unwrap();
    }
    let ledgers = ml.ledgers().len();
    assert!(ledgers > LIMIT + 2, "{ledgers} ledgers");
    ml.delete().unwrap();
    // Every deletion has started: LIMIT at the storage, the others waiting for a permit.
    eventually("the deletions beyond the limit wait for a permit", || {
        backing.ledger_deletions() == (ledgers - LIMIT, LIMIT)
    });
    assert_eq!(gated.inside.load(Ordering::SeqCst), LIMIT);
    gated.gate.add_permits(ledgers);
    eventually("every ledger is deleted", || {
        gated.done.load(Ordering::SeqCst) == ledgers
    });
    assert_eq!(gated.most.load(Ordering::SeqCst), LIMIT);
    assert_eq!(backing.ledger_deletions(), (0, 0));
}
