//! Journal preallocation (`journalPreAllocSizeMB`, as BookKeeper's journal): while it has
//! nothing to write, the flusher writes and syncs zeros ahead of the active segment's end, so
//! later rounds overwrite blocks that already exist in a file whose length does not change.
//!
//! Why: `fdatasync` of an append that grows the file must also write the file's new length and
//! its block allocation, a metadata write on every round. Over blocks written earlier it writes
//! the data alone. Measured here with Python's `os.pwrite` + `os.fdatasync`: 4 KiB appends
//! 3 666/s growing the file, 6 591/s over zeros written earlier; 40 KiB 1 820/s vs 4 751/s.
//! Unwritten extents from `fallocate` do not help: their first write converts them, which is
//! metadata again.
//!
//! Two rules write the zeros:
//! * **idle**: once the flusher has had nothing to write for [`QUIET`], small steps (each written
//!   and synced on its own) until half the setting is zero-filled, so an append arriving during a
//!   step waits for one small write and sync at most;
//! * **under load**: the flusher is never idle that long, so without this rule every round would
//!   grow the file. A round that leaves fewer than half a step of zeros past its records also
//!   writes the next step, after its records and before its sync, so the round's one sync covers
//!   both (BookKeeper's journal also preallocates inline). A step is 8 times the round's bytes,
//!   64 KiB to 1 MiB (see [`LOAD_STEP_ROUNDS`]). Measured (`benches/RESULTS.md`): W3 under
//!   `pulsar-rs-perf` +17 % throughput and 17 % less broker CPU per message; a separate sync per
//!   step instead cost ~7 ms of publish p99 at saturation.
//!
//! **Only for small rounds.** Zeros cost per byte (every byte of the journal is written twice),
//! the metadata write they avoid costs per round. Once rounds average [`LARGE_ROUND`] or more,
//! neither rule writes zeros and rounds grow the file: W3 (rounds of ~400–600 KiB) under the
//! independent load generator 20–22 % less broker CPU per message, under `pulsar-rs-perf` +17–18 %
//! throughput (`benches/RESULTS.md`).
//!
//! A zero tail is not damage: recovery recognises the all-zero bytes after a segment's last
//! record and cuts them (see `recovery`), and the flusher cuts a segment back to its records when
//! it is sealed, and `close` the active one, so indexes and exports only ever see records.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::vfs::VFile;

/// How long the flusher must have had nothing to write before it takes a step. A saturated
/// journal is idle only for moments between rounds; a step taken there delayed the next round by
/// a write and a sync (W1 at saturation: publish p99 18.8 vs 15.7 ms). Below saturation the gaps
/// between rounds are longer than this, and a step is needed once per 256 KiB of records.
pub(super) const QUIET: std::time::Duration = std::time::Duration::from_micros(200);

/// Bytes of zeros written (and synced) per idle step, and per write of a step. Small, so an
/// append that arrives during a step waits a fraction of a millisecond.
const STEP: u64 = 256 << 10;

/// Under load, a round's step of zeros is this many times the round's own bytes, between
/// [`LOAD_STEP_MIN`] and [`LOAD_STEP_MAX`]: proportional, so a slow stream of small rounds pays a
/// small write now and then rather than a mebibyte at once (its publish p99 at 10 000 msg/s
/// showed 1 MiB steps: 4 of 10 runs over 1.5 ms against 1 of 10 without them).
const LOAD_STEP_ROUNDS: u64 = 8;

/// The smallest step under load.
const LOAD_STEP_MIN: u64 = 64 << 10;

/// The largest step under load. Zeros cost less CPU per byte in larger writes (0.39–0.42 µs/KiB
/// in 256 KiB writes, 0.24 µs/KiB in 1 MiB ones, each synced: `benches/zero_fill_cost.py`).
const LOAD_STEP_MAX: u64 = 1 << 20;

/// Rounds of this many bytes or more (moving mean) are written without zeros ahead: a 256 KiB
/// step costs ~0.4 µs/KiB of CPU (`benches/zero_fill_cost.py`) plus a second write of every
/// byte, more than one inode write per round. W2 (rounds of 60–95 KiB) still gains from zeros:
/// without them its broker CPU per message under `pulsar-rs-perf` was 0.156 against 0.126 µs.
const LARGE_ROUND: u64 = 256 << 10;

/// The setting; written once by the storage after open, read by the flusher when idle and after
/// each round.
pub(super) struct PreAlloc {
    /// Bytes to keep zero-filled ahead of the written end (0 = off). Relaxed loads and stores:
    /// a tuning value; a stale read changes only how far one step reaches.
    ahead: AtomicU64,
}

/// Flusher-owned: the segment being written and how far its zeros reach. Only the flusher
/// thread reads or writes it, so it lives on that thread's stack.
#[derive(Default)]
pub(super) struct Prefilled {
    /// The active segment as last written: id, file, end of its records, end of its zeros.
    at: Option<Written>,
    /// Moving mean of a durable round's bytes of records (weight 1/8 per round).
    mean_round: u64,
}

struct Written {
    segment: u32,
    file: Arc<dyn VFile>,
    end: u64,
    zeros_to: u64,
}

/// One step of zeros to write: `[from, to)` of `file`.
pub(super) struct Step {
    file: Arc<dyn VFile>,
    segment: u32,
    from: u64,
    to: u64,
}

impl Step {
    /// The segment the zeros go to.
    pub(super) fn segment(&self) -> u32 {
        self.segment
    }
}

impl Prefilled {
    /// After a round wrote a segment's bytes up to `end`.
    pub(super) fn wrote(&mut self, segment: u32, file: &Arc<dyn VFile>, end: u64) {
        match &mut self.at {
            Some(w) if w.segment == segment => w.end = w.end.max(end),
            _ => {
                self.at = Some(Written {
                    segment,
                    file: Arc::clone(file),
                    end,
                    zeros_to: end,
                });
            }
        }
    }

    /// After a durable round of `bytes` of records: updates the mean that decides whether
    /// zeros are worth writing ([`LARGE_ROUND`]). A round without records (a flush that found
    /// the buffer empty) is no round of records: counted, it dragged the mean of a stream of
    /// 512 KiB rounds under the mark, and zeros were written ahead of them again.
    pub(super) fn round(&mut self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        self.mean_round = (self.mean_round.saturating_mul(7).saturating_add(bytes)) / 8;
    }

    /// A segment was sealed (its zeros cut) or a failed round cut segments back: forget it.
    pub(super) fn reset(&mut self) {
        self.at = None;
    }

    /// After a step: how far the zeros reach now (a failed step stops preallocating there).
    pub(super) fn filled(&mut self, step: &Step, ok: bool) {
        if let Some(w) = &mut self.at {
            if w.segment == step.segment {
                w.zeros_to = if ok { step.to } else { u64::MAX };
            }
        }
    }
}

impl PreAlloc {
    pub(super) fn new() -> Self {
        PreAlloc {
            ahead: AtomicU64::new(0),
        }
    }

    pub(super) fn set(&self, bytes: u64) {
        self.ahead.store(bytes, Ordering::Relaxed);
    }

    /// With the flusher idle: the next step of zeros, once they reach less than half the
    /// setting past the written end. Steps are whole (never past `limit`, the segment size): a
    /// step clipped to the setting would follow every small round with a small write that grows
    /// the file, which is the metadata write preallocation exists to avoid.
    pub(super) fn next_step(&self, state: &Prefilled, limit: u64) -> Option<Step> {
        self.step_ahead(state, limit, |ahead| (ahead / 2, STEP))
    }

    /// After a round wrote `round` bytes of records: the step of zeros it writes too (see the
    /// module header), once fewer than half a step of zeros is left past the written end. The
    /// step is [`LOAD_STEP_ROUNDS`] times the round (at least [`LOAD_STEP_MIN`], at most
    /// [`LOAD_STEP_MAX`] and the setting), whole 4 KiB blocks, never past `limit`.
    pub(super) fn load_step(&self, state: &Prefilled, limit: u64, round: u64) -> Option<Step> {
        self.step_ahead(state, limit, |ahead| {
            let size = round
                .saturating_mul(LOAD_STEP_ROUNDS)
                .clamp(LOAD_STEP_MIN, LOAD_STEP_MAX)
                .min(ahead)
                .next_multiple_of(crate::vfs::DIRECT_BLOCK);
            (size / 2, size)
        })
    }

    /// The step of zeros past the active segment's written end, when preallocation is on, has
    /// not failed there and rounds are small ([`LARGE_ROUND`]): `rule(setting)` gives (fewer
    /// zeros ahead than this take a step, the step's size).
    fn step_ahead(
        &self,
        state: &Prefilled,
        limit: u64,
        rule: impl FnOnce(u64) -> (u64, u64),
    ) -> Option<Step> {
        let ahead = self.ahead.load(Ordering::Relaxed);
        let w = state.at.as_ref()?;
        if ahead == 0 || w.zeros_to == u64::MAX || state.mean_round >= LARGE_ROUND {
            return None;
        }
        let (low, size) = rule(ahead);
        let from = w.zeros_to.max(w.end);
        if from - w.end >= low {
            return None;
        }
        let to = (from + size).min(limit);
        (to > from).then(|| Step {
            file: Arc::clone(&w.file),
            segment: w.segment,
            from,
            to,
        })
    }

    /// Writes and syncs one step of zeros (unlocked, on the flusher, while idle).
    pub(super) fn fill(step: &Step, direct: bool) -> bool {
        Self::write(step, true, direct)
    }

    /// Writes one step of zeros in [`STEP`] pieces (past the page cache if `direct`: see
    /// `direct`), then syncs it if `sync` (a round's step is
    /// synced by the round). Returns whether it worked; a failure (a full disk) is logged and
    /// only means no more preallocation in this segment: the zeros are never records, and
    /// nothing waits for them.
    pub(super) fn write(step: &Step, sync: bool, direct: bool) -> bool {
        let mut at = step.from;
        // Past the page cache when `direct` and the segment takes it, else in the page cache.
        let mut res = if direct {
            super::direct::write_zeros(step.file.as_ref(), step.from, step.to).map(|written| {
                if written {
                    at = step.to;
                }
            })
        } else {
            Ok(())
        };
        let zeros = super::direct::zero_blocks();
        while at < step.to && res.is_ok() {
            let piece = (step.to - at).min(STEP).min(zeros.len() as u64);
            // `piece` ≤ the zeros' length: the cast cannot truncate.
            res = step.file.write_all_at(&zeros[..piece as usize], at);
            at += piece;
        }
        if sync {
            res = res.and_then(|()| step.file.sync_data());
        }
        if let Err(e) = &res {
            tracing::warn!(segment = step.segment, offset = step.from, error = %e, "could not preallocate the journal; continuing without");
        }
        res.is_ok()
    }
}

/// Cuts a segment back to `len` if preallocation left zeros past it (sealing, closing).
pub(super) fn trim(file: &Arc<dyn VFile>, len: u64) -> std::io::Result<()> {
    if file.len()? > len {
        file.set_len(len)?;
    }
    Ok(())
}

/// Whether `data` is all zeros: the preallocated tail after a segment's last record.
pub(crate) fn is_zero_tail(data: &[u8]) -> bool {
    // OR-folding fixed 64-byte blocks lets the compiler use vector instructions.
    let mut blocks = data.chunks_exact(64);
    blocks.all(|b| b.iter().fold(0u8, |a, x| a | x) == 0)
        && blocks.remainder().iter().all(|b| *b == 0)
}
