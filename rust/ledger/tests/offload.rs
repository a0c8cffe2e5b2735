//! Tiered storage in the managed ledger: which ledgers an offload takes, what it records (and
//! when), reads from the tier once the ledger's own copy is deleted after the lag, across a
//! restart, and the objects' deletion with the ledger.
//!
//! The tier here is an in-process map of objects behind the managed ledger's offloader seam (the
//! S3 implementation and its object format are tested against S3Proxy in `pulsar-rs-offload`);
//! it can be told to fail, and it counts reads, so each test sees which copy served a read.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use pulsar_rs_ledger::{
    LedgerConfig, LedgerError, LedgerOffloader, ManualClock, OffloadPolicy, OffloadSource,
    OffloadedLedger, Position, Result, Storage, StorageConfig,
};

/// Objects by (ledger id, uid): the entries as uploaded.
#[derive(Default)]
struct MemoryTier {
    /// Uploaded ledgers. Lock: map operations only.
    objects: Mutex<HashMap<(i64, u128), Vec<Bytes>>>,
    /// Uploads and reads fail while set. Relaxed: a test switch, read per call.
    down: AtomicBool,
    /// Entries served. Relaxed: a counter.
    reads: AtomicU64,
    /// An upload stores its objects and then fails (a process that died before recording
    /// them). Relaxed: a test switch.
    crash_after_upload: AtomicBool,
}

struct MemoryLedger {
    tier: Arc<MemoryTier>,
    entries: Vec<Bytes>,
}

impl OffloadedLedger for MemoryLedger {
    fn last_entry_id(&self) -> i64 {
        self.entries.len() as i64 - 1
    }
    fn length(&self) -> u64 {
        self.entries.iter().map(|e| e.len() as u64).sum()
    }
    fn read(&self, first: i64, last: i64) -> Result<Vec<Bytes>> {
        self.tier.check()?;
        self.tier
            .reads
            .fetch_add((last - first + 1) as u64, Ordering::Relaxed);
        Ok(self.entries[first as usize..=last as usize].to_vec())
    }
}

impl MemoryTier {
    fn check(&self) -> Result<()> {
        if self.down.load(Ordering::Relaxed) {
            return Err(LedgerError::Offload {
                context: "connection refused".into(),
            });
        }
        Ok(())
    }
}

struct MemoryOffloader(Arc<MemoryTier>);

impl LedgerOffloader for MemoryOffloader {
    fn driver_name(&self) -> &str {
        "S3"
    }
    fn driver_metadata(&self) -> BTreeMap<String, String> {
        [("bucket".to_owned(), "b".to_owned())].into()
    }
    fn offload(
        &self,
        source: &dyn OffloadSource,
        uid: u128,
        extra: &BTreeMap<String, String>,
    ) -> Result<()> {
        self.0.check()?;
        assert!(extra.contains_key("ManagedLedgerName"));
        let entries = source.read(0, source.last_entry_id())?;
        assert_eq!(
            entries.iter().map(|e| e.len() as u64).sum::<u64>(),
            source.length()
        );
        self.0
            .objects
            .lock()
            .insert((source.ledger_id(), uid), entries);
        if self.0.crash_after_upload.load(Ordering::Relaxed) {
            return Err(LedgerError::Offload {
                context: "died after the upload".into(),
            });
        }
        Ok(())
    }
    fn open_offloaded(
        &self,
        ledger_id: i64,
        uid: u128,
        meta: &BTreeMap<String, String>,
    ) -> Result<Arc<dyn OffloadedLedger>> {
        self.0.check()?;
        assert_eq!(meta.get("bucket").map(String::as_str), Some("b"));
        let entries = self.0.objects.lock().get(&(ledger_id, uid)).cloned();
        let entries = entries.ok_or_else(|| LedgerError::Offload {
            context: format!("no object for ledger {ledger_id}"),
        })?;
        Ok(Arc::new(MemoryLedger {
            tier: Arc::clone(&self.0),
            entries,
        }))
    }
    fn delete_offloaded(
        &self,
        ledger_id: i64,
        uid: u128,
        _: &BTreeMap<String, String>,
    ) -> Result<()> {
        self.0.objects.lock().remove(&(ledger_id, uid));
        Ok(())
    }
}

fn rolling() -> LedgerConfig {
    LedgerConfig {
        max_entries_per_ledger: 10,
        min_rollover_time: Duration::ZERO,
        retention_time_ms: -1,
        retention_size_bytes: -1,
        ..LedgerConfig::default()
    }
}

fn policy(tier: &Arc<MemoryTier>, lag: Option<i64>) -> OffloadPolicy {
    OffloadPolicy {
        offloader: Some(Arc::new(MemoryOffloader(Arc::clone(tier)))),
        deletion_lag_ms: lag,
        ..OffloadPolicy::default()
    }
}

fn payload(i: usize) -> Bytes {
    Bytes::from(format!("message-{i:05}-{}", "x".repeat(i % 37)))
}

fn read_all(ml: &pulsar_rs_ledger::ManagedLedger) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut from = ml.first_position();
    loop {
        let got = ml
            .read_entries(ml.next_valid_position(from), 7, u64::MAX, Position::LATEST)
            .unwrap();
        let Some(last) = got.last() else {
            return out;
        };
        from = last.position;
        out.extend(got.into_iter().map(|e| e.data));
    }
}

#[test]
fn offloaded_ledgers_are_read_from_the_tier_once_their_own_copy_is_deleted_even_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000_000));
    let tier = Arc::new(MemoryTier::default());
    let storage =
        Storage::open_with_clock(dir.path(), StorageConfig::default(), clock.clone()).unwrap();
    let ml = storage
        .open_ledger("t/ns/persistent/off", rolling())
        .unwrap();
    let sent: Vec<Bytes> = (0..55).map(payload).collect();
    for p in &sent {
        ml.add_entry_blocking(p.clone()).unwrap();
    }
    let current = ml.stats().current_ledger_id;
    // Bookkeeper-first keeps reads on the journal until the copy is gone.
    ml.set_offload_policy(OffloadPolicy {
        read_priority: pulsar_rs_ledger::ReadPriority::BookkeeperFirst,
        ..policy(&tier, Some(60_000))
    });
    let first_left = ml.offload_now(Position::new(current, 0)).unwrap();
    assert_eq!(first_left, Position::new(current, 0));
    let ledgers = ml.ledgers();
    let offloaded: Vec<_> = ledgers
        .iter()
        .filter(|l| l.offload.as_ref().is_some_and(|c| c.complete))
        .collect();
    assert_eq!(
        offloaded.len(),
        5,
        "every closed ledger, never the current one"
    );
    assert!(ledgers
        .iter()
        .find(|l| l.ledger_id == current)
        .unwrap()
        .offload
        .is_none());
    assert_eq!(tier.objects.lock().len(), 5);
    for l in &offloaded {
        let c = l.offload.as_ref().unwrap();
        assert_eq!(c.driver_name, "S3");
        assert_eq!(c.timestamp_ms, 1_000_000);
        assert!(!c.bookkeeper_deleted);
    }

    // Within the lag the journal copy stays and serves reads.
    ml.housekeeping().unwrap();
    assert_eq!(read_all(&ml), sent);
    assert_eq!(tier.reads.load(Ordering::Relaxed), 0);

    // Past the lag the own copy goes; every read of those ledgers comes from the tier.
    clock.advance_ms(60_001);
    ml.housekeeping().unwrap();
    assert!(ml
        .ledgers()
        .iter()
        .filter(|l| l.ledger_id != current)
        .all(|l| l.offload.as_ref().unwrap().bookkeeper_deleted));
    assert_eq!(read_all(&ml), sent);
    assert_eq!(tier.reads.load(Ordering::Relaxed), 50);
    storage.close().unwrap();
    drop(ml);
    drop(storage);

    // A restart: the record says where the entries are; the journal no longer holds them.
    let storage =
        Storage::open_with_clock(dir.path(), StorageConfig::default(), clock.clone()).unwrap();
    let ml = storage
        .open_ledger("t/ns/persistent/off", rolling())
        .unwrap();
    // With no offloader the tier's ledgers are a clear error, not an empty read.
    let err = ml
        .read_entries(
            Position::new(offloaded[0].ledger_id, 0),
            1,
            u64::MAX,
            Position::LATEST,
        )
        .unwrap_err();
    assert!(matches!(err, LedgerError::Offload { .. }), "{err}");
    assert!(err.to_string().contains("no offload driver"), "{err}");
    ml.set_offload_policy(policy(&tier, Some(60_000)));
    assert_eq!(read_all(&ml), sent);
    assert_eq!(tier.reads.load(Ordering::Relaxed), 100);
    // The tier down: the read fails (its caller retries), it is not skipped or empty.
    storage.close().unwrap();
    drop(ml);
    drop(storage);
    let storage = Storage::open_with_clock(dir.path(), StorageConfig::default(), clock).unwrap();
    let ml = storage
        .open_ledger("t/ns/persistent/off", rolling())
        .unwrap();
    ml.set_offload_policy(policy(&tier, Some(60_000)));
    tier.down.store(true, Ordering::Relaxed);
    let err = ml
        .read_entries(
            Position::new(offloaded[1].ledger_id, 3),
            2,
            u64::MAX,
            Position::LATEST,
        )
        .unwrap_err();
    assert!(matches!(err, LedgerError::Offload { .. }), "{err}");
    tier.down.store(false, Ordering::Relaxed);
    let got = ml
        .read_entries(
            Position::new(offloaded[1].ledger_id, 3),
            2,
            u64::MAX,
            Position::LATEST,
        )
        .unwrap();
    assert_eq!(got[0].data, sent[13]);
}

#[test]
fn a_failed_offload_leaves_a_prepared_record_and_the_next_attempt_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let tier = Arc::new(MemoryTier::default());
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let ml = storage
        .open_ledger("t/ns/persistent/fail", rolling())
        .unwrap();
    for i in 0..25 {
        ml.add_entry_blocking(payload(i)).unwrap();
    }
    let current = ml.stats().current_ledger_id;
    ml.set_offload_policy(policy(&tier, None));
    tier.down.store(true, Ordering::Relaxed);
    let err = ml.offload_now(Position::new(current, 0)).unwrap_err();
    assert!(matches!(err, LedgerError::Offload { .. }));
    let first = &ml.ledgers()[0];
    let prepared = first
        .offload
        .clone()
        .expect("the attempt is recorded first");
    assert!(!prepared.complete);
    assert!(
        ml.ledgers()[1].offload.is_none(),
        "the loop stops at the failure"
    );
    // Reads never go to an incomplete offload.
    assert_eq!(read_all(&ml).len(), 25);

    tier.down.store(false, Ordering::Relaxed);
    ml.offload_now(Position::new(current, 0)).unwrap();
    let done = ml.ledgers()[0].offload.clone().unwrap();
    assert!(done.complete);
    assert_ne!(done.uid, prepared.uid, "a new attempt takes a new uid");
    assert_eq!(tier.objects.lock().len(), 2);
    // Offloading again finds nothing left to do.
    ml.offload_now(Position::new(current, 0)).unwrap();
    assert_eq!(tier.objects.lock().len(), 2);
}

#[test]
fn retention_and_deletion_remove_the_offloaded_objects_too() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(5_000));
    let tier = Arc::new(MemoryTier::default());
    let storage =
        Storage::open_with_clock(dir.path(), StorageConfig::default(), clock.clone()).unwrap();
    let ml = storage
        .open_ledger("t/ns/persistent/ret", rolling())
        .unwrap();
    for i in 0..35 {
        ml.add_entry_blocking(payload(i)).unwrap();
    }
    let current = ml.stats().current_ledger_id;
    ml.set_offload_policy(policy(&tier, Some(0)));
    ml.offload_now(Position::new(current, 0)).unwrap();
    assert_eq!(tier.objects.lock().len(), 3);
    // Retention of one minute, nothing subscribed: every closed ledger expires.
    ml.set_retention(60_000, -1);
    clock.advance_ms(60_001);
    ml.housekeeping().unwrap();
    assert_eq!(ml.ledgers().len(), 1);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !tier.objects.lock().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        tier.objects.lock().is_empty(),
        "objects deleted with their ledgers"
    );

    // Deleting the topic deletes what it still has in the tier.
    for i in 0..25 {
        ml.add_entry_blocking(payload(i)).unwrap();
    }
    let current = ml.stats().current_ledger_id;
    ml.offload_now(Position::new(current, 0)).unwrap();
    assert_eq!(tier.objects.lock().len(), 2);
    ml.delete().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !tier.objects.lock().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(tier.objects.lock().is_empty());
}

#[test]
fn the_size_threshold_offloads_older_ledgers_after_a_rollover() {
    let dir = tempfile::tempdir().unwrap();
    let tier = Arc::new(MemoryTier::default());
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let ml = storage
        .open_ledger("t/ns/persistent/auto", rolling())
        .unwrap();
    ml.set_offload_policy(OffloadPolicy {
        threshold_bytes: Some(0),
        ..policy(&tier, None)
    });
    for i in 0..45 {
        ml.add_entry_blocking(payload(i)).unwrap();
    }
    // Threshold 0: every closed ledger is offloaded once it closes (and settles).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        ml.maybe_offload();
        let closed = ml.ledgers().len() - 1;
        let done = ml
            .ledgers()
            .iter()
            .filter(|l| l.offload.as_ref().is_some_and(|c| c.complete))
            .count();
        if done == closed {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{done} of {closed}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(tier.objects.lock().len(), 4);
}

#[test]
fn an_attempt_cut_short_after_its_upload_is_recorded_and_its_objects_go_before_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let tier = Arc::new(MemoryTier::default());
    {
        let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
        let ml = storage
            .open_ledger("t/ns/persistent/cut", rolling())
            .unwrap();
        for i in 0..15 {
            ml.add_entry_blocking(payload(i)).unwrap();
        }
        let current = ml.stats().current_ledger_id;
        ml.set_offload_policy(policy(&tier, None));
        tier.crash_after_upload.store(true, Ordering::Relaxed);
        ml.offload_now(Position::new(current, 0)).unwrap_err();
        storage.close().unwrap();
    }
    assert_eq!(
        tier.objects.lock().len(),
        1,
        "the cut attempt's objects are in the store"
    );
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let ml = storage
        .open_ledger("t/ns/persistent/cut", rolling())
        .unwrap();
    let recorded = ml.ledgers()[0].offload.clone();
    let recorded = recorded.expect("the attempt was recorded before its upload");
    assert!(!recorded.complete);
    assert!(tier.objects.lock().contains_key(&(0, recorded.uid)));
    tier.crash_after_upload.store(false, Ordering::Relaxed);
    ml.set_offload_policy(policy(&tier, None));
    let current = ml.stats().current_ledger_id;
    ml.offload_now(Position::new(current, 0)).unwrap();
    let objects: Vec<(i64, u128)> = tier.objects.lock().keys().copied().collect();
    assert_eq!(
        objects.len(),
        1,
        "only the completed attempt's objects: {objects:?}"
    );
    assert_ne!(objects[0].1, recorded.uid);
}
