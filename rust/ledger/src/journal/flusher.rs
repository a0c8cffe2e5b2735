//! The flusher thread: takes each round of buffered records, writes and syncs it, runs its
//! completions in append order, preallocates (while idle, and under load within a round), and
//! handles a failed round (cut the segments back durably, fail the round's appends, move to a
//! new segment).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bytes::BytesMut;
use parking_lot::MutexGuard;

use super::{direct, open_segment, prealloc, sync_dir, Journal, Pending, State};
use crate::vfs::VFile;
use crate::{LedgerError, Result};

impl Journal {
    pub(super) fn flush_loop(&self) {
        let mut prefilled = prealloc::Prefilled::default();
        let mut direct = direct::DirectWriter::default();
        loop {
            let (mut batch, completions, dir_dirty) = {
                let mut st = self.state.lock();
                while st.buf.is_empty() && st.sealed.is_empty() && !st.closed {
                    // Idle: preallocate a step ahead (unlocked), then look for work again.
                    if let Some(step) = self
                        .sync
                        .then(|| self.prealloc.next_step(&prefilled, self.max_segment))
                        .flatten()
                    {
                        // Only once the journal has stayed idle a moment: under load rounds
                        // follow each other closely, and a step would delay the next one.
                        let quiet = self.wake.wait_for(&mut st, prealloc::QUIET).timed_out();
                        if quiet && st.buf.is_empty() && st.sealed.is_empty() && !st.closed {
                            let ok = MutexGuard::unlocked(&mut st, || {
                                prealloc::PreAlloc::fill(&step, self.direct_round())
                            });
                            prefilled.filled(&step, ok);
                        }
                        continue;
                    }
                    self.wake.wait(&mut st);
                }
                if st.buf.is_empty() && st.sealed.is_empty() && st.completions.is_empty() {
                    return; // closed and drained
                }
                self.gather(&mut st);
                st.gathering_since = None;
                st.flush_requested = false;
                let mut batch = std::mem::take(&mut st.sealed);
                if !st.buf.is_empty() {
                    let next = st
                        .spare
                        .take()
                        .unwrap_or_else(|| BytesMut::with_capacity(1 << 20));
                    let data = std::mem::replace(&mut st.buf, next).freeze();
                    let file = Arc::clone(&st.segments[&st.active]);
                    batch.push(Pending {
                        segment: st.active,
                        offset: st.buf_offset,
                        data,
                        file,
                        seals: false,
                    });
                    st.buf_offset = st.active_len;
                }
                st.inflight.clone_from(&batch);
                let dir_dirty = std::mem::take(&mut st.dir_dirty);
                (batch, std::mem::take(&mut st.completions), dir_dirty)
            };
            // The I/O runs without the lock so appenders keep filling the next round.
            let result = self.write_batch(&batch, dir_dirty, &mut prefilled, &mut direct);
            let cut_back = if result.is_err() {
                prefilled.reset();
                direct.reset();
                // Unlocked too: cut the damaged segments back durably before anything else.
                self.cut_back(&batch)
            } else {
                Ok(())
            };
            let failed_later = {
                let mut st = self.state.lock();
                st.inflight.clear();
                if result.is_ok() {
                    Self::recycle(&mut st, &mut batch);
                }
                if let Err(e) = &result {
                    st.dir_dirty |= dir_dirty;
                    tracing::error!(error = %e, "journal write failed; failing pending appends and rotating");
                    if let Err(cut) = &cut_back {
                        tracing::error!(error = %cut, "could not cut the journal back after a failed write; refusing appends");
                        st.poisoned = Some(cut.to_string());
                    }
                    self.recover_from_failure(&mut st, &batch);
                    // Records buffered meanwhile were dropped with the failed round: fail them too.
                    std::mem::take(&mut st.completions)
                } else {
                    Vec::new()
                }
            };
            // One wake-up per task for the whole pass (see `wake_batch`).
            crate::wake_batch::batch(|| match result {
                Ok(()) => completions.into_iter().for_each(|c| c.run(Ok(()))),
                Err(e) => {
                    for c in completions.into_iter().chain(failed_later) {
                        c.run(Err(e.duplicate()));
                    }
                }
            });
        }
    }

    /// Keeps a written buffer of the round as the spare, if no reader still holds a slice of it
    /// and it is not oversized (after a burst). Caller holds the lock.
    fn recycle(st: &mut State, batch: &mut Vec<Pending>) {
        const MAX_SPARE: usize = 8 << 20;
        for p in batch.drain(..) {
            if st.spare.is_some() {
                break;
            }
            if let Ok(mut buf) = p.data.try_into_mut() {
                if buf.capacity() <= MAX_SPARE {
                    buf.clear();
                    st.spare = Some(buf);
                }
            }
        }
    }

    fn write_batch(
        &self,
        batch: &[Pending],
        dir_dirty: bool,
        prefilled: &mut prealloc::Prefilled,
        direct: &mut direct::DirectWriter,
    ) -> Result<()> {
        // Relaxed: a statistic.
        self.rounds
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let direct_round = self.direct_round();
        for p in batch {
            // Durable rounds past the page cache where the segment takes it (`direct`).
            let mut write = || -> std::io::Result<()> {
                let written = direct_round
                    && !p.data.is_empty()
                    && direct.write(p.segment, p.file.as_ref(), &p.data, p.offset)?;
                if !written {
                    p.file.write_all_at(&p.data, p.offset)?;
                }
                Ok(())
            };
            write().map_err(|e| {
                LedgerError::io(format!("writing journal segment {}", p.segment), e)
            })?;
            let end = p.offset + p.data.len() as u64;
            if p.seals {
                prefilled.reset();
                prealloc::trim(&p.file, end).map_err(|e| {
                    LedgerError::io(format!("sealing journal segment {}", p.segment), e)
                })?;
            } else if !p.data.is_empty() {
                prefilled.wrote(p.segment, &p.file, end);
            }
        }
        if self.sync {
            // Under load: zeros after this round's records, covered by its sync (`prealloc`).
            let round = batch.iter().map(|p| p.data.len() as u64).sum();
            prefilled.round(round);
            if let Some(step) = self.prealloc.load_step(prefilled, self.max_segment, round) {
                if batch
                    .iter()
                    .any(|p| p.segment == step.segment() && !p.seals)
                {
                    let ok = prealloc::PreAlloc::write(&step, false, direct_round);
                    prefilled.filled(&step, ok);
                }
            }
            let mut synced = HashSet::new();
            for p in batch {
                if synced.insert(p.segment) {
                    p.file.sync_data().map_err(|e| {
                        LedgerError::io(format!("syncing journal segment {}", p.segment), e)
                    })?;
                }
            }
            if dir_dirty {
                // A new segment's name is durable only once the directory is synced.
                sync_dir(self.fs.as_ref(), &self.dir)?;
            }
        }
        Ok(())
    }

    /// After a failed write: truncates every segment the round touched back to where the round
    /// started and makes that durable, so the failed records cannot reappear after a crash.
    fn cut_back(&self, batch: &[Pending]) -> Result<()> {
        let mut start: BTreeMap<u32, (u64, Arc<dyn VFile>)> = BTreeMap::new();
        for p in batch {
            let e = start
                .entry(p.segment)
                .or_insert_with(|| (p.offset, Arc::clone(&p.file)));
            e.0 = e.0.min(p.offset);
        }
        for (segment, (len, file)) in start {
            file.set_len(len)
                .and_then(|()| file.sync_data())
                .map_err(|e| {
                    LedgerError::io(
                        format!("cutting journal segment {segment} back to {len}"),
                        e,
                    )
                })?;
        }
        Ok(())
    }

    /// After a failed write: drop buffered records and continue in a fresh segment.
    fn recover_from_failure(&self, st: &mut State, batch: &[Pending]) {
        st.buf.clear();
        st.sealed.clear();
        // The cut-back segments no longer match their records: they are scanned at the next
        // open instead of indexed (`checkpoint` also checks each segment's length).
        st.active_records.clear();
        st.active_indexable = false;
        let cut: HashSet<u32> = batch.iter().map(|p| p.segment).collect();
        st.unindexed.retain(|(id, _)| !cut.contains(id));
        let next = st.active + 1;
        match open_segment(self.fs.as_ref(), &self.dir, next, true, self.sync) {
            Ok(file) => {
                st.segments.insert(next, file);
                st.segment_ledgers.insert(next, HashSet::new());
                st.active = next;
                st.dir_dirty = true;
            }
            Err(e) => {
                // Stay on the old segment at its truncated length; later writes retry from there.
                tracing::error!(error = %e, "could not open a new journal segment after a failure");
                if let Some(first) = batch.iter().find(|p| p.segment == st.active) {
                    st.active_len = first.offset;
                    st.buf_offset = first.offset;
                    return;
                }
            }
        }
        st.active_len = 0;
        st.buf_offset = 0;
    }
}
