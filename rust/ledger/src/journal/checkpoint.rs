//! Checkpoints of the journal index: writing `<id>.idx` for sealed segments (by the
//! housekeeper, on close, and at open for segments recovery had to scan). The format and the
//! rules for using an index at open are in [`super::index`].

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::index::{self, IndexRecord};
use super::{recovery, segment_path, Journal};
use crate::vfs::{VFile, Vfs};
use crate::LedgerError;

impl Journal {
    /// Indexes a segment recovery had to scan (a crash left it unindexed, or it predates
    /// indexes), so the next open reads its index instead. Segments with damage in the middle
    /// are never indexed: every open scans and reports them. A failure only costs the next open
    /// another scan.
    pub(super) fn index_scanned(
        fs: &dyn Vfs,
        dir: &Path,
        id: u32,
        file: &Arc<dyn VFile>,
        scan: &recovery::SegmentScan,
    ) {
        if !scan.damaged.is_empty() || scan.records.is_empty() {
            return;
        }
        let path = segment_path(dir, id);
        let res = file
            .sync_data()
            .map_err(|e| LedgerError::io(format!("syncing {}", path.display()), e))
            .and_then(|()| {
                let stamp = index::stamp(fs, &path);
                index::write(fs, dir, id, scan.valid_len, stamp, &scan.records)
            });
        if let Err(e) = res {
            tracing::warn!(segment = id, error = %e, "could not index a recovered journal segment");
        }
    }

    /// Writes the index of every sealed, fully written segment not indexed yet (see [`index`]).
    /// Returns how many were written. Run by the storage housekeeper; failures are logged and
    /// only mean those segments are scanned at the next open.
    pub fn checkpoint(&self) -> usize {
        if self.read_only {
            return 0;
        }
        self.checkpoint_segments(false)
    }

    pub(super) fn checkpoint_segments(&self, closing: bool) -> usize {
        let _one = self.checkpointing.lock();
        let ready: Vec<(u32, Vec<IndexRecord>, Arc<dyn VFile>)> = {
            let mut st = self.state.lock();
            let busy: HashSet<u32> = st
                .inflight
                .iter()
                .chain(st.sealed.iter())
                .map(|p| p.segment)
                .filter(|_| !closing)
                .chain((!closing).then_some(st.active))
                .collect();
            let (ready, wait): (Vec<_>, Vec<_>) = std::mem::take(&mut st.unindexed)
                .into_iter()
                .partition(|(id, _)| !busy.contains(id));
            st.unindexed = wait;
            ready
                .into_iter()
                .filter_map(|(id, recs)| {
                    let file = Arc::clone(st.segments.get(&id)?);
                    Some((id, recs, file))
                })
                .collect()
        };
        let mut written = 0;
        // The writes run unlocked: appenders never wait for a checkpoint.
        for (id, recs, file) in ready {
            let Some(len) = recs.last().map(|r| r.loc.end()) else {
                continue;
            };
            let path = segment_path(&self.dir, id);
            match file.len() {
                Ok(l) if l == len => {}
                _ => continue, // cut back after a failed write, or unreadable: scan it instead
            }
            // In non-durable mode the segment may still be in the page cache: an index must
            // never describe data that a power cut can take away (the length check at open
            // would catch it, but then the whole point is lost).
            let res = file
                .sync_data()
                .map_err(|e| LedgerError::io(format!("syncing {}", path.display()), e))
                .and_then(|()| {
                    let stamp = index::stamp(self.fs.as_ref(), &path);
                    index::write(self.fs.as_ref(), &self.dir, id, len, stamp, &recs)
                });
            match res {
                Ok(()) => written += 1,
                Err(e) => {
                    tracing::warn!(segment = id, error = %e, "could not write a journal index");
                }
            }
        }
        written
    }
}
