//! A data block: one multipart part of the data object (`DataBlockHeaderImpl`,
//! `BlockAwareSegmentInputStreamImpl`). Big-endian throughout:
//!
//! ```text
//! u32 magic 0xFBDBABCB | i64 headerLen 128 | i64 blockLen | i64 firstEntryId | zeros up to 128
//! entries: i32 length | i64 entryId | length bytes (the entry as stored)
//! padding up to blockLen: FE DC DE AD repeated
//! ```
//!
//! An entry never spans two blocks; every block but the last is exactly the maximum block size.

use bytes::{BufMut, Bytes, BytesMut};

use super::FormatError;

/// The block header's magic word.
pub const BLOCK_MAGIC: u32 = 0xFBDB_ABCB;
/// Bytes the block header takes (Pulsar's `getDataStartOffset`); entries start here.
pub const HEADER_LEN: u64 = 128;
/// Bytes before each entry's payload: `i32 length | i64 entryId`.
pub const ENTRY_HEADER_LEN: u64 = 12;
/// The padding pattern, repeated from the first padding byte.
pub const PADDING: [u8; 4] = [0xFE, 0xDC, 0xDE, 0xAD];
/// Bytes of the header actually used (magic, headerLen, blockLen, firstEntryId).
const HEADER_USED: usize = 4 + 8 + 8 + 8;

/// The largest entry a block of `max_block_size` can hold: Pulsar stops early (and writes an
/// incomplete object) on a larger one, so we refuse such a ledger.
#[must_use]
pub fn max_entry_size(max_block_size: u64) -> u64 {
    max_block_size.saturating_sub(HEADER_LEN + ENTRY_HEADER_LEN)
}

/// The size of the next block (Pulsar's `calculateBlockSize`): the smaller of `max_block_size`
/// and what the rest of the ledger needs, header and entry framing included. `ledger_length` is
/// the bytes of all entries; `entry_bytes_written` those already in earlier blocks.
#[must_use]
pub fn calculate_block_size(
    max_block_size: u64,
    last_entry_id: i64,
    first_entry_to_write: i64,
    ledger_length: u64,
    entry_bytes_written: u64,
) -> u64 {
    let entries_left = u64::try_from(last_entry_id - first_entry_to_write + 1).unwrap_or(0);
    let needed = entries_left * ENTRY_HEADER_LEN
        + ledger_length.saturating_sub(entry_bytes_written)
        + HEADER_LEN;
    max_block_size.min(needed)
}

/// A block's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// Total bytes of the block, header included (the part's size).
    pub block_len: u64,
    /// The first entry in the block.
    pub first_entry_id: i64,
}

impl BlockHeader {
    /// The 128 header bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut out = [0u8; HEADER_LEN as usize];
        out[0..4].copy_from_slice(&BLOCK_MAGIC.to_be_bytes());
        out[4..12].copy_from_slice(&(HEADER_LEN as i64).to_be_bytes());
        out[12..20].copy_from_slice(&(self.block_len as i64).to_be_bytes());
        out[20..28].copy_from_slice(&self.first_entry_id.to_be_bytes());
        out
    }

    /// Parses a header from the first bytes of a block.
    ///
    /// # Errors
    /// Too short, or a wrong magic or header length.
    pub fn decode(b: &[u8]) -> Result<BlockHeader, FormatError> {
        if b.len() < HEADER_USED {
            return Err(FormatError(format!(
                "data block header too short: {} bytes",
                b.len()
            )));
        }
        let magic = u32::from_be_bytes(b[0..4].try_into().expect("4 bytes"));
        if magic != BLOCK_MAGIC {
            return Err(FormatError(format!(
                "data block header has magic {magic:#010x}, expected {BLOCK_MAGIC:#010x}"
            )));
        }
        let header_len = i64::from_be_bytes(b[4..12].try_into().expect("8 bytes"));
        if header_len != HEADER_LEN as i64 {
            return Err(FormatError(format!(
                "data block header length {header_len}, expected {HEADER_LEN}"
            )));
        }
        let block_len = i64::from_be_bytes(b[12..20].try_into().expect("8 bytes"));
        let first_entry_id = i64::from_be_bytes(b[20..28].try_into().expect("8 bytes"));
        Ok(BlockHeader {
            block_len: u64::try_from(block_len)
                .map_err(|_| FormatError(format!("negative block length {block_len}")))?,
            first_entry_id,
        })
    }
}

/// An entry's framing: `i32 length | i64 entryId`. A negative length is padding.
#[must_use]
pub fn parse_entry_header(b: &[u8; ENTRY_HEADER_LEN as usize]) -> (i32, i64) {
    let len = i32::from_be_bytes(b[0..4].try_into().expect("4 bytes"));
    let id = i64::from_be_bytes(b[4..12].try_into().expect("8 bytes"));
    (len, id)
}

/// Builds one block in memory: the header, then entries while they fit, then padding.
#[derive(Debug)]
pub struct BlockBuilder {
    buf: BytesMut,
    block_len: u64,
    first_entry_id: i64,
    entries: u64,
    entry_bytes: u64,
}

impl BlockBuilder {
    /// A block of `block_len` bytes starting with entry `first_entry_id`.
    #[must_use]
    pub fn new(block_len: u64, first_entry_id: i64) -> BlockBuilder {
        let mut buf = BytesMut::with_capacity(usize::try_from(block_len).unwrap_or(0));
        buf.put_slice(
            &BlockHeader {
                block_len,
                first_entry_id,
            }
            .encode(),
        );
        BlockBuilder {
            buf,
            block_len,
            first_entry_id,
            entries: 0,
            entry_bytes: 0,
        }
    }

    /// Whether an entry of `len` bytes still fits.
    #[must_use]
    pub fn fits(&self, len: usize) -> bool {
        self.buf.len() as u64 + ENTRY_HEADER_LEN + len as u64 <= self.block_len
    }

    /// Appends entry `entry_id` (the caller checked [`BlockBuilder::fits`]).
    pub fn push(&mut self, entry_id: i64, entry: &[u8]) {
        debug_assert!(self.fits(entry.len()));
        self.buf
            .put_i32(i32::try_from(entry.len()).expect("entry under 2 GiB"));
        self.buf.put_i64(entry_id);
        self.buf.put_slice(entry);
        self.entries += 1;
        self.entry_bytes += entry.len() as u64;
    }

    /// Entries pushed so far.
    #[must_use]
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Payload bytes of the entries pushed so far (framing excluded).
    #[must_use]
    pub fn entry_bytes(&self) -> u64 {
        self.entry_bytes
    }

    /// The block's first entry.
    #[must_use]
    pub fn first_entry_id(&self) -> i64 {
        self.first_entry_id
    }

    /// The block, padded to its length.
    #[must_use]
    pub fn finish(mut self) -> Bytes {
        let mut i = 0;
        while (self.buf.len() as u64) < self.block_len {
            self.buf.put_u8(PADDING[i % 4]);
            i += 1;
        }
        self.buf.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_sample_block_size() {
        // Ledger 15 of the live run: 20 entries, 1170 bytes, one block of 1538 bytes.
        assert_eq!(calculate_block_size(64 << 20, 19, 0, 1170, 0), 1538);
        assert_eq!(calculate_block_size(1000, 19, 0, 1170, 0), 1000);
        assert_eq!(
            calculate_block_size(5 << 20, 19, 10, 1170, 600),
            128 + 120 + 570
        );
    }

    #[test]
    fn header_bytes() {
        let h = BlockHeader {
            block_len: 1538,
            first_entry_id: 7,
        };
        let b = h.encode();
        let mut want = vec![0xFB, 0xDB, 0xAB, 0xCB];
        want.extend_from_slice(&128i64.to_be_bytes());
        want.extend_from_slice(&1538i64.to_be_bytes());
        want.extend_from_slice(&7i64.to_be_bytes());
        want.resize(128, 0);
        assert_eq!(b.to_vec(), want);
        assert_eq!(BlockHeader::decode(&b), Ok(h));
        let mut bad = b;
        bad[0] = 0;
        assert!(BlockHeader::decode(&bad).is_err());
    }

    #[test]
    fn block_exactly_sized_has_no_padding() {
        let entries: Vec<Vec<u8>> = (0..20).map(|i| vec![i as u8; 58 + (i % 2)]).collect();
        let total: usize = entries.iter().map(Vec::len).sum();
        assert_eq!(total, 1170);
        let size = calculate_block_size(64 << 20, 19, 0, total as u64, 0);
        let mut b = BlockBuilder::new(size, 0);
        for (i, e) in entries.iter().enumerate() {
            assert!(b.fits(e.len()));
            b.push(i as i64, e);
        }
        let out = b.finish();
        assert_eq!(out.len(), 1538);
        assert_eq!(&out[128..132], &58i32.to_be_bytes());
        assert_eq!(&out[132..140], &0i64.to_be_bytes());
        assert_eq!(&out[140..198], &[0u8; 58][..]);
        assert_eq!(&out[198..202], &59i32.to_be_bytes());
        assert_eq!(&out[202..210], &1i64.to_be_bytes());
    }

    #[test]
    fn padding_repeats_from_first_padding_byte() {
        let mut b = BlockBuilder::new(128 + 12 + 3 + 10, 5);
        assert!(b.fits(3));
        b.push(5, b"abc");
        assert!(!b.fits(0));
        let out = b.finish();
        assert_eq!(out.len(), 153);
        assert_eq!(
            &out[143..],
            &[0xFE, 0xDC, 0xDE, 0xAD, 0xFE, 0xDC, 0xDE, 0xAD, 0xFE, 0xDC]
        );
        assert_eq!(
            parse_entry_header(out[128..140].try_into().unwrap()),
            (3, 5)
        );
        assert!(i32::from_be_bytes(out[143..147].try_into().unwrap()) < 0);
    }

    #[test]
    fn max_entry() {
        assert_eq!(max_entry_size(5 << 20), (5 << 20) - 140);
        let mut b = BlockBuilder::new(5 << 20, 0);
        assert!(b.fits(max_entry_size(5 << 20) as usize));
        assert!(!b.fits(max_entry_size(5 << 20) as usize + 1));
        b.push(0, &vec![1; max_entry_size(5 << 20) as usize]);
        assert_eq!(b.finish().len(), 5 << 20);
    }
}
