//! The journal: one append-only log shared by every managed ledger of a data directory, with
//! group commit.
//!
//! Like BookKeeper's journal, entries of all ledgers are interleaved in one sequence of segment
//! files (`<data>/journal/<id>.log`), so one `fdatasync` makes a whole round of appends durable no
//! matter how many topics wrote in it. Appenders only copy their record into an in-memory buffer
//! under a short lock; a dedicated flusher thread takes the whole buffer, writes it with one
//! `pwrite`, syncs once (and syncs the directory when a segment was created since the last
//! round), then runs the completions of that round in append order (see [`flusher`]); while idle
//! it writes zeros ahead of the active segment's end (see [`prealloc`]). The record format is in
//! [`record`]; what recovery does with damaged records is in [`recovery`].
//!
//! A failed write (for example a full disk) fails every record not yet durable, truncates the
//! segment back to its last good length, makes that truncation durable (so the failed records
//! can never surface after a crash as entries nobody acknowledged) and moves to a new segment.
//! If even the truncation cannot be made durable the journal refuses further appends.
//!
//! Opened read-only (export, inspection), the journal scans but never truncates, creates no
//! segment, starts no flusher and refuses appends.

mod checkpoint;
mod completion;
mod crc;
mod direct;
mod direct_read;
mod flusher;
mod group;
mod index;
mod prealloc;
mod read;
pub mod record;
mod recovered;
mod recovery;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::{Bytes, BytesMut};
use parking_lot::{Condvar, Mutex};

use crate::vfs::{ensure_dir, VFile, Vfs};
use crate::{LedgerError, Result};

pub use record::{KnownCrc, Loc, Record, CORRUPT_LEN, RECORD_HEADER};
pub use recovered::{Pending as PendingRecovered, Recovered};

use index::IndexRecord;

/// Unwritten bytes above which non-durable appends wait for the write (memory bound).
pub const MAX_UNWRITTEN_BYTES: usize = 64 << 20;

pub use completion::{Completion, DurableThrough};

/// A region of bytes waiting for, or undergoing, a write.
#[derive(Clone)]
struct Pending {
    segment: u32,
    offset: u64,
    data: Bytes,
    file: Arc<dyn VFile>,
    /// The last bytes of a sealed segment: once written, preallocated zeros past them are cut.
    seals: bool,
}

struct State {
    /// Open segment files by id; the flusher and readers clone the `Arc` and do I/O unlocked.
    segments: BTreeMap<u32, Arc<dyn VFile>>,
    /// Ledgers with records in each segment, for garbage collection.
    segment_ledgers: BTreeMap<u32, HashSet<i64>>,
    /// The (segment, ledger) last added to `segment_ledgers`: the next append of the same
    /// ledger to the same segment has nothing to add (segment ids are never reused).
    last_noted: Option<(u32, i64)>,
    /// Ledgers deleted since start; their segments may be removed once nothing else lives there.
    deleted_ledgers: HashSet<i64>,
    /// Segment receiving appends.
    active: u32,
    /// Logical length of the active segment, buffered bytes included.
    active_len: u64,
    /// Records appended but not yet handed to the flusher (segment `active`, from `buf_offset`).
    buf: BytesMut,
    /// File offset of `buf[0]`.
    buf_offset: u64,
    /// Buffers of earlier segments sealed by a rotation, not yet handed to the flusher.
    sealed: Vec<Pending>,
    /// What the flusher is writing right now (readable from memory until written).
    inflight: Vec<Pending>,
    /// A written round's buffer kept for the next round: its pages are already faulted in, so
    /// appends copy into warm memory instead of a fresh allocation the kernel must zero.
    spare: Option<BytesMut>,
    /// Completions of everything in `sealed` and `buf`, in append order.
    completions: Vec<Completion>,
    /// A segment was created since the last directory sync: the next round syncs the directory
    /// before completing anything (an `fdatasync` of the file does not make its name durable).
    dir_dirty: bool,
    /// Set when a failed write could not even be cut back durably: appends are refused.
    poisoned: Option<String>,
    /// Set by `close`; the flusher drains and exits.
    closed: bool,
    /// Records of the active segment, for its index once sealed.
    active_records: Vec<IndexRecord>,
    /// False once a failed write cut the active segment back: it is never indexed (scanned).
    active_indexable: bool,
    /// Sealed segments whose index is not written yet, with their records.
    unindexed: Vec<(u32, Vec<IndexRecord>)>,
    /// When the first record of the next round was buffered (group commit's wait starts there).
    gathering_since: Option<std::time::Instant>,
    /// Arrival statistics for the adaptive group wait (see [`group::Arrivals`]).
    arrivals: group::Arrivals,
    /// Set by [`Journal::flush`]: the next round is written without a group wait.
    flush_requested: bool,
}

/// The shared append log. See the module docs.
pub struct Journal {
    /// The file system; immutable.
    fs: Arc<dyn Vfs>,
    /// Directory of segment files; immutable.
    dir: PathBuf,
    /// Opened read-only: no appends, no truncation, no removal; immutable.
    read_only: bool,
    /// Damaged regions found by recovery in the middle of segments; immutable.
    damaged_regions: usize,
    /// `journalSyncData`: run `fdatasync` before completing a round; immutable.
    sync: bool,
    /// Segment size limit; immutable.
    max_segment: u64,
    /// Everything mutable. A `parking_lot::Mutex` (not tokio's): it is never held across I/O that
    /// can block for long nor across `.await`; appenders hold it for a memcpy.
    state: Mutex<State>,
    /// Wakes the flusher when there is something to write (paired with `state`).
    wake: Condvar,
    /// The flusher thread, joined on close.
    flusher: Mutex<Option<JoinHandle<()>>>,
    /// Bytes appended but not yet written, as of the last append (non-durable backpressure).
    unwritten: std::sync::atomic::AtomicUsize,
    /// Completed write rounds (each is one `fdatasync` per touched segment in durable mode).
    rounds: std::sync::atomic::AtomicU64,
    /// Group commit settings (see [`group`]).
    group: group::GroupCommit,
    /// Preallocation setting (see [`prealloc`]).
    prealloc: prealloc::PreAlloc,
    /// `journalDirectWrites` (see [`direct`]). Relaxed loads and stores: written once by the
    /// storage after open, read by the flusher each round; a stale read writes one round through
    /// the page cache, which is as durable.
    direct_writes: std::sync::atomic::AtomicBool,
    /// Serialises checkpoints (housekeeper and close). Held across the index writes' fsyncs on
    /// purpose: nothing but another checkpoint ever waits for it.
    checkpointing: Mutex<()>,
    /// Segments found valid-indexed at open (not scanned); immutable. A statistic.
    indexed_at_open: usize,
    /// Non-empty segments scanned at open, with why their index was not used; immutable.
    scanned_at_open: Vec<(u32, &'static str)>,
    /// Read-only opens: each segment mapped into memory, so reads slice it without a system call,
    /// an allocation or a copy (topics interleave in segments, so an export would otherwise
    /// `pread` every entry on its own); empty when read-write. Immutable.
    maps: BTreeMap<u32, Bytes>,
    /// Reused memory of reads past the page cache (see [`direct_read`]); shared by readers,
    /// with its own lock.
    read_buffers: Arc<direct_read::ReadBuffers>,
}

fn segment_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("{id:010}.log"))
}

/// Opens segment `id`; `create` makes a new one for appends. When the journal is durable
/// (`sync`) the segment is ready for direct writes (see [`direct`]) and for large direct reads
/// (see [`direct_read`]), recovered segments too (they are only read).
fn open_segment(
    fs: &dyn Vfs,
    dir: &Path,
    id: u32,
    create: bool,
    sync: bool,
) -> Result<Arc<dyn VFile>> {
    let path = segment_path(dir, id);
    let file = if sync {
        fs.open_direct(&path, create)
    } else {
        fs.open(&path, create)
    };
    file.map_err(|e| LedgerError::io(format!("opening journal segment {}", path.display()), e))
}

fn sync_dir(fs: &dyn Vfs, dir: &Path) -> Result<()> {
    fs.sync_dir(dir)
        .map_err(|e| LedgerError::io(format!("syncing directory {}", dir.display()), e))
}

impl Journal {
    /// Cuts a recovered segment back to its last valid record, durably, then indexes it (a torn
    /// tail, or preallocated zeros).
    fn cut_tail(
        fs: &dyn Vfs,
        dir: &Path,
        id: u32,
        file: &Arc<dyn VFile>,
        scan: &recovery::SegmentScan,
    ) -> Result<()> {
        file.set_len(scan.valid_len)
            .and_then(|()| file.sync_data())
            .map_err(|e| {
                let path = segment_path(dir, id);
                LedgerError::io(format!("truncating {}", path.display()), e)
            })?;
        Self::index_scanned(fs, dir, id, file, scan);
        Ok(())
    }

    /// Opens the journal in `dir` on the real file system, recovering what the segments hold.
    ///
    /// # Errors
    /// I/O failures. Corruption is not an error here: it is reported per entry on read.
    pub fn open(
        dir: impl AsRef<Path>,
        sync: bool,
        max_segment: u64,
    ) -> Result<(Arc<Journal>, Recovered)> {
        Self::open_with(Arc::new(crate::vfs::RealFs), dir, sync, max_segment, false)
    }

    /// Opens the journal on a given file system; `read_only` changes nothing on disk.
    ///
    /// # Errors
    /// As [`Journal::open`].
    pub fn open_with(
        fs: Arc<dyn Vfs>,
        dir: impl AsRef<Path>,
        sync: bool,
        max_segment: u64,
        read_only: bool,
    ) -> Result<(Arc<Journal>, Recovered)> {
        let dir = dir.as_ref().to_path_buf();
        if !read_only {
            ensure_dir(fs.as_ref(), &dir)
                .map_err(|e| LedgerError::io(format!("creating {}", dir.display()), e))?;
        }
        let names = match fs.list(&dir) {
            Ok(n) => n,
            Err(e) if read_only && e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(LedgerError::io(format!("listing {}", dir.display()), e)),
        };
        let mut ids: Vec<u32> = names
            .iter()
            .filter_map(|n| n.strip_suffix(".log")?.parse().ok())
            .collect();
        ids.sort_unstable();
        if !read_only {
            index::remove_leftovers(fs.as_ref(), &dir, &names, &ids);
        }
        let mut recovered = Recovered::new(Arc::clone(&fs), dir.clone());
        let mut segments = BTreeMap::new();
        let mut segment_ledgers = BTreeMap::new();
        let mut damaged_regions = 0;
        let mut indexed_at_open = 0;
        let mut scanned_at_open = Vec::new();
        for (i, &id) in ids.iter().enumerate() {
            let path = segment_path(&dir, id);
            let file = if read_only {
                fs.open_read(&path)
                    .map_err(|e| LedgerError::io(format!("opening {}", path.display()), e))?
            } else {
                open_segment(fs.as_ref(), &dir, id, false, sync)?
            };
            let seg_len = file
                .len()
                .map_err(|e| LedgerError::io(format!("reading {}", path.display()), e))?;
            let seg_stamp = index::stamp(fs.as_ref(), &path);
            match index::open(fs.as_ref(), &dir, id, seg_len, seg_stamp) {
                Ok(blocks) => {
                    // Checkpointed: only the index header was read; entries load with their
                    // ledger.
                    indexed_at_open += 1;
                    segment_ledgers.insert(id, blocks.keys().copied().collect::<HashSet<i64>>());
                    for (ledger, block) in blocks {
                        recovered.add_block(ledger, block);
                    }
                    segments.insert(id, file);
                    continue;
                }
                // An empty segment (the active one of a run that wrote nothing) costs nothing.
                Err(_) if seg_len == 0 => {}
                Err(why) => {
                    if why == index::Rejected::Missing {
                        tracing::info!(
                            segment = id,
                            bytes = seg_len,
                            "journal segment not indexed; scanning it"
                        );
                    } else {
                        tracing::warn!(
                            segment = id,
                            bytes = seg_len,
                            reason = why.as_str(),
                            "journal index not usable; scanning the segment"
                        );
                    }
                    scanned_at_open.push((id, why.as_str()));
                }
            }
            let data = fs
                .read(&path)
                .map_err(|e| LedgerError::io(format!("reading {}", path.display()), e))?;
            let scan = recovery::scan_segment(&path, id, &data);
            let data_len = data.len() as u64;
            drop(data);
            for r in &scan.records {
                recovered.add_scanned(r.ledger, r.entry, r.loc);
            }
            damaged_regions += scan.damaged.len();
            let torn = data_len - scan.valid_len;
            if torn > 0 && scan.preallocated {
                // Zeros written ahead by preallocation: nothing was lost. Cut them (read-write)
                // so the segment can be indexed at its records' length.
                if !read_only {
                    tracing::debug!(
                        segment = id,
                        zeros = torn,
                        "cutting preallocated journal tail"
                    );
                    Self::cut_tail(fs.as_ref(), &dir, id, &file, &scan)?;
                }
            } else if torn > 0 {
                let last = i + 1 == ids.len();
                if last && !read_only {
                    tracing::warn!(
                        segment = id,
                        offset = scan.valid_len,
                        dropped = torn,
                        "truncating torn journal tail"
                    );
                    Self::cut_tail(fs.as_ref(), &dir, id, &file, &scan)?;
                } else if last {
                    tracing::warn!(
                        segment = id,
                        offset = scan.valid_len,
                        ignored = torn,
                        "ignoring torn journal tail (read-only)"
                    );
                } else {
                    damaged_regions += 1;
                    tracing::error!(
                        segment = id,
                        offset = scan.valid_len,
                        damaged_bytes = torn,
                        "damaged bytes at the end of an older journal segment; kept as they are"
                    );
                }
            } else if !read_only {
                Self::index_scanned(fs.as_ref(), &dir, id, &file, &scan);
            }
            segments.insert(id, file);
            segment_ledgers.insert(id, scan.ledgers);
        }
        let maps = if read_only {
            Self::map_segments(&segments)
        } else {
            BTreeMap::new()
        };
        // Appends always go to a fresh segment: recovered segments stay read-only.
        let active = ids.last().map_or(0, |l| l + 1);
        if !read_only {
            segments.insert(active, open_segment(fs.as_ref(), &dir, active, true, sync)?);
            segment_ledgers.insert(active, HashSet::new());
            sync_dir(fs.as_ref(), &dir)?;
        }
        let journal = Arc::new(Journal {
            fs,
            dir,
            read_only,
            damaged_regions,
            sync,
            max_segment,
            state: Mutex::new(State {
                segments,
                segment_ledgers,
                last_noted: None,
                deleted_ledgers: HashSet::new(),
                active,
                active_len: 0,
                buf: BytesMut::with_capacity(if read_only { 0 } else { 1 << 20 }),
                buf_offset: 0,
                sealed: Vec::new(),
                inflight: Vec::new(),
                spare: None,
                completions: Vec::new(),
                dir_dirty: false,
                poisoned: None,
                closed: false,
                active_records: Vec::new(),
                active_indexable: true,
                unindexed: Vec::new(),
                gathering_since: None,
                arrivals: group::Arrivals::default(),
                flush_requested: false,
            }),
            wake: Condvar::new(),
            flusher: Mutex::new(None),
            rounds: std::sync::atomic::AtomicU64::new(0),
            group: group::GroupCommit::new(),
            prealloc: prealloc::PreAlloc::new(),
            direct_writes: std::sync::atomic::AtomicBool::new(true),
            unwritten: std::sync::atomic::AtomicUsize::new(0),
            checkpointing: Mutex::new(()),
            indexed_at_open,
            scanned_at_open,
            maps,
            read_buffers: Arc::default(),
        });
        if !read_only {
            let j = Arc::clone(&journal);
            let handle = std::thread::Builder::new()
                .name("journal-flusher".into())
                .spawn(move || j.flush_loop())
                .map_err(|e| LedgerError::io("starting the journal flusher thread", e))?;
            *journal.flusher.lock() = Some(handle);
        }
        Ok((journal, recovered))
    }

    /// Segments whose checkpointed index was used at open (not scanned).
    #[must_use]
    pub fn indexed_at_open(&self) -> usize {
        self.indexed_at_open
    }

    /// Non-empty segments recovery had to scan at open, with why their index was not used
    /// (`"missing"` after a crash; anything else means an index was rejected).
    #[must_use]
    pub fn scanned_at_open(&self) -> &[(u32, &'static str)] {
        &self.scanned_at_open
    }

    /// Damaged regions recovery found in the middle of segments (records after them were kept).
    #[must_use]
    pub fn damaged_regions(&self) -> usize {
        self.damaged_regions
    }

    /// Whether more than [`MAX_UNWRITTEN_BYTES`] wait to be written: non-durable appenders then
    /// wait for the write, bounding memory.
    #[must_use]
    pub fn backlogged(&self) -> bool {
        // Relaxed: see `unwritten`.
        self.unwritten.load(std::sync::atomic::Ordering::Relaxed) > MAX_UNWRITTEN_BYTES
    }

    /// Whether appends wait for `fdatasync`.
    #[must_use]
    pub fn is_durable(&self) -> bool {
        self.sync
    }

    /// Appends one record and returns where it will live. With `completion`, it is run once
    /// the record is durable (or failed); an append refused here never runs nor reports it.
    /// Without, the record is written in the background.
    ///
    /// # Errors
    /// The journal is closed, or opening a new segment failed.
    pub fn append(
        &self,
        ledger_id: i64,
        entry_id: i64,
        timestamp: u64,
        payload: &[u8],
        completion: Option<Completion>,
    ) -> Result<Loc> {
        self.append_known(ledger_id, entry_id, timestamp, payload, completion, None)
    }

    /// Like [`Journal::append`], with a checksum of part of the payload that the appender
    /// already holds (it must be right: the record would not read back otherwise).
    ///
    /// # Errors
    /// As [`Journal::append`].
    pub fn append_known(
        &self,
        ledger_id: i64,
        entry_id: i64,
        timestamp: u64,
        payload: &[u8],
        completion: Option<Completion>,
        known: Option<KnownCrc>,
    ) -> Result<Loc> {
        let record_len = (RECORD_HEADER + payload.len()) as u64;
        let mut st = self.state.lock();
        // The flusher only sleeps when nothing is queued; wake it only on that transition, so a
        // burst of appends costs one wake-up, not one per record.
        let was_idle = st.buf.is_empty() && st.sealed.is_empty();
        if let Err(e) = self.admit(&mut st, record_len) {
            drop(st);
            // Refused: its owner (who may hold its own lock now) is not told anything.
            if let Some(c) = completion {
                c.disarm();
            }
            return Err(e);
        }
        let loc = Loc {
            segment: st.active,
            offset: st.active_len,
            len: u32::try_from(payload.len()).unwrap_or(CORRUPT_LEN - 1),
        };
        let before = st.buf.len();
        record::encode(&mut st.buf, ledger_id, entry_id, timestamp, payload, known);
        if self.sync {
            // Group commit timing (only durable rounds wait). A round whose first record came
            // while the flusher was writing the previous one: the journal is under continuous
            // load (the adaptive wait's precondition).
            let now = crate::clock::monotonic();
            if was_idle {
                st.gathering_since = Some(now);
            }
            let busy = !st.inflight.is_empty();
            st.arrivals.arrived(now, was_idle, busy);
        }
        let filled = self.group.fills(before, st.buf.len());
        st.active_len += record_len;
        st.active_records.push(IndexRecord {
            ledger: ledger_id,
            entry: entry_id,
            loc,
        });
        let active = st.active;
        if st.last_noted != Some((active, ledger_id)) {
            if let Some(set) = st.segment_ledgers.get_mut(&active) {
                set.insert(ledger_id);
            }
            st.last_noted = Some((active, ledger_id));
        }
        if let Some(c) = completion {
            completion::push(&mut st.completions, c);
        }
        let unwritten = st.buf.len()
            + st.sealed
                .iter()
                .chain(st.inflight.iter())
                .map(|p| p.data.len())
                .sum::<usize>();
        // Relaxed: a hint for non-durable appenders; the exact value does not matter.
        self.unwritten
            .store(unwritten, std::sync::atomic::Ordering::Relaxed);
        drop(st);
        if was_idle || filled {
            self.wake.notify_one();
        }
        Ok(loc)
    }

    /// Whether an append of `record_len` bytes may go ahead; rotates to a new segment if the
    /// active one is full. Caller holds the lock.
    fn admit(&self, st: &mut State, record_len: u64) -> Result<()> {
        if st.closed {
            return Err(LedgerError::Closed {
                what: "journal".into(),
            });
        }
        if self.read_only {
            return Err(LedgerError::ReadOnly {
                what: "the journal".into(),
            });
        }
        if let Some(why) = &st.poisoned {
            return Err(LedgerError::io(
                "appending to the journal",
                std::io::Error::other(format!(
                    "the journal refuses appends after an unrecoverable write failure ({why}); restart the broker"
                )),
            ));
        }
        if st.active_len > 0 && st.active_len + record_len > self.max_segment {
            self.rotate(st)?;
        }
        Ok(())
    }

    /// Seals the active segment's buffer and opens the next segment. Caller holds the lock.
    fn rotate(&self, st: &mut State) -> Result<()> {
        let next = st.active + 1;
        let file = open_segment(self.fs.as_ref(), &self.dir, next, true, self.sync)?;
        st.dir_dirty = true;
        // Pushed even when empty: the flusher cuts the sealed segment's preallocated tail.
        let data = st.buf.split().freeze();
        let old = Arc::clone(&st.segments[&st.active]);
        st.sealed.push(Pending {
            segment: st.active,
            offset: st.buf_offset,
            data,
            file: old,
            seals: true,
        });
        st.segments.insert(next, file);
        st.segment_ledgers.insert(next, HashSet::new());
        let records = std::mem::take(&mut st.active_records);
        if std::mem::replace(&mut st.active_indexable, true) {
            let sealed = st.active;
            st.unindexed.push((sealed, records));
        }
        st.active = next;
        st.active_len = 0;
        st.buf_offset = 0;
        Ok(())
    }

    /// Sets `journalPreAllocSizeMB` in bytes (0 = off; durable mode only). See [`prealloc`].
    pub fn set_prealloc(&self, bytes: u64) {
        self.prealloc.set(bytes);
    }

    /// Sets `journalDirectWrites` (durable mode only). See [`direct`].
    pub fn set_direct_writes(&self, on: bool) {
        self.direct_writes
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether this round is written past the page cache: durable and `journalDirectWrites`.
    fn direct_round(&self) -> bool {
        // Relaxed: see the field.
        self.sync
            && self
                .direct_writes
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Write rounds completed so far: group commit shows as far fewer rounds than appends.
    #[must_use]
    pub fn rounds(&self) -> u64 {
        // Relaxed: a statistic.
        self.rounds.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Forgets a deleted ledger and removes segment files that no longer hold live records
    /// (then syncs the directory once). Read-only journals only forget.
    pub fn release_ledger(&self, ledger_id: i64) {
        let dead: Vec<u32> = {
            let mut st = self.state.lock();
            st.deleted_ledgers.insert(ledger_id);
            if self.read_only {
                return;
            }
            let active = st.active;
            let busy: HashSet<u32> = st
                .inflight
                .iter()
                .chain(st.sealed.iter())
                .map(|p| p.segment)
                .collect();
            let dead: Vec<u32> = st
                .segment_ledgers
                .iter()
                .filter(|(id, ledgers)| {
                    **id != active
                        && !busy.contains(id)
                        && ledgers.iter().all(|l| st.deleted_ledgers.contains(l))
                })
                .map(|(id, _)| *id)
                .collect();
            for id in &dead {
                st.segment_ledgers.remove(id);
                st.segments.remove(id);
            }
            st.unindexed.retain(|(id, _)| !dead.contains(id));
            dead
        };
        if dead.is_empty() {
            return;
        }
        // The removals run unlocked: no appender waits on file system metadata work.
        for id in &dead {
            // The index goes first: an index never outlives its segment's name.
            let _ = self.fs.remove_file(&index::index_path(&self.dir, *id));
            let path = segment_path(&self.dir, *id);
            match self.fs.remove_file(&path) {
                Ok(()) => {
                    tracing::debug!(segment = id, "removed journal segment with no live ledgers");
                }
                Err(e) => {
                    tracing::warn!(segment = id, error = %e, "could not remove journal segment");
                }
            }
        }
        if let Err(e) = sync_dir(self.fs.as_ref(), &self.dir) {
            tracing::warn!(error = %e, "could not sync the journal directory after removals");
        }
    }

    /// Number of segment files currently kept.
    #[must_use]
    pub fn segment_count(&self) -> usize {
        self.state.lock().segments.len()
    }

    /// Total bytes in the journal's segment files (buffered bytes included).
    #[must_use]
    pub fn disk_usage(&self) -> u64 {
        let st = self.state.lock();
        let files: Vec<Arc<dyn VFile>> = st.segments.values().cloned().collect();
        drop(st);
        files.iter().filter_map(|f| f.len().ok()).sum()
    }

    /// Makes everything appended so far durable (used on close, and by tests).
    pub fn flush(&self) {
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let mut st = self.state.lock();
            if st.buf.is_empty() && st.sealed.is_empty() && st.inflight.is_empty() {
                return;
            }
            st.completions.push(Completion::once(move |_| {
                let _ = tx.send(());
            }));
            st.flush_requested = true;
            // An empty buffer with pending completions still needs one round to run them.
            if st.buf.is_empty() && st.sealed.is_empty() {
                let empty = Pending {
                    segment: st.active,
                    offset: st.buf_offset,
                    data: Bytes::new(),
                    file: Arc::clone(&st.segments[&st.active]),
                    seals: false,
                };
                st.sealed.push(empty);
            }
        }
        self.wake.notify_one();
        let _ = rx.recv();
    }

    /// Drains pending writes, stops the flusher and checkpoints every segment, the active one
    /// included (a clean restart then scans nothing). Further appends fail.
    pub fn close(&self) {
        self.flush();
        self.state.lock().closed = true;
        self.wake.notify_all();
        if let Some(h) = self.flusher.lock().take() {
            let _ = h.join();
        }
        if !self.read_only {
            // The flusher is gone: cut the active segment's preallocated zeros (unlocked) so a
            // clean restart finds it indexed at its records' length.
            let (active, len, healthy) = {
                let st = self.state.lock();
                let file = Arc::clone(&st.segments[&st.active]);
                (file, st.active_len, st.poisoned.is_none())
            };
            if healthy {
                if let Err(e) = prealloc::trim(&active, len).and_then(|()| active.sync_data()) {
                    tracing::warn!(error = %e, "could not cut the journal's preallocated tail at close");
                }
            }
            {
                let mut st = self.state.lock();
                let records = std::mem::take(&mut st.active_records);
                if st.active_indexable && st.poisoned.is_none() {
                    let active = st.active;
                    st.unindexed.push((active, records));
                }
            }
            self.checkpoint_segments(true);
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.state.get_mut().closed = true;
        self.wake.notify_all();
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod group_tests;
#[cfg(test)]
mod prealloc_tests;
