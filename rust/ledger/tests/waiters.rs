//! Durable appends told to their [`AddWaiter`]s: once per run of one waiter's appends in a
//! journal round (not once per append), in append order, and only once the round is durable.
//!
//! The journal's `fdatasync` is held at a gate (the file-system seam), so the appends made
//! meanwhile all land in the next round.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use pulsar_rs_ledger::{
    AddWaiter, Added, KnownCrc, LedgerConfig, LedgerError, Position, Storage, StorageConfig,
};

mod common;
use common::{gated_storage, Gate};

/// Every report a waiter got: (token, succeeded).
#[derive(Default)]
struct Log(Mutex<Vec<(u64, bool)>>);

impl AddWaiter for Log {
    fn added_through(&self, token: u64, result: Result<(), LedgerError>) {
        self.0.lock().push((token, result.is_ok()));
    }
}

impl Log {
    fn reports(&self) -> Vec<(u64, bool)> {
        self.0.lock().clone()
    }

    /// Waits until a report covers `token`.
    fn wait_for(&self, token: u64) {
        let deadline = pulsar_rs_clock::monotonic() + Duration::from_secs(20);
        while !self.reports().iter().any(|&(t, _)| t >= token) {
            assert!(
                pulsar_rs_clock::monotonic() < deadline,
                "token {token} never reported"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

#[test]
fn a_round_tells_each_waiter_once_per_run_of_its_appends() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::new("/journal/");
    let storage = gated_storage(dir.path(), vec![Arc::clone(&gate)]);
    let ml = storage.open_ledger("t", LedgerConfig::default()).unwrap();
    let (a, b) = (Arc::new(Log::default()), Arc::new(Log::default()));
    let (a_waiter, b_waiter): (Arc<dyn AddWaiter>, Arc<dyn AddWaiter>) =
        (Arc::clone(&a) as _, Arc::clone(&b) as _);
    let add = |waiter: &Arc<dyn AddWaiter>, token: u64| {
        let data = Bytes::from(format!("m{token}"));
        // The checksum of the bytes after the first, as a caller that verified them has it.
        let known = KnownCrc {
            from: 1,
            crc: crc32c::crc32c(&data[1..]),
        };
        match ml
            .start_add_then(data, 0, Some(known), waiter, token)
            .unwrap()
        {
            Added::Queued(pos) => pos,
            Added::Confirmed(_) => panic!("a durable append confirmed before its write"),
        }
    };

    // The flusher's sync is held: nothing is durable, nobody is told.
    gate.close();
    add(&a_waiter, 0);
    gate.wait_entered();
    for token in 1..=25 {
        add(&a_waiter, token);
    }
    for token in 0..25 {
        add(&b_waiter, token);
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        a.reports().is_empty() && b.reports().is_empty(),
        "told before durable"
    );
    assert_eq!(ml.stats().entries_added, 0, "confirmed before durable");

    gate.open();
    a.wait_for(25);
    b.wait_for(24);
    // b's 25 appends were all queued during the held sync: one round, one run, one report.
    assert_eq!(b.reports(), vec![(24, true)]);
    // a's first append may have had a round of its own; the other 25 shared b's.
    let a_reports = a.reports();
    assert!(a_reports.len() <= 2, "a was told per append: {a_reports:?}");
    assert_eq!(a_reports.last(), Some(&(25, true)));
    assert!(a_reports.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(ml.stats().entries_added, 51);
    let first = ml.ledgers()[0].ledger_id;
    storage.close().unwrap();

    // The records written with the caller's checksum read back from the disk.
    let storage = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let ml = storage.open_ledger("t", LedgerConfig::default()).unwrap();
    let back = ml
        .read_entries(Position::new(first, 0), 100, u64::MAX, Position::LATEST)
        .unwrap();
    assert_eq!(back.len(), 51);
    assert_eq!(back[50].data, Bytes::from("m24"));
    storage.close().unwrap();
}
