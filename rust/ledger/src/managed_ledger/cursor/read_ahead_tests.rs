//! Tests of cursors' read-ahead: every entry once and in order, rewinds and acknowledgements
//! respected, the memory budget kept.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::BUDGET;
use crate::{LedgerConfig, ManagedLedger, Position, Storage, StorageConfig};

/// 64 KiB entries, so four make a read large enough to be read ahead.
const ENTRY: usize = 64 << 10;

fn payload(i: usize) -> Bytes {
    let mut b = vec![(i % 251) as u8; ENTRY];
    b[..8].copy_from_slice(&(i as u64).to_le_bytes());
    Bytes::from(b)
}

fn index(b: &Bytes) -> usize {
    usize::try_from(u64::from_le_bytes(b[..8].try_into().unwrap())).unwrap()
}

/// A storage without an entry cache (every read goes to the journal) holding `n` entries of
/// one topic, 50 per ledger.
async fn backlog(dir: &std::path::Path, n: usize) -> (Arc<Storage>, Arc<ManagedLedger>) {
    let config = StorageConfig {
        cache_size_bytes: 0,
        ..StorageConfig::default()
    };
    let s = Storage::open(dir, config).unwrap();
    let ml = s
        .open_ledger(
            "t/ra",
            LedgerConfig {
                max_entries_per_ledger: 50,
                min_rollover_time: Duration::ZERO,
                ..LedgerConfig::default()
            },
        )
        .unwrap();
    for i in 0..n {
        ml.add_entry(payload(i)).await.unwrap();
    }
    (s, ml)
}

#[tokio::test]
async fn a_cursor_catching_up_takes_its_reads_from_the_read_ahead_every_entry_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (s, ml) = backlog(dir.path(), 230).await;
    let c = ml.open_cursor_at("sub", true).unwrap();
    let mut got = Vec::new();
    for round in 0.. {
        // Every other read comes after its read-ahead ended (as after a dispatcher's send);
        // the others find it still queued or running.
        if round % 2 == 1 {
            c.settle_read_ahead();
        }
        let batch = c
            .read_entries_bounded(8, u64::MAX, Position::LATEST)
            .unwrap();
        if batch.is_empty() {
            break;
        }
        got.extend(batch.iter().map(|e| index(&e.data)));
        for e in &batch {
            assert_eq!(
                e.data,
                payload(index(&e.data)),
                "entry {} intact",
                e.position
            );
        }
    }
    assert_eq!(
        got,
        (0..230).collect::<Vec<_>>(),
        "every entry once, in order"
    );
    // At least the settled reads (every other one) took their entries from the read-ahead.
    let served = s.read_ahead_entries();
    assert!(served >= 100, "{served} of 230 entries were read ahead");
}

#[tokio::test]
async fn rewinds_and_acknowledgements_are_respected_by_what_was_read_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let (s, ml) = backlog(dir.path(), 40).await;
    let c = ml.open_cursor_at("sub", true).unwrap();
    let first = c
        .read_entries_bounded(4, u64::MAX, Position::LATEST)
        .unwrap();
    assert_eq!(first.len(), 4);
    c.settle_read_ahead();
    let p = |e: i64| Position::new(first[0].position.ledger_id, e);
    // Entries 5 and 6 are acknowledged after the read-ahead of 4..8 was read.
    c.delete(&[p(5), p(6)]);
    let second = c
        .read_entries_bounded(4, u64::MAX, Position::LATEST)
        .unwrap();
    let ids: Vec<i64> = second.iter().map(|e| e.position.entry_id).collect();
    assert_eq!(ids, vec![4, 7], "acknowledged entries are skipped");
    assert!(
        s.read_ahead_entries() > 0,
        "the second read came from the read-ahead"
    );
    // A rewind drops the slot queued after entry 7: reading restarts at the first unacked entry.
    c.rewind();
    let again = c
        .read_entries_bounded(4, u64::MAX, Position::LATEST)
        .unwrap();
    let ids: Vec<usize> = again.iter().map(|e| index(&e.data)).collect();
    assert_eq!(ids, vec![0, 1, 2, 3]);
    // A bounded read never takes read-ahead entries past its bound.
    c.settle_read_ahead();
    let bounded = c.read_entries_bounded(10, u64::MAX, p(4)).unwrap();
    let ids: Vec<i64> = bounded.iter().map(|e| e.position.entry_id).collect();
    assert_eq!(ids, vec![4]);
}

#[tokio::test]
async fn read_ahead_memory_stays_within_the_budget_and_is_given_back() {
    let dir = tempfile::tempdir().unwrap();
    let (_s, ml) = backlog(dir.path(), 400).await;
    // Each cursor's first read (150 entries, no byte bound) reads one ledger of 50 entries from
    // disk and one from its read-ahead, leaving the next two ledgers (6.4 MiB) queued: twelve
    // cursors would hold 77 MiB.
    let cursors: Vec<_> = (0..12)
        .map(|i| ml.open_cursor_at(&format!("c{i}"), true).unwrap())
        .collect();
    let budget = &ml.shared.read_ahead;
    for c in &cursors {
        assert!(!c.read_entries(150).unwrap().is_empty());
        assert!(
            budget.reserved() <= BUDGET,
            "{} reserved",
            budget.reserved()
        );
    }
    assert!(
        budget.reserved() >= 2 * 50 * ENTRY as u64,
        "some cursors read ahead"
    );
    for c in &cursors {
        c.close().unwrap();
    }
    // Slots whose read is still running are released when it ends.
    let deadline = pulsar_rs_clock::monotonic() + Duration::from_secs(10);
    while budget.reserved() > 0 && pulsar_rs_clock::monotonic() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(budget.reserved(), 0, "closed cursors hold no read-ahead");
}
