//! Contained corruption and the read-only open, on a real directory.
//!
//! * 20 000 entries on one topic then 5 000 on another with 1 MiB journal segments; 4 KiB
//!   overwritten in the middle of the first segment: recovery keeps every record after the
//!   damage, reads of the damaged entries fail naming them, `autoSkipNonRecoverableData` lets a
//!   cursor deliver all the rest, and the other topic is untouched.
//! * A topic whose metadata record is corrupt fails to open with `CorruptMetadata` while the
//!   directory opens and the other topic serves; no journal segment is removed meanwhile.
//! * `Storage::open_read_only` changes no byte of the directory, torn tail included.

use std::collections::BTreeMap;
use std::path::Path;

use bytes::Bytes;
use pulsar_rs_ledger::{LedgerConfig, LedgerError, Position, Storage, StorageConfig};

fn storage_config() -> StorageConfig {
    StorageConfig {
        journal_max_segment_bytes: 1 << 20,
        journal_sync_data: false,
        ..StorageConfig::default()
    }
}

fn config(skip: bool) -> LedgerConfig {
    LedgerConfig {
        auto_skip_non_recoverable_data: skip,
        ..LedgerConfig::default()
    }
}

fn payload(t: usize, i: usize) -> Bytes {
    let mut v = format!("t{t}-m{i}-").into_bytes();
    v.resize(100, b'x');
    Bytes::from(v)
}

/// Writes the two topics with a cursor each, closes, damages the first segment.
fn damaged_dir(dir: &Path) {
    let s = Storage::open(dir, storage_config()).unwrap();
    for (t, n) in [(0usize, 20_000usize), (1, 5_000)] {
        let ml = s.open_ledger(&format!("topic-{t}"), config(false)).unwrap();
        ml.open_cursor_at("sub", true).unwrap();
        for i in 0..n {
            ml.add_entry_blocking(payload(t, i)).unwrap();
        }
    }
    s.close().unwrap();
    let seg = dir.join("journal/0000000000.log");
    let mut raw = std::fs::read(&seg).unwrap();
    let mid = raw.len() / 2;
    raw[mid..mid + 4096].fill(0x5A);
    std::fs::write(&seg, &raw).unwrap();
}

/// Reads everything a cursor delivers (acknowledging it), stopping at the first error.
fn drain(c: &pulsar_rs_ledger::Cursor) -> (Vec<Bytes>, Option<LedgerError>) {
    let mut out = Vec::new();
    loop {
        match c.read_entries(500) {
            Ok(b) if b.is_empty() => return (out, None),
            Ok(b) => {
                let last = b.last().unwrap().position;
                out.extend(b.into_iter().map(|e| e.data));
                c.mark_delete(last).unwrap();
            }
            Err(e) => return (out, Some(e)),
        }
    }
}

#[test]
fn damage_in_an_old_segment_loses_only_the_damaged_records() {
    let dir = tempfile::tempdir().unwrap();
    damaged_dir(dir.path());
    let s = Storage::open(dir.path(), storage_config()).unwrap();
    assert_eq!(s.damaged_journal_regions(), 1);
    let ml = s.open_ledger("topic-0", config(true)).unwrap();
    let bad = ml.corrupt_entries().to_vec();
    assert!(
        !bad.is_empty() && bad.len() <= 4096 / 132 + 2,
        "damaged entries: {bad:?}"
    );
    assert_eq!(s.corrupt_entries(), bad.len() as u64);
    let err = ml.read_entries(bad[0], 1, u64::MAX, bad[0]).unwrap_err();
    assert!(
        matches!(err, LedgerError::CorruptEntry { ledger_id, entry_id, .. }
            if ledger_id == bad[0].ledger_id && entry_id == bad[0].entry_id),
        "{err}"
    );
    let c = ml.open_cursor("sub").unwrap();
    let (got, err) = drain(&c);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(got.len(), 20_000 - bad.len(), "all but the damaged records");
    let lost: Vec<usize> = (0..20_000)
        .filter(|i| !got.contains(&payload(0, *i)))
        .collect();
    assert_eq!(lost.len(), bad.len());
    let other = s.open_ledger("topic-1", config(false)).unwrap();
    let (got1, err1) = drain(&other.open_cursor("sub").unwrap());
    assert!(err1.is_none());
    assert_eq!(got1.len(), 5_000);
    s.close().unwrap();
}

#[test]
fn without_auto_skip_the_subscription_stops_at_the_damaged_entry() {
    let dir = tempfile::tempdir().unwrap();
    damaged_dir(dir.path());
    let s = Storage::open(dir.path(), storage_config()).unwrap();
    let ml = s.open_ledger("topic-0", config(false)).unwrap();
    let first_bad = ml.corrupt_entries()[0];
    let c = ml.open_cursor("sub").unwrap();
    let (got, err) = drain(&c);
    assert!(
        matches!(err, Some(LedgerError::CorruptEntry { .. })),
        "{err:?}"
    );
    assert_eq!(got.len() as i64, first_bad.entry_id, "everything before it");
    assert_eq!(c.read_position(), first_bad);
    s.close().unwrap();
}

#[test]
fn corrupt_metadata_quarantines_one_ledger_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    for t in 0..2 {
        let ml = s
            .open_ledger(&format!("q-{t}"), LedgerConfig::default())
            .unwrap();
        ml.open_cursor_at("sub", true).unwrap();
        for i in 0..200 {
            ml.add_entry_blocking(payload(t, i)).unwrap();
        }
    }
    s.close().unwrap();
    let meta = dir.path().join("meta/managed-ledgers/q-0");
    let mut raw = std::fs::read(&meta).unwrap();
    raw[3] ^= 0xFF;
    std::fs::write(&meta, raw).unwrap();
    let segments = std::fs::read_dir(dir.path().join("journal"))
        .unwrap()
        .count();
    let s = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let err = s.open_ledger("q-0", LedgerConfig::default()).err().unwrap();
    assert!(matches!(err, LedgerError::CorruptMetadata { .. }), "{err}");
    let ok = s.open_ledger("q-1", LedgerConfig::default()).unwrap();
    let (got, _) = drain(&ok.open_cursor("sub").unwrap());
    assert_eq!(got.len(), 200);
    s.close().unwrap();
    assert!(
        std::fs::read_dir(dir.path().join("journal"))
            .unwrap()
            .count()
            >= segments,
        "no segment may be removed while a ledger list is unreadable"
    );
}

fn hash_tree(dir: &Path) -> BTreeMap<String, (u64, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
                out.insert(p.display().to_string(), (0, 0));
            } else {
                let data = std::fs::read(&p).unwrap();
                out.insert(
                    p.display().to_string(),
                    (data.len() as u64, crc32c::crc32c(&data)),
                );
            }
        }
    }
    out
}

#[test]
fn read_only_open_changes_nothing_even_with_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let s = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    let ml = s.open_ledger("ro", LedgerConfig::default()).unwrap();
    let c = ml.open_cursor_at("sub", true).unwrap();
    for i in 0..300 {
        ml.add_entry_blocking(payload(0, i)).unwrap();
    }
    c.mark_delete(Position::new(ml.last_confirmed().ledger_id, 99))
        .unwrap();
    drop(c);
    drop(ml);
    s.close().unwrap();
    // A torn tail, as a copy of a live directory taken mid-write would have.
    let last = std::fs::read_dir(dir.path().join("journal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::metadata(p).unwrap().len() > 0)
        .max()
        .unwrap();
    let mut raw = std::fs::read(&last).unwrap();
    raw.extend_from_slice(&[9u8; 21]);
    std::fs::write(&last, raw).unwrap();
    let before = hash_tree(dir.path());
    let s = Storage::open_read_only(dir.path(), StorageConfig::default()).unwrap();
    let ml = s.open_ledger("ro", LedgerConfig::default()).unwrap();
    let c = ml.open_cursor("sub").unwrap();
    assert_eq!(c.read_entries(1000).unwrap().len(), 200);
    assert_eq!(ml.stats().number_of_entries, 300);
    assert!(matches!(
        ml.add_entry_blocking(Bytes::from_static(b"no")),
        Err(LedgerError::ReadOnly { .. })
    ));
    assert!(matches!(
        s.open_ledger("new", LedgerConfig::default()).err(),
        Some(LedgerError::ReadOnly { .. })
    ));
    s.housekeeping().unwrap();
    drop(c);
    drop(ml);
    s.close().unwrap();
    assert_eq!(
        before,
        hash_tree(dir.path()),
        "the read-only open changed files"
    );
    // Opening it read-write afterwards truncates the torn tail, as recovery should.
    let s = Storage::open(dir.path(), StorageConfig::default()).unwrap();
    s.close().unwrap();
    assert_ne!(before, hash_tree(dir.path()));
}

/// A read-only open reads segments through a memory mapping: entries of interleaved topics come
/// back intact, and a byte changed on disk after the open is still caught by the record checksum
/// (the mapping shares the page cache), failing that one entry only.
#[test]
fn read_only_mapped_reads_verify_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let s = Storage::open(dir.path(), storage_config()).unwrap();
    let ledgers: Vec<_> = (0..2)
        .map(|t| s.open_ledger(&format!("topic-{t}"), config(false)).unwrap())
        .collect();
    for i in 0..15_000 {
        for (t, ml) in ledgers.iter().enumerate() {
            ml.add_entry_blocking(payload(t, i)).unwrap();
        }
    }
    drop(ledgers);
    s.close().unwrap();

    let s = Storage::open_read_only(dir.path(), storage_config()).unwrap();
    let segments = std::fs::read_dir(dir.path().join("journal"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count();
    assert!(segments > 2, "the data should span several segments");
    assert_eq!(s.journal_segments_mapped(), segments);
    let ml = s.open_ledger("topic-0", config(false)).unwrap();
    let first = ml.first_position().next();
    let all = ml
        .read_entries(first, 20_000, u64::MAX, ml.last_confirmed())
        .unwrap();
    assert_eq!(all.len(), 15_000);
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e.data, payload(0, i));
    }
    let bad = all[7_777].position;
    drop(all);

    // Damage entry 7 777 of topic-0 on disk, after the open.
    let needle = b"t0-m7777-x";
    let (seg, off) = std::fs::read_dir(dir.path().join("journal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find_map(|p| {
            let raw = std::fs::read(&p).ok()?;
            let at = raw.windows(needle.len()).position(|w| w == needle)?;
            Some((p, at))
        })
        .unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&seg).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, b"T", off as u64).unwrap();
    drop(f);

    let err = ml
        .read_entries(bad, 1, u64::MAX, ml.last_confirmed())
        .unwrap_err();
    assert!(matches!(err, LedgerError::CorruptEntry { .. }), "{err:?}");
    let before = ml
        .read_entries(first, 7_777, u64::MAX, ml.last_confirmed())
        .unwrap();
    assert_eq!(before.len(), 7_777);
    let after = ml
        .read_entries(
            ml.next_valid_position(bad),
            20_000,
            u64::MAX,
            ml.last_confirmed(),
        )
        .unwrap();
    assert_eq!(after.len(), 15_000 - 7_778);
    assert_eq!(after[0].data, payload(0, 7_778));
}
