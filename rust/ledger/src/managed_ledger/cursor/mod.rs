//! A cursor: one subscription's place in a managed ledger.
//!
//! It tracks the *read position* (next entry to hand out), the *mark-delete position* (everything
//! at or before it is acknowledged), the individually acknowledged entries after it (the ack
//! holes), partial batch acknowledgements, and properties. When the hole right after mark-delete
//! closes, mark-delete advances over the contiguous acknowledged prefix. Durable cursors persist
//! all of this (every hole, see [`crate::cursor_codec`]); non-durable ones (readers) do not.
//! Its [`read_ahead`] reads the next entries while the dispatcher sends what it read.

mod read_ahead;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;

use self::read_ahead::{CursorReadAhead, Take};
use crate::cursor_codec::CursorSnapshot;
use crate::managed_ledger::{Entry, ManagedLedger};
use crate::metastore::cursor_key;
use crate::{AckSet, LedgerError, Position, Result};

struct State {
    mark_delete: Position,
    read_position: Position,
    acked: AckSet,
    batch_acks: BTreeMap<Position, Vec<u64>>,
    properties: BTreeMap<String, i64>,
    /// Changed since last persisted.
    dirty: bool,
    /// Counts toward the ledger's active cursors (caching).
    active: bool,
    closed: bool,
    /// Bumped by rewinds and resets, so a read that raced one does not move the read position.
    epoch: u64,
    /// On a seam backing, the version of the cursor's record last read or written.
    version: Option<crate::seam::Version>,
}

/// A subscription's cursor. Obtain one from [`ManagedLedger::open_cursor`].
pub struct Cursor {
    /// Cursor (subscription) name; immutable.
    name: String,
    /// The ledger it walks; immutable.
    ml: Arc<ManagedLedger>,
    /// Persisted or not; immutable.
    durable: bool,
    /// Positions and acks. Held briefly; never across I/O on entries, never across `.await`.
    /// Lock order: this lock, then the ledger's state lock.
    state: Mutex<State>,
    /// Serialises persisting: held from taking the snapshot until its write is durable, so an
    /// older snapshot can never be written after a newer one. Only flushers of this cursor wait
    /// on it (acks take `state` only); taken before `state`.
    flushing: Mutex<()>,
    /// The reads queued after this cursor's last large read from disk (see
    /// [`read_ahead`]); used by this cursor's reads only. Never locked with `state` held.
    ahead: CursorReadAhead,
}

impl Cursor {
    pub(crate) fn open_durable(
        ml: Arc<ManagedLedger>,
        name: &str,
        start: Position,
    ) -> Result<Arc<Cursor>> {
        if name.is_empty() || name.len() > 512 || name.chars().any(char::is_control) {
            return Err(LedgerError::InvalidName {
                name: name.into(),
                reason: "empty, too long or has control chars",
            });
        }
        let key = cursor_key(ml.name(), name);
        let recorded = match &ml.shared.backing {
            Some(b) => crate::managed_ledger::on_seam::load_cursor(
                b,
                ml.name(),
                name,
                ml.shared.read_only,
            )?
            .map(|(s, v)| (s, Some(v))),
            None => match ml.shared.meta.get(&key)? {
                Some(raw) => Some((CursorSnapshot::decode(&key, &raw)?, None)),
                None => None,
            },
        };
        // On a seam backing a new owner writes every cursor at open, as Pulsar's cursor
        // recovery does: the record's new version fences the previous owner's cursor writes.
        let fresh = recorded.is_none() || (ml.shared.backing.is_some() && !ml.shared.read_only);
        let (snapshot, version) = recorded.unwrap_or((
            CursorSnapshot {
                mark_delete: start,
                ..Default::default()
            },
            None,
        ));
        let cursor = Self::build(ml, name, true, snapshot);
        cursor.state.lock().version = version;
        if fresh {
            cursor.state.lock().dirty = true;
            cursor.flush()?;
        }
        Ok(cursor)
    }

    pub(crate) fn new_non_durable(
        ml: Arc<ManagedLedger>,
        name: &str,
        start: Position,
    ) -> Arc<Cursor> {
        Self::build(
            ml,
            name,
            false,
            CursorSnapshot {
                mark_delete: start,
                ..Default::default()
            },
        )
    }

    fn build(ml: Arc<ManagedLedger>, name: &str, durable: bool, s: CursorSnapshot) -> Arc<Cursor> {
        let read_position = ml.next_valid_position(s.mark_delete);
        // Relaxed: the active count only steers caching.
        ml.active_cursors.fetch_add(1, Ordering::Relaxed);
        let cursor = Arc::new(Cursor {
            name: name.to_owned(),
            ml,
            durable,
            state: Mutex::new(State {
                mark_delete: s.mark_delete,
                read_position,
                acked: s.acked,
                batch_acks: s.batch_acks,
                properties: s.properties,
                dirty: false,
                active: true,
                closed: false,
                epoch: 0,
                version: None,
            }),
            flushing: Mutex::new(()),
            ahead: CursorReadAhead::default(),
        });
        cursor.state.lock().advance(&cursor.ml);
        cursor
    }

    /// The cursor's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The managed ledger it reads.
    #[must_use]
    pub fn ledger(&self) -> &Arc<ManagedLedger> {
        &self.ml
    }

    /// Whether its state is persisted.
    #[must_use]
    pub fn is_durable(&self) -> bool {
        self.durable
    }

    /// Whether it counts as an active reader (its unread entries stay cached).
    #[must_use]
    pub fn is_active(&self) -> bool {
        self.state.lock().active
    }

    /// Marks the cursor active (consumers attached) or inactive.
    pub fn set_active(&self, active: bool) {
        let mut st = self.state.lock();
        if st.active != active && !st.closed {
            st.active = active;
            // Relaxed: the active count only steers caching.
            if active {
                self.ml.active_cursors.fetch_add(1, Ordering::Relaxed);
            } else {
                self.ml.active_cursors.fetch_sub(1, Ordering::Relaxed);
            }
        }
        drop(st);
        if !active {
            self.ahead.clear();
        }
    }

    /// Everything at or before this is acknowledged.
    #[must_use]
    pub fn mark_delete_position(&self) -> Position {
        self.state.lock().mark_delete
    }

    /// The next entry to read.
    #[must_use]
    pub fn read_position(&self) -> Position {
        self.state.lock().read_position
    }

    /// Reads up to `n` unacknowledged entries from the read position and advances it. As
    /// Pulsar's `OpReadEntry`, a read that reaches the end of a ledger continues in the next one
    /// until it has `n` entries (acknowledged entries on the way are skipped, not counted) or
    /// nothing more is confirmed.
    ///
    /// # Errors
    /// Storage I/O or corruption; [`LedgerError::Closed`] after close.
    pub fn read_entries(&self, n: usize) -> Result<Vec<Entry>> {
        self.read_entries_bounded(n, u64::MAX, Position::LATEST)
    }

    /// Like [`Cursor::read_entries`] with a byte budget (at least one entry is read) and a
    /// maximum position.
    ///
    /// # Errors
    /// As [`Cursor::read_entries`].
    pub fn read_entries_bounded(
        &self,
        n: usize,
        max_bytes: u64,
        max_position: Position,
    ) -> Result<Vec<Entry>> {
        self.read_bounded(n, max_bytes, max_position, true)
            .map(Option::unwrap_or_default)
    }

    /// Like [`Cursor::read_entries_bounded`] from the entry cache only: `None` (nothing read,
    /// the read position unchanged) when the next entry needs the disk; a read that misses
    /// after some entries returns those.
    ///
    /// # Errors
    /// As [`Cursor::read_entries`].
    pub fn read_entries_cached(
        &self,
        n: usize,
        max_bytes: u64,
        max_position: Position,
    ) -> Result<Option<Vec<Entry>>> {
        self.read_bounded(n, max_bytes, max_position, false)
    }

    /// Both reads; `disk` false stops at a cache miss.
    fn read_bounded(
        &self,
        n: usize,
        max_bytes: u64,
        max_position: Position,
        disk: bool,
    ) -> Result<Option<Vec<Entry>>> {
        let mut out: Vec<Entry> = Vec::new();
        let mut bytes = 0u64;
        let mut gathered_in: Option<u64> = None;
        while out.len() < n && (out.is_empty() || bytes < max_bytes) {
            let (from, epoch) = {
                let st = self.state.lock();
                if st.closed {
                    return Err(LedgerError::Closed {
                        what: format!("cursor {}", self.name),
                    });
                }
                (st.read_position, st.epoch)
            };
            if gathered_in.is_some_and(|e| e != epoch) {
                // Rewound or reset between two ledgers: what was gathered is stale.
                out.clear();
                bytes = 0;
            }
            gathered_in = Some(epoch);
            // The entry I/O runs without the cursor lock, so acks are not blocked by it.
            let budget = max_bytes.saturating_sub(bytes).max(1);
            let want = n - out.len();
            // Read ahead only for unbounded reads (dispatchers); a bounded one reads itself.
            let ahead = if max_position == Position::LATEST {
                self.ahead.take(&self.ml, from, want, budget, disk)
            } else {
                Take::Miss
            };
            let (entries, disk_bytes, served_ahead) = match ahead {
                Take::Entries(e) => (e, 0, true),
                Take::Pending if out.is_empty() => return Ok(None),
                Take::Pending => break,
                Take::Miss => {
                    match self
                        .ml
                        .read_entries_from(from, want, budget, max_position, disk)
                    {
                        Ok(Some((e, disk_bytes))) => (e, disk_bytes, false),
                        Ok(None) if out.is_empty() => return Ok(None),
                        Ok(None) => break,
                        Err(LedgerError::CorruptEntry {
                            ledger_id,
                            entry_id,
                            reason,
                            ..
                        }) if self.ml.config().auto_skip_non_recoverable_data && ledger_id >= 0 => {
                            self.skip_damaged(Position::new(ledger_id, entry_id), epoch, &reason);
                            continue;
                        }
                        // Entries gathered from earlier ledgers are handed out (the read position is
                        // past them); the error comes with the next read, which starts at the bad entry.
                        Err(_) if !out.is_empty() => break,
                        Err(e) => return Err(e),
                    }
                }
            };
            let Some(last) = entries.last().map(|e| e.position) else {
                break;
            };
            // Only a large unbounded read from disk starts a read-ahead.
            let large_from_disk =
                max_position == Position::LATEST && disk_bytes >= read_ahead::MIN_BYTES;
            let mut st = self.state.lock();
            if st.epoch != epoch || st.read_position != from {
                continue; // rewound or reset meanwhile: read again from the new place
            }
            let next = self.ml.next_valid_position(last);
            st.read_position = next;
            let mdp = st.mark_delete;
            for e in entries {
                if e.position > mdp && !st.acked.contains(e.position) {
                    bytes += e.data.len() as u64;
                    out.push(e);
                }
            }
            drop(st);
            if large_from_disk {
                // A large read from disk: the next ones like it are queued now (see `read_ahead`).
                self.ahead.start(&self.ml, next, want, budget);
            }
            if served_ahead && !out.is_empty() {
                // The next read-ahead is queued; reading on here would wait for the disk.
                break;
            }
        }
        Ok(Some(out))
    }

    /// `autoSkipNonRecoverableData`: acknowledges a damaged entry and moves the read position
    /// past it, as Pulsar's cursor does with non-recoverable data.
    fn skip_damaged(&self, p: Position, epoch: u64, reason: &str) {
        tracing::error!(ledger = %self.ml.name(), cursor = %self.name, position = %p, reason, "skipping damaged entry (autoSkipNonRecoverableData)");
        self.delete(&[p]);
        let next = self.ml.next_valid_position(p);
        let mut st = self.state.lock();
        if st.epoch == epoch && st.read_position <= p {
            st.read_position = next;
        }
    }

    /// Waits for the read-ahead queued by the last read, if any, to end.
    #[cfg(test)]
    pub(crate) fn settle_read_ahead(&self) {
        self.ahead.settle();
    }

    /// Reads like [`Cursor::read_entries`], but if nothing is there, waits until an entry is added.
    ///
    /// # Errors
    /// As [`Cursor::read_entries`]; [`LedgerError::Closed`] if the ledger closes while waiting.
    pub async fn read_entries_or_wait(&self, n: usize) -> Result<Vec<Entry>> {
        self.read_entries_or_wait_bounded(n, u64::MAX).await
    }

    /// Like [`Cursor::read_entries_or_wait`] with a byte budget (at least one entry is read).
    ///
    /// # Errors
    /// As [`Cursor::read_entries_or_wait`].
    pub async fn read_entries_or_wait_bounded(
        &self,
        n: usize,
        max_bytes: u64,
    ) -> Result<Vec<Entry>> {
        loop {
            let notified = self.ml.new_entries.notified();
            tokio::pin!(notified);
            // Register before checking, so an append between the check and the wait is not lost.
            notified.as_mut().enable();
            let entries = self.read_entries_bounded(n, max_bytes, Position::LATEST)?;
            if !entries.is_empty() {
                return Ok(entries);
            }
            if self.ml.is_closed() {
                return Err(LedgerError::Closed {
                    what: format!("managed ledger {}", self.ml.name()),
                });
            }
            notified.await;
        }
    }

    /// Waits until entries are available, then reads them if they are cached: `Some` entries
    /// (never empty) from the cache, or `None` when the next read needs the disk and nothing
    /// was read — the caller then reads with [`Cursor::read_entries_bounded`] on a thread that
    /// may block. Cancelling this future loses nothing: entries are only taken synchronously.
    ///
    /// # Errors
    /// As [`Cursor::read_entries_or_wait`].
    pub async fn wait_and_read_cached(
        &self,
        n: usize,
        max_bytes: u64,
    ) -> Result<Option<Vec<Entry>>> {
        self.wait_and_read_cached_until(n, max_bytes, &|| Position::LATEST)
            .await
    }

    /// Like [`Cursor::wait_and_read_cached`], never past `max_position()`, evaluated before each
    /// read (a transaction buffer's max read position). When the bound moves without an
    /// append, the caller must wake itself: only appends end this wait.
    ///
    /// # Errors
    /// As [`Cursor::read_entries_or_wait`].
    pub async fn wait_and_read_cached_until(
        &self,
        n: usize,
        max_bytes: u64,
        max_position: &(dyn Fn() -> Position + Send + Sync),
    ) -> Result<Option<Vec<Entry>>> {
        loop {
            let notified = self.ml.new_entries.notified();
            tokio::pin!(notified);
            // Register before checking, so an append between the check and the wait is not lost.
            notified.as_mut().enable();
            match self.read_entries_cached(n, max_bytes, max_position())? {
                None => return Ok(None),
                Some(entries) if !entries.is_empty() => return Ok(Some(entries)),
                Some(_) => {}
            }
            if self.ml.is_closed() {
                return Err(LedgerError::Closed {
                    what: format!("managed ledger {}", self.ml.name()),
                });
            }
            notified.await;
        }
    }

    /// Whether entries are available beyond the read position.
    #[must_use]
    pub fn has_more_entries(&self) -> bool {
        self.read_position() <= self.ml.last_confirmed()
    }

    /// Acknowledges entries individually. Positions at or before mark-delete, or past the last
    /// confirmed entry, are ignored.
    pub fn delete(&self, positions: &[Position]) {
        let lac = self.ml.last_confirmed();
        let mut st = self.state.lock();
        for &p in positions {
            if p > st.mark_delete && p <= lac && p.entry_id >= 0 {
                st.acked.insert(p);
                st.batch_acks.remove(&p);
                st.dirty = true;
            }
        }
        st.advance(&self.ml);
    }

    /// Cumulative ack at `position` that also replaces the properties, in one persisted state
    /// (Pulsar's `asyncMarkDelete(position, properties)`; deduplication snapshots use it).
    ///
    /// # Errors
    /// [`LedgerError::InvalidPosition`] for a position past the last confirmed entry.
    pub fn mark_delete_with_properties(
        &self,
        position: Position,
        properties: BTreeMap<String, i64>,
    ) -> Result<()> {
        if position > self.ml.last_confirmed() {
            return Err(LedgerError::InvalidPosition {
                ledger: self.ml.name().into(),
                position,
            });
        }
        let mut st = self.state.lock();
        st.properties = properties;
        if position > st.mark_delete {
            st.mark_delete = position;
            st.advance(&self.ml);
        }
        st.dirty = true;
        Ok(())
    }

    /// Acknowledges everything up to and including `position` (cumulative ack).
    ///
    /// # Errors
    /// [`LedgerError::InvalidPosition`] for a position past the last confirmed entry.
    pub fn mark_delete(&self, position: Position) -> Result<()> {
        if position > self.ml.last_confirmed() {
            return Err(LedgerError::InvalidPosition {
                ledger: self.ml.name().into(),
                position,
            });
        }
        let mut st = self.state.lock();
        if position > st.mark_delete {
            st.mark_delete = position;
            st.dirty = true;
            st.advance(&self.ml);
        }
        Ok(())
    }

    /// Acknowledges some messages of a batch entry. `ack_set` is Pulsar's bitset with 1 = still
    /// unacknowledged; it is ANDed into the entry's state, and the entry is deleted once no bit is
    /// left. Returns true if the whole entry is now acknowledged.
    pub fn ack_batch_index(&self, position: Position, ack_set: &[u64]) -> bool {
        let mut st = self.state.lock();
        if position <= st.mark_delete || st.acked.contains(position) {
            return true;
        }
        let words = st
            .batch_acks
            .entry(position)
            .or_insert_with(|| ack_set.to_vec());
        for (w, a) in words
            .iter_mut()
            .zip(ack_set.iter().chain(std::iter::repeat(&0)))
        {
            *w &= *a;
        }
        st.dirty = true;
        if st
            .batch_acks
            .get(&position)
            .is_some_and(|w| w.iter().all(|x| *x == 0))
        {
            drop(st);
            self.delete(&[position]);
            return true;
        }
        false
    }

    /// The unacknowledged-bits bitset of a partially acknowledged batch entry.
    #[must_use]
    pub fn batch_ack_set(&self, position: Position) -> Option<Vec<u64>> {
        self.state.lock().batch_acks.get(&position).cloned()
    }

    /// Whether `position` is acknowledged (at or before mark-delete, or individually).
    #[must_use]
    pub fn is_acked(&self, position: Position) -> bool {
        let st = self.state.lock();
        position <= st.mark_delete || st.acked.contains(position)
    }

    /// Unacknowledged entries (Pulsar's backlog counts entries, not messages).
    #[must_use]
    pub fn backlog(&self) -> u64 {
        let st = self.state.lock();
        let lac = self.ml.last_confirmed();
        self.ml
            .count_entries(st.mark_delete, lac)
            .saturating_sub(st.acked.entry_count())
    }

    /// Estimated backlog size in bytes (DESIGN 2.4).
    #[must_use]
    pub fn estimated_backlog_size(&self) -> u64 {
        self.ml.estimated_backlog_size(self.mark_delete_position())
    }

    /// Ack holes as closed ranges of acknowledged entries after mark-delete.
    #[must_use]
    pub fn acked_ranges(&self) -> Vec<(Position, Position)> {
        let st = self.state.lock();
        st.acked
            .iter()
            .map(|(l, s, e)| (Position::new(l, s), Position::new(l, e)))
            .collect()
    }

    /// Number of individually acknowledged entries after mark-delete.
    #[must_use]
    pub fn acked_count(&self) -> u64 {
        self.state.lock().acked.entry_count()
    }

    /// Moves mark-delete forward over `n` unacknowledged entries (Pulsar's skip).
    pub fn skip_entries(&self, n: u64) {
        let mut st = self.state.lock();
        let lac = self.ml.last_confirmed();
        let mut left = n;
        let mut p = st.mark_delete;
        while left > 0 && p < lac {
            let next = self.ml.next_valid_position(p);
            if next > lac {
                break;
            }
            match st.acked.range_containing(next) {
                Some((_, end)) => p = end,
                None => {
                    p = next;
                    left -= 1;
                }
            }
        }
        if p > st.mark_delete {
            st.mark_delete = p;
            st.dirty = true;
            st.advance(&self.ml);
        }
    }

    /// The position of the `n`th (1-based) unacknowledged entry after mark-delete, skipping
    /// individually acknowledged ones (Pulsar's `getNthEntry` with `Exclude`, behind
    /// peek-messages); `None` when the backlog holds fewer than `n` entries.
    #[must_use]
    pub fn nth_unacked_position(&self, n: u64) -> Option<Position> {
        let st = self.state.lock();
        let lac = self.ml.last_confirmed();
        let mut left = n;
        let mut p = st.mark_delete;
        while left > 0 && p < lac {
            let next = self.ml.next_valid_position(p);
            if next > lac {
                break;
            }
            match st.acked.range_containing(next) {
                Some((_, end)) => p = end,
                None => {
                    left -= 1;
                    if left == 0 {
                        return Some(next);
                    }
                    p = next;
                }
            }
        }
        None
    }

    /// Acknowledges everything currently in the ledger (Pulsar's `skip_all` / clear backlog).
    pub fn skip_all(&self) {
        let lac = self.ml.last_confirmed();
        let _ = self.mark_delete(lac);
    }

    /// Resets the cursor so that the next entry read is `position`; everything before it counts
    /// as acknowledged and the holes are forgotten.
    pub fn reset(&self, position: Position) {
        // Past the end (Pulsar's LATEST = (i64::MAX, i64::MAX), or any position after the last
        // entry) means "just after the last entry", as `ManagedCursorImpl.resetCursor` does:
        // mark-delete becomes the last entry, not a position no entry will ever reach.
        let position = position.min(self.ml.end_position());
        let prev = self.ml.previous_position(position);
        let mut st = self.state.lock();
        st.mark_delete = prev;
        st.acked.clear();
        st.batch_acks.clear();
        st.read_position = self.ml.next_valid_position(prev);
        st.epoch += 1;
        st.dirty = true;
        drop(st);
        self.ahead.clear();
    }

    /// Resets to the first entry stamped at or after `timestamp_ms`.
    ///
    /// # Errors
    /// Storage I/O while searching.
    pub fn reset_by_time(&self, timestamp_ms: u64) -> Result<Position> {
        let p = self.ml.find_position_by_time(timestamp_ms)?;
        self.reset(p);
        Ok(p)
    }

    /// Moves the read position back to the first entry after mark-delete (redelivery).
    pub fn rewind(&self) {
        let mut st = self.state.lock();
        st.read_position = self.ml.next_valid_position(st.mark_delete);
        st.epoch += 1;
        drop(st);
        self.ahead.clear();
    }

    /// Moves the read position to `position` without touching acknowledgements.
    pub fn seek_read_position(&self, position: Position) {
        let mut st = self.state.lock();
        st.read_position = position.max(self.ml.next_valid_position(st.mark_delete));
        st.epoch += 1;
        drop(st);
        self.ahead.clear();
    }

    /// Sets a property (persisted with the cursor).
    pub fn set_property(&self, key: &str, value: i64) {
        let mut st = self.state.lock();
        st.properties.insert(key.to_owned(), value);
        st.dirty = true;
    }

    /// Removes a property (persisted with the cursor).
    pub fn remove_property(&self, key: &str) {
        let mut st = self.state.lock();
        if st.properties.remove(key).is_some() {
            st.dirty = true;
        }
    }

    /// The cursor's properties.
    #[must_use]
    pub fn properties(&self) -> BTreeMap<String, i64> {
        self.state.lock().properties.clone()
    }

    /// The persisted form of the current state.
    #[must_use]
    pub fn snapshot(&self) -> CursorSnapshot {
        let st = self.state.lock();
        CursorSnapshot {
            mark_delete: st.mark_delete,
            acked: st.acked.clone(),
            batch_acks: st.batch_acks.clone(),
            properties: st.properties.clone(),
        }
    }

    /// Persists the state if it changed (durable cursors only).
    ///
    /// # Errors
    /// Metadata store I/O; the state stays dirty and is retried next time.
    pub fn flush(&self) -> Result<()> {
        if !self.durable {
            return Ok(());
        }
        // Lock: see `flushing`; held across the metadata write on purpose.
        let _serial = self.flushing.lock();
        let (snapshot, version) = {
            let mut st = self.state.lock();
            if !st.dirty {
                return Ok(());
            }
            st.dirty = false;
            let s = CursorSnapshot {
                mark_delete: st.mark_delete,
                acked: st.acked.clone(),
                batch_acks: st.batch_acks.clone(),
                properties: st.properties.clone(),
            };
            (s, st.version)
        };
        // The write runs unlocked; acks that land meanwhile set `dirty` again.
        let written = match &self.ml.shared.backing {
            Some(b) => crate::managed_ledger::on_seam::store_cursor(
                b,
                self.ml.name(),
                &self.name,
                &snapshot,
                version,
                self.ml.shared.clock.now_ms(),
            )
            .map(Some),
            None => self
                .ml
                .shared
                .meta
                .put(&cursor_key(self.ml.name(), &self.name), &snapshot.encode())
                .map(|()| None),
        };
        match written {
            Ok(v) => {
                if v.is_some() {
                    self.state.lock().version = v;
                }
                Ok(())
            }
            Err(e) => {
                self.state.lock().dirty = true;
                Err(e)
            }
        }
    }

    pub(crate) fn mark_closed(&self) {
        let mut st = self.state.lock();
        if !st.closed {
            st.closed = true;
            if st.active {
                // Relaxed: the active count only steers caching.
                self.ml.active_cursors.fetch_sub(1, Ordering::Relaxed);
            }
        }
        drop(st);
        self.ahead.clear();
    }

    /// Persists and detaches the cursor from its ledger (a durable cursor's state is kept).
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn close(&self) -> Result<()> {
        let r = self.flush();
        self.mark_closed();
        self.ml.forget_cursor(&self.name);
        r
    }
}

impl State {
    /// Moves mark-delete over acknowledged entries right after it and keeps the invariants:
    /// holes and batch acks are all after mark-delete, the read position is after it.
    fn advance(&mut self, ml: &ManagedLedger) {
        self.acked.remove_up_to(self.mark_delete);
        loop {
            let next = ml.next_valid_position(self.mark_delete);
            match self.acked.range_containing(next) {
                Some((_, end)) => {
                    self.mark_delete = end;
                    self.acked.remove_up_to(end);
                }
                None => break,
            }
        }
        let keep = self.batch_acks.split_off(&self.mark_delete.next());
        self.batch_acks = keep;
        if self.read_position <= self.mark_delete {
            self.read_position = ml.next_valid_position(self.mark_delete);
        }
    }
}
