//! `Shared`: what every managed ledger of one storage shares (Pulsar's managed-ledger factory's
//! part that its ledgers hold): the journal, the entry cache, the metadata store, the clock, the
//! ledger id allocator, the journal's recovered entries not yet claimed, and the cursors'
//! read-ahead threads. Made by [`crate::Storage`], held by each of its managed ledgers.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::cache::EntryCache;
use crate::journal::{Journal, Loc, Recovered};
use crate::metastore::{MetaStore, LEDGER_ID_COUNTER_KEY as ID_KEY};
use crate::read_ahead_pool::ReadAheads;
use crate::seam::backing::SeamBacking;
use crate::{Clock, Result};

/// Ledger ids are reserved in blocks, so creating a ledger rarely writes the counter.
pub(crate) const ID_BLOCK: i64 = 256;

pub(crate) struct Shared {
    /// The shared append log.
    pub journal: Arc<Journal>,
    /// The broker-wide entry cache.
    pub cache: Arc<EntryCache>,
    /// Ledger lists and cursor state.
    pub meta: Arc<dyn MetaStore>,
    /// Wall clock (injectable for tests).
    pub clock: Arc<dyn Clock>,
    /// Opened read-only: nothing is trimmed or written; immutable.
    pub read_only: bool,
    /// Entries recovery found damaged or missing (a metric). Relaxed: a counter.
    pub corrupt_entries: AtomicU64,
    /// (next id, first id not reserved). Locked only to hand out ids.
    pub ids: Mutex<(i64, i64)>,
    /// Journal scan results not yet claimed by an opened managed ledger.
    pub recovered: Mutex<Recovered>,
    /// Takes a closed managed ledger's name off the storage's open ledgers (see
    /// [`Shared::forget`]); immutable.
    pub forget_open: Box<dyn Fn(&str) + Send + Sync>,
    /// Cursors' read-ahead: its threads and memory budget.
    pub read_ahead: ReadAheads,
    /// Where managed ledgers live when not in the journal (BookKeeper and ZooKeeper); immutable.
    pub backing: Option<Arc<SeamBacking>>,
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
        // Only the hand-over is locked; the index reads run unlocked.
        let pending = self.recovered.lock().take_blocks(ledger_id);
        pending.load()
    }

    /// Keeps the entry index of a ledger closed on the journal until it is opened again
    /// ([`Recovered::give_back`]).
    pub(crate) fn give_back(&self, ledger_id: i64, locs: Vec<Loc>) {
        self.recovered.lock().give_back(ledger_id, locs);
    }

    /// Drops what is kept of a deleted ledger's entries.
    pub(crate) fn forget_recovered(&self, ledger_id: i64) {
        self.recovered.lock().remove(ledger_id);
    }

    /// A managed ledger closed: the storage no longer lists it as open.
    pub(crate) fn forget(&self, name: &str) {
        (self.forget_open)(name);
    }
}
