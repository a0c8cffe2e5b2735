//! Tests of the adaptive group wait (`journalAdaptiveGroupWaitMicros`): it gathers a steady
//! stream under load, never delays a producer that waits for each receipt, and ends once a
//! windowed producer's burst is all in. Each `fdatasync` is slowed to a fixed 20 ms through the
//! file-system seam, so that "records arrive while the flusher writes" does not depend on the
//! disk under the test.

use super::*;
use crate::vfs::SyncHookFs;
use std::sync::mpsc;
use std::time::Duration;

const SYNC: Duration = Duration::from_millis(20);

/// A durable journal whose every `fdatasync` takes at least [`SYNC`], with the given adaptive
/// wait and no preallocation (its zero steps would take slow syncs of their own).
fn journal(dir: &Path, adaptive: Duration) -> Arc<Journal> {
    let fs = SyncHookFs::new(|_: &Path| std::thread::sleep(SYNC));
    let (j, _) = Journal::open_with(Arc::new(fs), dir, true, 1 << 20, false).unwrap();
    j.set_prealloc(0);
    j.set_adaptive_group_wait(adaptive);
    j
}

/// Appends one record whose completion reports on the returned channel.
fn append(j: &Journal, entry: i64) -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel();
    let cb = Completion::once(move |r| {
        r.unwrap();
        let _ = tx.send(());
    });
    j.append(1, entry, 0, b"record", Some(cb)).unwrap();
    rx
}

/// Waits until every one of `appends` is durable.
fn all_durable(appends: impl IntoIterator<Item = mpsc::Receiver<()>>) {
    for rx in appends {
        rx.recv_timeout(Duration::from_secs(60)).unwrap();
    }
}

/// Appends `entries` one by one, `gap` apart, without waiting for any to be durable.
fn stream(j: &Journal, entries: std::ops::Range<i64>, gap: Duration) -> Vec<mpsc::Receiver<()>> {
    entries
        .map(|i| {
            std::thread::sleep(gap);
            append(j, i)
        })
        .collect()
}

/// Rounds taken by a steady stream of 100 appends, one every 5 ms.
fn rounds_for_a_steady_stream(adaptive: Duration) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path(), adaptive);
    let before = j.rounds();
    all_durable(stream(&j, 0..100, Duration::from_millis(5)));
    let rounds = j.rounds() - before;
    j.close();
    rounds
}

#[test]
fn a_steady_stream_under_load_shares_fewer_syncs() {
    // Without the wait each round holds what arrived during the previous 20 ms sync (~4
    // records): ~25 rounds over the 500 ms stream. With a 300 ms wait a round gathers until
    // the wait ends, since records never stop for 4 mean gaps (20 ms): ~2-3 rounds.
    let off = rounds_for_a_steady_stream(Duration::ZERO);
    let on = rounds_for_a_steady_stream(Duration::from_millis(300));
    assert!(off >= 12, "the premise: without a wait, {off} rounds");
    assert!(
        on <= 8,
        "with the adaptive wait, {on} rounds (without: {off})"
    );
}

#[test]
fn a_producer_that_waits_for_each_receipt_never_waits_for_the_group() {
    // First a stream with 10 ms between records, so the mean gap is ~10 ms and a waiting round
    // would end only after ~40 ms without a record. Then one record at a time, each sent when
    // the previous is durable: every record finds the flusher idle, so no round waits, even
    // with a 2 s adaptive wait.
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path(), Duration::from_secs(2));
    all_durable(stream(&j, 0..30, Duration::from_millis(10)));
    let t0 = pulsar_rs_clock::monotonic();
    for i in 30..70 {
        all_durable([append(&j, i)]);
    }
    let took = t0.elapsed();
    j.close();
    // 40 syncs of 20 ms: 0.8 s; rounds that waited ~40 ms each: 2.4 s.
    assert!(
        took < Duration::from_millis(1500),
        "40 sequential appends took {took:?}"
    );
}

#[test]
fn a_round_is_written_once_a_windowed_burst_is_all_in() {
    // A windowed producer: its whole window arrives in a burst while the flusher writes the
    // previous round, then nothing until receipts come back. The round must not wait for the
    // 2 s maximum: it ends once no record arrived for 4 mean gaps of the burst.
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path(), Duration::from_secs(2));
    let first = append(&j, 0); // the flusher is idle: written at once, syncing for 20 ms
    std::thread::sleep(Duration::from_millis(2));
    let t0 = pulsar_rs_clock::monotonic();
    let burst: Vec<_> = (1..=10).map(|i| append(&j, i)).collect();
    all_durable(std::iter::once(first).chain(burst));
    let took = t0.elapsed();
    j.close();
    assert!(
        took < Duration::from_millis(1000),
        "the burst's round waited {took:?}"
    );
}

#[test]
fn the_setting_is_bounded_and_named() {
    let c = crate::StorageConfig {
        journal_adaptive_group_wait: Duration::from_millis(1500),
        ..crate::StorageConfig::default()
    };
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("journalAdaptiveGroupWaitMicros"), "{e}");
    assert_eq!(
        crate::StorageConfig::default().journal_adaptive_group_wait,
        Duration::from_millis(1)
    );
}
