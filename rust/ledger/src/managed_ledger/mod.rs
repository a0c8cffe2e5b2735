//! A managed ledger: one topic's append-only log, split into ledgers.
//!
//! Appends go to the current ledger and return the entry's [`Position`]; the ledger rolls over by
//! Pulsar's rules. An entry becomes visible to readers (the *last confirmed* position advances)
//! only once the journal has made it durable, in append order. Reads never pass the last confirmed
//! entry, skip deleted or empty ledgers, and are served from the entry cache when the whole range
//! is there. Ledgers consumed by every durable cursor are trimmed, subject to retention.
//!
//! Split by job: [`append`] (rollover, journal appends, confirmation), [`read`] (positions and
//! entry reads), [`trim`] (consumed ledgers), [`recovery`] (rebuilding the entry index at open),
//! [`terminate`] (no more appends, for good); its subscriptions' places are [`cursor`]s. What
//! every managed ledger of a storage shares (journal, cache, metadata store) is
//! [`crate::shared::Shared`].
//! Entries recovery found damaged are listed by [`ManagedLedger::corrupt_entries`]. On a
//! [`crate::seam::SeamBacking`] (BookKeeper), [`on_seam`] replaces the journal and the local
//! metadata with Pulsar's ledgers and records.

mod append;
mod completion;
pub mod cursor;
mod offload;
pub(crate) mod on_seam;
mod read;
mod recovery;
mod terminate;
mod trim;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use self::cursor::Cursor;
use crate::cache::LedgerEntries;
use crate::journal::Loc;
use crate::seam::{ReadLedger, Version, WriteLedger};
use crate::shared::Shared;
use crate::{LedgerConfig, LedgerError, Position, Result};

pub use append::Added;
pub use completion::{AddCompletion, AddWaiter};
pub use offload::{OffloadStart, OffloadStatus, OffloadSummary};
use recovery::recover_slot;

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
    /// Its offload to tiered storage, once one was prepared (Pulsar's `OffloadContext`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload: Option<crate::OffloadContext>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ManagedLedgerInfo {
    ledgers: Vec<LedgerInfo>,
    #[serde(default)]
    properties: BTreeMap<String, String>,
    /// When the managed ledger was first recorded, ms since epoch (Pulsar reports its metadata
    /// node's creation time as `topicCreationTimeStamp`). Absent in records written before it
    /// was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_ms: Option<u64>,
    /// Where the managed ledger was terminated (Pulsar's `terminatedPosition`), if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    terminated: Option<TerminatedAt>,
}

/// A terminated managed ledger's last position, as the journal backing records it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
struct TerminatedAt {
    ledger_id: i64,
    entry_id: i64,
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
    /// On a seam backing, the ledger's writer while it takes appends (`None` on the journal).
    pub writer: Option<Arc<dyn WriteLedger>>,
}

impl Slot {
    /// An empty, open ledger.
    pub(crate) fn new(ledger_id: i64, now: u64) -> Slot {
        Slot {
            info: LedgerInfo {
                ledger_id,
                entries: 0,
                size: 0,
                created_ms: now,
                closed_ms: None,
                offload: None,
            },
            locs: Vec::new(),
            appended_size: 0,
            confirmed: 0,
            confirmed_size: 0,
            failed_at: None,
            writer: None,
        }
    }
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
    /// A rollover is recording its new ledger in the metadata store (phase 2, unlocked): this
    /// topic's appenders wait on `ManagedLedger::roll_gate`; confirmations do not wait.
    pub rolling: bool,
    /// The ledger a rollover in progress is recording; part of every metadata snapshot taken
    /// meanwhile, so no concurrent write of the record can drop it.
    pub pending_ledger: Option<LedgerInfo>,
    /// Durable appends queued in the journal and not reported yet, in append order.
    pub unconfirmed: VecDeque<Unconfirmed>,
    /// The journal's mark for `unconfirmed[0]` (marks count this ledger's durable appends).
    pub unconfirmed_front: u64,
    /// On a seam backing: the version of the ledger list this owner last read or wrote.
    pub meta_version: Option<Version>,
    /// On a seam backing: another owner wrote the ledger list; nothing more is appended.
    pub fenced: bool,
    /// When the managed ledger was first recorded (journal backing; `None` when unknown).
    pub created_ms: Option<u64>,
    /// Where the managed ledger was terminated: no append is taken once set (Pulsar's
    /// `State.Terminated`); recorded in the metadata, so it survives a restart.
    pub terminated: Option<Position>,
}

/// A durable append waiting for the journal's report.
pub(crate) struct Unconfirmed {
    pub pos: Position,
    /// Stored bytes.
    pub len: u64,
    /// Who to tell, with the token it gave.
    pub waiter: (Arc<dyn AddWaiter>, u64),
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
    /// Held by a rollover for its whole duration (id allocation, metadata write), never with
    /// `state` held by the waiter: this topic's appenders that find `State::rolling` wait on it.
    /// Taken before `meta_write` and `state`.
    pub(crate) roll_gate: Mutex<()>,
    /// Serialises writes of this managed ledger's metadata record; each writer takes its
    /// snapshot of `state` after acquiring it, so the last write is always the newest state.
    /// Held across the write's fsync on purpose: only metadata writers of this topic wait for
    /// it (never appenders' confirmations). Taken before `state`.
    pub(crate) meta_write: Mutex<()>,
    /// Cursors that count as active for caching; updated by cursors.
    pub(crate) active_cursors: AtomicUsize,
    /// Whether `State::terminated` is set, for the lock-free check of hot paths (a
    /// subscription's acks); written only with `state` held, by open and termination.
    pub(crate) terminated_flag: AtomicBool,
    /// This ledger's slice of the entry cache.
    pub(crate) cache: Arc<LedgerEntries>,
    /// Woken when the last confirmed position advances (read-or-wait) or the ledger closes.
    pub(crate) new_entries: Notify,
    /// Retention time in ms (−1 = forever); starts from the config, changed by policies.
    /// Relaxed: read by trimming only; a stale value delays one trim pass at most.
    retention_time_ms: std::sync::atomic::AtomicI64,
    /// Retention size in bytes (−1 = unlimited); same rules as `retention_time_ms`.
    retention_size_bytes: std::sync::atomic::AtomicI64,
    /// Entries recovery found damaged or missing, in position order; fixed at open.
    corrupt: Vec<Position>,
    /// On a seam backing, read handles by ledger (one that fails is replaced). Lock: map
    /// lookups and inserts only, never across a read; taken alone.
    pub(crate) readers: Mutex<HashMap<i64, Arc<dyn ReadLedger>>>,
    /// Tiered storage: the offload policy, the running job, open offloaded ledgers.
    pub(crate) tiering: offload::Tiering,
}

fn info_key(name: &str) -> String {
    crate::metastore::managed_ledger_key(name)
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
        let now = shared.clock.now_ms();
        let mut ledgers = BTreeMap::new();
        let mut corrupt = Vec::new();
        let (properties, meta_version, created_ms, terminated) =
            if let Some(b) = shared.backing.clone() {
                let loaded = on_seam::load(name, &b, now, shared.read_only)?;
                for slot in loaded.slots {
                    ledgers.insert(slot.info.ledger_id, slot);
                }
                // Pulsar's record has no creation time (its store's node stat has): unknown here.
                (loaded.properties, loaded.version, None, loaded.terminated)
            } else {
                let key = info_key(name);
                let info: ManagedLedgerInfo = match shared.meta.get(&key)? {
                    Some(raw) => {
                        serde_json::from_slice(&raw).map_err(|e| LedgerError::CorruptMetadata {
                            key: key.clone(),
                            reason: e.to_string(),
                        })?
                    }
                    // A new managed ledger: recorded (with this time) below.
                    None => ManagedLedgerInfo {
                        created_ms: Some(now),
                        ..ManagedLedgerInfo::default()
                    },
                };
                // A record from before the creation time was kept: its oldest ledger's creation,
                // the earliest time known for it.
                let created_ms = info
                    .created_ms
                    .or_else(|| info.ledgers.iter().map(|l| l.created_ms).min());
                for li in info.ledgers {
                    let slot = recover_slot(name, li, &shared);
                    corrupt.extend(
                        slot.locs
                            .iter()
                            .enumerate()
                            .filter(|(_, l)| l.is_corrupt())
                            .map(|(e, _)| Position::new(slot.info.ledger_id, e as i64)),
                    );
                    ledgers.insert(slot.info.ledger_id, slot);
                }
                let terminated = info
                    .terminated
                    .map(|t| Position::new(t.ledger_id, t.entry_id));
                (info.properties, None, created_ms, terminated)
            };
        // Relaxed: a counter.
        shared
            .corrupt_entries
            .fetch_add(corrupt.len() as u64, Ordering::Relaxed);
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
                properties,
                roll_before_append: false,
                rolling: false,
                pending_ledger: None,
                unconfirmed: VecDeque::new(),
                unconfirmed_front: 0,
                meta_version,
                fenced: false,
                created_ms,
                terminated,
            }),
            cursors: Mutex::new(BTreeMap::new()),
            roll_gate: Mutex::new(()),
            meta_write: Mutex::new(()),
            active_cursors: AtomicUsize::new(0),
            terminated_flag: AtomicBool::new(terminated.is_some()),
            new_entries: Notify::new(),
            retention_time_ms: std::sync::atomic::AtomicI64::new(retention.0),
            retention_size_bytes: std::sync::atomic::AtomicI64::new(retention.1),
            corrupt,
            readers: Mutex::new(HashMap::new()),
            tiering: offload::Tiering::new(),
        });
        if ml.shared.backing.is_some() {
            ml.open_on_seam(now, last_confirmed.is_none())?;
        } else {
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
            drop(st);
            if created {
                ml.persist()?;
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

    /// The broker's clock this ledger stamps its ledgers and trims by (the data directory's).
    #[must_use]
    pub fn clock(&self) -> &Arc<dyn crate::Clock> {
        &self.shared.clock
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

    /// Entries recovery found damaged or missing (reading them fails with
    /// [`LedgerError::CorruptEntry`]).
    #[must_use]
    pub fn corrupt_entries(&self) -> &[Position] {
        &self.corrupt
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
        st.ledgers.insert(id, Slot::new(id, now));
        st.current = id;
        Ok(())
    }

    /// Writes the metadata record from a snapshot of the current state. The state lock is held
    /// only to take the snapshot, never across the write (whose fsyncs would otherwise stall
    /// the journal flusher confirming other topics' appends).
    pub(crate) fn persist(&self) -> Result<()> {
        let _one = self.meta_write.lock();
        let (info, version) = {
            let st = self.state.lock();
            if st.fenced {
                return Err(self.fenced_error());
            }
            let info = ManagedLedgerInfo {
                ledgers: st
                    .ledgers
                    .values()
                    .map(|s| s.info.clone())
                    .chain(st.pending_ledger.clone())
                    .collect(),
                properties: st.properties.clone(),
                created_ms: st.created_ms,
                terminated: st.terminated.map(|p| TerminatedAt {
                    ledger_id: p.ledger_id,
                    entry_id: p.entry_id,
                }),
            };
            (info, st.meta_version)
        };
        if let Some(b) = &self.shared.backing {
            let terminated = info
                .terminated
                .map(|t| Position::new(t.ledger_id, t.entry_id));
            return self.seam_write_list(b, &info.ledgers, &info.properties, terminated, version);
        }
        let raw = serde_json::to_vec(&info).map_err(|e| LedgerError::CorruptMetadata {
            key: info_key(&self.name),
            reason: format!("cannot encode: {e}"),
        })?;
        self.shared.meta.put(&info_key(&self.name), &raw)
    }

    /// The next ledger: an id from the local counter on the journal, a new ledger (and its
    /// writer) on a seam backing.
    pub(crate) fn next_ledger(&self) -> Result<(i64, Option<Arc<dyn WriteLedger>>)> {
        match &self.shared.backing {
            Some(b) => {
                let w = self.seam_new_writer(b)?;
                Ok((w.id(), Some(w)))
            }
            None => Ok((self.shared.next_ledger_id()?, None)),
        }
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
        if let Some(b) = &self.shared.backing {
            return on_seam::cursor_names(b, &self.name);
        }
        let prefix = crate::metastore::cursor_prefix(&self.name);
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
        match &self.shared.backing {
            Some(b) => on_seam::delete_record(b, crate::seam::cursor_path(&self.name, name))?,
            None => self
                .shared
                .meta
                .delete(&crate::metastore::cursor_key(&self.name, name))?,
        }
        self.trim_consumed_ledgers()
    }

    pub(crate) fn forget_cursor(&self, name: &str) {
        self.cursors.lock().remove(name);
    }

    /// The metadata of ledger `ledger_id` as its storage describes it (on BookKeeper:
    /// BookKeeper's `toSafeString`, with the ensembles); `None` on the journal. Blocking: a
    /// metadata-store round trip.
    ///
    /// # Errors
    /// The metadata store failed or has no such ledger.
    pub fn ledger_metadata(&self, ledger_id: i64) -> Result<Option<String>> {
        let Some(b) = &self.shared.backing else {
            return Ok(None);
        };
        let ledgers = Arc::clone(&b.ledgers);
        b.block(async move { ledgers.ledger_metadata(ledger_id).await })
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

    /// When this managed ledger was first recorded, ms since epoch; `None` when unknown (a
    /// seam backing's record does not keep it).
    #[must_use]
    pub fn created_ms(&self) -> Option<u64> {
        self.state.lock().created_ms
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
        if self.is_fenced() {
            return Ok(()); // another owner has the topic: nothing here may be written again
        }
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
        let writers: Vec<Arc<dyn WriteLedger>> = {
            let mut st = self.state.lock();
            st.closed = true;
            st.ledgers
                .values_mut()
                .filter_map(|s| s.writer.take())
                .collect()
        };
        if let Some(b) = &self.shared.backing {
            for w in writers {
                // Closed in the ledger's metadata at its last confirmed entry, as Pulsar closes
                // the current ledger when a topic is unloaded; the next owner then needs no
                // recovery (it would do one if this failed).
                let id = w.id();
                if let Err(e) = b.block(async move { w.close().await }) {
                    tracing::warn!(ledger = %self.name, ledger_id = id, error = %e, "closing the current ledger failed");
                }
            }
        }
        if self.shared.backing.is_none() {
            // On the journal, the entry index lives only in memory until a restart's scan: it
            // goes back to the storage, so the next open of this ledger in this process (a
            // topic unloaded, then used again) finds every confirmed entry. Taken under the
            // state lock, handed back after it is released (the storage's lock is never held
            // inside it).
            let kept: Vec<(i64, Vec<Loc>)> = {
                let mut st = self.state.lock();
                st.ledgers
                    .values_mut()
                    .filter(|s| !s.offload_deleted())
                    .map(|s| {
                        let mut locs = std::mem::take(&mut s.locs);
                        locs.truncate(usize::try_from(s.confirmed).unwrap_or(usize::MAX));
                        (s.info.ledger_id, locs)
                    })
                    .collect()
            };
            for (id, locs) in kept {
                self.shared.give_back(id, locs);
            }
        }
        self.cache.clear();
        self.new_entries.notify_waiters();
        self.shared.forget(&self.name);
        first_err.map_or(Ok(()), Err)
    }

    /// Whether another owner took the managed ledger over (on a seam backing): appends and
    /// metadata writes fail with [`LedgerError::Fenced`] from then on.
    #[must_use]
    pub fn is_fenced(&self) -> bool {
        self.state.lock().fenced
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
        if let Some(b) = self.shared.backing.clone() {
            for name in self.persisted_cursor_names()? {
                on_seam::delete_record(&b, crate::seam::cursor_path(&self.name, &name))?;
            }
            let _ = self.close();
            let ids: Vec<i64> = self.state.lock().ledgers.keys().copied().collect();
            on_seam::delete_record(&b, crate::seam::managed_ledger_path(&self.name))?;
            self.delete_offloaded_objects(self.offloaded_ledgers());
            self.seam_delete_ledgers(&b, &ids);
            return Ok(());
        }
        for name in self.persisted_cursor_names()? {
            self.shared
                .meta
                .delete(&crate::metastore::cursor_key(&self.name, &name))?;
        }
        let _ = self.close();
        let ids: Vec<i64> = self.state.lock().ledgers.keys().copied().collect();
        self.shared.meta.delete(&info_key(&self.name))?;
        self.delete_offloaded_objects(self.offloaded_ledgers());
        for id in ids {
            // The entry index `close` handed back is not needed: the ledger is gone.
            self.shared.forget_recovered(id);
            self.shared.journal.release_ledger(id);
        }
        Ok(())
    }

    /// Sets a ledger property (persisted).
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn set_property(&self, key: &str, value: &str) -> Result<()> {
        self.state
            .lock()
            .properties
            .insert(key.into(), value.into());
        self.persist()
    }

    /// Ledger properties.
    #[must_use]
    pub fn properties(&self) -> BTreeMap<String, String> {
        self.state.lock().properties.clone()
    }
}
