//! [`SeamManagedLedger`]: Pulsar's managed ledger written only against the ledger-storage seam,
//! so it runs unchanged on the local journal and on BookKeeper.
//!
//! As Pulsar's `ManagedLedgerImpl` does:
//! * **open** reads the ledger list ([`ManagedLedgerInfo`] at `/managed-ledgers/{name}`, created
//!   empty if missing), opens the last ledger with *recovery* (which fences its previous writer and
//!   closes it at its last durable entry), records that ledger's entries and size, drops it if
//!   empty, creates a new ledger and compare-and-sets the list at the version it read;
//! * **append** goes to the current ledger; the entry is acknowledged once the storage says it and
//!   every earlier one are durable;
//! * **rollover** after `max_entries_per_ledger` entries (or when the ledger failed): close it,
//!   create the next, compare-and-set the list;
//! * **trimming** deletes the closed ledgers every cursor (open or only recorded) has consumed:
//!   the list without them is compare-and-set first, then the ledgers are deleted from the storage
//!   (no retention policy yet: a consumed ledger goes at the next trim, as with Pulsar's default
//!   retention of 0);
//! * any version conflict on the list, or a fenced ledger, means another owner took over: the
//!   managed ledger becomes *fenced* and every later append fails with [`LedgerError::Fenced`].

pub mod seam_cursor;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use prost::Message;
use pulsar_rs_ledger::seam::formats::{
    KeyValue, LedgerInfo, ManagedLedgerInfo, NestedPositionInfo,
};
use pulsar_rs_ledger::seam::{
    managed_ledger_path, LedgerStorage, ReadLedger, Version, VersionedStore, WriteLedger,
};
use pulsar_rs_ledger::{Clock, Entry, LedgerError, Position, Result};

pub use self::seam_cursor::SeamCursor;

/// Settings of a [`SeamManagedLedger`] (Pulsar's names in the docs).
#[derive(Clone, Debug)]
pub struct SeamLedgerConfig {
    /// `managedLedgerMaxEntriesPerLedger`: entries after which the ledger rolls over.
    pub max_entries_per_ledger: u64,
}

impl Default for SeamLedgerConfig {
    fn default() -> Self {
        SeamLedgerConfig {
            max_entries_per_ledger: 50_000,
        }
    }
}

/// A managed ledger over a [`LedgerStorage`] and a [`VersionedStore`].
pub struct SeamManagedLedger {
    /// `tenant/namespace/persistent/topic`; immutable.
    name: String,
    /// `/managed-ledgers/{name}`; immutable.
    path: String,
    /// Where the ledgers live; shared.
    pub(crate) storage: Arc<dyn LedgerStorage>,
    /// Where the ledger list and the cursors live; shared.
    pub(crate) store: Arc<dyn VersionedStore>,
    /// The one clock.
    clock: Arc<dyn Clock>,
    /// Settings; immutable.
    config: SeamLedgerConfig,
    /// Ledger list, current writer and positions. Lock: bookkeeping only, never across an
    /// `.await` (appends are queued under it, which only queues).
    state: Mutex<MlState>,
    /// Serialises rollovers (each closes a ledger, creates one and writes the list, awaiting the
    /// storage): an async mutex, the one lock held across `.await`, and only by rollovers, so an
    /// appender waits for it only when the ledger it would append to is full or failed.
    roll: tokio::sync::Mutex<()>,
    /// Open cursors by name. Lock: map lookups and inserts only; taken alone.
    cursors: Mutex<BTreeMap<String, Arc<SeamCursor>>>,
}

struct MlState {
    /// Every ledger, oldest first, as recorded (the current one with no entries/size yet).
    ledgers: BTreeMap<i64, LedgerInfo>,
    /// The list's version in the store.
    version: Version,
    /// The ledger receiving appends.
    writer: Arc<dyn WriteLedger>,
    /// Entries queued to `writer` (confirmed or not).
    appended: u64,
    /// `writer` failed an append: roll over before the next one.
    writer_failed: bool,
    /// Last entry readers may see.
    last_confirmed: Position,
    /// Another owner took over.
    fenced: bool,
    /// Closed by its owner.
    closed: bool,
    /// Set once the managed ledger is terminated (by Pulsar): no more appends. Kept in the list.
    terminated: Option<NestedPositionInfo>,
    /// The managed ledger's properties, kept in the list as they were read.
    properties: Vec<KeyValue>,
    /// Read handles of closed ledgers by id, opened on first read.
    readers: HashMap<i64, Arc<dyn ReadLedger>>,
}

fn fenced_on_conflict(e: LedgerError, name: &str) -> LedgerError {
    match e {
        LedgerError::BadVersion { .. } | LedgerError::Fenced { .. } => LedgerError::Fenced {
            what: format!("managed ledger {name}"),
        },
        e => e,
    }
}

fn decode_info(path: &str, raw: &[u8]) -> Result<ManagedLedgerInfo> {
    ManagedLedgerInfo::decode(raw).map_err(|e| LedgerError::CorruptMetadata {
        key: path.to_owned(),
        reason: e.to_string(),
    })
}

impl SeamManagedLedger {
    /// Opens (creating) the managed ledger `name` as a new owner: see the module docs.
    ///
    /// # Errors
    /// Storage failures, a corrupt record, or [`LedgerError::Fenced`] when another owner changed
    /// the list meanwhile.
    pub async fn open(
        name: &str,
        storage: Arc<dyn LedgerStorage>,
        store: Arc<dyn VersionedStore>,
        clock: Arc<dyn Clock>,
        config: SeamLedgerConfig,
    ) -> Result<Arc<SeamManagedLedger>> {
        if config.max_entries_per_ledger == 0 {
            return Err(LedgerError::InvalidConfig {
                key: "managedLedgerMaxEntriesPerLedger",
                reason: "must be at least 1".into(),
            });
        }
        let path = managed_ledger_path(name);
        let (mut info, version) = match store.get(&path).await? {
            Some((raw, v)) => (decode_info(&path, &raw)?, v),
            None => {
                let empty = ManagedLedgerInfo::default();
                let v = store
                    .put(&path, empty.encode_to_vec(), None)
                    .await
                    .map_err(|e| fenced_on_conflict(e, name))?;
                (empty, v)
            }
        };
        let now = clock.now_ms() as i64;
        let mut dropped = None;
        if let Some(last) = info.ledger_info.last_mut() {
            // The recovery open fences the previous owner's writer on this ledger.
            let r = storage.open_ledger(last.ledger_id, true).await?;
            let entries = r.last_entry_id().unwrap_or(-1) + 1;
            last.entries = Some(entries);
            last.size = Some(r.length() as i64);
            if last.timestamp.unwrap_or(0) == 0 {
                last.timestamp = Some(now);
            }
            if entries == 0 {
                dropped = Some(last.ledger_id);
            }
        }
        if let Some(id) = dropped {
            info.ledger_info.pop();
            tracing::debug!(
                ledger = name,
                ledger_id = id,
                "dropping the empty recovered ledger"
            );
        }
        let writer = storage.create_ledger(name, None).await?;
        info.ledger_info.push(LedgerInfo {
            ledger_id: writer.id(),
            entries: None,
            size: None,
            timestamp: Some(0),
            offload_context: None,
        });
        let version = match store.put(&path, info.encode_to_vec(), Some(version)).await {
            Ok(v) => v,
            Err(e) => {
                let _ = storage.delete_ledger(writer.id()).await;
                return Err(fenced_on_conflict(e, name));
            }
        };
        if let Some(id) = dropped {
            let _ = storage.delete_ledger(id).await;
        }
        let ledgers: BTreeMap<i64, LedgerInfo> = info
            .ledger_info
            .iter()
            .map(|l| (l.ledger_id, l.clone()))
            .collect();
        let last_confirmed = ledgers
            .values()
            .rev()
            .find(|l| l.entries.unwrap_or(0) > 0)
            .map_or(Position::new(writer.id(), -1), |l| {
                Position::new(l.ledger_id, l.entries.unwrap_or(0) - 1)
            });
        Ok(Arc::new(SeamManagedLedger {
            name: name.to_owned(),
            path,
            storage,
            store,
            clock,
            config,
            state: Mutex::new(MlState {
                ledgers,
                version,
                writer,
                appended: 0,
                writer_failed: false,
                last_confirmed,
                fenced: false,
                closed: false,
                terminated: info.terminated_position,
                properties: info.properties.clone(),
                readers: HashMap::new(),
            }),
            roll: tokio::sync::Mutex::new(()),
            cursors: Mutex::new(BTreeMap::new()),
        }))
    }

    /// The managed ledger's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Now, by the one clock (ms since the epoch).
    pub(crate) fn now_ms(&self) -> i64 {
        i64::try_from(self.clock.now_ms()).unwrap_or(i64::MAX)
    }

    /// Whether another owner took it over.
    #[must_use]
    pub fn is_fenced(&self) -> bool {
        // Lock: bookkeeping only, released before any await or I/O.
        self.state.lock().fenced
    }

    /// The last entry readers may see.
    #[must_use]
    pub fn last_confirmed(&self) -> Position {
        // Lock: bookkeeping only, released before any await or I/O.
        self.state.lock().last_confirmed
    }

    /// Ids of its ledgers, oldest first.
    #[must_use]
    pub fn ledger_ids(&self) -> Vec<i64> {
        // Lock: bookkeeping only, released before any await or I/O.
        self.state.lock().ledgers.keys().copied().collect()
    }

    /// The ledger receiving appends.
    #[must_use]
    pub fn current_ledger_id(&self) -> i64 {
        // Lock: bookkeeping only, released before any await or I/O.
        self.state.lock().writer.id()
    }

    fn refused(&self, st: &MlState) -> Option<LedgerError> {
        if st.fenced {
            Some(LedgerError::Fenced {
                what: format!("managed ledger {}", self.name),
            })
        } else if st.closed {
            Some(LedgerError::Closed {
                what: format!("managed ledger {}", self.name),
            })
        } else if st.terminated.is_some() {
            Some(LedgerError::Closed {
                what: format!("managed ledger {} (terminated)", self.name),
            })
        } else {
            None
        }
    }

    /// Appends an entry; resolves with its position once it is durable.
    ///
    /// # Errors
    /// [`LedgerError::Fenced`] once another owner took over; storage failures (the ledger then
    /// rolls over before the next append). A failed append is never acknowledged.
    pub async fn add_entry(&self, data: Bytes) -> Result<Position> {
        loop {
            let queued = {
                // Lock: queueing the append to the current ledger (which only queues it).
                let mut st = self.state.lock();
                if let Some(e) = self.refused(&st) {
                    return Err(e);
                }
                if st.writer_failed || st.appended >= self.config.max_entries_per_ledger {
                    None
                } else {
                    st.appended += 1;
                    Some((st.writer.id(), st.writer.append(data.clone())))
                }
            };
            let Some((ledger_id, added)) = queued else {
                self.roll_over().await?;
                continue;
            };
            let res = added.await;
            // Lock: recording the outcome.
            let mut st = self.state.lock();
            return match res {
                Ok(entry_id) => {
                    let pos = Position::new(ledger_id, entry_id);
                    if pos > st.last_confirmed {
                        st.last_confirmed = pos;
                    }
                    Ok(pos)
                }
                Err(LedgerError::Fenced { .. }) => {
                    st.fenced = true;
                    tracing::warn!(ledger = %self.name, ledger_id, "ledger fenced by another owner");
                    Err(self.refused(&st).unwrap_or(LedgerError::Fenced {
                        what: self.name.clone(),
                    }))
                }
                Err(e) => {
                    if st.writer.id() == ledger_id {
                        st.writer_failed = true;
                    }
                    Err(e)
                }
            };
        }
    }

    /// Closes the full (or failed) current ledger, creates the next one and records the switch.
    async fn roll_over(&self) -> Result<()> {
        // Async lock: see the field (held across the awaits below on purpose).
        let _one = self.roll.lock().await;
        let old = {
            // Lock: bookkeeping only, released before any await or I/O.
            let st = self.state.lock();
            if let Some(e) = self.refused(&st) {
                return Err(e);
            }
            if !st.writer_failed && st.appended < self.config.max_entries_per_ledger {
                return Ok(()); // another appender rolled over meanwhile
            }
            Arc::clone(&st.writer)
        };
        if let Err(e) = old.close().await {
            if matches!(e, LedgerError::Fenced { .. }) {
                // Lock: bookkeeping only, released before any await or I/O.
                self.state.lock().fenced = true;
                return Err(fenced_on_conflict(e, &self.name));
            }
            // A failed ledger may not close cleanly; the next owner's recovery closes it.
            tracing::warn!(ledger = %self.name, ledger_id = old.id(), error = %e, "closing the ledger failed");
        }
        let new = self.storage.create_ledger(&self.name, None).await?;
        let now = self.clock.now_ms() as i64;
        let (raw, version) = {
            // Lock: bookkeeping only, released before any await or I/O.
            let mut st = self.state.lock();
            let closed = LedgerInfo {
                ledger_id: old.id(),
                entries: Some(old.last_add_confirmed() + 1),
                size: Some(old.length() as i64),
                timestamp: Some(now),
                offload_context: None,
            };
            let mut info = ManagedLedgerInfo {
                ledger_info: st.ledgers.values().cloned().collect(),
                terminated_position: st.terminated,
                properties: st.properties.clone(),
            };
            if let Some(l) = info
                .ledger_info
                .iter_mut()
                .find(|l| l.ledger_id == old.id())
            {
                *l = closed.clone();
            }
            info.ledger_info.push(LedgerInfo {
                ledger_id: new.id(),
                entries: None,
                size: None,
                timestamp: Some(0),
                offload_context: None,
            });
            st.ledgers.insert(old.id(), closed);
            (info.encode_to_vec(), st.version)
        };
        match self.store.put(&self.path, raw, Some(version)).await {
            Ok(v) => {
                // Lock: bookkeeping only, released before any await or I/O.
                let mut st = self.state.lock();
                st.version = v;
                st.ledgers.insert(
                    new.id(),
                    LedgerInfo {
                        ledger_id: new.id(),
                        entries: None,
                        size: None,
                        timestamp: Some(0),
                        offload_context: None,
                    },
                );
                st.writer = new;
                st.appended = 0;
                st.writer_failed = false;
                tracing::debug!(ledger = %self.name, closed = old.id(), "rolled over");
                Ok(())
            }
            Err(e) => {
                let _ = self.storage.delete_ledger(new.id()).await;
                let e = fenced_on_conflict(e, &self.name);
                // Lock: bookkeeping only, released before any await or I/O.
                let mut st = self.state.lock();
                if matches!(e, LedgerError::Fenced { .. }) {
                    st.fenced = true;
                }
                // The old ledger is closed: the next append tries the rollover again.
                st.writer_failed = true;
                Err(e)
            }
        }
    }

    /// Confirmed entries of ledger `id` (the current one: those up to the last confirmed).
    fn entries_of(st: &MlState, id: i64) -> i64 {
        if id == st.writer.id() {
            if st.last_confirmed.ledger_id == id {
                st.last_confirmed.entry_id + 1
            } else {
                0
            }
        } else {
            st.ledgers.get(&id).and_then(|l| l.entries).unwrap_or(0)
        }
    }

    /// The position of the entry after `p` (skipping empty ledgers); past the end, the slot after
    /// the last confirmed entry.
    #[must_use]
    pub fn next_position(&self, p: Position) -> Position {
        // Lock: bookkeeping only, released before any await or I/O.
        let st = self.state.lock();
        if p.entry_id + 1 < Self::entries_of(&st, p.ledger_id) {
            return Position::new(p.ledger_id, p.entry_id + 1);
        }
        if let Some(id) = st
            .ledgers
            .range(p.ledger_id + 1..)
            .map(|(id, _)| *id)
            .find(|id| Self::entries_of(&st, *id) > 0)
        {
            return Position::new(id, 0);
        }
        if p >= st.last_confirmed {
            st.last_confirmed.next()
        } else {
            Position::new(p.ledger_id, p.entry_id + 1)
        }
    }

    /// Reads up to `max_entries` confirmed entries from `from` on, within one ledger; empty when
    /// there is nothing to read yet.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn read_entries(&self, from: Position, max_entries: usize) -> Result<Vec<Entry>> {
        let (start, last, open, reader) = {
            // Lock: bookkeeping only, released before any await or I/O.
            let st = self.state.lock();
            if from > st.last_confirmed || max_entries == 0 {
                return Ok(Vec::new());
            }
            let e = from.entry_id.max(0);
            let start = if e < Self::entries_of(&st, from.ledger_id) {
                Position::new(from.ledger_id, e)
            } else {
                match st
                    .ledgers
                    .range(from.ledger_id + 1..)
                    .map(|(id, _)| *id)
                    .find(|id| Self::entries_of(&st, *id) > 0)
                {
                    Some(id) => Position::new(id, 0),
                    None => return Ok(Vec::new()),
                }
            };
            let last = (Self::entries_of(&st, start.ledger_id) - 1)
                .min(start.entry_id + max_entries as i64 - 1);
            let open = start.ledger_id == st.writer.id();
            (start, last, open, st.readers.get(&start.ledger_id).cloned())
        };
        let reader = match reader {
            Some(r) => r,
            // The ledger being written is opened afresh for each read: its ensemble may have
            // changed since the last one (a bookie replaced), and a handle keeps the ensembles
            // it was opened with.
            None if open => self.storage.open_ledger(start.ledger_id, false).await?,
            None => {
                let r = self.storage.open_ledger(start.ledger_id, false).await?;
                Arc::clone(
                    self.state
                        .lock()
                        .readers
                        .entry(start.ledger_id)
                        .or_insert(r),
                )
            }
        };
        let data = reader.read(start.entry_id, last).await?;
        Ok(data
            .into_iter()
            .enumerate()
            .map(|(i, data)| Entry {
                position: Position::new(start.ledger_id, start.entry_id + i as i64),
                data,
            })
            .collect())
    }

    /// Opens the durable cursor `name`, recovering its persisted state; a new one starts at the
    /// end (Pulsar's `Latest`).
    ///
    /// # Errors
    /// Storage failures or a corrupt record.
    pub async fn open_cursor(self: &Arc<Self>, name: &str) -> Result<Arc<SeamCursor>> {
        // Lock: bookkeeping only, released before any await or I/O.
        if let Some(c) = self.cursors.lock().get(name) {
            return Ok(Arc::clone(c));
        }
        let c = SeamCursor::open(Arc::clone(self), name).await?;
        // Lock: insert unless another caller opened it meanwhile.
        Ok(Arc::clone(
            // Lock: bookkeeping only, released before any await or I/O.
            self.cursors.lock().entry(name.to_owned()).or_insert(c),
        ))
    }

    /// Deletes the closed ledgers every cursor has consumed (all closed ones when there is no
    /// cursor); returns their ids. Cursors recorded but not open are opened first, so a
    /// subscription nobody attached to yet still holds its ledgers.
    ///
    /// # Errors
    /// Storage failures; [`LedgerError::Fenced`] when another owner changed the list.
    pub async fn trim_consumed_ledgers(self: &Arc<Self>) -> Result<Vec<i64>> {
        for name in self.cursor_names().await? {
            self.open_cursor(&name).await?;
        }
        let slowest = self
            .cursors
            .lock()
            .values()
            .map(|c| c.mark_delete_position())
            .min();
        // Async lock: see the field (held across the awaits below on purpose).
        let _one = self.roll.lock().await;
        let (raw, version, doomed) = {
            // Lock: bookkeeping only, released before any await or I/O.
            let st = self.state.lock();
            if let Some(e) = self.refused(&st) {
                return Err(e);
            }
            let slowest = slowest.unwrap_or(st.last_confirmed);
            let current = st.writer.id();
            let doomed: Vec<i64> = st
                .ledgers
                .values()
                .take_while(|l| {
                    let n = l.entries.unwrap_or(0);
                    l.ledger_id != current
                        && (l.ledger_id < slowest.ledger_id
                            || (l.ledger_id == slowest.ledger_id && slowest.entry_id + 1 >= n))
                })
                .map(|l| l.ledger_id)
                .collect();
            if doomed.is_empty() {
                return Ok(doomed);
            }
            let info = ManagedLedgerInfo {
                ledger_info: st
                    .ledgers
                    .values()
                    .filter(|l| !doomed.contains(&l.ledger_id))
                    .cloned()
                    .collect(),
                terminated_position: st.terminated,
                properties: st.properties.clone(),
            };
            (info.encode_to_vec(), st.version, doomed)
        };
        match self.store.put(&self.path, raw, Some(version)).await {
            Ok(v) => {
                // Lock: bookkeeping only, released before any await or I/O.
                let mut st = self.state.lock();
                st.version = v;
                for id in &doomed {
                    st.ledgers.remove(id);
                    st.readers.remove(id);
                }
            }
            Err(e) => {
                let e = fenced_on_conflict(e, &self.name);
                if matches!(e, LedgerError::Fenced { .. }) {
                    // Lock: bookkeeping only, released before any await or I/O.
                    self.state.lock().fenced = true;
                }
                return Err(e);
            }
        }
        // The list no longer names them: a failed delete leaves garbage, never a lost entry.
        for id in &doomed {
            if let Err(e) = self.storage.delete_ledger(*id).await {
                tracing::warn!(ledger = %self.name, ledger_id = id, error = %e, "deleting a trimmed ledger failed");
            }
        }
        tracing::debug!(ledger = %self.name, deleted = ?doomed, "trimmed consumed ledgers");
        Ok(doomed)
    }

    /// Names of the cursors recorded for it.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn cursor_names(&self) -> Result<Vec<String>> {
        self.store.children(&self.path).await
    }

    /// Deletes the managed ledger: its cursors' records, then its list (compare-and-set, so a
    /// newer owner's list is never deleted), then its ledgers from the storage. A crash in
    /// between leaves unreferenced ledgers (garbage), never a list naming deleted ones.
    ///
    /// # Errors
    /// Storage failures, or [`LedgerError::Fenced`] if another owner took over.
    pub async fn delete(self: &Arc<Self>) -> Result<()> {
        let _one = self.roll.lock().await;
        let (writer, version, ids) = {
            // Lock: bookkeeping only, released before any await or I/O.
            let mut st = self.state.lock();
            if st.fenced {
                return Err(self.refused(&st).unwrap_or(LedgerError::Fenced {
                    what: self.name.clone(),
                }));
            }
            st.closed = true;
            let ids: Vec<i64> = st.ledgers.keys().copied().collect();
            (Arc::clone(&st.writer), st.version, ids)
        };
        // Pending appends finish first; a failure here changes nothing about the deletion.
        let _ = writer.close().await;
        for name in self.cursor_names().await? {
            let path = pulsar_rs_ledger::seam::cursor_path(&self.name, &name);
            self.store.delete(&path, None).await?;
        }
        // Lock: map clear only.
        self.cursors.lock().clear();
        if let Err(e) = self.store.delete(&self.path, Some(version)).await {
            let e = fenced_on_conflict(e, &self.name);
            if matches!(e, LedgerError::Fenced { .. }) {
                // Lock: one flag.
                self.state.lock().fenced = true;
            }
            return Err(e);
        }
        for id in ids {
            if let Err(e) = self.storage.delete_ledger(id).await {
                tracing::warn!(ledger = %self.name, ledger_id = id, error = %e, "deleting a ledger of a deleted managed ledger failed");
            }
        }
        Ok(())
    }

    /// Closes the current ledger; the managed ledger accepts no more appends.
    ///
    /// # Errors
    /// Storage failures, or [`LedgerError::Fenced`] if another owner took over.
    pub async fn close(&self) -> Result<()> {
        // Async lock: see the field (held across the awaits below on purpose).
        let _one = self.roll.lock().await;
        let writer = {
            // Lock: bookkeeping only, released before any await or I/O.
            let mut st = self.state.lock();
            if let Some(e) = self.refused(&st) {
                return Err(e);
            }
            st.closed = true;
            Arc::clone(&st.writer)
        };
        writer
            .close()
            .await
            .map_err(|e| fenced_on_conflict(e, &self.name))
    }
}
