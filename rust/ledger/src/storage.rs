//! `Storage`: one data directory. Owns the shared journal, the broker-wide entry cache, the
//! metadata store, the ledger id allocator and a housekeeping thread, and opens managed ledgers.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::cache::{CacheStats, EntryCache};
use crate::journal::{Journal, Loc, RecoveredLedgers};
use crate::managed_ledger::ManagedLedger;
use crate::metastore::{key_name, FileMetaStore, MetaStore, MANAGED_LEDGERS_PREFIX};
use crate::{Clock, LedgerConfig, LedgerError, Result, StorageConfig, SystemClock};

/// Ledger ids are reserved in blocks, so creating a ledger rarely writes the counter.
const ID_BLOCK: i64 = 256;
const ID_KEY: &str = "ledger-id-counter";

pub(crate) struct Shared {
    /// The shared append log.
    pub journal: Arc<Journal>,
    /// The broker-wide entry cache.
    pub cache: Arc<EntryCache>,
    /// Ledger lists and cursor state.
    pub meta: Arc<dyn MetaStore>,
    /// Wall clock (injectable for tests).
    pub clock: Arc<dyn Clock>,
    /// (next id, first id not reserved). Locked only to hand out ids.
    ids: Mutex<(i64, i64)>,
    /// Journal scan results not yet claimed by an opened managed ledger.
    recovered: Mutex<RecoveredLedgers>,
    /// Open managed ledgers by name (weak: closing or dropping one removes it).
    open: Mutex<HashMap<String, Weak<ManagedLedger>>>,
}

impl Shared {
    pub(crate) fn next_ledger_id(&self) -> Result<i64> {
        let mut ids = self.ids.lock();
        if ids.0 >= ids.1 {
            let limit = ids.1.max(ids.0) + ID_BLOCK;
            // Persist the new limit before handing out ids below it: a crash cannot reuse an id.
            self.meta.put(ID_KEY, limit.to_string().as_bytes())?;
            ids.1 = limit;
        }
        let id = ids.0;
        ids.0 += 1;
        Ok(id)
    }

    pub(crate) fn take_recovered(&self, ledger_id: i64) -> Vec<(i64, Loc)> {
        self.recovered.lock().remove(&ledger_id).unwrap_or_default()
    }

    pub(crate) fn forget(&self, name: &str) {
        self.open.lock().remove(name);
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
    /// Settings; immutable.
    config: StorageConfig,
    /// Root directory; immutable.
    dir: PathBuf,
    /// Stops the housekeeper.
    stop: Arc<Stop>,
    /// The housekeeping thread, joined on close.
    housekeeper: Mutex<Option<JoinHandle<()>>>,
    /// `<data>/LOCK`, held with an exclusive advisory lock while open: two processes must never
    /// append to the same journal. Released by `close` (or on drop).
    lock: Mutex<Option<std::fs::File>>,
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
        config.validate()?;
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir)
            .map_err(|e| LedgerError::io(format!("creating {}", dir.display()), e))?;
        let lock_path = dir.join("LOCK");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| LedgerError::io(format!("opening {}", lock_path.display()), e))?;
        if lock.try_lock().is_err() {
            return Err(LedgerError::Locked {
                path: dir.display().to_string(),
            });
        }
        let meta: Arc<dyn MetaStore> = Arc::new(FileMetaStore::open(dir.join("meta"))?);
        let (journal, mut recovered) = Journal::open(
            dir.join("journal"),
            config.journal_sync_data,
            config.journal_max_segment_bytes,
        )?;
        // Ledgers the metadata no longer knows were deleted: forget their records and segments.
        let live = live_ledger_ids(meta.as_ref())?;
        let dead: Vec<i64> = recovered
            .keys()
            .filter(|id| !live.contains(id))
            .copied()
            .collect();
        for id in dead {
            recovered.remove(&id);
            journal.release_ledger(id);
        }
        let next_id = match meta.get(ID_KEY)? {
            Some(raw) => std::str::from_utf8(&raw)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| LedgerError::CorruptMetadata {
                    key: ID_KEY.into(),
                    reason: "not an integer".into(),
                })?,
            None => 0,
        };
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let cache = EntryCache::new(
            config.cache_size_bytes,
            config.cache_eviction_watermark,
            config.cache_eviction_time_threshold.as_millis() as u64,
        );
        let shared = Arc::new(Shared {
            journal,
            cache,
            meta,
            clock,
            ids: Mutex::new((next_id, next_id)),
            recovered: Mutex::new(recovered),
            open: Mutex::new(HashMap::new()),
        });
        let stop = Arc::new(Stop {
            flag: Mutex::new(false),
            cond: Condvar::new(),
        });
        let storage = Arc::new(Storage {
            shared,
            config,
            dir,
            stop,
            housekeeper: Mutex::new(None),
            lock: Mutex::new(Some(lock)),
        });
        let handle = {
            let shared = Arc::clone(&storage.shared);
            let stop = Arc::clone(&storage.stop);
            let cfg = storage.config.clone();
            std::thread::Builder::new()
                .name("ledger-housekeeper".into())
                .spawn(move || housekeeping_loop(&shared, &stop, &cfg))
                .map_err(|e| LedgerError::io("starting the housekeeping thread", e))?
        };
        *storage.housekeeper.lock() = Some(handle);
        Ok(storage)
    }

    /// The data directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
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
        let mut open = self.shared.open.lock();
        if let Some(ml) = open
            .get(name)
            .and_then(Weak::upgrade)
            .filter(|m| !m.is_closed())
        {
            return Ok(ml);
        }
        let ml = ManagedLedger::open(name, config, Arc::clone(&self.shared))?;
        open.insert(name.to_owned(), Arc::downgrade(&ml));
        Ok(ml)
    }

    /// Names of every managed ledger stored (open or not).
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn ledger_names(&self) -> Result<Vec<String>> {
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
        self.shared
            .open
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .collect()
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

    /// Runs housekeeping on every open ledger now (persist cursors, evict, trim).
    ///
    /// # Errors
    /// The first failure encountered.
    pub fn housekeeping(&self) -> Result<()> {
        run_housekeeping(&self.shared)
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

fn live_ledger_ids(meta: &dyn MetaStore) -> Result<HashSet<i64>> {
    #[derive(serde::Deserialize)]
    struct Info {
        ledgers: Vec<Id>,
    }
    #[derive(serde::Deserialize)]
    struct Id {
        ledger_id: i64,
    }
    let mut live = HashSet::new();
    for key in meta.list(MANAGED_LEDGERS_PREFIX)? {
        if let Some(raw) = meta.get(&key)? {
            let info: Info =
                serde_json::from_slice(&raw).map_err(|e| LedgerError::CorruptMetadata {
                    key: key.clone(),
                    reason: e.to_string(),
                })?;
            live.extend(info.ledgers.iter().map(|l| l.ledger_id));
        }
    }
    Ok(live)
}

fn run_housekeeping(shared: &Shared) -> Result<()> {
    let open: Vec<Arc<ManagedLedger>> = shared
        .open
        .lock()
        .values()
        .filter_map(Weak::upgrade)
        .collect();
    let mut first = None;
    for ml in open {
        if let Err(e) = ml.housekeeping() {
            tracing::warn!(ledger = ml.name(), error = %e, "housekeeping failed");
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

fn housekeeping_loop(shared: &Shared, stop: &Stop, cfg: &StorageConfig) {
    let mut last_full = Instant::now();
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
            last_full = Instant::now();
            let _ = run_housekeeping(shared);
        }
    }
}
