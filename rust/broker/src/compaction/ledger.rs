//! The compacted ledger: the on-disk form of a topic's compacted view (Pulsar keeps it in a
//! BookKeeper ledger named by the `CompactedTopicLedger` property of the `__compaction` cursor).
//!
//! One file per compaction run, written to a temporary name, fsynced and renamed:
//!
//! ```text
//! header  : b"PRSCMPL1" | u32 version (1) | u32 crc32c(magic+version)
//! record* : u32 len | u32 crc32c(ledger_id+entry_id+entry) | i64 ledger_id | i64 entry_id | entry
//! trailer : b"PRSCEND1" | u64 records | i64 horizon ledger_id | i64 horizon entry_id
//!           | u32 crc32c(records+horizon)
//! ```
//!
//! All integers are little-endian. `entry` is the topic's stored entry unchanged (metadata and
//! payload), so the original message ids are kept, as Pulsar's `RawMessage` entries keep them.
//! A file without a valid trailer (a crash while writing) or with a bad CRC is refused.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use pulsar_rs_ledger::{Entry, LedgerError, Position};

use super::on_bookies::BookieLedger;
use crate::error::BrokerError;

const HEADER_MAGIC: &[u8; 8] = b"PRSCMPL1";
const TRAILER_MAGIC: &[u8; 8] = b"PRSCEND1";
const VERSION: u32 = 1;
const HEADER_LEN: u64 = 16;
const RECORD_HEAD: usize = 24;
const TRAILER_LEN: u64 = 36;

/// Where one record lives in the file.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// The message id of the entry in the topic.
    position: Position,
    /// Offset of the entry bytes.
    offset: u64,
    /// Length of the entry bytes.
    len: u32,
    /// The record's CRC (checked again on every read).
    crc: u32,
}

/// An opened compacted ledger (immutable once written): a file beside the journal, or a
/// BookKeeper ledger when the topic is on bookies ([`super::on_bookies`]).
#[derive(Debug)]
pub struct CompactedLedger {
    /// Its id (the `CompactedTopicLedger` cursor property).
    pub id: i64,
    /// The last topic position the compaction read (everything up to it is in the view).
    pub horizon: Position,
    /// Size in bytes.
    pub size: u64,
    /// Where its entries are.
    store: Store,
}

/// Where a compacted ledger's entries are.
#[derive(Debug)]
enum Store {
    File {
        /// The file's path.
        path: PathBuf,
        /// The file, open for reading (so a run deleting it does not disturb a reader).
        file: File,
        /// Records in position order.
        slots: Vec<Slot>,
    },
    Bookies(BookieLedger),
}

impl CompactedLedger {
    /// A compacted ledger on the bookies.
    pub(super) fn on_bookies(id: i64, horizon: Position, size: u64, l: BookieLedger) -> Self {
        CompactedLedger {
            id,
            horizon,
            size,
            store: Store::Bookies(l),
        }
    }

    /// Deletes it (a newer run replaced it); readers holding it keep reading a file until they
    /// drop it.
    pub(super) fn discard(&self) {
        match &self.store {
            Store::File { path, .. } => {
                if let Err(e) = std::fs::remove_file(path) {
                    tracing::warn!(path = %path.display(), error = %e, "removing old compacted ledger");
                }
            }
            Store::Bookies(l) => l.delete(),
        }
    }
}

fn corrupt(path: &Path, reason: impl Into<String>) -> BrokerError {
    BrokerError::Ledger(LedgerError::CorruptMetadata {
        key: path.display().to_string(),
        reason: reason.into(),
    })
}

fn io(context: &str, path: &Path, e: std::io::Error) -> BrokerError {
    BrokerError::Ledger(LedgerError::io(format!("{context} {}", path.display()), e))
}

fn record_crc(position: Position, entry: &[u8]) -> u32 {
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(&position.ledger_id.to_le_bytes());
    head[8..].copy_from_slice(&position.entry_id.to_le_bytes());
    crc32c::crc32c_append(crc32c::crc32c(&head), entry)
}

/// Writes a compacted ledger from `entries` (in position order) and makes it durable; returns it
/// opened. Blocking I/O: call from a blocking thread.
///
/// # Errors
/// I/O failures (the temporary file is removed).
pub fn write(
    dir: &Path,
    id: i64,
    horizon: Position,
    entries: impl IntoIterator<Item = Entry>,
) -> Result<CompactedLedger, BrokerError> {
    std::fs::create_dir_all(dir).map_err(|e| io("creating", dir, e))?;
    let path = dir.join(format!("{id}.ledger"));
    let tmp = dir.join(format!("{id}.ledger.tmp"));
    let result = (|| {
        let file = File::create(&tmp).map_err(|e| io("creating", &tmp, e))?;
        let mut w = BufWriter::new(file);
        let mut header = [0u8; 16];
        header[..8].copy_from_slice(HEADER_MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        let c = crc32c::crc32c(&header[..12]);
        header[12..].copy_from_slice(&c.to_le_bytes());
        let mut slots = Vec::new();
        let mut offset = HEADER_LEN;
        let put =
            |w: &mut BufWriter<File>, b: &[u8]| w.write_all(b).map_err(|e| io("writing", &tmp, e));
        put(&mut w, &header)?;
        for e in entries {
            let len = u32::try_from(e.data.len()).map_err(|_| {
                BrokerError::NotAllowed(format!("entry {} too large to compact", e.position))
            })?;
            let crc = record_crc(e.position, &e.data);
            let mut head = [0u8; RECORD_HEAD];
            head[..4].copy_from_slice(&len.to_le_bytes());
            head[4..8].copy_from_slice(&crc.to_le_bytes());
            head[8..16].copy_from_slice(&e.position.ledger_id.to_le_bytes());
            head[16..].copy_from_slice(&e.position.entry_id.to_le_bytes());
            put(&mut w, &head)?;
            put(&mut w, &e.data)?;
            offset += RECORD_HEAD as u64;
            slots.push(Slot {
                position: e.position,
                offset,
                len,
                crc,
            });
            offset += u64::from(len);
        }
        let mut trailer = [0u8; TRAILER_LEN as usize];
        trailer[..8].copy_from_slice(TRAILER_MAGIC);
        trailer[8..16].copy_from_slice(&(slots.len() as u64).to_le_bytes());
        trailer[16..24].copy_from_slice(&horizon.ledger_id.to_le_bytes());
        trailer[24..32].copy_from_slice(&horizon.entry_id.to_le_bytes());
        let c = crc32c::crc32c(&trailer[8..32]);
        trailer[32..].copy_from_slice(&c.to_le_bytes());
        put(&mut w, &trailer)?;
        let file = w
            .into_inner()
            .map_err(|e| io("writing", &tmp, e.into_error()))?;
        file.sync_all().map_err(|e| io("syncing", &tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io("renaming", &tmp, e))?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io("syncing", dir, e))?;
        let file = File::open(&path).map_err(|e| io("opening", &path, e))?;
        Ok(CompactedLedger {
            id,
            horizon,
            size: offset + TRAILER_LEN,
            store: Store::File {
                path: path.clone(),
                file,
                slots,
            },
        })
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Opens compacted ledger `id` in `dir`, checking every CRC. Blocking I/O.
///
/// # Errors
/// A missing, truncated or corrupt file.
pub fn open(dir: &Path, id: i64) -> Result<CompactedLedger, BrokerError> {
    let path = dir.join(format!("{id}.ledger"));
    let mut raw = Vec::new();
    let mut file = File::open(&path).map_err(|e| io("opening", &path, e))?;
    file.read_to_end(&mut raw)
        .map_err(|e| io("reading", &path, e))?;
    let size = raw.len() as u64;
    if size < HEADER_LEN + TRAILER_LEN {
        return Err(corrupt(&path, "truncated compacted ledger"));
    }
    if &raw[..8] != HEADER_MAGIC
        || u32::from_le_bytes(raw[8..12].try_into().unwrap_or_default()) != VERSION
        || u32::from_le_bytes(raw[12..16].try_into().unwrap_or_default())
            != crc32c::crc32c(&raw[..12])
    {
        return Err(corrupt(&path, "bad compacted ledger header"));
    }
    let t = &raw[raw.len() - TRAILER_LEN as usize..];
    let le64 = |b: &[u8]| i64::from_le_bytes(b.try_into().unwrap_or_default());
    if &t[..8] != TRAILER_MAGIC
        || u32::from_le_bytes(t[32..36].try_into().unwrap_or_default()) != crc32c::crc32c(&t[8..32])
    {
        return Err(corrupt(&path, "bad or missing compacted ledger trailer"));
    }
    let count = u64::from_le_bytes(t[8..16].try_into().unwrap_or_default());
    let horizon = Position::new(le64(&t[16..24]), le64(&t[24..32]));
    let end = raw.len() - TRAILER_LEN as usize;
    let mut at = HEADER_LEN as usize;
    let mut slots = Vec::new();
    while at < end {
        if end - at < RECORD_HEAD {
            return Err(corrupt(&path, format!("truncated record at offset {at}")));
        }
        let h = &raw[at..at + RECORD_HEAD];
        let len = u32::from_le_bytes(h[..4].try_into().unwrap_or_default());
        let crc = u32::from_le_bytes(h[4..8].try_into().unwrap_or_default());
        let position = Position::new(le64(&h[8..16]), le64(&h[16..24]));
        let start = at + RECORD_HEAD;
        let stop = start + len as usize;
        if stop > end || record_crc(position, &raw[start..stop]) != crc {
            return Err(corrupt(&path, format!("bad record at offset {at}")));
        }
        if slots.last().is_some_and(|s: &Slot| s.position >= position) {
            return Err(corrupt(
                &path,
                format!("records out of order at offset {at}"),
            ));
        }
        slots.push(Slot {
            position,
            offset: start as u64,
            len,
            crc,
        });
        at = stop;
    }
    if slots.len() as u64 != count {
        return Err(corrupt(&path, "record count does not match the trailer"));
    }
    Ok(CompactedLedger {
        id,
        horizon,
        size,
        store: Store::File { path, file, slots },
    })
}

impl CompactedLedger {
    /// Entries in the compacted view.
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.store {
            Store::File { slots, .. } => slots.len(),
            Store::Bookies(l) => l.positions.len(),
        }
    }

    /// Whether the compacted view is empty (every key was deleted, or no keyed message).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The position of the last entry of the view.
    fn last_position(&self) -> Option<Position> {
        match &self.store {
            Store::File { slots, .. } => slots.last().map(|s| s.position),
            Store::Bookies(l) => l.positions.last().copied(),
        }
    }

    /// Reads up to `n` entries at or after `from` (Pulsar's `findStartPoint` + read), checking
    /// each CRC. Blocking I/O.
    ///
    /// # Errors
    /// I/O failures, a CRC mismatch.
    pub fn read_from(&self, from: Position, n: usize) -> Result<Vec<Entry>, BrokerError> {
        let (path, file, slots) = match &self.store {
            Store::File { path, file, slots } => (path, file, slots),
            Store::Bookies(l) => return l.read_from(from, n),
        };
        let start = slots.partition_point(|s| s.position < from);
        let picked = &slots[start..slots.len().min(start.saturating_add(n))];
        if picked.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(picked.len());
        for s in picked {
            let mut buf = vec![0u8; s.len as usize];
            file.read_exact_at(&mut buf, s.offset)
                .map_err(|e| io("reading", path, e))?;
            if record_crc(s.position, &buf) != s.crc {
                return Err(corrupt(path, format!("bad record at offset {}", s.offset)));
            }
            out.push(Entry {
                position: s.position,
                data: Bytes::from(buf),
            });
        }
        Ok(out)
    }

    /// The last entry of the view, if any. Blocking I/O.
    ///
    /// # Errors
    /// I/O failures, a CRC mismatch.
    pub fn last_entry(&self) -> Result<Option<Entry>, BrokerError> {
        match self.last_position() {
            Some(p) => Ok(self.read_from(p, 1)?.pop()),
            None => Ok(None),
        }
    }

    /// Every entry, in order (for the next compaction run and the export). Blocking I/O.
    ///
    /// # Errors
    /// I/O failures, a CRC mismatch.
    pub fn read_all(&self) -> Result<Vec<Entry>, BrokerError> {
        self.read_from(Position::new(-1, -1), usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(l: i64, e: i64, data: &[u8]) -> Entry {
        Entry {
            position: Position::new(l, e),
            data: Bytes::copy_from_slice(data),
        }
    }

    #[test]
    fn round_trip_and_seek() {
        let dir = tempfile::tempdir().unwrap();
        let w = write(
            dir.path(),
            7,
            Position::new(3, 9),
            vec![entry(3, 1, b"a"), entry(3, 4, b"bb"), entry(3, 8, b"")],
        )
        .unwrap();
        let r = open(dir.path(), 7).unwrap();
        assert_eq!(r.horizon, Position::new(3, 9));
        assert_eq!(r.len(), 3);
        assert_eq!(r.size, w.size);
        let got = r.read_from(Position::new(3, 2), 10).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].position, Position::new(3, 4));
        assert_eq!(&got[0].data[..], b"bb");
        assert_eq!(r.read_from(Position::new(3, 0), 1).unwrap().len(), 1);
        assert!(r.read_from(Position::new(3, 9), 10).unwrap().is_empty());
        assert!(!dir.path().join("7.ledger.tmp").exists());
    }

    #[test]
    fn corruption_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            1,
            Position::new(1, 1),
            vec![entry(1, 0, b"value")],
        )
        .unwrap();
        let path = dir.path().join("1.ledger");
        let mut raw = std::fs::read(&path).unwrap();
        // Flip one payload byte: the record CRC catches it.
        let at = HEADER_LEN as usize + RECORD_HEAD;
        raw[at] ^= 0xff;
        std::fs::write(&path, &raw).unwrap();
        assert!(open(dir.path(), 1).is_err());
        // A file cut short (crash while writing) has no trailer.
        raw[at] ^= 0xff;
        raw.truncate(raw.len() - 4);
        std::fs::write(&path, &raw).unwrap();
        assert!(open(dir.path(), 1).is_err());
    }
}
