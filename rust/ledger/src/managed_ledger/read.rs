//! Reading a managed ledger: positions (first, next, previous, last confirmed), entry reads
//! bounded by the last confirmed entry, counts, backlog sizes and publish-time searches.

use bytes::Bytes;

use super::offload::read_offloaded_copy;
use super::{Entry, ManagedLedger, State};
use crate::journal::Loc;
use crate::{OffloadContext, Position, Result};

impl ManagedLedger {
    /// The last entry readers may see.
    #[must_use]
    pub fn last_confirmed(&self) -> Position {
        self.state.lock().last_confirmed
    }

    /// The position just after the last confirmed entry (where a "latest" reader waits).
    #[must_use]
    pub fn end_position(&self) -> Position {
        let st = self.state.lock();
        st.last_confirmed.next()
    }

    /// The first position that can hold an entry (for "earliest").
    #[must_use]
    pub fn first_position(&self) -> Position {
        let st = self.state.lock();
        let first = st.ledgers.keys().next().copied().unwrap_or(st.current);
        Position::new(first, -1)
    }

    pub(crate) fn next_valid_locked(st: &State, p: Position) -> Position {
        if let Some(slot) = st.ledgers.get(&p.ledger_id) {
            if p.entry_id + 1 < slot.confirmed as i64 {
                return Position::new(p.ledger_id, p.entry_id + 1);
            }
        }
        if let Some((id, _)) = st
            .ledgers
            .range(p.ledger_id + 1..)
            .find(|(_, s)| s.confirmed > 0)
        {
            return Position::new(*id, 0);
        }
        if p >= st.last_confirmed {
            st.last_confirmed.next()
        } else {
            Position::new(p.ledger_id, p.entry_id + 1)
        }
    }

    /// The position of the entry following `p` (skipping deleted and empty ledgers); past the end
    /// it is the slot after the last confirmed entry.
    #[must_use]
    pub fn next_valid_position(&self, p: Position) -> Position {
        Self::next_valid_locked(&self.state.lock(), p)
    }

    /// The entry before `p` (or the slot before the first entry of `p`'s ledger).
    #[must_use]
    pub fn previous_position(&self, p: Position) -> Position {
        if p.entry_id > 0 {
            return Position::new(p.ledger_id, p.entry_id - 1);
        }
        let st = self.state.lock();
        match st
            .ledgers
            .range(..p.ledger_id)
            .rev()
            .find(|(_, s)| s.confirmed > 0)
        {
            Some((id, s)) => Position::new(*id, s.confirmed as i64 - 1),
            None => Position::new(p.ledger_id, -1),
        }
    }

    /// Whether `p` names a confirmed entry still stored.
    #[must_use]
    pub fn is_valid_position(&self, p: Position) -> bool {
        let st = self.state.lock();
        st.ledgers
            .get(&p.ledger_id)
            .is_some_and(|s| p.entry_id >= 0 && (p.entry_id as u64) < s.confirmed)
    }

    /// Normalises a read position to an existing entry, or `None` past the end.
    fn normalize(st: &State, p: Position) -> Option<Position> {
        if p > st.last_confirmed {
            return None;
        }
        if let Some(slot) = st.ledgers.get(&p.ledger_id) {
            let e = p.entry_id.max(0);
            if (e as u64) < slot.confirmed {
                return Some(Position::new(p.ledger_id, e));
            }
        }
        let (id, _) = st
            .ledgers
            .range(p.ledger_id + 1..)
            .find(|(_, s)| s.confirmed > 0)?;
        let q = Position::new(*id, 0);
        (q <= st.last_confirmed).then_some(q)
    }

    /// Reads up to `max_entries` entries (and about `max_bytes`, at least one entry) starting at
    /// `from`, within one ledger, never past the last confirmed entry nor `max_position`.
    /// Returns the entries; an empty vector means there is nothing to read yet.
    ///
    /// # Errors
    /// Storage I/O or a corrupt entry ([`LedgerError::CorruptEntry`] names ledger and offset).
    pub fn read_entries(
        &self,
        from: Position,
        max_entries: usize,
        max_bytes: u64,
        max_position: Position,
    ) -> Result<Vec<Entry>> {
        self.read_entries_from(from, max_entries, max_bytes, max_position, true)
            .map(|r| r.map(|(entries, _)| entries).unwrap_or_default())
    }

    /// The entry at `p`, if the ledger holds it.
    ///
    /// # Errors
    /// As [`ManagedLedger::read_entries`].
    pub fn read_entry(&self, p: Position) -> Result<Option<Entry>> {
        Ok(self
            .read_entries(p, 1, u64::MAX, p)?
            .into_iter()
            .next()
            .filter(|e| e.position == p))
    }

    /// Like [`ManagedLedger::read_entries`] from the entry cache only: `None` when the read
    /// needs the disk, so a caller on an async runtime can do it on a blocking thread.
    ///
    /// # Errors
    /// A damaged entry ([`LedgerError::CorruptEntry`]).
    pub fn read_entries_cached(
        &self,
        from: Position,
        max_entries: usize,
        max_bytes: u64,
        max_position: Position,
    ) -> Result<Option<Vec<Entry>>> {
        self.read_entries_from(from, max_entries, max_bytes, max_position, false)
            .map(|r| r.map(|(entries, _)| entries))
    }

    /// Both reads; `disk` false stops at a cache miss with `None`. With the entries come the
    /// bytes read from disk for them (0: from the entry cache).
    pub(crate) fn read_entries_from(
        &self,
        from: Position,
        max_entries: usize,
        max_bytes: u64,
        max_position: Position,
        disk: bool,
    ) -> Result<Option<(Vec<Entry>, u64)>> {
        let (start, locs, offloaded) = {
            let st = self.state.lock();
            let Some((start, locs, _)) =
                Self::span_locked(&st, from, max_entries, max_bytes, max_position)
            else {
                return Ok(Some((Vec::new(), 0)));
            };
            let offloaded = st.ledgers[&start.ledger_id].info.offload.clone();
            (start, locs.to_vec(), offloaded)
        };
        let to = Position::new(start.ledger_id, start.entry_id + locs.len() as i64 - 1);
        if let Some(hit) = self.cache.get_range(start, to) {
            return Ok(Some((
                hit.into_iter()
                    .map(|(position, data)| Entry { position, data })
                    .collect(),
                0,
            )));
        }
        if !disk {
            return Ok(None);
        }
        // Each record's CRC32C (over the whole stored entry, whose own checksum is inside it)
        // is verified by the journal here, once per disk read: a damaged entry is an error, and
        // nothing downstream recomputes a checksum.
        let payloads: Vec<Bytes> =
            match offloaded.filter(|c| read_offloaded_copy(Some(c), &self.tiering.policy())) {
                Some(ctx) => self.read_offloaded(
                    start.ledger_id,
                    &ctx,
                    start.entry_id,
                    start.entry_id + locs.len() as i64 - 1,
                )?,
                None => self.read_locs(start.ledger_id, start.entry_id, &locs)?,
            };
        let bytes: u64 = payloads.iter().map(|p| p.len() as u64).sum();
        self.shared.cache.record_miss(payloads.len() as u64, bytes);
        Ok(Some((
            payloads
                .into_iter()
                .enumerate()
                .map(|(i, data)| Entry {
                    position: Position::new(start.ledger_id, start.entry_id + i as i64),
                    data,
                })
                .collect(),
            bytes,
        )))
    }

    /// Entries at `locs` from `first` on, from the ledger's own storage (journal or bookies).
    fn read_locs(&self, ledger_id: i64, first: i64, locs: &[Loc]) -> Result<Vec<Bytes>> {
        Ok(match &self.shared.backing {
            // On the bookies, each entry's digest is verified by the client as it is read.
            Some(b) => self.seam_read(b, ledger_id, first, locs.len())?,
            None => self
                .shared
                .journal
                .read(ledger_id, first, locs)?
                .into_iter()
                .map(|r| r.payload)
                .collect(),
        })
    }

    /// Entries `first..=last` of ledger `ledger_id` from its own storage, bypassing the cache
    /// and the tier (what an offload uploads).
    ///
    /// # Errors
    /// The range is not stored, or the storage failed.
    pub(crate) fn read_stored(&self, ledger_id: i64, first: i64, last: i64) -> Result<Vec<Bytes>> {
        let locs: Vec<Loc> = {
            let st = self.state.lock();
            let slot = st.ledgers.get(&ledger_id).filter(|s| {
                first >= 0 && first <= last && (last as u64) < s.confirmed && !s.offload_deleted()
            });
            let Some(slot) = slot else {
                return Err(crate::LedgerError::InvalidPosition {
                    ledger: self.name().to_owned(),
                    position: Position::new(ledger_id, first),
                });
            };
            slot.locs[first as usize..=last as usize].to_vec()
        };
        self.read_locs(ledger_id, first, &locs)
    }

    /// What a read from `from` covers: its first entry, the locations of up to `max_entries`
    /// entries of that ledger (about `max_bytes`, at least one) and their bytes, never past the
    /// last confirmed entry nor `max_position`; `None` when there is nothing to read.
    fn span_locked(
        st: &State,
        from: Position,
        max_entries: usize,
        max_bytes: u64,
        max_position: Position,
    ) -> Option<(Position, &[Loc], u64)> {
        let start = Self::normalize(st, from)?;
        if start > max_position || max_entries == 0 {
            return None;
        }
        let slot = &st.ledgers[&start.ledger_id];
        let mut last = slot.confirmed as i64 - 1;
        if max_position.ledger_id == start.ledger_id {
            last = last.min(max_position.entry_id);
        }
        last = last.min(start.entry_id + max_entries as i64 - 1);
        let mut bytes = 0u64;
        let mut end = start.entry_id;
        while end <= last {
            let loc = slot.locs[end as usize];
            // A damaged entry is read alone, so the entries before it are still served
            // and its error names exactly it.
            if end > start.entry_id && loc.is_corrupt() {
                break;
            }
            let l = if loc.is_corrupt() {
                0
            } else {
                u64::from(loc.len)
            };
            if end > start.entry_id && bytes + l > max_bytes {
                break;
            }
            bytes += l;
            end += 1;
        }
        Some((
            start,
            &slot.locs[start.entry_id as usize..end as usize],
            bytes,
        ))
    }

    /// The read [`ManagedLedger::read_entries_from`] would do from `from` (without a maximum
    /// position): its first entry, how many entries and how many bytes; `None` when nothing is
    /// there. For read-ahead, which plans several reads in a row.
    pub(crate) fn plan_read(
        &self,
        from: Position,
        max_entries: usize,
        max_bytes: u64,
    ) -> Option<(Position, usize, u64)> {
        let st = self.state.lock();
        let (start, locs, bytes) =
            Self::span_locked(&st, from, max_entries, max_bytes, Position::LATEST)?;
        Some((start, locs.len(), bytes))
    }

    /// Entries in `(after, upto]`, counted over the ledgers.
    #[must_use]
    pub fn count_entries(&self, after: Position, upto: Position) -> u64 {
        Self::count_entries_locked(&self.state.lock(), after, upto)
    }

    pub(crate) fn count_entries_locked(st: &State, after: Position, upto: Position) -> u64 {
        if upto <= after {
            return 0;
        }
        let mut n = 0u64;
        for (&id, slot) in st.ledgers.range(after.ledger_id..=upto.ledger_id) {
            let lo = if id == after.ledger_id {
                after.entry_id + 1
            } else {
                0
            };
            let mut hi = slot.confirmed as i64 - 1;
            if id == upto.ledger_id {
                hi = hi.min(upto.entry_id);
            }
            if hi >= lo {
                n += (hi - lo + 1) as u64;
            }
        }
        n
    }

    /// Pulsar's estimated backlog size for a cursor whose mark-delete is `mdp`: total size, minus
    /// ledgers before the mark-delete ledger, minus the consumed part of that ledger (entries ×
    /// average entry size, or its whole size when fully consumed).
    #[must_use]
    pub fn estimated_backlog_size(&self, mdp: Position) -> u64 {
        let st = self.state.lock();
        let total: u64 = st.ledgers.values().map(|s| s.confirmed_size).sum();
        let before: u64 = st
            .ledgers
            .range(..mdp.ledger_id)
            .map(|(_, s)| s.confirmed_size)
            .sum();
        let consumed = st.ledgers.get(&mdp.ledger_id).map_or(0, |s| {
            let done = (mdp.entry_id + 1).max(0) as u64;
            if s.confirmed == 0 || done == 0 {
                0
            } else if done >= s.confirmed {
                s.confirmed_size
            } else {
                done * (s.confirmed_size / s.confirmed)
            }
        });
        total.saturating_sub(before).saturating_sub(consumed)
    }

    /// Binary-searches the first entry with timestamp ≥ `ts` (append time stamped by the caller).
    ///
    /// # Errors
    /// Storage I/O while reading timestamps.
    pub fn find_position_by_time(&self, ts: u64) -> Result<Position> {
        let policy = self.tiering.policy();
        type Probe = (i64, Vec<Loc>, Option<OffloadContext>);
        let slots: Vec<Probe> = {
            let st = self.state.lock();
            st.ledgers
                .iter()
                .map(|(id, s)| {
                    let tier = s
                        .info
                        .offload
                        .clone()
                        .filter(|c| read_offloaded_copy(Some(c), &policy));
                    (*id, s.locs[..s.confirmed as usize].to_vec(), tier)
                })
                .collect()
        };
        let read_ts = |id: i64, i: usize, locs: &[Loc], tier: &Option<OffloadContext>| {
            // Entries on bookies and in the tier carry no append time: the message's publish
            // time, as Pulsar.
            let publish_time = |e: Vec<Bytes>| {
                e.first()
                    .and_then(|e| super::on_seam::publish_time(e))
                    .unwrap_or(0)
            };
            if let Some(ctx) = tier {
                return Ok(publish_time(
                    self.read_offloaded(id, ctx, i as i64, i as i64)?,
                ));
            }
            match &self.shared.backing {
                Some(b) => Ok(publish_time(self.seam_read(b, id, i as i64, 1)?)),
                None => self.shared.journal.read_timestamp(id, i as i64, locs[i]),
            }
        };
        for (id, locs, tier) in &slots {
            if locs.is_empty() || read_ts(*id, locs.len() - 1, locs, tier)? < ts {
                continue;
            }
            let (mut lo, mut hi) = (0usize, locs.len() - 1);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if read_ts(*id, mid, locs, tier)? >= ts {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            return Ok(Position::new(*id, lo as i64));
        }
        Ok(self.end_position())
    }
}
