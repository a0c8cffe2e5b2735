//! Rollover in two phases: one topic's slow metadata write (its rollover's fsync) must not
//! delay confirmations of appends on another topic.
//!
//! The storage runs on the real file system behind a gate injected through the file-system seam
//! (`Vfs`): `fdatasync` of a chosen path blocks until the test opens the gate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pulsar_rs_ledger::{LedgerConfig, Storage, StorageConfig};

mod common;
use common::{gated_storage, Gate};

#[test]
fn a_slow_rollover_metadata_write_does_not_delay_another_topics_confirmations() {
    let dir = tempfile::tempdir().unwrap();
    let journal_gate = Gate::new("/journal/");
    let meta_gate = Gate::new("slow-topic");
    let storage = gated_storage(
        dir.path(),
        vec![Arc::clone(&journal_gate), Arc::clone(&meta_gate)],
    );
    let rolling = LedgerConfig {
        max_entries_per_ledger: 2,
        min_rollover_time: Duration::ZERO,
        ..LedgerConfig::default()
    };
    let slow = storage.open_ledger("slow-topic", rolling).unwrap();
    let fast = storage
        .open_ledger("fast-topic", LedgerConfig::default())
        .unwrap();
    let first = slow.add_entry_blocking(Bytes::from_static(b"s0")).unwrap();

    // 1. An append of the slow topic is in flight: its journal round waits at the sync.
    journal_gate.close();
    let (_, in_flight) = slow.start_add(Bytes::from_static(b"s1"), 0).unwrap();
    let in_flight = in_flight.expect("durable mode returns a receipt");
    journal_gate.wait_entered();

    // 2. The slow topic's next append rolls over (its ledger is full); the metadata write blocks.
    meta_gate.close();
    let roller = {
        let slow = Arc::clone(&slow);
        std::thread::spawn(move || slow.add_entry_blocking(Bytes::from_static(b"s2")))
    };
    meta_gate.wait_entered();

    // 3. The other topic appends; then the journal round completes.
    let (_, fast_receipt) = fast.start_add(Bytes::from_static(b"f0"), 0).unwrap();
    let fast_receipt = fast_receipt.expect("durable mode returns a receipt");
    journal_gate.open();

    // The other topic's append is confirmed while the rollover's metadata write still waits.
    let confirmed = Arc::new(AtomicBool::new(false));
    let waiter = {
        let confirmed = Arc::clone(&confirmed);
        std::thread::spawn(move || {
            let r = fast_receipt.wait();
            confirmed.store(true, Ordering::SeqCst);
            r
        })
    };
    let deadline = pulsar_rs_clock::monotonic() + Duration::from_secs(5);
    while !confirmed.load(Ordering::SeqCst) && pulsar_rs_clock::monotonic() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let stalled = !confirmed.load(Ordering::SeqCst);
    meta_gate.open();
    assert!(
        !stalled,
        "fast-topic's append waited for slow-topic's rollover metadata write"
    );
    waiter.join().unwrap().unwrap();
    // Nothing of the slow topic was lost or reordered by the rollover.
    in_flight.wait().unwrap();
    let rolled = roller.join().unwrap().unwrap();
    assert_ne!(
        rolled.ledger_id, first.ledger_id,
        "the third append rolled over"
    );
    assert_eq!(rolled.entry_id, 0);
    assert_eq!(slow.ledgers().len(), 2);
    assert_eq!(slow.ledgers()[0].entries, 2);
    storage.close().unwrap();
    // The rollover's metadata survives a reopen.
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let slow = storage
        .open_ledger("slow-topic", LedgerConfig::default())
        .unwrap();
    let mut all = Vec::new();
    for ledger in [first.ledger_id, rolled.ledger_id] {
        all.extend(
            slow.read_entries(
                pulsar_rs_ledger::Position::new(ledger, 0),
                10,
                u64::MAX,
                pulsar_rs_ledger::Position::LATEST,
            )
            .unwrap(),
        );
    }
    let payloads: Vec<&[u8]> = all.iter().map(|e| e.data.as_ref()).collect();
    assert_eq!(payloads, vec![&b"s0"[..], b"s1", b"s2"]);
    storage.close().unwrap();
}
