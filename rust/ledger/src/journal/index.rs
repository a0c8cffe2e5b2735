//! The checkpointed journal index: one `<id>.idx` file per sealed segment, so a restart reads
//! small index headers instead of scanning every retained byte of the journal.
//!
//! When a segment is sealed (the journal moved to the next one) and everything in it is written,
//! [`super::Journal::checkpoint`] (run by the storage housekeeper and on close) writes the
//! segment's index: which entries of which ledgers it holds and where. At open, a segment with a
//! valid index is not scanned: only the index header (one row per ledger in the segment) is read,
//! and a ledger's entry locations are read from its block when that ledger is first opened
//! (see [`super::recovered`]). Restart cost is then proportional to the segments written since
//! the last checkpoint plus one small header per indexed segment.
//!
//! Crash safety: an index is written to a unique temporary file, `fdatasync`ed, renamed into
//! place and the directory synced, after the segment itself was synced; a torn or missing index
//! simply means the segment is scanned. An index is used only if its magic, version, segment id,
//! header checksum, the segment's current length and its modification stamp all match, so a
//! segment changed after it was indexed (cut back after a failed write, overwritten by a tool)
//! is scanned again. Each ledger's block carries its own CRC32C; a bad block falls back to
//! scanning that segment for that ledger. What an index cannot see is bit rot inside a segment
//! after indexing (same length, same stamp): such a record fails its checksum when read, as any
//! damaged record does.
//!
//! Layout (little endian; version 2):
//!
//! ```text
//! magic u32 | version u32 | segment u32 | seg_len u64 | stamp u128 | n_ledgers u32 | body_len u64
//! n_ledgers × (ledger i64 | block offset in body u64 | count u32 | block bytes u32 | block crc u32)
//! header crc u32 (covers everything above)
//! body: one block per ledger, each its records in segment order, a record as three varints:
//!   zigzag(entry − (previous entry + 1)) | zigzag(offset − previous record's end) | len
//!   (for a block's first record, "previous entry + 1" and "previous record's end" are 0)
//! ```
//!
//! A ledger appending alone writes consecutive entries end to end, so its records take about 4
//! bytes each (version 1 stored 20: entry, offset and length in full). The checkpoint writes
//! and syncs the index while the journal is under load, so its size is CPU and disk time taken
//! from the broker. An index of another version is not used: the segment is scanned once and
//! indexed again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Buf, BufMut};

use super::record::Loc;
use crate::vfs::{VFile, Vfs};
use crate::{LedgerError, Result};

const MAGIC: u32 = 0x5849_4A50; // "PJIX"
const VERSION: u32 = 2;
/// Bytes of the header's fixed part (before the rows).
pub(super) const FIXED: usize = 4 + 4 + 4 + 8 + 16 + 4 + 8;
/// Bytes of one ledger's row in the header.
pub(super) const ROW: usize = 8 + 8 + 4 + 4 + 4;

/// One record of a segment, as the journal appended or recovery found it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IndexRecord {
    /// Ledger id.
    pub ledger: i64,
    /// Entry id.
    pub entry: i64,
    /// Where it lives.
    pub loc: Loc,
}

/// Where one ledger's entries of one indexed segment are listed.
#[derive(Clone)]
pub(crate) struct Block {
    /// The segment the entries live in.
    pub segment: u32,
    /// The open index file.
    file: Arc<dyn VFile>,
    /// Byte offset of the block in the index file.
    pos: u64,
    /// Number of records.
    count: u32,
    /// Length of the block in bytes.
    len: u32,
    /// CRC32C of the block's bytes.
    crc: u32,
}

impl Block {
    /// Reads the block's `(entry, loc)` pairs; `None` if it cannot be read, fails its checksum
    /// or does not decode into exactly `count` records.
    pub fn read(&self) -> Option<Vec<(i64, Loc)>> {
        let mut raw = vec![0u8; self.len as usize];
        self.file.read_exact_at(&mut raw, self.pos).ok()?;
        if crc32c::crc32c(&raw) != self.crc {
            return None;
        }
        let mut b = &raw[..];
        // At most one record per byte: a damaged count cannot make this allocate much.
        let mut out = Vec::with_capacity((self.count as usize).min(raw.len()));
        let mut prev = Prev::default();
        for _ in 0..self.count {
            let entry = prev
                .next_entry()
                .wrapping_add(unzigzag(get_varint(&mut b)?));
            let offset = prev.end.wrapping_add(unzigzag(get_varint(&mut b)?) as u64);
            let len = u32::try_from(get_varint(&mut b)?).ok()?;
            let loc = Loc {
                segment: self.segment,
                offset,
                len,
            };
            prev = Prev::after(entry, &loc);
            out.push((entry, loc));
        }
        b.is_empty().then_some(out)
    }
}

/// The record before the next one in a ledger's block: what its record is encoded against.
#[derive(Default)]
struct Prev {
    /// Its entry id (`None` before the first record).
    entry: Option<i64>,
    /// Where it ends in the segment (its offset plus its length; 0 before the first record).
    end: u64,
}

impl Prev {
    fn after(entry: i64, loc: &Loc) -> Self {
        Prev {
            entry: Some(entry),
            end: loc.offset.wrapping_add(u64::from(loc.len)),
        }
    }

    /// The entry id a record would have if it followed this one directly.
    fn next_entry(&self) -> i64 {
        self.entry.map_or(0, |e| e.wrapping_add(1))
    }
}

/// Appends the record `entry` at `loc` to a block whose last record is `prev`.
fn put_record(out: &mut Vec<u8>, prev: &Prev, entry: i64, loc: &Loc) {
    put_varint(out, zigzag(entry.wrapping_sub(prev.next_entry())));
    // Two's complement: a record before the previous one's end (never written so) still
    // round-trips.
    put_varint(out, zigzag(loc.offset.wrapping_sub(prev.end) as i64));
    put_varint(out, u64::from(loc.len));
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        // Truncation intended: the low seven bits, with the continuation bit.
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint from the front of `b`; `None` if it is cut short or longer than ten bytes.
fn get_varint(b: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            *b = &b[i + 1..];
            return Some(v);
        }
    }
    None
}

/// Path of a segment's index file.
pub(crate) fn index_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("{id:010}.idx"))
}

/// The stamp recorded with an index: the segment's modification time, when the file system
/// has one.
pub(crate) fn stamp(fs: &dyn Vfs, segment: &Path) -> u128 {
    fs.modified_stamp(segment).ok().flatten().unwrap_or(0)
}

/// Why a segment's index was not used at open (the segment is then scanned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// No index file (never checkpointed: a crash, an empty or a cut-back segment).
    Missing,
    /// The index file could not be opened or read.
    Unreadable,
    /// Wrong magic, version or segment id.
    Foreign,
    /// The segment's length is not the indexed one.
    Length,
    /// The segment's modification stamp is not the indexed one.
    Stamp,
    /// The header checksum or the file's length does not match.
    Damaged,
}

impl Rejected {
    /// A short name for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejected::Missing => "missing",
            Rejected::Unreadable => "unreadable",
            Rejected::Foreign => "foreign",
            Rejected::Length => "segment length changed",
            Rejected::Stamp => "segment modification stamp changed",
            Rejected::Damaged => "damaged",
        }
    }
}

/// Opens segment `id`'s index if it is valid for a segment of `seg_len` bytes with `stamp`:
/// returns each ledger's block, or why the segment must be scanned instead.
pub(crate) fn open(
    fs: &dyn Vfs,
    dir: &Path,
    id: u32,
    seg_len: u64,
    seg_stamp: u128,
) -> std::result::Result<BTreeMap<i64, Block>, Rejected> {
    let path = index_path(dir, id);
    let file = match fs.open_read(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Rejected::Missing),
        Err(_) => return Err(Rejected::Unreadable),
    };
    let mut fixed = [0u8; FIXED];
    file.read_exact_at(&mut fixed, 0)
        .map_err(|_| Rejected::Damaged)?;
    let mut h = &fixed[..];
    let (magic, version, segment) = (h.get_u32_le(), h.get_u32_le(), h.get_u32_le());
    let (len, st) = (h.get_u64_le(), h.get_u128_le());
    let n = h.get_u32_le() as usize;
    let body_len = h.get_u64_le();
    if magic != MAGIC || version != VERSION || segment != id {
        return Err(Rejected::Foreign);
    }
    if len != seg_len {
        return Err(Rejected::Length);
    }
    if st != seg_stamp {
        return Err(Rejected::Stamp);
    }
    let rows_len = n.checked_mul(ROW).ok_or(Rejected::Damaged)?;
    let mut table = vec![0u8; rows_len + 4];
    file.read_exact_at(&mut table, FIXED as u64)
        .map_err(|_| Rejected::Damaged)?;
    let (rows, crc) = table.split_at(n * ROW);
    let want = crc32c::crc32c_append(crc32c::crc32c(&fixed), rows);
    if want != (&crc[..]).get_u32_le() {
        return Err(Rejected::Damaged);
    }
    let file_len = file.len().map_err(|_| Rejected::Unreadable)?;
    let data_start = (FIXED + n * ROW + 4) as u64;
    if data_start.checked_add(body_len) != Some(file_len) {
        return Err(Rejected::Damaged);
    }
    let mut blocks = BTreeMap::new();
    let mut r = rows;
    for _ in 0..n {
        let ledger = r.get_i64_le();
        let at = r.get_u64_le();
        let count = r.get_u32_le();
        let len = r.get_u32_le();
        let crc = r.get_u32_le();
        if at
            .checked_add(u64::from(len))
            .is_none_or(|end| end > body_len)
        {
            return Err(Rejected::Damaged);
        }
        blocks.insert(
            ledger,
            Block {
                segment: id,
                file: Arc::clone(&file),
                pos: data_start + at,
                count,
                len,
                crc,
            },
        );
    }
    Ok(blocks)
}

/// Source of unique temporary names (a retried checkpoint never reuses a half-written file).
static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Writes segment `id`'s index durably (temporary file, sync, rename, directory sync).
///
/// # Errors
/// I/O failures; the segment is then simply scanned at the next open.
pub(crate) fn write(
    fs: &dyn Vfs,
    dir: &Path,
    id: u32,
    seg_len: u64,
    seg_stamp: u128,
    records: &[IndexRecord],
) -> Result<()> {
    // Each ledger's block, encoded in one pass over the records.
    let mut blocks: BTreeMap<i64, (Vec<u8>, u32, Prev)> = BTreeMap::new();
    for r in records {
        let (bytes, count, prev) = blocks.entry(r.ledger).or_default();
        put_record(bytes, prev, r.entry, &r.loc);
        *prev = Prev::after(r.entry, &r.loc);
        *count += 1;
    }
    let body_len: usize = blocks.values().map(|(b, ..)| b.len()).sum();
    let mut head = Vec::with_capacity(FIXED + blocks.len() * ROW + 4 + body_len);
    head.put_u32_le(MAGIC);
    head.put_u32_le(VERSION);
    head.put_u32_le(id);
    head.put_u64_le(seg_len);
    head.put_u128_le(seg_stamp);
    head.put_u32_le(u32::try_from(blocks.len()).unwrap_or(u32::MAX));
    head.put_u64_le(body_len as u64);
    let mut at = 0u64;
    for (ledger, (bytes, count, _)) in &blocks {
        head.put_i64_le(*ledger);
        head.put_u64_le(at);
        head.put_u32_le(*count);
        // A block takes a few bytes per record of a segment: far below 4 GiB for any segment
        // size the broker writes. Past it, no index (the segment is scanned at open).
        let len = u32::try_from(bytes.len()).map_err(|_| {
            LedgerError::io(
                format!("indexing journal segment {id}"),
                std::io::Error::other("a ledger's index block exceeds 4 GiB"),
            )
        })?;
        head.put_u32_le(len);
        head.put_u32_le(crc32c::crc32c(bytes));
        at += bytes.len() as u64;
    }
    let crc = crc32c::crc32c(&head);
    head.put_u32_le(crc);
    for (bytes, ..) in blocks.values() {
        head.extend_from_slice(bytes);
    }
    // Relaxed: only uniqueness matters.
    let seq = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!("{id:010}.idx.{seq}.tmp~"));
    let dst = index_path(dir, id);
    let io = |what: &str, e| LedgerError::io(format!("{what} journal index {}", dst.display()), e);
    let file = fs.create(&tmp).map_err(|e| io("creating", e))?;
    file.write_all_at(&head, 0)
        .and_then(|()| file.sync_data())
        .map_err(|e| io("writing", e))?;
    drop(file);
    fs.rename(&tmp, &dst).map_err(|e| io("renaming", e))?;
    fs.sync_dir(dir)
        .map_err(|e| io("syncing the directory of", e))
}

/// Removes temporary files of interrupted index writes and indexes whose segment is gone.
/// Best effort (read-write opens only): a leftover is never used anyway.
pub(crate) fn remove_leftovers(fs: &dyn Vfs, dir: &Path, names: &[String], segments: &[u32]) {
    let mut removed = false;
    for n in names {
        let orphan = n
            .strip_suffix(".idx")
            .and_then(|id| id.parse::<u32>().ok())
            .is_some_and(|id| segments.binary_search(&id).is_err());
        if orphan || (n.ends_with(".tmp~") && n.contains(".idx.")) {
            removed |= fs.remove_file(&dir.join(n)).is_ok();
        }
    }
    if removed {
        let _ = fs.sync_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::RealFs;

    fn rec(ledger: i64, entry: i64, offset: u64, len: u32) -> IndexRecord {
        IndexRecord {
            ledger,
            entry,
            loc: Loc {
                segment: 7,
                offset,
                len,
            },
        }
    }

    /// Writes `records` as segment 7's index and reads every block back, by ledger.
    fn round_trip(records: &[IndexRecord]) -> BTreeMap<i64, Vec<(i64, Loc)>> {
        let dir = tempfile::tempdir().unwrap();
        write(&RealFs, dir.path(), 7, 1 << 40, 99, records).unwrap();
        let blocks = open(&RealFs, dir.path(), 7, 1 << 40, 99).unwrap();
        blocks
            .into_iter()
            .map(|(ledger, b)| (ledger, b.read().expect("a written block reads back")))
            .collect()
    }

    fn by_ledger(records: &[IndexRecord]) -> BTreeMap<i64, Vec<(i64, Loc)>> {
        let mut m: BTreeMap<i64, Vec<(i64, Loc)>> = BTreeMap::new();
        for r in records {
            m.entry(r.ledger).or_default().push((r.entry, r.loc));
        }
        m
    }

    #[test]
    fn records_read_back_as_written_whatever_their_shape() {
        let records = vec![
            // One ledger appending alone: consecutive entries end to end.
            rec(3, 0, 0, 150),
            rec(3, 1, 170, 150),
            rec(3, 2, 340, 151),
            // Another ledger interleaved, starting at a high entry id.
            rec(-1, 1 << 40, 511, 7),
            rec(3, 3, 538, 0),
            // Gaps in entry ids, a record before the previous one's end, extreme values.
            rec(3, 10, 100, u32::MAX),
            rec(-1, i64::MIN, u64::MAX - 5, 5),
            rec(-1, i64::MAX, 0, 1),
            rec(9, -5, 1 << 35, 1 << 20),
        ];
        assert_eq!(round_trip(&records), by_ledger(&records));
    }

    #[test]
    fn a_ledger_appending_alone_takes_a_few_bytes_per_record() {
        let mut records = Vec::new();
        let mut offset = 0;
        for entry in 0..10_000 {
            records.push(rec(5, entry, offset, 160));
            offset += 180;
        }
        let dir = tempfile::tempdir().unwrap();
        write(&RealFs, dir.path(), 7, 1 << 40, 99, &records).unwrap();
        let size = std::fs::metadata(index_path(dir.path(), 7)).unwrap().len();
        // Three varints of one, one and two bytes, plus the fixed header and one row.
        assert_eq!(size, (FIXED + ROW + 4) as u64 + 4 * 10_000);
        assert_eq!(round_trip(&records), by_ledger(&records));
    }

    #[test]
    fn a_block_that_does_not_decode_into_its_count_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write(
            &RealFs,
            dir.path(),
            7,
            10,
            0,
            &[rec(1, 0, 0, 5), rec(1, 1, 5, 5)],
        )
        .unwrap();
        let mut b = open(&RealFs, dir.path(), 7, 10, 0)
            .unwrap()
            .remove(&1)
            .unwrap();
        assert_eq!(b.read().unwrap().len(), 2);
        // The bytes are intact (checksum fine) but hold two records, not one or three.
        b.count = 1;
        assert!(b.read().is_none());
        b.count = 3;
        assert!(b.read().is_none());
    }

    #[test]
    fn varints_refuse_truncated_or_overlong_input() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut b = &out[..];
            assert_eq!(get_varint(&mut b), Some(v));
            assert!(b.is_empty());
            let mut cut = &out[..out.len() - 1];
            assert_eq!(get_varint(&mut cut), None, "{v} cut short");
        }
        let mut long = &[0x80u8; 11][..];
        assert_eq!(get_varint(&mut long), None);
        for v in [0, 1, -1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }
}
