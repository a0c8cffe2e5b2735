//! The journal's record format: framing, checksums and where a record lives.
//!
//! Record layout (little endian), one per entry:
//!
//! ```text
//! +--------+--------+-----------+----------+-----------+----------------+
//! | len u32| crc u32| ledger i64| entry i64| time u64  | payload (len)  |
//! +--------+--------+-----------+----------+-----------+----------------+
//!            crc32c covers ledger..payload (everything after the crc field)
//! ```

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::LedgerError;

/// Bytes of a record header.
pub const RECORD_HEADER: usize = 32;

/// `Loc::len` value marking an entry known to be corrupt (or missing).
pub const CORRUPT_LEN: u32 = u32::MAX;

/// Where one entry's record lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    /// Journal segment id.
    pub segment: u32,
    /// Payload length, or [`CORRUPT_LEN`].
    pub len: u32,
    /// Byte offset of the record header in the segment.
    pub offset: u64,
}

impl Loc {
    /// The location of an entry known to be damaged or missing: reading it fails.
    #[must_use]
    pub fn corrupt(segment: u32, offset: u64) -> Loc {
        Loc {
            segment,
            len: CORRUPT_LEN,
            offset,
        }
    }

    /// Whether this entry is known to be damaged or missing.
    #[must_use]
    pub fn is_corrupt(&self) -> bool {
        self.len == CORRUPT_LEN
    }

    /// Offset just past this record.
    #[must_use]
    pub fn end(&self) -> u64 {
        self.offset + RECORD_HEADER as u64 + u64::from(self.len)
    }
}

/// One entry read back from the journal.
#[derive(Clone, Debug)]
pub struct Record {
    /// The time the appender stamped on it (ms since epoch).
    pub timestamp: u64,
    /// The entry bytes.
    pub payload: Bytes,
}

/// A checksum the appender already holds: the CRC32C of `payload[from..]` (a Pulsar stored
/// entry carries the one of its bytes from offset 6, verified when it was published). The
/// record's checksum is then combined from it instead of read over the payload again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownCrc {
    /// Where the covered bytes start in the payload.
    pub from: usize,
    /// Their CRC32C.
    pub crc: u32,
}

/// Appends one framed record to `out`.
pub(crate) fn encode(
    out: &mut BytesMut,
    ledger_id: i64,
    entry_id: i64,
    timestamp: u64,
    payload: &[u8],
    known: Option<KnownCrc>,
) {
    let mut head = [0u8; RECORD_HEADER];
    head[8..16].copy_from_slice(&ledger_id.to_le_bytes());
    head[16..24].copy_from_slice(&entry_id.to_le_bytes());
    head[24..32].copy_from_slice(&timestamp.to_le_bytes());
    let head_crc = crc32c::crc32c(&head[8..]);
    let crc = match known {
        Some(k) if k.from <= payload.len() => {
            debug_assert_eq!(
                crc32c::crc32c(&payload[k.from..]),
                k.crc,
                "a wrong known checksum"
            );
            let before = crc32c::crc32c_append(head_crc, &payload[..k.from]);
            super::crc::combine(before, k.crc, payload.len() - k.from)
        }
        _ => crc32c::crc32c_append(head_crc, payload),
    };
    // Payload sizes are bounded by the broker's max message size, far below 4 GiB.
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX - 1);
    head[0..4].copy_from_slice(&len.to_le_bytes());
    head[4..8].copy_from_slice(&crc.to_le_bytes());
    out.put_slice(&head);
    out.put_slice(payload);
}

/// Parses and verifies one record at the start of `buf`; returns (ledger, entry, time, len).
/// Cheap checks (length in range, non-negative ids) come before the checksum, so scanning
/// garbage for the next valid record stays fast.
pub(crate) fn check(buf: &[u8]) -> Option<(i64, i64, u64, u32)> {
    if buf.len() < RECORD_HEADER {
        return None;
    }
    let mut h = &buf[..RECORD_HEADER];
    let len = h.get_u32_le();
    let crc = h.get_u32_le();
    let ledger = h.get_i64_le();
    let entry = h.get_i64_le();
    let time = h.get_u64_le();
    let end = RECORD_HEADER.checked_add(len as usize)?;
    if len == CORRUPT_LEN || buf.len() < end || ledger < 0 || entry < 0 {
        return None;
    }
    (crc32c::crc32c(&buf[8..end]) == crc).then_some((ledger, entry, time, len))
}

/// The error for a record that cannot be served.
pub(crate) fn corrupt(ledger_id: i64, entry_id: i64, loc: Loc, reason: &str) -> LedgerError {
    LedgerError::CorruptEntry {
        ledger_id,
        entry_id,
        segment: loc.segment,
        offset: loc.offset,
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_checksum_gives_the_same_record() {
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut full = BytesMut::new();
        encode(&mut full, 3, 9, 77, &payload, None);
        for from in [0, 6, 4999, 5000] {
            let known = KnownCrc {
                from,
                crc: crc32c::crc32c(&payload[from..]),
            };
            let mut combined = BytesMut::new();
            encode(&mut combined, 3, 9, 77, &payload, Some(known));
            assert_eq!(combined, full, "from {from}");
        }
        assert_eq!(check(&full), Some((3, 9, 77, 5000)));
    }
}
