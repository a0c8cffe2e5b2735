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
            drop(st);
            return self.delete_offloaded_copies(now);
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
            drop(st);
            return self.delete_offloaded_copies(now);
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
        // A ledger whose own copy is already gone is not deleted there again.
        let stored: Vec<i64> = removed
            .iter()
            .filter(|s| !s.offload_deleted())
            .map(|s| s.info.ledger_id)
            .collect();
        self.release_stored(&stored);
        // Retention deletes the offloaded objects with the ledger, as Pulsar's.
        self.delete_offloaded_objects(
            removed
                .into_iter()
                .filter_map(|s| s.info.offload.map(|c| (s.info.ledger_id, c)))
                .collect(),
        );
        tracing::debug!(ledger = %self.name, deleted = ?doomed, "trimmed consumed ledgers");
        self.delete_offloaded_copies(now)
    }

    /// Deletes ledgers from their own storage (the bookies, or the journal's index).
    fn release_stored(&self, ids: &[i64]) {
        match &self.shared.backing {
            Some(b) => self.seam_delete_ledgers(b, ids),
            None => {
                for id in ids {
                    self.shared.journal.release_ledger(*id);
                }
            }
        }
    }

    /// Deletes the own copy of ledgers offloaded longer ago than the deletion lag (Pulsar's
    /// `isOffloadedNeedsDelete`): marks them `bookkeeperDeleted`, persists the list, then deletes
    /// them from the journal or the bookies. From then on they are read from the tier.
    fn delete_offloaded_copies(&self, now: u64) -> Result<()> {
        let Some(lag) = self.tiering.policy().deletion_lag_ms.filter(|l| *l >= 0) else {
            return Ok(());
        };
        #[allow(clippy::cast_sign_loss)]
        let lag = lag as u64;
        let due: Vec<i64> = {
            let mut st = self.state.lock();
            let current = st.current;
            let due: Vec<i64> = st
                .ledgers
                .iter()
                .filter(|(id, s)| {
                    **id != current
                        && s.info.offload.as_ref().is_some_and(|c| {
                            c.complete
                                && !c.bookkeeper_deleted
                                && now.saturating_sub(c.timestamp_ms) > lag
                        })
                })
                .map(|(id, _)| *id)
                .collect();
            for id in &due {
                if let Some(slot) = st.ledgers.get_mut(id) {
                    if let Some(c) = slot.info.offload.as_mut() {
                        c.bookkeeper_deleted = true;
                    }
                }
            }
            due
        };
        if due.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.persist() {
            let mut st = self.state.lock();
            for id in &due {
                if let Some(c) = st.ledgers.get_mut(id).and_then(|s| s.info.offload.as_mut()) {
                    c.bookkeeper_deleted = false;
                }
            }
            return Err(e);
        }
        {
            // The entries' places in the journal go with it: only lengths stay.
            let mut st = self.state.lock();
            for id in &due {
                if let Some(slot) = st.ledgers.get_mut(id) {
                    slot.locs = super::on_seam::remote_locs(slot.confirmed, slot.confirmed_size);
                }
            }
        }
        self.readers.lock().retain(|id, _| !due.contains(id));
        self.release_stored(&due);
        tracing::info!(ledger = %self.name, ledgers = ?due, "deleted offloaded ledgers' own copies after the deletion lag");
        Ok(())
    }
}
