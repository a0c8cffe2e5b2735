//! Recovery: scanning journal segments at open.
//!
//! Every record's checksum is verified. A damaged region followed by a valid record (found by
//! scanning forward for the next valid header and checksum) is corruption in the middle: it is
//! skipped and reported, and every record after it is kept; the entries it held show up as
//! missing in their ledgers, where reading them fails (see `recover_slot`). A damaged region with
//! nothing valid after it is a torn tail; only the last segment's is truncated (in read-write
//! mode): that is where an interrupted write leaves one. All-zero bytes after the last record are
//! preallocation (see `prealloc`): cut off quietly, in any segment, and never counted as damage.

use std::collections::HashSet;
use std::path::Path;

use bytes::Buf;

use super::index::IndexRecord;
use super::record::{self, Loc, RECORD_HEADER};

/// What the scan of one segment found.
#[derive(Debug, Default)]
pub(crate) struct SegmentScan {
    /// Ledgers with records in the segment.
    pub ledgers: HashSet<i64>,
    /// Length up to the end of the last valid record (a torn tail starts here).
    pub valid_len: u64,
    /// Damaged regions `[from, to)` in the middle of the segment (records after them kept).
    pub damaged: Vec<(u64, u64)>,
    /// Every record found (damaged ones whose header names them included), in segment order.
    pub records: Vec<IndexRecord>,
    /// Everything after `valid_len` is zeros: preallocation, not a torn write.
    pub preallocated: bool,
}

/// Finds the first offset at or after `from` where a valid record starts.
fn next_valid(data: &[u8], from: usize) -> Option<usize> {
    (from..data.len().saturating_sub(RECORD_HEADER - 1))
        .find(|&p| record::check(&data[p..]).is_some())
}

/// Scans one segment's bytes, listing every valid record.
pub(crate) fn scan_segment(path: &Path, id: u32, data: &[u8]) -> SegmentScan {
    let mut scan = SegmentScan::default();
    let mut off = 0usize;
    while off < data.len() {
        if let Some((ledger, entry, _time, len)) = record::check(&data[off..]) {
            let loc = Loc {
                segment: id,
                offset: off as u64,
                len,
            };
            scan.records.push(IndexRecord { ledger, entry, loc });
            scan.ledgers.insert(ledger);
            off += RECORD_HEADER + len as usize;
            scan.valid_len = off as u64;
            continue;
        }
        if super::prealloc::is_zero_tail(&data[off..]) {
            scan.preallocated = true;
            break;
        }
        match next_valid(data, off + 1) {
            Some(next) => {
                tracing::error!(
                    segment = id,
                    path = %path.display(),
                    offset = off,
                    damaged_bytes = next - off,
                    "corrupt journal records in the middle of a segment; records after them are kept"
                );
                scan.damaged.push((off as u64, next as u64));
                // If the header's length leads exactly to the next valid record, only this
                // record's bytes are damaged and its header names it: remember where it is.
                let mut h = &data[off..off + RECORD_HEADER.min(data.len() - off)];
                if h.len() == RECORD_HEADER {
                    let len = h.get_u32_le() as usize;
                    let _crc = h.get_u32_le();
                    let (ledger, entry) = (h.get_i64_le(), h.get_i64_le());
                    if off + RECORD_HEADER + len == next && ledger >= 0 && entry >= 0 {
                        let loc = Loc::corrupt(id, off as u64);
                        scan.records.push(IndexRecord { ledger, entry, loc });
                        scan.ledgers.insert(ledger);
                    }
                }
                off = next;
            }
            None => break,
        }
    }
    scan
}
