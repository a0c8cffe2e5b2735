//! Tests of journal preallocation: zeros ahead while idle and under load, cut at seal and close,
//! and recovery that tells a preallocated tail from damage.
use super::*;

fn seg_len(dir: &Path, id: u32) -> u64 {
    std::fs::metadata(segment_path(dir, id)).unwrap().len()
}

/// Waits (up to 10 s) until segment `id` is at least `len` bytes long.
fn wait_for_len(dir: &Path, id: u32, len: u64) -> u64 {
    let start = pulsar_rs_clock::monotonic();
    loop {
        let l = seg_len(dir, id);
        if l >= len || start.elapsed() > std::time::Duration::from_secs(10) {
            return l;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Waits (up to 10 s) until segment `id` is at least `len` bytes long and its length has not
/// changed for 100 ms (the flusher's steps of zeros are done); returns that length.
fn settled_len(dir: &Path, id: u32, len: u64) -> u64 {
    let start = pulsar_rs_clock::monotonic();
    let mut last = wait_for_len(dir, id, len);
    loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let l = seg_len(dir, id);
        if l == last || start.elapsed() > std::time::Duration::from_secs(10) {
            return l;
        }
        last = l;
    }
}

fn append_n(j: &Journal, ledger: i64, from: i64, n: i64) -> Vec<Loc> {
    (from..from + n)
        .map(|i| j.append(ledger, i, 0, &[i as u8; 100], None).unwrap())
        .collect()
}

#[test]
fn zeros_are_written_ahead_when_idle_and_cut_at_seal_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path(), true, 1 << 20).unwrap();
    j.set_prealloc(256 << 10);
    let first = append_n(&j, 1, 0, 10);
    j.flush();
    let end = first.last().unwrap().end();
    // The round's own step under load (64 KiB), then idle steps of 256 KiB until at least half
    // the setting is zeros; direct writes widen each step to whole blocks.
    let len = settled_len(dir.path(), 0, end + (128 << 10));
    let widened = 2 * crate::vfs::DIRECT_BLOCK;
    assert!(
        (end + (128 << 10)..=end + (64 << 10) + (256 << 10) + widened).contains(&len),
        "zeros ahead: {}",
        len - end
    );
    let raw = std::fs::read(segment_path(dir.path(), 0)).unwrap();
    assert!(raw[end as usize..].iter().all(|b| *b == 0));
    // Small rounds into the zeros leave the file's length alone: no step follows each round
    // until less than half the setting is left.
    for i in 10..60 {
        j.append(1, i, 0, &[1u8; 100], None).unwrap();
        j.flush();
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(
        seg_len(dir.path(), 0),
        len,
        "rounds overwrite the zeros: the file does not grow"
    );
    // Up to ~700 KiB, wait for zeros past it, then a record too large for the rest of the
    // 1 MiB segment: the sealed segment is cut back to its records, zeros gone.
    let mid = append_n(&j, 1, 60, 5250);
    j.flush();
    let mid_end = mid.last().unwrap().end();
    assert!(mid_end + (256 << 10) < 1 << 20);
    assert!(wait_for_len(dir.path(), 0, mid_end + (128 << 10)) >= mid_end + (128 << 10));
    let big = j.append(1, 5310, 0, &[9u8; 400 << 10], None).unwrap();
    assert_eq!(big.segment, 1, "rotated");
    let more = append_n(&j, 1, 5311, 100);
    j.flush();
    assert_eq!(
        seg_len(dir.path(), 0),
        mid_end,
        "sealed segment cut to its records"
    );
    let active = more.last().unwrap();
    wait_for_len(dir.path(), active.segment, active.end() + 1);
    j.close();
    assert_eq!(
        seg_len(dir.path(), active.segment),
        active.end(),
        "close cuts the active one"
    );
    let (j, mut rec) = Journal::open(dir.path(), true, 1 << 20).unwrap();
    assert_eq!(j.damaged_regions(), 0);
    assert!(
        j.scanned_at_open().is_empty(),
        "every segment indexed: {:?}",
        j.scanned_at_open()
    );
    assert_eq!(rec.take(1).len(), 5411);
}

/// Under continuous load the flusher is never idle, yet rounds still overwrite zeros: the
/// segment grows at only a few of the syncs, not at each round. Every sync is slowed to 5 ms
/// through the file-system seam while a record arrives every millisecond, so each round finds
/// the next one already buffered; the hook notes the segment's length at each sync.
#[test]
fn under_continuous_load_rounds_overwrite_zeros() {
    use crate::vfs::SyncHookFs;
    use std::sync::Mutex as StdMutex;
    let lengths: Arc<StdMutex<Vec<u64>>> = Arc::default();
    let seen = Arc::clone(&lengths);
    let fs = SyncHookFs::new(move |path: &Path| {
        if path.extension().is_some_and(|e| e == "log") {
            let len = std::fs::metadata(path).map_or(0, |m| m.len());
            seen.lock().unwrap().push(len);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    });
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open_with(Arc::new(fs), dir.path(), true, 64 << 20, false).unwrap();
    j.set_prealloc(16 << 20);
    j.set_adaptive_group_wait(std::time::Duration::ZERO);
    // 300 records of 8 KiB (~2.4 MiB), one per millisecond: ~50 rounds of ~6 records.
    for i in 0..300 {
        j.append(1, i, 0, &[7u8; 8 << 10], None).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    j.flush();
    let rounds = j.rounds();
    let lengths = lengths.lock().unwrap().clone();
    j.close();
    let grew = lengths.windows(2).filter(|w| w[1] > w[0]).count() + 1;
    assert!(rounds >= 30, "the test needs many rounds: {rounds}");
    // A step of 8 rounds' bytes once half of the last one is used: at most one sync in 3 grows
    // the file, never each one.
    assert!(
        grew * 3 <= lengths.len(),
        "the segment grew at {grew} of {} syncs ({rounds} rounds): {lengths:?}",
        lengths.len()
    );
}

/// Large rounds are written without zeros ahead: once rounds average `LARGE_ROUND` or more,
/// neither a round's own step nor idle steps follow, so after 32 rounds of 512 KiB and an idle
/// moment the segment ends at its records (zeros written while the mean was still small lie
/// behind them by then).
#[test]
fn large_rounds_leave_no_zeros_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path(), true, 64 << 20).unwrap();
    j.set_prealloc(4 << 20);
    j.set_adaptive_group_wait(std::time::Duration::ZERO);
    let mut end = 0;
    for i in 0..32 {
        end = j.append(1, i, 0, &[5u8; 512 << 10], None).unwrap().end();
        j.flush();
    }
    // Idle long enough for idle steps (`QUIET`) to have run many times over.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let len = seg_len(dir.path(), 0);
    assert!(
        len < end + crate::vfs::DIRECT_BLOCK,
        "{} bytes of zeros after 32 rounds of 512 KiB",
        len - end
    );
    // Small rounds after them bring the zeros back.
    for i in 32..64 {
        end = j.append(1, i, 0, &[6u8; 100], None).unwrap().end();
        j.flush();
    }
    let len = settled_len(dir.path(), 0, end + (64 << 10));
    assert!(len >= end + (64 << 10), "zeros ahead again: {}", len - end);
    j.close();
}

#[test]
fn no_preallocation_without_journal_sync() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path(), false, 1 << 20).unwrap();
    j.set_prealloc(256 << 10);
    let locs = append_n(&j, 1, 0, 10);
    j.flush();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(seg_len(dir.path(), 0), locs.last().unwrap().end());
}

/// A crash image: the segment as it is on disk while the broker runs, zeros ahead included.
/// Returns the image, the end of the records and the image's length.
fn crashed_image(n: i64) -> (tempfile::TempDir, u64, u64) {
    let live = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(live.path(), true, 1 << 20).unwrap();
    j.set_prealloc(256 << 10);
    let locs = append_n(&j, 1, 0, n);
    j.flush();
    let end = locs.last().unwrap().end();
    let len = settled_len(live.path(), 0, end + (128 << 10));
    assert!(len >= end + (128 << 10));
    let image = tempfile::tempdir().unwrap();
    std::fs::copy(segment_path(live.path(), 0), segment_path(image.path(), 0)).unwrap();
    j.close();
    (image, end, len)
}

#[test]
fn after_a_crash_the_zero_tail_of_the_last_segment_is_cut_not_reported() {
    let (image, end, _) = crashed_image(100);
    let (j, mut rec) = Journal::open(image.path(), true, 1 << 20).unwrap();
    assert_eq!(j.damaged_regions(), 0);
    assert_eq!(rec.take(1).len(), 100);
    assert_eq!(seg_len(image.path(), 0), end, "zeros cut");
    j.close();
}

#[test]
fn a_zero_tail_in_an_older_segment_is_not_damage() {
    // A crash between a rotation and the round that cuts the sealed segment's zeros.
    let (image, end, _) = crashed_image(100);
    std::fs::write(segment_path(image.path(), 1), b"").unwrap();
    let (j, mut rec) = Journal::open(image.path(), true, 1 << 20).unwrap();
    assert_eq!(
        j.damaged_regions(),
        0,
        "zeros after the last record are preallocation"
    );
    assert_eq!(rec.take(1).len(), 100);
    assert_eq!(seg_len(image.path(), 0), end, "zeros cut");
    j.close();
    // Read-only opens change nothing and report nothing either.
    let (image, _, len) = crashed_image(50);
    std::fs::write(segment_path(image.path(), 1), b"").unwrap();
    let fs: Arc<dyn Vfs> = Arc::new(crate::vfs::RealFs);
    let (j, mut rec) = Journal::open_with(fs, image.path(), true, 1 << 20, true).unwrap();
    assert_eq!(j.damaged_regions(), 0);
    assert_eq!(rec.take(1).len(), 50);
    assert_eq!(seg_len(image.path(), 0), len);
}

#[test]
fn zeros_followed_by_anything_else_are_still_damage() {
    let (image, end, _) = crashed_image(100);
    let seg = segment_path(image.path(), 0);
    let mut raw = std::fs::read(&seg).unwrap();
    let n = raw.len();
    raw[n - 3..].copy_from_slice(&[1, 2, 3]);
    std::fs::write(&seg, &raw).unwrap();
    std::fs::write(segment_path(image.path(), 1), b"").unwrap();
    let (j, mut rec) = Journal::open(image.path(), true, 1 << 20).unwrap();
    assert_eq!(
        j.damaged_regions(),
        1,
        "not all zeros: damage in an older segment"
    );
    assert_eq!(rec.take(1).len(), 100);
    assert_eq!(seg_len(image.path(), 0), n as u64, "kept as it is");
    assert!(end < n as u64);
    j.close();
}
