//! A managed ledger: one topic's append-only log, split into ledgers.
//!
//! Appends go to the current ledger and return the entry's [`Position`]; the ledger rolls over by
//! Pulsar's rules. An entry becomes visible to readers (the *last confirmed* position advances)
//! only once the journal has made it durable, in append order. Reads never pass the last confirmed
//! entry, skip deleted or empty ledgers, and are served from the entry cache when the whole range
//! is there. Ledgers consumed by every durable cursor are trimmed, subject to retention.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, Notify};

use crate::cache::LedgerEntries;
use crate::cursor::Cursor;
use crate::journal::{Completion, Loc};
use crate::storage::Shared;
use crate::{LedgerConfig, LedgerError, Position, Result};

/// Persisted description of one ledger.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct LedgerInfo {
    /// Ledger id.
    pub ledger_id: i64,
    /// Entries (final for closed ledgers; confirmed so far for the current one in stats).
    pub entries: u64,
    /// Payload bytes (same rule as `entries`).
    pub size: u64,
    /// Creation time, ms since epoch.
    pub created_ms: u64,
    /// Close time, ms since epoch; `None` while it is the current ledger.
    pub closed_ms: Option<u64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ManagedLedgerInfo {
    ledgers: Vec<LedgerInfo>,
    #[serde(default)]
    properties: BTreeMap<String, String>,
}

/// One entry read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Where it lives.
    pub position: Position,
    /// The stored bytes (shared with the cache; never copied to serve a hit).
    pub data: Bytes,
}

/// Counters and shape of a managed ledger, for stats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LedgerStats {
    /// Entries appended (and confirmed) since this process opened it.
    pub entries_added: u64,
    /// Confirmed entries currently stored.
    pub number_of_entries: u64,
    /// Confirmed payload bytes currently stored.
    pub total_size: u64,
    /// Number of ledgers.
    pub ledger_count: usize,
    /// Id of the ledger receiving appends.
    pub current_ledger_id: i64,
    /// Confirmed entries of the current ledger.
    pub current_ledger_entries: u64,
    /// Confirmed bytes of the current ledger.
    pub current_ledger_size: u64,
    /// Last entry readers may see.
    pub last_confirmed: Position,
    /// Number of open cursors (durable and not).
    pub cursor_count: usize,
}

pub(crate) struct Slot {
    pub info: LedgerInfo,
    /// Journal locations of every appended entry (confirmed or not), by entry id.
    pub locs: Vec<Loc>,
    /// Payload bytes of every appended entry (confirmed or not): the rollover size check, O(1).
    pub appended_size: u64,
    /// Entries confirmed durable, a prefix of `locs`.
    pub confirmed: u64,
    /// Bytes of the confirmed entries.
    pub confirmed_size: u64,
    /// First entry whose write failed: the ledger is fenced there.
    pub failed_at: Option<u64>,
}

pub(crate) struct State {
    pub ledgers: BTreeMap<i64, Slot>,
    pub current: i64,
    pub last_confirmed: Position,
    pub entries_added: u64,
    pub closed: bool,
    pub properties: BTreeMap<String, String>,
    /// The current ledger was recovered from the last run: roll over before the next append.
    pub roll_before_append: bool,
}

/// A managed ledger. Obtain one from [`crate::Storage::open_ledger`].
pub struct ManagedLedger {
    /// The name (Pulsar: `tenant/namespace/persistent/topic`); immutable.
    name: String,
    /// Rollover and retention settings; immutable.
    config: LedgerConfig,
    /// Journal, cache, metadata store and clock shared across the data directory.
    pub(crate) shared: Arc<Shared>,
    /// Ledger list and positions. Lock order: a cursor's lock may be held while taking this one;
    /// never take a cursor lock while holding it.
    pub(crate) state: Mutex<State>,
    /// Open cursors by name. Taken alone or before `state`.
    pub(crate) cursors: Mutex<BTreeMap<String, Arc<Cursor>>>,
    /// Cursors that count as active for caching; updated by cursors.
    pub(crate) active_cursors: AtomicUsize,
    /// This ledger's slice of the entry cache.
    pub(crate) cache: Arc<LedgerEntries>,
    /// Woken when the last confirmed position advances (read-or-wait) or the ledger closes.
    pub(crate) new_entries: Notify,
    /// Retention time in ms (−1 = forever); starts from the config, changed by policies.
    /// Relaxed: read by trimming only; a stale value delays one trim pass at most.
    retention_time_ms: std::sync::atomic::AtomicI64,
    /// Retention size in bytes (−1 = unlimited); same rules as `retention_time_ms`.
    retention_size_bytes: std::sync::atomic::AtomicI64,
}

fn info_key(name: &str) -> String {
    crate::metastore::child_key(crate::metastore::MANAGED_LEDGERS_PREFIX, name)
}

impl ManagedLedger {
    pub(crate) fn open(name: &str, config: LedgerConfig, shared: Arc<Shared>) -> Result<Arc<Self>> {
        config.validate()?;
        if name.is_empty() || name.len() > 1024 || name.chars().any(char::is_control) {
            return Err(LedgerError::InvalidName {
                name: name.into(),
                reason: "empty, too long or has control chars",
            });
        }
        let key = info_key(name);
        let info: ManagedLedgerInfo = match shared.meta.get(&key)? {
            Some(raw) => {
                serde_json::from_slice(&raw).map_err(|e| LedgerError::CorruptMetadata {
                    key: key.clone(),
                    reason: e.to_string(),
                })?
            }
            None => ManagedLedgerInfo::default(),
        };
        let now = shared.clock.now_ms();
        let mut ledgers = BTreeMap::new();
        for li in info.ledgers {
            let slot = recover_slot(name, li, &shared);
            ledgers.insert(slot.info.ledger_id, slot);
        }
        let last_confirmed = ledgers
            .iter()
            .rev()
            .find(|(_, s)| s.confirmed > 0)
            .map(|(id, s)| Position::new(*id, s.confirmed as i64 - 1));
        let retention = (config.retention_time_ms, config.retention_size_bytes);
        let ml = Arc::new(ManagedLedger {
            name: name.to_owned(),
            config,
            cache: shared.cache.ledger(),
            shared,
            state: Mutex::new(State {
                ledgers,
                current: -1,
                last_confirmed: last_confirmed.unwrap_or(Position::EARLIEST),
                entries_added: 0,
                closed: false,
                properties: info.properties,
                roll_before_append: false,
            }),
            cursors: Mutex::new(BTreeMap::new()),
            active_cursors: AtomicUsize::new(0),
            new_entries: Notify::new(),
            retention_time_ms: std::sync::atomic::AtomicI64::new(retention.0),
            retention_size_bytes: std::sync::atomic::AtomicI64::new(retention.1),
        });
        {
            let mut st = ml.state.lock();
            // Like Pulsar, the ledger that was open at the last stop is not appended to again:
            // the first append after recovery closes it and opens a new one. Until then nothing
            // is written, so opening (say, to export or inspect a data directory) leaves the
            // metadata as it was, and opening 10 000 topics costs no metadata writes.
            let last = st
                .ledgers
                .iter()
                .next_back()
                .map(|(id, s)| (*id, s.locs.is_empty()));
            let mut created = false;
            match last {
                Some((id, true)) => st.current = id,
                Some((id, false)) => {
                    st.current = id;
                    st.roll_before_append = true;
                }
                None => {
                    ml.create_ledger(&mut st, now)?;
                    created = true;
                }
            }
            if last_confirmed.is_none() {
                st.last_confirmed = Position::new(st.current, -1);
            }
            if created {
                ml.persist(&st)?;
            }
        }
        // Recover every durable cursor now, as Pulsar does: trimming must respect them even
        // before anyone attaches. They stay inactive (not pinning the cache) until opened.
        for cursor_name in ml.persisted_cursor_names()? {
            let c = Cursor::open_durable(Arc::clone(&ml), &cursor_name, Position::EARLIEST)?;
            c.set_active(false);
            ml.cursors.lock().insert(cursor_name, c);
        }
        Ok(ml)
    }

    /// The managed ledger's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its settings.
    #[must_use]
    pub fn config(&self) -> &LedgerConfig {
        &self.config
    }

    /// Changes the retention (time in ms, size in bytes; −1 = unlimited), e.g. from a policy.
    pub fn set_retention(&self, time_ms: i64, size_bytes: i64) {
        // Relaxed: see the fields.
        self.retention_time_ms.store(time_ms, Ordering::Relaxed);
        self.retention_size_bytes
            .store(size_bytes, Ordering::Relaxed);
    }

    /// Current retention (time in ms, size in bytes).
    #[must_use]
    pub fn retention(&self) -> (i64, i64) {
        (
            self.retention_time_ms.load(Ordering::Relaxed),
            self.retention_size_bytes.load(Ordering::Relaxed),
        )
    }

    fn create_ledger(&self, st: &mut State, now: u64) -> Result<()> {
        let id = self.shared.next_ledger_id()?;
        st.ledgers.insert(
            id,
            Slot {
                info: LedgerInfo {
                    ledger_id: id,
                    entries: 0,
                    size: 0,
                    created_ms: now,
                    closed_ms: None,
                },
                locs: Vec::new(),
                appended_size: 0,
                confirmed: 0,
                confirmed_size: 0,
                failed_at: None,
            },
        );
        st.current = id;
        Ok(())
    }

    fn persist(&self, st: &State) -> Result<()> {
        let info = ManagedLedgerInfo {
            ledgers: st.ledgers.values().map(|s| s.info.clone()).collect(),
            properties: st.properties.clone(),
        };
        let raw = serde_json::to_vec(&info).map_err(|e| LedgerError::CorruptMetadata {
            key: info_key(&self.name),
            reason: format!("cannot encode: {e}"),
        })?;
        self.shared.meta.put(&info_key(&self.name), &raw)
    }

    fn needs_rollover(&self, slot: &Slot, now: u64) -> bool {
        if slot.failed_at.is_some() {
            return true;
        }
        if slot.locs.is_empty() {
            return false;
        }
        let age = now.saturating_sub(slot.info.created_ms);
        let full = slot.locs.len() as u64 >= self.config.max_entries_per_ledger
            || slot.appended_size >= self.config.max_size_per_ledger_bytes
            || u128::from(age) >= self.config.max_rollover_time.as_millis();
        full && u128::from(age) >= self.config.min_rollover_time.as_millis()
    }

    /// Closes the current ledger and opens a new one. Caller holds the state lock.
    fn rollover(&self, st: &mut State, now: u64) -> Result<()> {
        let cur = st.current;
        if let Some(slot) = st.ledgers.get_mut(&cur) {
            let n = slot.failed_at.unwrap_or(slot.locs.len() as u64);
            slot.info.entries = n;
            slot.info.size = slot
                .locs
                .iter()
                .take(n as usize)
                .map(|l| u64::from(l.len))
                .sum();
            slot.info.closed_ms = Some(now);
        }
        self.create_ledger(st, now)?;
        if let Err(e) = self.persist(st) {
            // Could not record the switch: undo it and keep appending to the old ledger if it
            // is still healthy. The append that triggered us fails with this error.
            let new = st.current;
            st.ledgers.remove(&new);
            st.current = cur;
            if let Some(slot) = st.ledgers.get_mut(&cur) {
                slot.info.closed_ms = None;
            }
            return Err(e);
        }
        tracing::debug!(ledger = %self.name, closed = cur, opened = st.current, "rolled over");
        Ok(())
    }

    /// Appends an entry and waits until it is durable (or written, in non-durable mode).
    ///
    /// # Errors
    /// The ledger is closed, metadata could not be written, or the journal write failed (for
    /// example a full disk). A failed append is never acknowledged and never becomes readable.
    pub async fn add_entry(self: &Arc<Self>, data: Bytes) -> Result<Position> {
        let ts = self.shared.clock.now_ms();
        self.add_entry_with_time(data, ts).await
    }

    /// Like [`ManagedLedger::add_entry`] with an explicit timestamp (used for publish-time seeks).
    ///
    /// # Errors
    /// As [`ManagedLedger::add_entry`].
    pub async fn add_entry_with_time(
        self: &Arc<Self>,
        data: Bytes,
        timestamp: u64,
    ) -> Result<Position> {
        match self.start_add(data, timestamp)? {
            (pos, None) => Ok(pos),
            (pos, Some(rx)) => {
                rx.await.map_err(|_| LedgerError::Closed {
                    what: "journal".into(),
                })??;
                Ok(pos)
            }
        }
    }

    /// Blocking variant for callers outside an async runtime (the Python bindings).
    ///
    /// # Errors
    /// As [`ManagedLedger::add_entry`].
    pub fn add_entry_blocking(self: &Arc<Self>, data: Bytes) -> Result<Position> {
        let ts = self.shared.clock.now_ms();
        match self.start_add(data, ts)? {
            (pos, None) => Ok(pos),
            (pos, Some(rx)) => {
                rx.blocking_recv().map_err(|_| LedgerError::Closed {
                    what: "journal".into(),
                })??;
                Ok(pos)
            }
        }
    }

    /// Queues an append; returns its position and, in durable mode, the completion to wait for.
    ///
    /// # Errors
    /// As [`ManagedLedger::add_entry`].
    pub fn start_add(
        self: &Arc<Self>,
        data: Bytes,
        timestamp: u64,
    ) -> Result<(Position, Option<oneshot::Receiver<Result<()>>>)> {
        let now = self.shared.clock.now_ms();
        let durable = self.shared.journal.is_durable();
        let mut st = self.state.lock();
        if st.closed {
            return Err(LedgerError::Closed {
                what: format!("managed ledger {}", self.name),
            });
        }
        let needs = st.roll_before_append
            || st
                .ledgers
                .get(&st.current)
                .is_some_and(|s| self.needs_rollover(s, now));
        if needs {
            self.rollover(&mut st, now)?;
            st.roll_before_append = false;
        }
        let ledger = st.current;
        let slot = st
            .ledgers
            .get_mut(&ledger)
            .ok_or_else(|| LedgerError::Closed {
                what: "current ledger".into(),
            })?;
        let pos = Position::new(ledger, slot.locs.len() as i64);
        let len = data.len() as u64;
        // Non-durable appends normally complete at once; when the journal has too many unwritten
        // bytes they wait for the write like durable ones, so memory stays bounded.
        let wait_for_write = durable || self.shared.journal.backlogged();
        let (completion, rx): (Option<Completion>, _) = if wait_for_write {
            let (tx, rx) = oneshot::channel();
            let ml = Arc::clone(self);
            let cb: Completion = Box::new(move |res| {
                let res = res.and_then(|()| ml.confirm(pos, len));
                if let Err(e) = &res {
                    ml.fail(pos, e);
                }
                let _ = tx.send(res);
            });
            (Some(cb), Some(rx))
        } else {
            (None, None)
        };
        let loc = self
            .shared
            .journal
            .append(ledger, pos.entry_id, timestamp, &data, completion)?;
        slot.locs.push(loc);
        slot.appended_size += len;
        if self.active_cursors.load(Ordering::Relaxed) > 0 {
            // Relaxed: a stale count only costs one cache insert or miss.
            self.cache.insert(pos, data, now);
        }
        if !wait_for_write {
            Self::confirm_locked(&mut st, pos, len);
            drop(st);
            self.new_entries.notify_waiters();
        }
        Ok((pos, rx))
    }

    fn confirm_locked(st: &mut State, pos: Position, len: u64) {
        if let Some(slot) = st.ledgers.get_mut(&pos.ledger_id) {
            slot.confirmed += 1;
            slot.confirmed_size += len;
        }
        // Durable confirmations arrive in append order. In non-durable mode an append that
        // waited for a backlogged journal may confirm after later ones: never move backwards.
        if pos > st.last_confirmed {
            st.last_confirmed = pos;
        }
        st.entries_added += 1;
    }

    /// Runs on the journal flusher once `pos` is durable.
    fn confirm(&self, pos: Position, len: u64) -> Result<()> {
        let mut st = self.state.lock();
        let fenced = st
            .ledgers
            .get(&pos.ledger_id)
            .and_then(|s| s.failed_at)
            .is_some_and(|f| pos.entry_id as u64 >= f);
        if fenced {
            return Err(LedgerError::Closed {
                what: format!("ledger {} (fenced after a failed write)", pos.ledger_id),
            });
        }
        Self::confirm_locked(&mut st, pos, len);
        drop(st);
        self.new_entries.notify_waiters();
        Ok(())
    }

    /// Runs on the journal flusher when `pos` could not be made durable: fence its ledger there.
    fn fail(&self, pos: Position, err: &LedgerError) {
        let mut st = self.state.lock();
        if let Some(slot) = st.ledgers.get_mut(&pos.ledger_id) {
            let at = pos.entry_id as u64;
            if slot.failed_at.is_none_or(|f| at < f) {
                tracing::warn!(ledger = %self.name, position = %pos, error = %err, "append failed; fencing ledger");
                slot.failed_at = Some(at);
                if slot.info.closed_ms.is_some() {
                    slot.info.entries = slot.info.entries.min(at);
                }
            }
        }
    }

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
        let (start, locs) = {
            let st = self.state.lock();
            let Some(start) = Self::normalize(&st, from) else {
                return Ok(Vec::new());
            };
            if start > max_position || max_entries == 0 {
                return Ok(Vec::new());
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
                let l = slot.locs[end as usize].len;
                let l = if l == crate::journal::CORRUPT_LEN {
                    0
                } else {
                    u64::from(l)
                };
                if end > start.entry_id && bytes + l > max_bytes {
                    break;
                }
                bytes += l;
                end += 1;
            }
            (
                start,
                slot.locs[start.entry_id as usize..end as usize].to_vec(),
            )
        };
        let to = Position::new(start.ledger_id, start.entry_id + locs.len() as i64 - 1);
        if let Some(hit) = self.cache.get_range(start, to) {
            return Ok(hit
                .into_iter()
                .map(|(position, data)| Entry { position, data })
                .collect());
        }
        let records = self
            .shared
            .journal
            .read(start.ledger_id, start.entry_id, &locs)?;
        let bytes: u64 = records.iter().map(|r| r.payload.len() as u64).sum();
        self.shared.cache.record_miss(records.len() as u64, bytes);
        Ok(records
            .into_iter()
            .enumerate()
            .map(|(i, r)| Entry {
                position: Position::new(start.ledger_id, start.entry_id + i as i64),
                data: r.payload,
            })
            .collect())
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
        let slots: Vec<(i64, Vec<Loc>)> = {
            let st = self.state.lock();
            st.ledgers
                .iter()
                .map(|(id, s)| (*id, s.locs[..s.confirmed as usize].to_vec()))
                .collect()
        };
        let read_ts = |id: i64, i: usize, locs: &[Loc]| {
            self.shared.journal.read_timestamp(id, i as i64, locs[i])
        };
        for (id, locs) in &slots {
            if locs.is_empty() || read_ts(*id, locs.len() - 1, locs)? < ts {
                continue;
            }
            let (mut lo, mut hi) = (0usize, locs.len() - 1);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if read_ts(*id, mid, locs)? >= ts {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            return Ok(Position::new(*id, lo as i64));
        }
        Ok(self.end_position())
    }

    /// Opens (or returns the already open) durable cursor `name`, recovering its persisted state.
    /// A new cursor starts at the end (Pulsar's `Latest`).
    ///
    /// # Errors
    /// A corrupt persisted state or an invalid name.
    pub fn open_cursor(self: &Arc<Self>, name: &str) -> Result<Arc<Cursor>> {
        self.open_cursor_at(name, false)
    }

    /// Opens a durable cursor; a new one starts at the first entry if `earliest`, else at the end.
    ///
    /// # Errors
    /// As [`ManagedLedger::open_cursor`].
    pub fn open_cursor_at(self: &Arc<Self>, name: &str, earliest: bool) -> Result<Arc<Cursor>> {
        if let Some(c) = self.cursors.lock().get(name) {
            c.set_active(true);
            return Ok(Arc::clone(c));
        }
        let start = if earliest {
            self.first_position()
        } else {
            self.last_confirmed()
        };
        let cursor = Cursor::open_durable(Arc::clone(self), name, start)?;
        let mut cursors = self.cursors.lock();
        Ok(Arc::clone(cursors.entry(name.to_owned()).or_insert(cursor)))
    }

    /// Opens a non-durable cursor (for readers) whose mark-delete is `start`: reading begins at
    /// the entry after it. It is not persisted and does not hold back trimming.
    ///
    /// As Pulsar's `newNonDurableCursor`: if a cursor of that name is already open (durable or
    /// not) it is returned as it is and `start` is ignored, so a reader never displaces a durable
    /// cursor (whose place holds back trimming) nor a reader cursor that was just reset.
    #[must_use]
    pub fn open_non_durable_cursor(self: &Arc<Self>, name: &str, start: Position) -> Arc<Cursor> {
        if let Some(c) = self.cursors.lock().get(name) {
            return Arc::clone(c);
        }
        let cursor = Cursor::new_non_durable(Arc::clone(self), name, start);
        let mut cursors = self.cursors.lock();
        let kept = Arc::clone(cursors.entry(name.to_owned()).or_insert(cursor.clone()));
        drop(cursors);
        if !Arc::ptr_eq(&kept, &cursor) {
            cursor.mark_closed(); // lost a race with another open of the same name
        }
        kept
    }

    /// Names of the durable cursors persisted for this ledger (open or not).
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn persisted_cursor_names(&self) -> Result<Vec<String>> {
        let prefix = crate::cursor::cursor_prefix(&self.name);
        Ok(self
            .shared
            .meta
            .list(&prefix)?
            .iter()
            .map(|k| crate::metastore::key_name(k))
            .collect())
    }

    /// Open cursors.
    #[must_use]
    pub fn cursors(&self) -> Vec<Arc<Cursor>> {
        self.cursors.lock().values().cloned().collect()
    }

    /// Closes and deletes a cursor, including its persisted state.
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn delete_cursor(&self, name: &str) -> Result<()> {
        let c = self.cursors.lock().remove(name);
        if let Some(c) = c {
            c.mark_closed();
        }
        self.shared
            .meta
            .delete(&crate::cursor::cursor_key(&self.name, name))?;
        self.trim_consumed_ledgers()
    }

    pub(crate) fn forget_cursor(&self, name: &str) {
        self.cursors.lock().remove(name);
    }

    /// Deletes ledgers consumed by every durable cursor (all ledgers but the current one when
    /// there is none), subject to the retention settings.
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn trim_consumed_ledgers(&self) -> Result<()> {
        let slowest = self
            .cursors()
            .iter()
            .filter(|c| c.is_durable())
            .map(|c| c.mark_delete_position())
            .min();
        let now = self.shared.clock.now_ms();
        let mut st = self.state.lock();
        let slowest = slowest.unwrap_or(st.last_confirmed);
        let (rt, rs) = (
            self.retention_time_ms.load(Ordering::Relaxed),
            self.retention_size_bytes.load(Ordering::Relaxed),
        );
        if rt < 0 && rs < 0 {
            return Ok(());
        }
        let mut remaining: u64 = st.ledgers.values().map(|s| s.confirmed_size).sum();
        let mut doomed = Vec::new();
        for (&id, slot) in &st.ledgers {
            // Only closed ledgers whose appends have all settled can go, oldest first.
            let settled = slot.info.closed_ms.is_some() && slot.confirmed >= slot.info.entries;
            let consumed = id < slowest.ledger_id
                || (id == slowest.ledger_id && slowest.entry_id + 1 >= slot.confirmed as i64);
            if id == st.current || !settled || !consumed {
                break;
            }
            let over_size = rs >= 0 && remaining > rs as u64;
            let expired =
                rt >= 0 && now.saturating_sub(slot.info.closed_ms.unwrap_or(now)) >= rt as u64;
            if !(over_size || expired) {
                break;
            }
            remaining -= slot.confirmed_size;
            doomed.push(id);
        }
        if doomed.is_empty() {
            return Ok(());
        }
        let removed: Vec<Slot> = doomed
            .iter()
            .filter_map(|id| st.ledgers.remove(id))
            .collect();
        if let Err(e) = self.persist(&st) {
            for s in removed {
                st.ledgers.insert(s.info.ledger_id, s);
            }
            return Err(e);
        }
        let first_kept = st.ledgers.keys().next().copied().unwrap_or(st.current);
        drop(st);
        self.cache.evict_before(Position::new(first_kept, 0));
        for id in &doomed {
            self.shared.journal.release_ledger(*id);
        }
        tracing::debug!(ledger = %self.name, deleted = ?doomed, "trimmed consumed ledgers");
        Ok(())
    }

    /// Every ledger with its confirmed entries and size.
    #[must_use]
    pub fn ledgers(&self) -> Vec<LedgerInfo> {
        let st = self.state.lock();
        st.ledgers
            .values()
            .map(|s| LedgerInfo {
                entries: s.confirmed,
                size: s.confirmed_size,
                ..s.info.clone()
            })
            .collect()
    }

    /// Current counters.
    #[must_use]
    pub fn stats(&self) -> LedgerStats {
        let cursor_count = self.cursors.lock().len();
        let st = self.state.lock();
        let cur = st.ledgers.get(&st.current);
        LedgerStats {
            entries_added: st.entries_added,
            number_of_entries: st.ledgers.values().map(|s| s.confirmed).sum(),
            total_size: st.ledgers.values().map(|s| s.confirmed_size).sum(),
            ledger_count: st.ledgers.len(),
            current_ledger_id: st.current,
            current_ledger_entries: cur.map_or(0, |s| s.confirmed),
            current_ledger_size: cur.map_or(0, |s| s.confirmed_size),
            last_confirmed: st.last_confirmed,
            cursor_count,
        }
    }

    /// Periodic upkeep: persist dirty cursors, drop cache entries every active reader has passed,
    /// trim consumed ledgers.
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn housekeeping(&self) -> Result<()> {
        let cursors = self.cursors();
        for c in cursors.iter().filter(|c| c.is_durable()) {
            c.flush()?;
        }
        match cursors
            .iter()
            .filter(|c| c.is_active())
            .map(|c| c.read_position())
            .min()
        {
            Some(p) => self.cache.evict_before(p),
            None => self.cache.clear(),
        }
        self.trim_consumed_ledgers()
    }

    /// Persists cursors and closes the ledger; pending reads are woken with an error.
    ///
    /// # Errors
    /// Metadata store I/O while persisting cursors.
    pub fn close(&self) -> Result<()> {
        let cursors: Vec<Arc<Cursor>> = std::mem::take(&mut *self.cursors.lock())
            .into_values()
            .collect();
        let mut first_err = None;
        for c in &cursors {
            if c.is_durable() {
                if let Err(e) = c.flush() {
                    first_err.get_or_insert(e);
                }
            }
            c.mark_closed();
        }
        self.state.lock().closed = true;
        self.cache.clear();
        self.new_entries.notify_waiters();
        self.shared.forget(&self.name);
        first_err.map_or(Ok(()), Err)
    }

    /// Whether the ledger was closed.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Deletes the managed ledger: its cursors, ledgers and metadata.
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn delete(&self) -> Result<()> {
        for name in self.persisted_cursor_names()? {
            self.shared
                .meta
                .delete(&crate::cursor::cursor_key(&self.name, &name))?;
        }
        let _ = self.close();
        let ids: Vec<i64> = self.state.lock().ledgers.keys().copied().collect();
        self.shared.meta.delete(&info_key(&self.name))?;
        for id in ids {
            self.shared.journal.release_ledger(id);
        }
        Ok(())
    }

    /// Sets a ledger property (persisted).
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn set_property(&self, key: &str, value: &str) -> Result<()> {
        let mut st = self.state.lock();
        st.properties.insert(key.into(), value.into());
        self.persist(&st)
    }

    /// Ledger properties.
    #[must_use]
    pub fn properties(&self) -> BTreeMap<String, String> {
        self.state.lock().properties.clone()
    }
}

/// Rebuilds one ledger's entry index from what the journal scan found.
fn recover_slot(name: &str, info: LedgerInfo, shared: &Shared) -> Slot {
    let mut found = shared.take_recovered(info.ledger_id);
    found.sort_by_key(|(e, _)| *e);
    found.dedup_by_key(|(e, _)| *e);
    let limit = if info.closed_ms.is_some() {
        info.entries
    } else {
        u64::MAX
    };
    let mut locs: Vec<Loc> = Vec::with_capacity(found.len());
    for (entry, loc) in found {
        if entry < 0 || entry as u64 >= limit {
            continue;
        }
        while (locs.len() as i64) < entry {
            // A hole in the middle: refuse to serve it rather than skip it silently.
            tracing::error!(ledger = %name, ledger_id = info.ledger_id, entry = locs.len(), "entry missing from the journal; it will fail on read");
            locs.push(Loc {
                segment: u32::MAX,
                len: crate::journal::CORRUPT_LEN,
                offset: 0,
            });
        }
        locs.push(loc);
    }
    if info.closed_ms.is_some() && (locs.len() as u64) < info.entries {
        tracing::error!(ledger = %name, ledger_id = info.ledger_id, expected = info.entries, found = locs.len(), "closed ledger is missing entries at its end");
    }
    let size = locs
        .iter()
        .filter(|l| l.len != crate::journal::CORRUPT_LEN)
        .map(|l| u64::from(l.len))
        .sum();
    let n = locs.len() as u64;
    Slot {
        info: LedgerInfo {
            entries: n,
            size,
            ..info
        },
        locs,
        appended_size: size,
        confirmed: n,
        confirmed_size: size,
        failed_at: None,
    }
}
