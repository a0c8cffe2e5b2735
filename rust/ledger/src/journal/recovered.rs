//! What recovery found, per ledger, loaded lazily: entries of scanned segments are held in
//! memory; entries of indexed segments stay on disk until their ledger is first opened.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use super::index::Block;
use super::record::Loc;
use super::recovery::scan_segment;
use crate::vfs::Vfs;

/// The journal's recovered entry locations, by ledger id. Owned by the storage (behind its lock);
/// [`Recovered::take_blocks`] and [`Recovered::load`] split a lookup so the index reads run
/// unlocked.
pub struct Recovered {
    /// The file system, for re-scanning a segment whose index block is damaged.
    fs: Arc<dyn Vfs>,
    /// Journal directory.
    dir: PathBuf,
    /// Entries found by scanning segments, in scan order.
    scanned: HashMap<i64, Vec<(i64, Loc)>>,
    /// Index blocks of indexed segments, in segment order.
    indexed: HashMap<i64, Vec<Block>>,
}

/// One ledger's recovered entries, not yet read from the index files.
pub struct Pending {
    /// The file system, for re-scanning a segment whose index block is damaged.
    fs: Arc<dyn Vfs>,
    /// Journal directory.
    dir: PathBuf,
    /// The ledger being loaded.
    ledger: i64,
    /// Its entries found by scanning.
    scanned: Vec<(i64, Loc)>,
    /// Its index blocks, read by [`Pending::load`].
    blocks: Vec<Block>,
}

impl Recovered {
    pub(crate) fn new(fs: Arc<dyn Vfs>, dir: PathBuf) -> Self {
        Recovered {
            fs,
            dir,
            scanned: HashMap::new(),
            indexed: HashMap::new(),
        }
    }

    pub(crate) fn add_scanned(&mut self, ledger: i64, entry: i64, loc: Loc) {
        self.scanned.entry(ledger).or_default().push((entry, loc));
    }

    /// Gives back the entries of a ledger closed in this process (its index lived in memory),
    /// so the next open of the ledger finds them as a restart's scan would.
    pub(crate) fn give_back(&mut self, ledger: i64, locs: Vec<Loc>) {
        let entries = self.scanned.entry(ledger).or_default();
        entries.extend((0_i64..).zip(locs));
    }

    pub(crate) fn add_block(&mut self, ledger: i64, block: Block) {
        self.indexed.entry(ledger).or_default().push(block);
    }

    /// Every ledger id with recovered entries.
    #[must_use]
    pub fn ledger_ids(&self) -> HashSet<i64> {
        self.scanned
            .keys()
            .chain(self.indexed.keys())
            .copied()
            .collect()
    }

    /// Whether nothing was recovered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.scanned.is_empty() && self.indexed.is_empty()
    }

    /// Removes and loads one ledger's entries (I/O on the caller's thread).
    pub fn take(&mut self, ledger: i64) -> Vec<(i64, Loc)> {
        self.take_blocks(ledger).load()
    }

    /// Forgets a ledger (deleted: nobody will open it).
    pub fn remove(&mut self, ledger: i64) {
        self.scanned.remove(&ledger);
        self.indexed.remove(&ledger);
    }

    /// Removes one ledger's entries for loading (cheap: no I/O).
    pub fn take_blocks(&mut self, ledger: i64) -> Pending {
        Pending {
            fs: Arc::clone(&self.fs),
            dir: self.dir.clone(),
            ledger,
            scanned: self.scanned.remove(&ledger).unwrap_or_default(),
            blocks: self.indexed.remove(&ledger).unwrap_or_default(),
        }
    }
}

impl Pending {
    /// Reads the ledger's entries from the index files (re-scanning a segment whose block is
    /// damaged), in segment order.
    #[must_use]
    pub fn load(self) -> Vec<(i64, Loc)> {
        let mut out = Vec::new();
        for b in &self.blocks {
            if let Some(v) = b.read() {
                out.extend(v);
                continue;
            }
            tracing::warn!(
                segment = b.segment,
                ledger = self.ledger,
                "journal index block unreadable; scanning the segment"
            );
            let path = super::segment_path(&self.dir, b.segment);
            if let Ok(data) = self.fs.read(&path) {
                let scan = scan_segment(&path, b.segment, &data);
                out.extend(
                    scan.records
                        .iter()
                        .filter(|r| r.ledger == self.ledger)
                        .map(|r| (r.entry, r.loc)),
                );
            }
        }
        out.extend(self.scanned);
        // Scan order across segments (the dedup in recovery keeps the first copy of an entry).
        out.sort_by_key(|(_, l)| (l.segment, l.offset));
        out
    }
}
