//! Unit tests of the journal: appends, reads, recovery of damage, rotation.
use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn append_read_back_from_memory_and_disk() {
    let dir = tempfile::tempdir().unwrap();
    let (j, rec) = Journal::open(dir.path(), true, 1 << 20).unwrap();
    assert!(rec.is_empty());
    let done = Arc::new(AtomicUsize::new(0));
    let mut locs = Vec::new();
    for i in 0..100i64 {
        let d = Arc::clone(&done);
        let payload = format!("entry-{i}");
        let cb = Completion::once(move |r| {
            r.unwrap();
            d.fetch_add(1, Ordering::SeqCst);
        });
        locs.push(
            j.append(7, i, 1000 + i as u64, payload.as_bytes(), Some(cb))
                .unwrap(),
        );
    }
    let early = j.read(7, 0, &locs).unwrap();
    assert_eq!(early[42].payload, Bytes::from("entry-42"));
    j.flush();
    assert_eq!(done.load(Ordering::SeqCst), 100);
    let recs = j.read(7, 10, &locs[10..20]).unwrap();
    assert_eq!(recs[0].payload, Bytes::from("entry-10"));
    assert_eq!(recs[9].timestamp, 1019);
    j.close();
    let (j2, mut rec) = Journal::open(dir.path(), true, 1 << 20).unwrap();
    assert_eq!(j2.indexed_at_open(), 1, "close checkpointed the segment");
    let found = rec.take(7);
    assert_eq!(found.len(), 100);
    assert_eq!(found[99].1, locs[99]);
}

#[test]
fn torn_tail_is_truncated_and_middle_corruption_is_isolated() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path(), false, 1 << 20).unwrap();
    let locs: Vec<Loc> = (0..10)
        .map(|i| j.append(1, i, 0, &[i as u8; 50], None).unwrap())
        .collect();
    j.close();
    let seg = segment_path(dir.path(), 0);
    let mut raw = std::fs::read(&seg).unwrap();
    // Damage entry 3's header length (so its own framing cannot be trusted) and payload.
    raw[locs[3].offset as usize] ^= 0x40;
    raw[locs[3].offset as usize + RECORD_HEADER + 5] ^= 0x55;
    raw.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7]); // and a torn tail
    std::fs::write(&seg, &raw).unwrap();
    let (j, mut rec) = Journal::open(dir.path(), false, 1 << 20).unwrap();
    let found_locs = rec.take(1);
    let found: Vec<i64> = found_locs.iter().map(|(e, _)| *e).collect();
    assert_eq!(
        found,
        vec![0, 1, 2, 4, 5, 6, 7, 8, 9],
        "records after the damage are kept"
    );
    assert_eq!(j.damaged_regions(), 1);
    assert_eq!(std::fs::metadata(&seg).unwrap().len(), locs[9].end());
    let err = j
        .read(1, 3, &[Loc::corrupt(0, locs[3].offset)])
        .unwrap_err();
    assert!(
        matches!(
            err,
            LedgerError::CorruptEntry {
                ledger_id: 1,
                entry_id: 3,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(j.read(1, 4, &[found_locs[3].1]).unwrap()[0].payload[0], 4);
}

#[test]
fn damage_in_an_older_segment_is_not_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path(), false, 64 << 10).unwrap();
    for i in 0..2000 {
        j.append(1, i, 0, &[7u8; 100], None).unwrap();
    }
    j.close();
    let seg = segment_path(dir.path(), 0);
    let mut raw = std::fs::read(&seg).unwrap();
    let len = raw.len();
    let mid = len / 2;
    raw[mid..mid + 4096].fill(0xAB);
    std::fs::write(&seg, &raw).unwrap();
    let (j, mut rec) = Journal::open(dir.path(), false, 64 << 10).unwrap();
    assert_eq!(std::fs::metadata(&seg).unwrap().len() as usize, len);
    let n = rec.take(1).len();
    // 4 KiB covers at most 4096/132 + 2 records.
    assert!((2000 - 33..2000).contains(&n), "kept {n} of 2000");
    assert_eq!(j.damaged_regions(), 1);
}

#[test]
fn rotation_and_segment_release() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path(), true, 4096).unwrap();
    for i in 0..100 {
        j.append(1, i, 0, &[0u8; 200], None).unwrap();
    }
    j.append(2, 0, 0, b"x", None).unwrap();
    j.flush();
    assert!(j.segment_count() > 3);
    j.release_ledger(1);
    assert!(
        j.segment_count() <= 2,
        "segments left: {}",
        j.segment_count()
    );
}

#[test]
fn each_segment_records_the_ledger_that_fills_it() {
    // One ledger appending across many segments: every segment must still list it, or releasing
    // any other ledger would take its segments for empty and remove them.
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path(), true, 4096).unwrap();
    let locs: Vec<Loc> = (0..100)
        .map(|i| j.append(1, i, 0, &[i as u8; 200], None).unwrap())
        .collect();
    j.flush();
    let before = j.segment_count();
    assert!(before > 3);
    j.release_ledger(2);
    assert_eq!(
        j.segment_count(),
        before,
        "a segment of ledger 1 was removed"
    );
    let recs = j.read(1, 0, &locs).unwrap();
    assert_eq!(recs.len(), 100);
    assert_eq!(recs[99].payload, Bytes::from(vec![99u8; 200]));
}

/// A journal in `dir` with `entries` entries of `ledger` in segment 0, closed (so indexed):
/// the entries' locations and the index's path.
fn indexed_segment(dir: &Path, ledger: i64, entries: i64) -> (Vec<Loc>, PathBuf) {
    let (j, _) = Journal::open(dir, true, 1 << 20).unwrap();
    let locs = (0..entries)
        .map(|i| j.append(ledger, i, 0, &[i as u8; 40], None).unwrap())
        .collect();
    j.close();
    (locs, index::index_path(dir, 0))
}

#[test]
fn a_damaged_index_falls_back_to_scanning() {
    let dir = tempfile::tempdir().unwrap();
    let (locs, idx) = indexed_segment(dir.path(), 3, 50);
    // A damaged ledger block: the header is fine, so the index is used, but that ledger's
    // entries are found by scanning the segment.
    let mut raw = std::fs::read(&idx).unwrap();
    let last = raw.len() - 1;
    raw[last] ^= 0xFF;
    std::fs::write(&idx, &raw).unwrap();
    let (j, mut rec) = Journal::open(dir.path(), true, 1 << 20).unwrap();
    assert_eq!(j.indexed_at_open(), 1);
    let found = rec.take(3);
    assert_eq!(found.len(), 50);
    assert_eq!(found[49].1, locs[49]);
    j.close();
    // A damaged header: the index is ignored and the segment scanned.
    let mut raw = std::fs::read(&idx).unwrap();
    raw[20] ^= 0xFF;
    std::fs::write(&idx, &raw).unwrap();
    let (j, mut rec) = Journal::open(dir.path(), true, 1 << 20).unwrap();
    assert_eq!(j.indexed_at_open(), 0);
    assert_eq!(rec.take(3).len(), 50);
    j.close();
    // A segment that changed after it was indexed (longer now) is scanned, not trusted.
    let seg = segment_path(dir.path(), 0);
    let mut data = std::fs::read(&seg).unwrap();
    data.extend_from_slice(&[0u8; 10]);
    std::fs::write(&seg, &data).unwrap();
    let (j, mut rec) = Journal::open(dir.path(), false, 1 << 20).unwrap();
    assert_eq!(j.indexed_at_open(), 0);
    assert_eq!(rec.take(3).len(), 50);
}

#[test]
fn many_segments_checkpointed_while_writing_reopen_without_scanning() {
    // The shape of the recovery benchmark, small: non-durable appends of many interleaved
    // ledgers over many segments, checkpoints running while later segments are written, then
    // a clean close. Every non-empty segment must be opened from its index (none scanned).
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path(), false, 16 << 10).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let checkpointer = {
        let (j, stop) = (Arc::clone(&j), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut written = 0;
            while !stop.load(Ordering::SeqCst) {
                written += j.checkpoint();
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            written
        })
    };
    for e in 0..40i64 {
        for ledger in 0..50i64 {
            j.append(ledger, e, 0, &[ledger as u8; 300], None).unwrap();
        }
        if e % 4 == 0 {
            // Let the checkpointer index what is sealed so far while later segments fill.
            j.flush();
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
    }
    j.flush();
    stop.store(true, Ordering::SeqCst);
    let during = checkpointer.join().unwrap();
    let segments = j.segment_count();
    assert!(segments > 20, "segments: {segments}");
    assert!(during > 0, "no checkpoint ran while writing");
    j.close();
    for round in 0..2 {
        let (j, mut rec) = Journal::open(dir.path(), false, 16 << 10).unwrap();
        assert_eq!(j.scanned_at_open(), &[], "round {round}: segments scanned");
        assert_eq!(j.indexed_at_open(), segments, "round {round}");
        for ledger in 0..50i64 {
            let found = rec.take(ledger);
            assert_eq!(found.len(), 40, "ledger {ledger}");
            let entries: Vec<i64> = found.iter().map(|(e, _)| *e).collect();
            assert_eq!(entries, (0..40).collect::<Vec<_>>());
        }
        j.close();
    }
    // A segment whose content changed (same length, new modification stamp) is scanned, and
    // the open report says why.
    let seg = segment_path(dir.path(), 3);
    let data = std::fs::read(&seg).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&seg, &data).unwrap();
    let (j, _) = Journal::open(dir.path(), false, 16 << 10).unwrap();
    assert_eq!(
        j.scanned_at_open(),
        &[(3, "segment modification stamp changed")]
    );
    j.close();
    // It was indexed again after the scan: the next open scans nothing.
    let (j, _) = Journal::open(dir.path(), false, 16 << 10).unwrap();
    assert_eq!(j.scanned_at_open(), &[]);
}

/// A durable append whose completion reports on a channel.
fn append_signalled(j: &Journal, entry: i64, payload: &[u8]) -> std::sync::mpsc::Receiver<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    let cb = Completion::once(move |r| {
        r.unwrap();
        let _ = tx.send(());
    });
    j.append(1, entry, 0, payload, Some(cb)).unwrap();
    rx
}

#[test]
fn group_wait_gathers_later_appends_into_one_round() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path(), true, 1 << 20).unwrap();
    j.set_group_commit(std::time::Duration::from_millis(1500), 512 << 10);
    let rounds = j.rounds();
    let first = append_signalled(&j, 0, b"first");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        first.try_recv().is_err(),
        "written before the group wait ended"
    );
    let second = append_signalled(&j, 1, b"second");
    first.recv().unwrap();
    second.recv().unwrap();
    assert_eq!(
        j.rounds() - rounds,
        1,
        "both appends share one write and sync"
    );

    // Without a wait, an append 300 ms after another is its own round.
    j.set_group_commit(std::time::Duration::ZERO, 512 << 10);
    let rounds = j.rounds();
    let a = append_signalled(&j, 2, b"a");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let b = append_signalled(&j, 3, b"b");
    a.recv().unwrap();
    b.recv().unwrap();
    assert_eq!(j.rounds() - rounds, 2);
    j.close();
}

#[test]
fn buffered_bytes_threshold_ends_the_group_wait() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path(), true, 1 << 20).unwrap();
    // A wait far longer than the test may take: only the threshold can end it.
    j.set_group_commit(std::time::Duration::from_secs(600), 4096);
    let small = append_signalled(&j, 0, b"small");
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        small.try_recv().is_err(),
        "written before the wait or threshold"
    );
    let big = append_signalled(&j, 1, &[7u8; 8192]);
    small
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the threshold ended the wait");
    big.recv_timeout(std::time::Duration::from_secs(60))
        .unwrap();
    // Closing ends a wait too.
    let last = append_signalled(&j, 2, b"last");
    j.close();
    last.recv_timeout(std::time::Duration::from_secs(60))
        .expect("close wrote the waiting round");
}

/// A durable journal in `dir` holding `n` entries of ledger `ledger` with `payload(i)`.
fn durable_with(
    dir: &Path,
    ledger: i64,
    n: i64,
    payload: impl Fn(i64) -> Vec<u8>,
) -> (Arc<Journal>, Vec<Loc>) {
    let (j, _) = Journal::open(dir, true, 64 << 20).unwrap();
    let locs = (0..n)
        .map(|i| j.append(ledger, i, i as u64, &payload(i), None).unwrap())
        .collect();
    j.flush();
    (j, locs)
}

/// Whether the file system of `dir` takes direct writes (and so direct reads).
fn takes_direct(dir: &Path) -> bool {
    crate::vfs::RealFs
        .open_direct(&dir.join("probe"), true)
        .unwrap()
        .write_direct(&crate::journal::direct::zero_blocks()[..4096], 0)
        .unwrap()
}

#[test]
fn large_spans_are_read_past_the_page_cache_while_rounds_keep_landing() {
    let dir = tempfile::tempdir().unwrap();
    let payload = |i: i64| vec![(i % 251) as u8; 1 + (i as usize * 7919) % 9000];
    let (j, locs) = durable_with(dir.path(), 3, 300, payload);
    // Another writer keeps appending meanwhile: each of its rounds rewrites the block holding
    // the write frontier, which the reads below also read (past their own last byte).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (j, stop) = (Arc::clone(&j), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut e = 0;
            while !stop.load(Ordering::Relaxed) {
                let done = append_signalled(&j, e, &[7; 333]);
                done.recv().unwrap();
                e += 1;
            }
        })
    };
    for round in 0..20 {
        let from = (round * 13) % 40;
        let recs = j.read(3, from as i64, &locs[from..]).unwrap();
        for (k, r) in recs.iter().enumerate() {
            let i = (from + k) as i64;
            assert_eq!(r.payload, payload(i), "entry {i}, round {round}");
            assert_eq!(r.timestamp, i as u64);
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    if takes_direct(dir.path()) {
        assert!(
            j.read_buffers.direct_reads() >= 20,
            "the spans were read past the page cache"
        );
    }
    j.close();
}

#[test]
fn recovered_segments_are_read_past_the_page_cache_too() {
    let dir = tempfile::tempdir().unwrap();
    let payload = |i: i64| vec![(i % 251) as u8; 4000 + (i as usize * 31) % 3000];
    let (j, locs) = durable_with(dir.path(), 9, 100, payload);
    j.close();
    let (j, mut rec) = Journal::open(dir.path(), true, 64 << 20).unwrap();
    assert_eq!(rec.take(9).len(), 100);
    let recs = j.read(9, 0, &locs).unwrap();
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r.payload, payload(i as i64), "entry {i}");
    }
    if takes_direct(dir.path()) {
        assert_eq!(
            j.read_buffers.direct_reads(),
            1,
            "the recovered segment's span was read past the page cache"
        );
    }
    j.close();
}

#[test]
fn an_index_of_another_version_is_scanned_then_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let (locs, idx) = indexed_segment(dir.path(), 4, 20);
    // The version field follows the magic number. Version 1 stored 20 bytes per record.
    let mut raw = std::fs::read(&idx).unwrap();
    assert_eq!(raw[4..8], 2u32.to_le_bytes());
    raw[4..8].copy_from_slice(&1u32.to_le_bytes());
    // With its header checksum made right again, only the version tells the layouts apart.
    let crc_at = index::FIXED + index::ROW;
    let crc = crc32c::crc32c(&raw[..crc_at]);
    raw[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&idx, &raw).unwrap();
    let (j, mut rec) = Journal::open(dir.path(), true, 1 << 20).unwrap();
    assert_eq!(
        j.indexed_at_open(),
        0,
        "an older index is not read as the new layout"
    );
    assert_eq!(
        rec.take(4).iter().map(|(_, l)| *l).collect::<Vec<_>>(),
        locs
    );
    j.close();
    assert_eq!(std::fs::read(&idx).unwrap()[4..8], 2u32.to_le_bytes());
    let (j, mut rec) = Journal::open(dir.path(), true, 1 << 20).unwrap();
    assert_eq!(j.indexed_at_open(), 1);
    assert_eq!(
        rec.take(4).iter().map(|(_, l)| *l).collect::<Vec<_>>(),
        locs
    );
}
