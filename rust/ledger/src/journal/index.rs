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
//! Layout (little endian):
//!
//! ```text
//! magic u32 | version u32 | segment u32 | seg_len u64 | stamp u128 | n_ledgers u32 | records u64
//! n_ledgers × (ledger i64 | first record u64 | count u32 | block crc u32)
//! header crc u32 (covers everything above)
//! records × (entry i64 | offset u64 | len u32), grouped by ledger, in segment order
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Buf, BufMut};

use super::record::Loc;
use crate::vfs::{VFile, Vfs};
use crate::{LedgerError, Result};

const MAGIC: u32 = 0x5849_4A50; // "PJIX"
const VERSION: u32 = 1;
const FIXED: usize = 4 + 4 + 4 + 8 + 16 + 4 + 8;
const ROW: usize = 8 + 8 + 4 + 4;
const REC: usize = 8 + 8 + 4;

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
    /// CRC32C of the block's bytes.
    crc: u32,
}

impl Block {
    /// Reads the block's `(entry, loc)` pairs; `None` if it cannot be read or fails its checksum.
    pub fn read(&self) -> Option<Vec<(i64, Loc)>> {
        let mut raw = vec![0u8; self.count as usize * REC];
        self.file.read_exact_at(&mut raw, self.pos).ok()?;
        if crc32c::crc32c(&raw) != self.crc {
            return None;
        }
        let mut b = &raw[..];
        let mut out = Vec::with_capacity(self.count as usize);
        for _ in 0..self.count {
            let entry = b.get_i64_le();
            let offset = b.get_u64_le();
            let len = b.get_u32_le();
            out.push((
                entry,
                Loc {
                    segment: self.segment,
                    offset,
                    len,
                },
            ));
        }
        Some(out)
    }
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
    let records = h.get_u64_le();
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
    if file_len != data_start + records * REC as u64 {
        return Err(Rejected::Damaged);
    }
    let mut blocks = BTreeMap::new();
    let mut r = rows;
    for _ in 0..n {
        let ledger = r.get_i64_le();
        let first = r.get_u64_le();
        let count = r.get_u32_le();
        let crc = r.get_u32_le();
        if first + u64::from(count) > records {
            return Err(Rejected::Damaged);
        }
        blocks.insert(
            ledger,
            Block {
                segment: id,
                file: Arc::clone(&file),
                pos: data_start + first * REC as u64,
                count,
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
    let mut by_ledger: BTreeMap<i64, Vec<&IndexRecord>> = BTreeMap::new();
    for r in records {
        by_ledger.entry(r.ledger).or_default().push(r);
    }
    let mut head = Vec::with_capacity(FIXED + by_ledger.len() * ROW + 4);
    head.put_u32_le(MAGIC);
    head.put_u32_le(VERSION);
    head.put_u32_le(id);
    head.put_u64_le(seg_len);
    head.put_u128_le(seg_stamp);
    head.put_u32_le(u32::try_from(by_ledger.len()).unwrap_or(u32::MAX));
    head.put_u64_le(records.len() as u64);
    let mut body = Vec::with_capacity(records.len() * REC);
    let mut first = 0u64;
    for (ledger, recs) in &by_ledger {
        let start = body.len();
        for r in recs {
            body.put_i64_le(r.entry);
            body.put_u64_le(r.loc.offset);
            body.put_u32_le(r.loc.len);
        }
        head.put_i64_le(*ledger);
        head.put_u64_le(first);
        head.put_u32_le(u32::try_from(recs.len()).unwrap_or(u32::MAX));
        head.put_u32_le(crc32c::crc32c(&body[start..]));
        first += recs.len() as u64;
    }
    let crc = crc32c::crc32c(&head);
    head.put_u32_le(crc);
    head.extend_from_slice(&body);
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
