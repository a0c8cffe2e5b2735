//! The index object (`OffloadIndexBlockImpl`, version 1). Big-endian throughout:
//!
//! ```text
//! u32 magic 0xDE47DE47 | i32 indexBlockLen (the whole object) | i64 dataObjectLength
//! i64 dataHeaderLength (128) | i32 indexEntryCount | i32 segmentMetadataLength
//! segmentMetadataLength bytes: BookKeeper's LedgerMetadataFormat
//! indexEntryCount x (i64 firstEntryIdOfBlock | i32 partId, 1-based | i64 blockOffset)
//! ```
//!
//! The index is sparse: one entry per block, not per ledger entry.

use bytes::{BufMut, BytesMut};

use super::metadata::{self, OffloadedLedgerMetadata};
use super::FormatError;

/// Magic of the version 1 index (what `offload()` writes).
pub const INDEX_MAGIC_V1: u32 = 0xDE47_DE47;
/// Magic of the version 2 index (the streaming offloader's, which Pulsar 4.0.8 never writes).
pub const INDEX_MAGIC_V2: u32 = 0x3D1F_B0BC;
/// Bytes before the ledger metadata.
const FIXED_HEADER_LEN: usize = 4 + 4 + 8 + 8 + 4 + 4;
/// Bytes of one index entry.
const ENTRY_LEN: usize = 8 + 4 + 8;

/// One block of the data object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    /// The block's first entry.
    pub first_entry_id: i64,
    /// Its multipart part number, from 1 (readers ignore it).
    pub part_id: i32,
    /// Where the block starts in the data object (its header's first byte).
    pub block_offset: u64,
}

/// A parsed (or to be written) index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffloadIndex {
    /// Bytes of the data object (the sum of the blocks).
    pub data_object_length: u64,
    /// Bytes of each block's header (128).
    pub data_header_length: u64,
    /// The blocks, by first entry.
    pub entries: Vec<IndexEntry>,
    /// The ledger metadata's bytes as stored.
    pub metadata_bytes: Vec<u8>,
    /// The ledger metadata, parsed.
    pub metadata: OffloadedLedgerMetadata,
}

/// The index object's bytes.
#[must_use]
pub fn encode(
    data_object_length: u64,
    data_header_length: u64,
    entries: &[IndexEntry],
    metadata: &[u8],
) -> Vec<u8> {
    let total = FIXED_HEADER_LEN + metadata.len() + entries.len() * ENTRY_LEN;
    let mut b = BytesMut::with_capacity(total);
    b.put_u32(INDEX_MAGIC_V1);
    b.put_i32(i32::try_from(total).expect("index under 2 GiB"));
    b.put_i64(data_object_length as i64);
    b.put_i64(data_header_length as i64);
    b.put_i32(i32::try_from(entries.len()).expect("under 2^31 blocks"));
    b.put_i32(i32::try_from(metadata.len()).expect("metadata under 2 GiB"));
    b.put_slice(metadata);
    for e in entries {
        b.put_i64(e.first_entry_id);
        b.put_i32(e.part_id);
        b.put_i64(e.block_offset as i64);
    }
    b.to_vec()
}

fn be<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    b[at..at + N].try_into().expect("length checked")
}

/// Parses an index object.
///
/// # Errors
/// A version 2 (streaming) index, an unknown magic, a truncated object, or bad metadata.
pub fn parse(b: &[u8]) -> Result<OffloadIndex, FormatError> {
    if b.len() < FIXED_HEADER_LEN {
        return Err(FormatError(format!(
            "index object too short: {} bytes",
            b.len()
        )));
    }
    let magic = u32::from_be_bytes(be(b, 0));
    if magic == INDEX_MAGIC_V2 {
        return Err(FormatError(
            "index object is version 2 (the streaming offloader's, magic 0x3d1fb0bc): \
             not supported by pulsar-rs"
                .into(),
        ));
    }
    if magic != INDEX_MAGIC_V1 {
        return Err(FormatError(format!(
            "index object has magic {magic:#010x}, expected {INDEX_MAGIC_V1:#010x}"
        )));
    }
    let index_len = i32::from_be_bytes(be(b, 4));
    let data_object_length = i64::from_be_bytes(be(b, 8));
    let data_header_length = i64::from_be_bytes(be(b, 16));
    let count = i32::from_be_bytes(be(b, 24));
    let meta_len = i32::from_be_bytes(be(b, 28));
    let (Ok(count), Ok(meta_len), Ok(data_object_length), Ok(data_header_length)) = (
        usize::try_from(count),
        usize::try_from(meta_len),
        u64::try_from(data_object_length),
        u64::try_from(data_header_length),
    ) else {
        return Err(FormatError("index object has a negative length".into()));
    };
    let need = FIXED_HEADER_LEN + meta_len + count * ENTRY_LEN;
    if b.len() < need || usize::try_from(index_len).ok() != Some(need) {
        return Err(FormatError(format!(
            "index object truncated or inconsistent: {} bytes, header says {index_len}, \
             {count} entries and {meta_len} bytes of metadata need {need}",
            b.len()
        )));
    }
    let metadata_bytes = b[FIXED_HEADER_LEN..FIXED_HEADER_LEN + meta_len].to_vec();
    let metadata = metadata::parse(&metadata_bytes)?;
    let mut entries = Vec::with_capacity(count);
    let mut at = FIXED_HEADER_LEN + meta_len;
    for _ in 0..count {
        let offset = i64::from_be_bytes(be(b, at + 12));
        entries.push(IndexEntry {
            first_entry_id: i64::from_be_bytes(be(b, at)),
            part_id: i32::from_be_bytes(be(b, at + 8)),
            block_offset: u64::try_from(offset)
                .map_err(|_| FormatError(format!("negative block offset {offset}")))?,
        });
        at += ENTRY_LEN;
    }
    entries.sort_by_key(|e| e.first_entry_id);
    if entries.is_empty() {
        return Err(FormatError("index object lists no blocks".into()));
    }
    Ok(OffloadIndex {
        data_object_length,
        data_header_length,
        entries,
        metadata_bytes,
        metadata,
    })
}

impl OffloadIndex {
    /// The block holding `entry_id`: the last one whose first entry is at most it.
    #[must_use]
    pub fn floor(&self, entry_id: i64) -> Option<&IndexEntry> {
        let i = self
            .entries
            .partition_point(|e| e.first_entry_id <= entry_id);
        i.checked_sub(1).map(|i| &self.entries[i])
    }

    /// Where the block after the one at `offset` starts, if there is one.
    #[must_use]
    pub fn next_block_offset(&self, offset: u64) -> Option<u64> {
        self.entries
            .iter()
            .map(|e| e.block_offset)
            .filter(|&o| o > offset)
            .min()
    }

    /// Where the block holding data-object byte `offset` ends.
    #[must_use]
    pub fn block_end(&self, offset: u64) -> u64 {
        self.next_block_offset(offset)
            .unwrap_or(self.data_object_length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_sample_layout() {
        // The live run's ledger 15: one block of 1538 bytes, index entry (0, 1, 0).
        let meta = metadata::build(
            19,
            1170,
            1_700_000_000_000,
            "public/default/persistent/off3",
        );
        let e = [IndexEntry {
            first_entry_id: 0,
            part_id: 1,
            block_offset: 0,
        }];
        let b = encode(1538, 128, &e, &meta);
        assert_eq!(b.len(), 32 + meta.len() + 20);
        let mut want = vec![0xDE, 0x47, 0xDE, 0x47];
        want.extend_from_slice(&(b.len() as i32).to_be_bytes());
        want.extend_from_slice(&1538i64.to_be_bytes());
        want.extend_from_slice(&128i64.to_be_bytes());
        want.extend_from_slice(&1i32.to_be_bytes());
        want.extend_from_slice(&(meta.len() as i32).to_be_bytes());
        want.extend_from_slice(&meta);
        want.extend_from_slice(&0i64.to_be_bytes());
        want.extend_from_slice(&1i32.to_be_bytes());
        want.extend_from_slice(&0i64.to_be_bytes());
        assert_eq!(b, want);
        let p = parse(&b).unwrap();
        assert_eq!(p.data_object_length, 1538);
        assert_eq!(p.data_header_length, 128);
        assert_eq!(p.entries, e.to_vec());
        assert_eq!(p.metadata.last_entry_id, 19);
        assert_eq!(p.metadata.length, 1170);
    }

    #[test]
    fn floor_and_next_block() {
        let meta = metadata::build(299, 10, 0, "t");
        let es: Vec<IndexEntry> = [(0, 0u64), (100, 5 << 20), (200, 10 << 20)]
            .iter()
            .enumerate()
            .map(|(i, &(f, o))| IndexEntry {
                first_entry_id: f,
                part_id: i as i32 + 1,
                block_offset: o,
            })
            .collect();
        let p = parse(&encode(11 << 20, 128, &es, &meta)).unwrap();
        assert_eq!(p.floor(0).unwrap().first_entry_id, 0);
        assert_eq!(p.floor(99).unwrap().first_entry_id, 0);
        assert_eq!(p.floor(100).unwrap().first_entry_id, 100);
        assert_eq!(p.floor(299).unwrap().first_entry_id, 200);
        assert!(p.floor(-1).is_none());
        assert_eq!(p.next_block_offset(0), Some(5 << 20));
        assert_eq!(p.next_block_offset(10 << 20), None);
        assert_eq!(p.block_end(6 << 20), 10 << 20);
        assert_eq!(p.block_end(10 << 20), 11 << 20);
    }

    #[test]
    fn rejects_v2_and_garbage() {
        let mut b = encode(1, 128, &[], &metadata::build(0, 1, 0, "t"));
        assert!(parse(&b).unwrap_err().0.contains("no blocks"));
        b[0..4].copy_from_slice(&INDEX_MAGIC_V2.to_be_bytes());
        assert!(parse(&b).unwrap_err().0.contains("version 2"));
        b[0..4].copy_from_slice(&[1, 2, 3, 4]);
        assert!(parse(&b).unwrap_err().0.contains("magic"));
        assert!(parse(&b[..10]).is_err());
        let ok = encode(
            1,
            128,
            &[IndexEntry {
                first_entry_id: 0,
                part_id: 1,
                block_offset: 0,
            }],
            &metadata::build(0, 1, 0, "t"),
        );
        assert!(parse(&ok[..ok.len() - 1]).is_err());
    }
}
