//! `Storage`: one data directory. Owns the shared journal, the broker-wide entry cache, the
//! metadata store, the ledger id allocator (all held for its managed ledgers in
//! [`crate::shared`]) and a housekeeping thread, and opens managed ledgers.
//!
//! [`Storage::open_read_only`] opens a directory for export and inspection: no lock, no
//! housekeeping thread, no truncation of torn tails, no trimming, no writes of any kind (every
//! write fails with [`LedgerError::ReadOnly`]), so it is safe on a copy of a live broker's
//! directory. A managed-ledger metadata record that is corrupt does not stop the open: that
//! ledger fails to open (its topic is quarantined by the broker) and, since nobody can tell which
//! journal records are still its own, no journal segment is removed in this run.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::cache::{CacheStats, EntryCache};
use crate::journal::Journal;
use crate::managed_ledger::ManagedLedger;
use crate::metastore::{
    key_name, FileMetaStore, MetaStore, LEDGER_ID_COUNTER_KEY as ID_KEY, MANAGED_LEDGERS_PREFIX,
    META_DIR,
};
use crate::read_ahead_pool::ReadAheads;
use crate::shared::{Shared, ID_BLOCK};
use crate::vfs::{ensure_dir, DirLock, RealFs, Vfs};
use crate::{Clock, LedgerConfig, LedgerError, Result, StorageConfig, SystemClock};

/// Opens done again after a concurrent change of the ledger list ([`Storage::open_ledger`]).
const OPEN_RETRIES: usize = 3;

/// The storage's open managed ledgers, shared with its housekeeping thread and (to forget a
/// closed one, through [`Shared::forget`]) with its managed ledgers.
#[derive(Default)]
struct Opened {
    /// Open managed ledgers by name, and names being opened. Short lock: never held across
    /// the file I/O of an open (see [`Storage::open_ledger`]).
    ledgers: Mutex<OpenLedgers>,
    /// Signalled when an open finishes (waited on with `ledgers`), for callers of the same name.
    done: Condvar,
}

/// The open managed ledgers; guarded by [`Opened::ledgers`].
#[derive(Default)]
struct OpenLedgers {
    /// Open managed ledgers by name (weak: closing or dropping one removes it).
    by_name: HashMap<String, Weak<ManagedLedger>>,
    /// Names whose open is in progress on some thread, without the lock.
    opening: HashSet<String>,
}

impl Opened {
    /// The open managed ledgers.
    fn open_ledgers(&self) -> Vec<Arc<ManagedLedger>> {
        self.ledgers
            .lock()
            .by_name
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }
}

/// A name's open in progress; dropping it ends the open and wakes the callers waiting for it.
struct OpeningMark<'a> {
    open: &'a Opened,
    name: &'a str,
}

impl Drop for OpeningMark<'_> {
    fn drop(&mut self) {
        self.open.ledgers.lock().opening.remove(self.name);
        self.open.done.notify_all();
    }
}

/// Shared signal to stop the housekeeping thread.
struct Stop {
    flag: Mutex<bool>,
    cond: Condvar,
}

/// A data directory holding any number of managed ledgers.
pub struct Storage {
    /// State shared with every managed ledger.
    shared: Arc<Shared>,
    /// The open managed ledgers.
    open: Arc<Opened>,
    /// Settings; immutable.
    config: StorageConfig,
    /// Root directory; immutable.
    dir: PathBuf,
    /// Stops the housekeeper.
    stop: Arc<Stop>,
    /// The housekeeping thread, joined on close.
    housekeeper: Mutex<Option<JoinHandle<()>>>,
    /// The journal behind the ledger-storage seam, made on first use.
    seam: std::sync::OnceLock<Arc<crate::seam::journal_ledgers::JournalLedgers>>,
    /// The metadata store behind the seam, made on first use (one, so its compare-and-set lock
    /// covers every caller).
    seam_store: std::sync::OnceLock<Arc<crate::seam::local_store::LocalVersionedStore>>,
    /// `<data>/LOCK`, held with an exclusive advisory lock while open: two processes must never
    /// append to the same journal. Released by `close` (or on drop). `None` when read-only.
    lock: Mutex<Option<DirLock>>,
}

impl Storage {
    /// Opens (creating) a data directory with the real clock.
    ///
    /// # Errors
    /// Invalid settings, I/O failures, or corrupt metadata.
    pub fn open(dir: impl AsRef<Path>, config: StorageConfig) -> Result<Arc<Storage>> {
        Self::open_with_clock(dir, config, Arc::new(SystemClock))
    }

    /// Opens a data directory with an injected clock (tests of rollover and retention).
    ///
    /// # Errors
    /// As [`Storage::open`].
    pub fn open_with_clock(
        dir: impl AsRef<Path>,
        config: StorageConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Storage>> {
        Self::open_on(Arc::new(RealFs), dir, config, clock, false)
    }

    /// Opens a data directory read-only, for export and inspection: see the module docs.
    ///
    /// # Errors
    /// Invalid settings, I/O failures, a missing directory.
    pub fn open_read_only(dir: impl AsRef<Path>, config: StorageConfig) -> Result<Arc<Storage>> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            return Err(LedgerError::io(
                format!("opening {} read-only", dir.display()),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        }
        Self::open_on(Arc::new(RealFs), dir, config, Arc::new(SystemClock), true)
    }

    /// Opens a data directory on a given file system (the simulation in tests).
    ///
    /// # Errors
    /// As [`Storage::open`].
    pub fn open_on(
        fs: Arc<dyn Vfs>,
        dir: impl AsRef<Path>,
        config: StorageConfig,
        clock: Arc<dyn Clock>,
        read_only: bool,
    ) -> Result<Arc<Storage>> {
        Self::open_backed(fs, dir, config, clock, read_only, None)
    }

    /// Opens a data directory whose managed ledgers live on `backing` (BookKeeper and
    /// ZooKeeper, in Pulsar's formats) rather than in its journal; the directory keeps the
    /// broker's other records (policies, schemas' index, ...).
    ///
    /// # Errors
    /// As [`Storage::open`].
    pub fn open_on_backing(
        dir: impl AsRef<Path>,
        config: StorageConfig,
        backing: Arc<crate::seam::SeamBacking>,
        clock: Arc<dyn Clock>,
        read_only: bool,
    ) -> Result<Arc<Storage>> {
        Self::open_backed(
            Arc::new(RealFs),
            dir,
            config,
            clock,
            read_only,
            Some(backing),
        )
    }

    fn open_backed(
        fs: Arc<dyn Vfs>,
        dir: impl AsRef<Path>,
        config: StorageConfig,
        clock: Arc<dyn Clock>,
        read_only: bool,
        backing: Option<Arc<crate::seam::SeamBacking>>,
    ) -> Result<Arc<Storage>> {
        config.validate()?;
        let dir = dir.as_ref().to_path_buf();
        let lock = if read_only {
            None
        } else {
            ensure_dir(fs.as_ref(), &dir)
                .map_err(|e| LedgerError::io(format!("creating {}", dir.display()), e))?;
            let lock_path = dir.join("LOCK");
            let held = fs
                .lock(&lock_path)
                .map_err(|e| LedgerError::io(format!("opening {}", lock_path.display()), e))?;
            Some(held.ok_or_else(|| LedgerError::Locked {
                path: dir.display().to_string(),
            })?)
        };
        let meta: Arc<dyn MetaStore> = Arc::new(FileMetaStore::open_with(
            Arc::clone(&fs),
            dir.join(META_DIR),
            read_only,
        )?);
        let (journal, mut recovered) = Journal::open_with(
            Arc::clone(&fs),
            dir.join("journal"),
            config.journal_sync_data,
            config.journal_max_segment_bytes,
            read_only,
        )?;
        journal.set_group_commit(
            config.journal_max_group_wait,
            config.journal_buffered_writes_threshold,
        );
        journal.set_prealloc(config.journal_prealloc_bytes);
        journal.set_direct_writes(config.journal_direct_writes);
        journal.set_adaptive_group_wait(config.journal_adaptive_group_wait);
        let (live, unreadable) = live_ledger_ids(meta.as_ref())?;
        let in_journal = recovered.ledger_ids();
        let max_seen = in_journal.iter().chain(live.iter()).copied().max();
        if unreadable.is_empty() {
            // Ledgers the metadata no longer knows were deleted: forget their records and segments.
            let dead: Vec<i64> = in_journal
                .iter()
                .filter(|id| !live.contains(id))
                .copied()
                .collect();
            for id in dead {
                recovered.remove(id);
                journal.release_ledger(id);
            }
        } else {
            tracing::error!(records = ?unreadable, "corrupt managed-ledger metadata: those topics are quarantined and no journal segment is removed in this run");
        }
        let next_id = match meta.get(ID_KEY) {
            Ok(Some(raw)) => std::str::from_utf8(&raw)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| LedgerError::CorruptMetadata {
                    key: ID_KEY.into(),
                    reason: "not an integer".into(),
                }),
            Ok(None) => Ok(0),
            Err(e @ LedgerError::CorruptMetadata { .. }) => Err(e),
            Err(e) => return Err(e),
        };
        let next_id = next_id.unwrap_or_else(|e| {
            // Every id ever handed out is in the journal or the metadata: start past them all.
            let id = max_seen.map_or(0, |m| m + 1 + ID_BLOCK);
            tracing::error!(error = %e, next_id = id, "ledger id counter unreadable; continuing past every id in use");
            id
        });
        let next_id = next_id.max(max_seen.map_or(0, |m| m + 1));
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let cache = EntryCache::new(
            config.cache_size_bytes,
            config.cache_eviction_watermark,
            config.cache_eviction_time_threshold.as_millis() as u64,
        );
        let open = Arc::new(Opened::default());
        let forget_open = {
            let open = Arc::clone(&open);
            Box::new(move |name: &str| {
                open.ledgers.lock().by_name.remove(name);
            })
        };
        let shared = Arc::new(Shared {
            journal,
            cache,
            meta,
            clock,
            read_only,
            corrupt_entries: AtomicU64::new(0),
            ids: Mutex::new((next_id, next_id)),
            recovered: Mutex::new(recovered),
            forget_open,
            read_ahead: ReadAheads::default(),
            backing,
        });
        let stop = Arc::new(Stop {
            flag: Mutex::new(false),
            cond: Condvar::new(),
        });
        let storage = Arc::new(Storage {
            shared,
            open,
            config,
            dir,
            stop,
            housekeeper: Mutex::new(None),
            seam: std::sync::OnceLock::new(),
            seam_store: std::sync::OnceLock::new(),
            lock: Mutex::new(lock),
        });
        if !read_only {
            let shared = Arc::clone(&storage.shared);
            let open = Arc::clone(&storage.open);
            let stop = Arc::clone(&storage.stop);
            let cfg = storage.config.clone();
            let handle = std::thread::Builder::new()
                .name("ledger-housekeeper".into())
                .spawn(move || housekeeping_loop(&shared, &open, &stop, &cfg))
                .map_err(|e| LedgerError::io("starting the housekeeping thread", e))?;
            *storage.housekeeper.lock() = Some(handle);
        }
        Ok(storage)
    }

    /// Whether the directory was opened read-only.
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.shared.read_only
    }

    /// Entries recovery found damaged or missing in the ledgers opened so far.
    #[must_use]
    pub fn corrupt_entries(&self) -> u64 {
        // Relaxed: a counter.
        self.shared.corrupt_entries.load(Ordering::Relaxed)
    }

    /// Journal segments whose checkpointed index was used at open (not scanned).
    #[must_use]
    pub fn journal_segments_indexed_at_open(&self) -> usize {
        self.shared.journal.indexed_at_open()
    }

    /// Non-empty journal segments scanned at open, with why their index was not used.
    #[must_use]
    pub fn journal_segments_scanned_at_open(&self) -> &[(u32, &'static str)] {
        self.shared.journal.scanned_at_open()
    }

    /// Journal segments read through a memory mapping instead of `pread` (read-only opens of a
    /// real directory map every segment; read-write opens none).
    #[must_use]
    pub fn journal_segments_mapped(&self) -> usize {
        self.shared.journal.mapped_segments()
    }

    /// Writes the journal index of every sealed segment not indexed yet (the housekeeper does
    /// this periodically); returns how many were written.
    pub fn checkpoint_journal(&self) -> usize {
        self.shared.journal.checkpoint()
    }

    /// Damaged regions recovery found in the middle of journal segments.
    #[must_use]
    pub fn damaged_journal_regions(&self) -> usize {
        self.shared.journal.damaged_regions()
    }

    /// The data directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The ledgers and metadata store the managed ledgers live on, when not the journal.
    #[must_use]
    pub fn backing(&self) -> Option<&Arc<crate::seam::SeamBacking>> {
        self.shared.backing.as_ref()
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &StorageConfig {
        &self.config
    }

    /// Opens (creating) the managed ledger `name`, or returns it if already open.
    ///
    /// # Errors
    /// Invalid settings or name, I/O failures, corrupt metadata.
    pub fn open_ledger(&self, name: &str, config: LedgerConfig) -> Result<Arc<ManagedLedger>> {
        // The storage-wide lock only guards the map: opening a ledger reads and writes its
        // metadata (with fsyncs), so that runs unlocked and other topics' opens and lookups
        // never wait behind it. Callers for the same name wait on the condvar (which releases
        // the lock) for the one open in progress.
        let mut open = self.open.ledgers.lock();
        loop {
            if let Some(ml) = open
                .by_name
                .get(name)
                .and_then(Weak::upgrade)
                .filter(|m| !m.is_closed())
            {
                return Ok(ml);
            }
            if !open.opening.contains(name) {
                break;
            }
            self.open.done.wait(&mut open);
        }
        open.opening.insert(name.to_owned());
        drop(open);
        // Clears the mark even if the open panics, so later callers do not wait forever.
        let mark = OpeningMark {
            open: &self.open,
            name,
        };
        let mut res = ManagedLedger::open(name, config.clone(), Arc::clone(&self.shared));
        // On a shared store, the list may change between this open's read and its
        // compare-and-set (the previous owner trimming or rolling over before it meets the
        // fence): the open fails as fenced, and is done again from a fresh read, as Pulsar's
        // broker loads a topic again. A few times at most: a live owner keeps winning.
        for _ in 0..OPEN_RETRIES {
            let raced = matches!(res, Err(LedgerError::Fenced { .. }))
                && self.shared.backing.is_some()
                && !self.shared.read_only;
            if !raced {
                break;
            }
            tracing::info!(ledger = %name, "the ledger list changed during the open: opening again");
            res = ManagedLedger::open(name, config.clone(), Arc::clone(&self.shared));
        }
        if let Ok(ml) = &res {
            mark.open
                .ledgers
                .lock()
                .by_name
                .insert(name.to_owned(), Arc::downgrade(ml));
        }
        drop(mark);
        res
    }

    /// Whether the managed ledger `name` is stored (open or not), without creating it.
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn ledger_exists(&self, name: &str) -> Result<bool> {
        let open = self.open.ledgers.lock().by_name.get(name).cloned();
        if open.is_some_and(|w| w.upgrade().is_some()) {
            return Ok(true);
        }
        if let Some(b) = &self.shared.backing {
            return crate::managed_ledger::on_seam::ledger_exists(b, name);
        }
        Ok(self
            .shared
            .meta
            .get(&crate::metastore::managed_ledger_key(name))?
            .is_some())
    }

    /// Names of every managed ledger stored (open or not).
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn ledger_names(&self) -> Result<Vec<String>> {
        if let Some(b) = &self.shared.backing {
            return crate::managed_ledger::on_seam::ledger_names(b);
        }
        Ok(self
            .shared
            .meta
            .list(MANAGED_LEDGERS_PREFIX)?
            .iter()
            .map(|k| key_name(k))
            .collect())
    }

    /// Currently open managed ledgers.
    #[must_use]
    pub fn open_ledgers(&self) -> Vec<Arc<ManagedLedger>> {
        self.open.open_ledgers()
    }

    /// This directory's journal as a [`crate::seam::LedgerStorage`] (the same instance every call).
    #[must_use]
    pub fn seam_ledgers(&self) -> Arc<crate::seam::journal_ledgers::JournalLedgers> {
        Arc::clone(self.seam.get_or_init(|| {
            crate::seam::journal_ledgers::JournalLedgers::new(Arc::clone(&self.shared))
        }))
    }

    /// This directory's metadata store as a [`crate::seam::VersionedStore`] (the same instance
    /// every call).
    #[must_use]
    pub fn seam_store(&self) -> Arc<crate::seam::local_store::LocalVersionedStore> {
        Arc::clone(self.seam_store.get_or_init(|| {
            crate::seam::local_store::LocalVersionedStore::new(Arc::clone(&self.shared.meta))
        }))
    }

    /// The broker's clock (see [`pulsar_rs_clock`]): the one every layer above reads.
    #[must_use]
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.shared.clock)
    }

    /// The metadata store, for other layers' records (policies, partitioned topics, schemas).
    #[must_use]
    pub fn meta(&self) -> Arc<dyn MetaStore> {
        Arc::clone(&self.shared.meta)
    }

    /// Entry cache counters.
    #[must_use]
    pub fn cache_stats(&self) -> CacheStats {
        self.shared.cache.stats()
    }

    /// Entries cursors took from their read-ahead (read while the previous read was sent).
    #[must_use]
    pub fn read_ahead_entries(&self) -> u64 {
        self.shared.read_ahead.served()
    }

    /// Bytes used by journal segment files.
    #[must_use]
    pub fn journal_disk_usage(&self) -> u64 {
        self.shared.journal.disk_usage()
    }

    /// Number of journal segment files.
    #[must_use]
    pub fn journal_segments(&self) -> usize {
        self.shared.journal.segment_count()
    }

    /// Journal write rounds so far (one sync each in durable mode).
    #[must_use]
    pub fn journal_rounds(&self) -> u64 {
        self.shared.journal.rounds()
    }

    /// Whether appends wait for fsync.
    #[must_use]
    pub fn is_durable(&self) -> bool {
        self.shared.journal.is_durable()
    }

    /// Runs housekeeping on every open ledger now (persist cursors, evict, trim) and
    /// checkpoints the journal index, as the housekeeping thread does periodically.
    ///
    /// # Errors
    /// The first failure encountered.
    pub fn housekeeping(&self) -> Result<()> {
        let res = run_housekeeping(&self.shared, &self.open);
        self.shared.journal.checkpoint();
        res
    }

    /// Closes every open ledger (persisting cursors), drains the journal and stops background work.
    ///
    /// # Errors
    /// The first failure while persisting cursors.
    pub fn close(&self) -> Result<()> {
        *self.stop.flag.lock() = true;
        self.stop.cond.notify_all();
        if let Some(h) = self.housekeeper.lock().take() {
            let _ = h.join();
        }
        let mut first = None;
        for ml in self.open_ledgers() {
            if let Err(e) = ml.close() {
                first.get_or_insert(e);
            }
        }
        self.shared.journal.close();
        // Closing the file releases the advisory lock: the directory may be reopened now.
        self.lock.lock().take();
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        *self.stop.flag.lock() = true;
        self.stop.cond.notify_all();
    }
}

/// Ledger ids named by readable managed-ledger records, and the keys of unreadable ones.
fn live_ledger_ids(meta: &dyn MetaStore) -> Result<(HashSet<i64>, Vec<String>)> {
    #[derive(serde::Deserialize)]
    struct Info {
        ledgers: Vec<Id>,
    }
    #[derive(serde::Deserialize)]
    struct Id {
        ledger_id: i64,
        #[serde(default)]
        offload: Option<Offloaded>,
    }
    #[derive(serde::Deserialize)]
    struct Offloaded {
        complete: bool,
        #[serde(default)]
        bookkeeper_deleted: bool,
    }
    let mut live = HashSet::new();
    let mut unreadable = Vec::new();
    for key in meta.list(MANAGED_LEDGERS_PREFIX)? {
        let raw = match meta.get(&key) {
            Ok(Some(raw)) => raw,
            Ok(None) => continue,
            Err(LedgerError::CorruptMetadata { .. }) => {
                unreadable.push(key);
                continue;
            }
            Err(e) => return Err(e),
        };
        match serde_json::from_slice::<Info>(&raw) {
            // A ledger kept only in the tier holds nothing in the journal any more.
            Ok(info) => live.extend(
                info.ledgers
                    .iter()
                    .filter(|l| {
                        !l.offload
                            .as_ref()
                            .is_some_and(|o| o.complete && o.bookkeeper_deleted)
                    })
                    .map(|l| l.ledger_id),
            ),
            Err(_) => unreadable.push(key),
        }
    }
    let (seam, seam_unreadable) = crate::seam::local_store::seam_ledger_ids(meta)?;
    live.extend(seam);
    unreadable.extend(seam_unreadable);
    Ok((live, unreadable))
}

/// A housekeeping pass over one ledger longer than this is logged (its metadata store or bookies
/// are slow, and every other ledger's pass waits).
const SLOW_HOUSEKEEPING: Duration = Duration::from_secs(5);

fn run_housekeeping(shared: &Shared, open: &Opened) -> Result<()> {
    if shared.read_only {
        return Ok(());
    }
    let mut first = None;
    for ml in open.open_ledgers() {
        let started = crate::clock::monotonic();
        if let Err(e) = ml.housekeeping() {
            tracing::warn!(ledger = ml.name(), error = %e, "housekeeping failed");
            first.get_or_insert(e);
        }
        // The age threshold passes with time, and a rollover's ledger may have settled since.
        ml.maybe_offload();
        // One pass holds up every other ledger's (cursor flushes, trims): a slow store shows here.
        let took = started.elapsed();
        if took >= SLOW_HOUSEKEEPING {
            tracing::warn!(
                ledger = ml.name(),
                took_ms = took.as_millis() as u64,
                "slow housekeeping pass"
            );
        }
    }
    first.map_or(Ok(()), Err)
}

fn housekeeping_loop(shared: &Shared, open: &Opened, stop: &Stop, cfg: &StorageConfig) {
    let mut last_full = crate::clock::monotonic();
    loop {
        {
            let mut stopped = stop.flag.lock();
            if *stopped {
                return;
            }
            stop.cond
                .wait_for(&mut stopped, cfg.cache_eviction_interval);
            if *stopped {
                return;
            }
        }
        shared.cache.evict_expired(shared.clock.now_ms());
        if last_full.elapsed() >= cfg.cursor_flush_interval.max(Duration::from_millis(10)) {
            last_full = crate::clock::monotonic();
            let _ = run_housekeeping(shared, open);
            // Index the segments sealed since the last pass: the next restart reads their
            // index headers instead of scanning them.
            shared.journal.checkpoint();
        }
    }
}
