//! Compact binary encoding of a durable cursor's state, so that *all* ack holes persist.
//!
//! Pulsar persists at most `managedLedgerMaxUnackedRangesToPersist` (10000) ranges and redelivers
//! acknowledged messages after a restart beyond that (apache/pulsar#25540). We store every range,
//! delta-encoded as LEB128 varints: a million scattered holes take a few megabytes.
//!
//! ```text
//! "PRC1" | mdp.ledger zz | mdp.entry zz | n_props | (len name, value zz)* |
//! n_ranges | (ledger_delta, first_delta, last-first)* | n_batch | (ledger zz, entry zz, n_words, u64le*)*
//! ```
//! The metadata store adds a CRC32C over the whole value.

use std::collections::BTreeMap;

use crate::{AckSet, LedgerError, Position, Result};

const MAGIC: &[u8; 4] = b"PRC1";

/// Persisted state of one durable cursor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CursorSnapshot {
    /// Everything at or before it is acknowledged.
    pub mark_delete: Position,
    /// Acknowledged entries after `mark_delete`.
    pub acked: AckSet,
    /// Batch index ack bitsets (1 = still unacknowledged) of partially acknowledged entries.
    pub batch_acks: BTreeMap<Position, Vec<u64>>,
    /// User properties.
    pub properties: BTreeMap<String, i64>,
}

fn put_var(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_zz(out: &mut Vec<u8>, v: i64) {
    put_var(out, ((v << 1) ^ (v >> 63)) as u64);
}

struct Reader<'a> {
    buf: &'a [u8],
    key: &'a str,
}

impl Reader<'_> {
    fn bad(&self, what: &str) -> LedgerError {
        LedgerError::CorruptMetadata {
            key: self.key.to_owned(),
            reason: format!("cursor state: {what}"),
        }
    }

    fn var(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or_else(|| self.bad("truncated varint"))?;
            self.buf = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(self.bad("varint too long"))
    }

    fn zz(&mut self) -> Result<i64> {
        let v = self.var()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.buf.len() < n {
            return Err(self.bad("truncated"));
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }

    fn count(&mut self) -> Result<usize> {
        let n = self.var()?;
        // Every counted item takes at least one byte: a larger count is corruption, not a request
        // to allocate.
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.buf.len())
            .ok_or_else(|| self.bad("count exceeds data"))
    }
}

impl CursorSnapshot {
    /// Serialises the snapshot.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.acked.range_count() * 4);
        out.extend_from_slice(MAGIC);
        put_zz(&mut out, self.mark_delete.ledger_id);
        put_zz(&mut out, self.mark_delete.entry_id);
        put_var(&mut out, self.properties.len() as u64);
        for (k, v) in &self.properties {
            put_var(&mut out, k.len() as u64);
            out.extend_from_slice(k.as_bytes());
            put_zz(&mut out, *v);
        }
        put_var(&mut out, self.acked.range_count() as u64);
        let (mut prev_ledger, mut prev_end) = (0i64, 0i64);
        for (l, s, e) in self.acked.iter() {
            if l != prev_ledger {
                prev_end = 0;
            }
            put_zz(&mut out, l - prev_ledger);
            put_zz(&mut out, s - prev_end);
            put_var(&mut out, (e - s) as u64);
            prev_ledger = l;
            prev_end = e;
        }
        put_var(&mut out, self.batch_acks.len() as u64);
        for (p, words) in &self.batch_acks {
            put_zz(&mut out, p.ledger_id);
            put_zz(&mut out, p.entry_id);
            put_var(&mut out, words.len() as u64);
            for w in words {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        out
    }

    /// Parses a snapshot written by [`CursorSnapshot::encode`].
    ///
    /// # Errors
    /// [`LedgerError::CorruptMetadata`] naming `key` when the bytes are not a valid snapshot.
    pub fn decode(key: &str, buf: &[u8]) -> Result<Self> {
        let mut r = Reader { buf, key };
        if r.take(4)? != MAGIC {
            return Err(r.bad("bad magic"));
        }
        let mark_delete = Position::new(r.zz()?, r.zz()?);
        let mut properties = BTreeMap::new();
        for _ in 0..r.count()? {
            let n = r.count()?;
            let name = String::from_utf8(r.take(n)?.to_vec())
                .map_err(|_| r.bad("property name not UTF-8"))?;
            properties.insert(name, r.zz()?);
        }
        let mut acked = AckSet::new();
        let (mut prev_ledger, mut prev_end) = (0i64, 0i64);
        for _ in 0..r.count()? {
            let l = prev_ledger + r.zz()?;
            if l != prev_ledger {
                prev_end = 0;
            }
            let s = prev_end + r.zz()?;
            let e = s
                .checked_add_unsigned(r.var()?)
                .ok_or_else(|| r.bad("range overflow"))?;
            acked.insert_range(l, s, e);
            prev_ledger = l;
            prev_end = e;
        }
        let mut batch_acks = BTreeMap::new();
        for _ in 0..r.count()? {
            let p = Position::new(r.zz()?, r.zz()?);
            let n = r.count()?;
            let words = r
                .take(n * 8)?
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect();
            batch_acks.insert(p, words);
        }
        if !r.buf.is_empty() {
            return Err(r.bad("trailing bytes"));
        }
        Ok(CursorSnapshot {
            mark_delete,
            acked,
            batch_acks,
            properties,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_many_holes() {
        let mut s = CursorSnapshot {
            mark_delete: Position::new(3, 17),
            ..Default::default()
        };
        for i in 0..100_000i64 {
            s.acked
                .insert(Position::new(4 + i / 50_000, (i % 50_000) * 2));
        }
        s.batch_acks
            .insert(Position::new(9, 1), vec![0b1011, u64::MAX]);
        s.properties.insert("x".into(), -5);
        let bytes = s.encode();
        assert!(
            bytes.len() < 400_000,
            "{} bytes for 100k holes",
            bytes.len()
        );
        assert_eq!(CursorSnapshot::decode("k", &bytes).unwrap(), s);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let good = CursorSnapshot {
            mark_delete: Position::new(1, 2),
            ..Default::default()
        }
        .encode();
        for cut in 0..good.len() {
            assert!(CursorSnapshot::decode("k", &good[..cut]).is_err());
        }
        assert!(
            CursorSnapshot::decode("k", b"PRC1\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")
                .is_err()
        );
    }
}
