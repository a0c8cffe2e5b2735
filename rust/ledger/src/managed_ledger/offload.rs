//! Tiered storage in a managed ledger, as Pulsar's `ManagedLedgerImpl` offloads:
//!
//! * **offload a prefix** ([`ManagedLedger::trigger_offload`], Pulsar's `asyncOffloadPrefix`):
//!   every closed, non-empty ledger below a position that is not offloaded yet, one after
//!   another, one job at a time. Each ledger is first *prepared* (a fresh uid and the driver
//!   recorded in its [`OffloadContext`], persisted before any byte is uploaded, so a crash leaves
//!   a record of the attempt and never an unrecorded object), then uploaded, then *completed*
//!   (`complete`, the time) if the record still names that uid. An earlier failed attempt's
//!   objects are deleted before the new one starts.
//! * **auto-offload** ([`ManagedLedger::maybe_offload`], `maybeOffloadInBackground`): after a
//!   rollover and at housekeeping, the size and age thresholds of the [`OffloadPolicy`] choose
//!   a prefix.
//! * **reads** of an offloaded ledger go to the tier when its own copy is gone, or when the read
//!   priority is `tiered-storage-first` (the handle is opened once and kept; a failed read drops
//!   it, and the read is retried by its caller).
//! * the local copy's deletion after the lag and the objects' deletion with the ledger are in
//!   [`super::trim`].

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::ManagedLedger;
use crate::offload::random_uid;
use crate::{
    LedgerError, LedgerOffloader, OffloadContext, OffloadPolicy, OffloadSource, OffloadedLedger,
    Position, ReadPriority, Result,
};

/// The outcome of the last offload asked for by an operator (Pulsar's `OffloadProcessStatus`):
/// kept in memory only, so it is `NotRun` again after the topic is unloaded, as Pulsar's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OffloadStatus {
    /// Nothing was asked since the managed ledger was opened.
    NotRun,
    /// A job is running.
    Running,
    /// The last job finished; the first entry it left on the ledgers' own storage.
    Success {
        /// `(first ledger not offloaded, 0)`.
        first_unoffloaded: Position,
    },
    /// The last job failed.
    Error {
        /// Why.
        message: String,
    },
}

/// What a managed ledger has offloaded ([`ManagedLedger::offload_summary`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffloadSummary {
    /// Bytes of the ledgers whose offload is complete.
    pub size: u64,
    /// The newest of them (0: none).
    pub last_ledger_id: i64,
    /// When the newest offload completed, ms since epoch (0: never).
    pub last_success_ms: u64,
    /// When an offload last failed, ms since epoch (0: never).
    pub last_failure_ms: u64,
}

/// Whether [`ManagedLedger::trigger_offload`] started a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffloadStart {
    /// A job was started in the background.
    Started,
    /// Another job is running (Pulsar answers 409 "Offload already in progress").
    AlreadyRunning,
}

/// A managed ledger's tiered-storage state.
pub(crate) struct Tiering {
    /// The policy in force, replaced whole by the broker. Lock: cloned or replaced, never held
    /// across a call.
    policy: Mutex<OffloadPolicy>,
    /// An offload job is running (Pulsar's offload mutex). Acquire on taking it, Release on
    /// giving it back: a job sees the previous job's changes to the ledger list.
    running: AtomicBool,
    /// The last operator-asked job's outcome. Lock: read or replaced, never held across a call.
    status: Mutex<OffloadStatus>,
    /// When an offload last failed, ms since epoch (0: never). Relaxed: a statistic.
    last_failure_ms: AtomicU64,
    /// Offloaded ledgers open for reading, by ledger id. Lock: lookups and inserts only, never
    /// across a read.
    readers: Mutex<HashMap<i64, Arc<dyn OffloadedLedger>>>,
}

impl Tiering {
    pub(crate) fn new() -> Tiering {
        Tiering {
            policy: Mutex::new(OffloadPolicy::default()),
            running: AtomicBool::new(false),
            status: Mutex::new(OffloadStatus::NotRun),
            last_failure_ms: AtomicU64::new(0),
            readers: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn policy(&self) -> OffloadPolicy {
        self.policy.lock().clone()
    }
}

/// Where a read of an offloaded ledger goes, decided under the state lock.
pub(crate) fn read_offloaded_copy(ctx: Option<&OffloadContext>, policy: &OffloadPolicy) -> bool {
    ctx.is_some_and(|c| {
        c.complete
            && (c.bookkeeper_deleted
                || (policy.read_priority == ReadPriority::TieredStorageFirst
                    && policy.offloader.is_some()))
    })
}

fn offload_error(context: impl Into<String>) -> LedgerError {
    LedgerError::Offload {
        context: context.into(),
    }
}

/// One closed ledger read from its own storage for an upload.
struct StoredLedger<'a> {
    ml: &'a ManagedLedger,
    ledger_id: i64,
    entries: u64,
    size: u64,
    created_ms: u64,
}

impl OffloadSource for StoredLedger<'_> {
    fn ledger_id(&self) -> i64 {
        self.ledger_id
    }

    #[allow(clippy::cast_possible_wrap)]
    fn last_entry_id(&self) -> i64 {
        self.entries as i64 - 1
    }

    fn length(&self) -> u64 {
        self.size
    }

    fn created_ms(&self) -> u64 {
        self.created_ms
    }

    fn read(&self, first: i64, last: i64) -> Result<Vec<Bytes>> {
        self.ml.read_stored(self.ledger_id, first, last)
    }
}

impl super::Slot {
    /// Whether the ledger's own copy was deleted after its offload: its entries are only in
    /// the tier, and `locs` only carry lengths.
    pub(crate) fn offload_deleted(&self) -> bool {
        self.info
            .offload
            .as_ref()
            .is_some_and(|c| c.complete && c.bookkeeper_deleted)
    }
}

impl ManagedLedger {
    /// Every ledger with an offload record (complete or not), with it.
    pub(crate) fn offloaded_ledgers(&self) -> Vec<(i64, crate::OffloadContext)> {
        let st = self.state.lock();
        st.ledgers
            .iter()
            .filter_map(|(id, s)| s.info.offload.clone().map(|c| (*id, c)))
            .collect()
    }

    /// Sets the offload policy (the broker resolves it from the topic's, namespace's and its
    /// own settings).
    pub fn set_offload_policy(&self, policy: OffloadPolicy) {
        *self.tiering.policy.lock() = policy;
    }

    /// The offload policy in force.
    #[must_use]
    pub fn offload_policy(&self) -> OffloadPolicy {
        self.tiering.policy()
    }

    /// The last operator-asked offload's outcome.
    #[must_use]
    pub fn offload_status(&self) -> OffloadStatus {
        self.tiering.status.lock().clone()
    }

    /// Starts offloading, in the background, every ledger below `upto` (Pulsar's
    /// `PUT .../offload` with a message id): `upto` must be a stored entry or the current
    /// ledger's first slot. The outcome is [`ManagedLedger::offload_status`].
    ///
    /// # Errors
    /// [`LedgerError::InvalidPosition`] ("Invalid position for offload").
    pub fn trigger_offload(self: &Arc<Self>, upto: Position) -> Result<OffloadStart> {
        let current = self.state.lock().current;
        if !(self.is_valid_position(upto) || upto == Position::new(current, 0)) {
            return Err(LedgerError::InvalidPosition {
                ledger: self.name().to_owned(),
                position: upto,
            });
        }
        if !self.take_offload_turn() {
            return Ok(OffloadStart::AlreadyRunning);
        }
        *self.tiering.status.lock() = OffloadStatus::Running;
        let ml = Arc::clone(self);
        self.spawn_offload_job(move || {
            let outcome = ml.offload_prefix(upto.ledger_id);
            ml.tiering.running.store(false, Ordering::Release);
            *ml.tiering.status.lock() = match outcome {
                Ok(first_unoffloaded) => OffloadStatus::Success { first_unoffloaded },
                Err(e) => {
                    ml.note_offload_failure();
                    tracing::warn!(ledger = %ml.name(), error = %e, "offload failed");
                    OffloadStatus::Error {
                        message: e.to_string(),
                    }
                }
            };
        });
        Ok(OffloadStart::Started)
    }

    /// Runs an offload (blocking) of every ledger below `upto` if no other job runs: for tools
    /// and tests that want the outcome at once.
    ///
    /// # Errors
    /// Another job runs, or the offload failed.
    pub fn offload_now(&self, upto: Position) -> Result<Position> {
        if !self.take_offload_turn() {
            return Err(offload_error("Offload already in progress"));
        }
        let outcome = self.offload_prefix(upto.ledger_id);
        // Release: see `Tiering::running`.
        self.tiering.running.store(false, Ordering::Release);
        outcome
    }

    /// Offloads what the policy's thresholds select, in the background (Pulsar's
    /// `maybeOffloadInBackground`): the size threshold counts closed ledgers from the newest
    /// (already offloaded ones too) and selects the older ones once the sum passes it; the age
    /// threshold selects ledgers closed at least that long ago.
    pub fn maybe_offload(self: &Arc<Self>) {
        let policy = self.tiering.policy();
        if policy.offloader.is_none() || self.shared.read_only {
            return;
        }
        let by_size = policy.threshold_bytes.filter(|t| *t >= 0);
        let by_age = policy.threshold_seconds.filter(|t| *t >= 0);
        if by_size.is_none() && by_age.is_none() {
            return;
        }
        let now = self.shared.clock.now_ms();
        let upto = {
            let st = self.state.lock();
            let mut sum: u64 = 0;
            let mut newest_selected = None;
            for (&id, slot) in st.ledgers.iter().rev() {
                let Some(closed) = slot.info.closed_ms else {
                    continue;
                };
                if id == st.current {
                    continue;
                }
                sum += slot.confirmed_size;
                let done = slot.info.offload.as_ref().is_some_and(|c| c.complete);
                #[allow(clippy::cast_sign_loss)]
                let selected = by_size.is_some_and(|t| sum > t as u64)
                    || by_age.is_some_and(|t| now.saturating_sub(closed) >= t as u64 * 1000);
                let settled = slot.confirmed >= slot.info.entries;
                if selected && !done && settled && slot.confirmed > 0 {
                    newest_selected = Some(id);
                    break;
                }
            }
            newest_selected.map(|id| id + 1)
        };
        let Some(upto) = upto else {
            return;
        };
        if !self.take_offload_turn() {
            return; // the running job or the next trigger gets it
        }
        let ml = Arc::clone(self);
        self.spawn_offload_job(move || {
            if let Err(e) = ml.offload_prefix(upto) {
                ml.note_offload_failure();
                tracing::warn!(ledger = %ml.name(), error = %e, "auto-offload failed");
            }
            // Release: see `Tiering::running`.
            ml.tiering.running.store(false, Ordering::Release);
        });
    }

    fn note_offload_failure(&self) {
        // Relaxed: see `Tiering::last_failure_ms`.
        self.tiering
            .last_failure_ms
            .store(self.shared.clock.now_ms(), Ordering::Relaxed);
    }

    /// What is offloaded, for a topic's stats (Pulsar's `offloadedStorageSize`,
    /// `lastOffloadLedgerId`, `lastOffloadSuccessTimeStamp`, `lastOffloadFailureTimeStamp`).
    #[must_use]
    pub fn offload_summary(&self) -> OffloadSummary {
        let st = self.state.lock();
        let mut s = OffloadSummary {
            // Relaxed: see `Tiering::last_failure_ms`.
            last_failure_ms: self.tiering.last_failure_ms.load(Ordering::Relaxed),
            ..OffloadSummary::default()
        };
        for (id, slot) in &st.ledgers {
            if let Some(c) = slot.info.offload.as_ref().filter(|c| c.complete) {
                s.size += slot.confirmed_size;
                s.last_ledger_id = s.last_ledger_id.max(*id);
                s.last_success_ms = s.last_success_ms.max(c.timestamp_ms);
            }
        }
        s
    }

    fn take_offload_turn(&self) -> bool {
        // Acquire: see `Tiering::running`.
        self.tiering
            .running
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Offload jobs run on a thread of their own: they block on the store and on metadata
    /// writes, and are rare (one per managed ledger at a time).
    fn spawn_offload_job(&self, job: impl FnOnce() + Send + 'static) {
        let spawned = std::thread::Builder::new()
            .name("offload".into())
            .spawn(job);
        if let Err(e) = spawned {
            tracing::error!(ledger = %self.name(), error = %e, "cannot start an offload thread");
            // Release: see `Tiering::running`.
            self.tiering.running.store(false, Ordering::Release);
        }
    }

    /// The offload loop: each ledger below `upto_ledger` not offloaded yet, oldest first.
    /// Returns the first position left on the ledgers' own storage.
    fn offload_prefix(&self, upto_ledger: i64) -> Result<Position> {
        let policy = self.tiering.policy();
        let candidates: Vec<(i64, u64, u64, u64, Option<OffloadContext>)> = {
            let st = self.state.lock();
            st.ledgers
                .range(..upto_ledger)
                .filter(|(id, s)| {
                    **id != st.current
                        && s.info.closed_ms.is_some()
                        && s.confirmed > 0
                        && s.confirmed >= s.info.entries
                        && !s.info.offload.as_ref().is_some_and(|c| c.complete)
                })
                .map(|(id, s)| {
                    (
                        *id,
                        s.confirmed,
                        s.confirmed_size,
                        s.info.created_ms,
                        s.info.offload.clone(),
                    )
                })
                .collect()
        };
        if !candidates.is_empty() {
            let Some(offloader) = policy.offloader.clone() else {
                return Err(offload_error(
                    "no offload driver is configured for this topic (managedLedgerOffloadDriver)",
                ));
            };
            for (ledger_id, entries, size, created_ms, earlier) in candidates {
                let source = StoredLedger {
                    ml: self,
                    ledger_id,
                    entries,
                    size,
                    created_ms,
                };
                self.offload_one(offloader.as_ref(), &source, earlier)?;
            }
        }
        let st = self.state.lock();
        let first = st
            .ledgers
            .range(upto_ledger..)
            .next()
            .map_or(st.current, |(id, _)| *id);
        Ok(Position::new(first, 0))
    }

    /// Prepares, uploads and completes one ledger's offload.
    fn offload_one(
        &self,
        offloader: &dyn LedgerOffloader,
        source: &StoredLedger<'_>,
        earlier: Option<OffloadContext>,
    ) -> Result<()> {
        let ledger_id = source.ledger_id;
        if let Some(old) = earlier {
            // A failed earlier attempt: its objects (if any) go before a new uid is recorded.
            if let Err(e) = offloader.delete_offloaded(ledger_id, old.uid, &old.driver_metadata) {
                tracing::warn!(ledger = %self.name(), ledger_id, error = %e, "could not delete an earlier offload attempt's objects");
            }
        }
        let uid = random_uid();
        let prepared = OffloadContext {
            uid,
            complete: false,
            bookkeeper_deleted: false,
            timestamp_ms: 0,
            driver_name: offloader.driver_name().to_owned(),
            driver_metadata: offloader.driver_metadata(),
        };
        if !self.set_offload_context(ledger_id, None, prepared.clone()) {
            return Ok(()); // trimmed meanwhile: nothing to offload
        }
        self.persist()?;
        let extra: BTreeMap<String, String> =
            [("ManagedLedgerName".to_owned(), self.name().to_owned())].into();
        offloader.offload(source, uid, &extra)?;
        let completed = OffloadContext {
            complete: true,
            timestamp_ms: self.shared.clock.now_ms(),
            ..prepared.clone()
        };
        if !self.set_offload_context(ledger_id, Some(uid), completed) {
            // Trimmed, or another attempt took the record over: these objects are nobody's.
            let _ = offloader.delete_offloaded(ledger_id, uid, &prepared.driver_metadata);
            return Err(offload_error(format!(
                "offload of ledger {ledger_id} conflicted with a change of its record"
            )));
        }
        if let Err(e) = self.persist() {
            self.set_offload_context(ledger_id, Some(uid), prepared.clone());
            let _ = offloader.delete_offloaded(ledger_id, uid, &prepared.driver_metadata);
            return Err(e);
        }
        tracing::info!(ledger = %self.name(), ledger_id, uid = %prepared.uuid(), driver = %prepared.driver_name, "offloaded ledger");
        Ok(())
    }

    /// Replaces ledger `ledger_id`'s offload record if it still exists and (when `expect` is
    /// given) still names uid `expect`; whether it did.
    fn set_offload_context(
        &self,
        ledger_id: i64,
        expect: Option<u128>,
        ctx: OffloadContext,
    ) -> bool {
        let mut st = self.state.lock();
        let Some(slot) = st.ledgers.get_mut(&ledger_id) else {
            return false;
        };
        if let Some(uid) = expect {
            if slot.info.offload.as_ref().map(|c| c.uid) != Some(uid) {
                return false;
            }
        }
        slot.info.offload = Some(ctx);
        true
    }

    /// Reads entries `first..=last` of offloaded ledger `ledger_id` from the tier, opening it
    /// once. A failed read forgets the handle, so the next one opens it again.
    pub(crate) fn read_offloaded(
        &self,
        ledger_id: i64,
        ctx: &OffloadContext,
        first: i64,
        last: i64,
    ) -> Result<Vec<Bytes>> {
        let handle = self.tiering.readers.lock().get(&ledger_id).cloned();
        let handle = match handle {
            Some(h) => h,
            None => {
                let Some(offloader) = self.tiering.policy().offloader else {
                    return Err(offload_error(format!(
                        "ledger {ledger_id} of {} is offloaded ({} {}) but no offload driver is configured",
                        self.name(),
                        ctx.driver_name,
                        ctx.uuid()
                    )));
                };
                let h = offloader.open_offloaded(ledger_id, ctx.uid, &ctx.driver_metadata)?;
                tracing::info!(ledger = %self.name(), ledger_id, driver = %ctx.driver_name, "opened ledger from the offload driver");
                self.tiering
                    .readers
                    .lock()
                    .insert(ledger_id, Arc::clone(&h));
                h
            }
        };
        handle.read(first, last).inspect_err(|_| {
            self.tiering.readers.lock().remove(&ledger_id);
        })
    }

    /// Forgets the open handles of ledgers that are gone.
    pub(crate) fn forget_offloaded_readers(&self, ledger_ids: &[i64]) {
        let mut readers = self.tiering.readers.lock();
        for id in ledger_ids {
            readers.remove(id);
        }
    }

    /// Deletes, in the background, the offloaded objects of ledgers that are gone (retention,
    /// the topic's deletion), as Pulsar deletes them with the ledger.
    pub(crate) fn delete_offloaded_objects(&self, gone: Vec<(i64, OffloadContext)>) {
        if gone.is_empty() {
            return;
        }
        self.forget_offloaded_readers(&gone.iter().map(|(id, _)| *id).collect::<Vec<_>>());
        let Some(offloader) = self.tiering.policy().offloader else {
            tracing::warn!(ledger = %self.name(), ledgers = ?gone.iter().map(|(id, _)| *id).collect::<Vec<_>>(), "offloaded objects of deleted ledgers are left in the store: no offload driver is configured");
            return;
        };
        let name = self.name().to_owned();
        let spawned = std::thread::Builder::new()
            .name("offload-delete".into())
            .spawn(move || {
                for (ledger_id, ctx) in gone {
                    if let Err(e) =
                        offloader.delete_offloaded(ledger_id, ctx.uid, &ctx.driver_metadata)
                    {
                        tracing::warn!(ledger = %name, ledger_id, error = %e, "could not delete offloaded objects");
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!(ledger = %self.name(), error = %e, "cannot start an offload-delete thread");
        }
    }
}
