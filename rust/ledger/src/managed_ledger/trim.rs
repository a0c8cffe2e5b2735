//! Trimming: deleting ledgers every durable cursor has consumed, subject to retention.

use std::sync::atomic::Ordering;

use super::{ManagedLedger, Slot};
use crate::{Position, Result};

impl ManagedLedger {
    /// Deletes ledgers consumed by every durable cursor (all ledgers but the current one when
    /// there is none), subject to the retention settings.
    ///
    /// # Errors
    /// Metadata store I/O.
    pub fn trim_consumed_ledgers(&self) -> Result<()> {
        if self.shared.read_only {
            return Ok(());
        }
        let slowest = self
            .cursors()
            .iter()
            .filter(|c| c.is_durable())
            .map(|c| c.mark_delete_position())
            .min();
        let now = self.shared.clock.now_ms();
        let mut st = self.state.lock();
        let slowest = slowest.unwrap_or(st.last_confirmed);
        let (rt, rs) = (
            self.retention_time_ms.load(Ordering::Relaxed),
            self.retention_size_bytes.load(Ordering::Relaxed),
        );
        if rt < 0 && rs < 0 {
            return Ok(());
        }
        let mut remaining: u64 = st.ledgers.values().map(|s| s.confirmed_size).sum();
        let mut doomed = Vec::new();
        for (&id, slot) in &st.ledgers {
            // Only closed ledgers whose appends have all settled can go, oldest first.
            let settled = slot.info.closed_ms.is_some() && slot.confirmed >= slot.info.entries;
            let consumed = id < slowest.ledger_id
                || (id == slowest.ledger_id && slowest.entry_id + 1 >= slot.confirmed as i64);
            if id == st.current || !settled || !consumed {
                break;
            }
            let over_size = rs >= 0 && remaining > rs as u64;
            let expired =
                rt >= 0 && now.saturating_sub(slot.info.closed_ms.unwrap_or(now)) >= rt as u64;
            if !(over_size || expired) {
                break;
            }
            remaining -= slot.confirmed_size;
            doomed.push(id);
        }
        if doomed.is_empty() {
            return Ok(());
        }
        let removed: Vec<Slot> = doomed
            .iter()
            .filter_map(|id| st.ledgers.remove(id))
            .collect();
        let first_kept = st.ledgers.keys().next().copied().unwrap_or(st.current);
        // The metadata write runs without the state lock (see `persist`).
        drop(st);
        if let Err(e) = self.persist() {
            let mut st = self.state.lock();
            for s in removed {
                st.ledgers.insert(s.info.ledger_id, s);
            }
            return Err(e);
        }
        self.cache.evict_before(Position::new(first_kept, 0));
        match &self.shared.backing {
            Some(b) => self.seam_delete_ledgers(b, &doomed),
            None => {
                for id in &doomed {
                    self.shared.journal.release_ledger(*id);
                }
            }
        }
        tracing::debug!(ledger = %self.name, deleted = ?doomed, "trimmed consumed ledgers");
        Ok(())
    }
}
