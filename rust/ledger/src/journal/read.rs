//! Reading records back: from the segment files, or from memory while they wait to be
//! written; every record's checksum and identity are verified.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::direct_read;
use super::record::{self, corrupt, Loc, Record, RECORD_HEADER};
use super::Journal;
use crate::vfs::VFile;
use crate::{LedgerError, Result};

impl Journal {
    /// Reads the records at `locs` (all of one ledger, in entry order), checking every checksum.
    /// Adjacent records of one segment are read with a single `pread` and sliced without copying.
    ///
    /// # Errors
    /// I/O failures, or [`LedgerError::CorruptEntry`] for a record that fails its checks.
    pub fn read(&self, ledger_id: i64, first_entry: i64, locs: &[Loc]) -> Result<Vec<Record>> {
        let mut out = Vec::with_capacity(locs.len());
        let mut i = 0;
        while i < locs.len() {
            let start = locs[i];
            if start.is_corrupt() {
                return Err(corrupt(
                    ledger_id,
                    first_entry + i as i64,
                    start,
                    "recovery found this entry damaged or missing",
                ));
            }
            let mut j = i + 1;
            while j < locs.len()
                && locs[j].segment == start.segment
                && locs[j].offset == locs[j - 1].end()
            {
                if locs[j].is_corrupt() {
                    break;
                }
                j += 1;
            }
            let span_end = locs[j - 1].end();
            let data = self.read_span(start.segment, start.offset, span_end)?;
            for (k, loc) in locs[i..j].iter().enumerate() {
                let want = first_entry + (i + k) as i64;
                let rel = usize::try_from(loc.offset - start.offset).unwrap_or(usize::MAX);
                let rec = data
                    .get(rel..)
                    .ok_or_else(|| corrupt(ledger_id, want, *loc, "short read"))?;
                let (l, e, time, len) = record::check(rec)
                    .ok_or_else(|| corrupt(ledger_id, want, *loc, "checksum mismatch"))?;
                if l != ledger_id || e != want || len != loc.len {
                    return Err(corrupt(
                        ledger_id,
                        want,
                        *loc,
                        &format!("record names {l}:{e}, expected {ledger_id}:{want}"),
                    ));
                }
                let body = rel + RECORD_HEADER;
                out.push(Record {
                    timestamp: time,
                    payload: data.slice(body..body + len as usize),
                });
            }
            i = j;
        }
        Ok(out)
    }

    /// Maps every segment of a read-only open (see [`Journal`]'s `maps`); a segment the file
    /// system cannot map is read with `pread` as before.
    pub(super) fn map_segments(segments: &BTreeMap<u32, Arc<dyn VFile>>) -> BTreeMap<u32, Bytes> {
        let mut maps = BTreeMap::new();
        for (&id, file) in segments {
            match file.map_read_only() {
                Ok(Some(map)) => {
                    maps.insert(id, map);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(segment = id, error = %e, "segment not mapped; using reads")
                }
            }
        }
        maps
    }

    /// Segments read through a memory mapping (read-only opens).
    #[must_use]
    pub fn mapped_segments(&self) -> usize {
        self.maps.len()
    }

    /// Bytes `[from, to)` of a segment, from memory when not yet written, else from the file.
    fn read_span(&self, segment: u32, from: u64, to: u64) -> Result<Bytes> {
        if from == to {
            return Ok(Bytes::new());
        }
        if let Some(map) = self.maps.get(&segment) {
            // Read-only opens only: nothing is buffered, and the mapping holds the file as it
            // was at open, so any recovered record lies inside it.
            if let (Ok(f), Ok(t)) = (usize::try_from(from), usize::try_from(to)) {
                if t <= map.len() {
                    return Ok(map.slice(f..t));
                }
            }
        }
        let file = {
            let st = self.state.lock();
            let in_mem = |p_seg: u32, p_off: u64, data: &[u8]| -> Option<Bytes> {
                let p_end = p_off + data.len() as u64;
                (p_seg == segment && from >= p_off && to <= p_end).then(|| {
                    Bytes::copy_from_slice(&data[(from - p_off) as usize..(to - p_off) as usize])
                })
            };
            if let Some(b) = in_mem(st.active, st.buf_offset, &st.buf) {
                return Ok(b);
            }
            for p in st.inflight.iter().chain(st.sealed.iter()) {
                if p.segment == segment && from >= p.offset && to <= p.offset + p.data.len() as u64
                {
                    // Zero copy: the pending region is already immutable `Bytes`.
                    return Ok(p
                        .data
                        .slice((from - p.offset) as usize..(to - p.offset) as usize));
                }
            }
            // Where this segment's regions change hands (the buffer, each round being written
            // or sealed): a span across one of them is read as two spans, each wholly written,
            // wholly in a pending round or wholly buffered. In non-durable mode a confirmed
            // entry may still be in a round being written, right after written ones.
            let pending = st.inflight.iter().chain(st.sealed.iter());
            let boundary = pending
                .filter(|p| p.segment == segment)
                .flat_map(|p| [p.offset, p.offset + p.data.len() as u64])
                .chain((segment == st.active).then_some(st.buf_offset))
                .filter(|b| from < *b && *b < to)
                .min();
            if let Some(b) = boundary {
                drop(st);
                return self.read_span_split(segment, from, to, b);
            }
            Arc::clone(
                st.segments
                    .get(&segment)
                    .ok_or_else(|| LedgerError::CorruptEntry {
                        ledger_id: -1,
                        entry_id: -1,
                        segment,
                        offset: from,
                        reason: "journal segment is missing".into(),
                    })?,
            )
        };
        let failed = |e| LedgerError::io(format!("reading journal segment {segment} at {from}"), e);
        // Large spans of a journal written past the page cache are read past it too (see
        // `direct_read`); small ones, and any file that takes no direct reads, through it.
        if to - from >= direct_read::MIN_SPAN && self.direct_round() {
            if let Some(data) = self
                .read_buffers
                .read(file.as_ref(), from, to)
                .map_err(failed)?
            {
                return Ok(data);
            }
        }
        let mut buf = vec![0u8; (to - from) as usize];
        file.read_exact_at(&mut buf, from).map_err(failed)?;
        Ok(Bytes::from(buf))
    }

    fn read_span_split(&self, segment: u32, from: u64, to: u64, split: u64) -> Result<Bytes> {
        let a = self.read_span(segment, from, split)?;
        let b = self.read_span(segment, split, to)?;
        let mut out = BytesMut::with_capacity(a.len() + b.len());
        out.extend_from_slice(&a);
        out.extend_from_slice(&b);
        Ok(out.freeze())
    }

    /// Reads only the timestamp of one record (for publish-time searches).
    ///
    /// # Errors
    /// As [`Journal::read`].
    pub fn read_timestamp(&self, ledger_id: i64, entry_id: i64, loc: Loc) -> Result<u64> {
        Ok(self.read(ledger_id, entry_id, &[loc])?[0].timestamp)
    }
}
