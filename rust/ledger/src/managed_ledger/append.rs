//! Appending to a managed ledger: rollover, queueing a record in the journal, and confirming it
//! (or fencing the ledger) when the journal reports the write.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::completion::{pending, AddCompletion};
use super::{ManagedLedger, Slot, State};
use crate::journal::Completion;
use crate::{LedgerError, Position, Result};

impl ManagedLedger {
    fn needs_rollover(&self, slot: &Slot, now: u64) -> bool {
        if slot.failed_at.is_some() {
            return true;
        }
        if slot.locs.is_empty() {
            return false;
        }
        let age = now.saturating_sub(slot.info.created_ms);
        let full = slot.locs.len() as u64 >= self.config.max_entries_per_ledger
            || slot.appended_size >= self.config.max_size_per_ledger_bytes
            || u128::from(age) >= self.config.max_rollover_time.as_millis();
        full && u128::from(age) >= self.config.min_rollover_time.as_millis()
    }

    /// Closes the current ledger and opens a new one, in phases so the metadata write never
    /// runs under the state lock (which the journal flusher needs to confirm appends):
    ///
    /// 1. under the lock: check the rollover is still due, mark it in progress (`rolling`);
    /// 2. unlocked: allocate the new ledger id (may persist the id counter), record the closed
    ///    ledger and the new one in the metadata store (fsyncs);
    /// 3. under the lock: close the old ledger in memory and switch appends to the new one.
    ///
    /// Like Pulsar's `ledgerClosed → createLedger → updateLedgersList`, with adds queued meanwhile:
    /// this topic's appenders wait for the rollover on `roll_gate`; in-flight entries of the
    /// old ledger keep being confirmed, and other topics never wait. The old ledger's length is
    /// fixed in phase 1: every append taken before the rollover has its location already.
    fn roll_over(&self, now: u64) -> Result<()> {
        let _gate = self.roll_gate.lock();
        let old = {
            let mut st = self.state.lock();
            let due = !st.closed
                && (st.roll_before_append
                    || st
                        .ledgers
                        .get(&st.current)
                        .is_some_and(|s| self.needs_rollover(s, now)));
            if !due {
                return Ok(()); // another appender rolled over meanwhile
            }
            st.rolling = true;
            let cur = st.current;
            if let Some(slot) = st.ledgers.get_mut(&cur) {
                let n = slot.failed_at.unwrap_or(slot.locs.len() as u64);
                slot.info.entries = n;
                slot.info.size = slot
                    .locs
                    .iter()
                    .take(n as usize)
                    .map(|l| u64::from(l.len))
                    .sum();
                slot.info.closed_ms = Some(now);
            }
            cur
        };
        let recorded = self.shared.next_ledger_id().and_then(|id| {
            self.state.lock().pending_ledger = Some(Slot::new(id, now).info);
            self.persist().map(|()| id)
        });
        let mut st = self.state.lock();
        st.rolling = false;
        st.pending_ledger = None;
        match recorded {
            Ok(id) => {
                st.ledgers.insert(id, Slot::new(id, now));
                st.current = id;
                st.roll_before_append = false;
                tracing::debug!(ledger = %self.name, closed = old, opened = id, "rolled over");
                Ok(())
            }
            Err(e) => {
                // Could not record the switch: keep appending to the old ledger if it is still
                // healthy. The append that triggered us fails with this error.
                if let Some(slot) = st.ledgers.get_mut(&old) {
                    slot.info.closed_ms = None;
                }
                Err(e)
            }
        }
    }

    /// Appends an entry and waits until it is durable (or written, in non-durable mode).
    ///
    /// # Errors
    /// The ledger is closed, metadata could not be written, or the journal write failed (for
    /// example a full disk). A failed append is never acknowledged and never becomes readable.
    pub async fn add_entry(self: &Arc<Self>, data: Bytes) -> Result<Position> {
        let ts = self.shared.clock.now_ms();
        self.add_entry_with_time(data, ts).await
    }

    /// Like [`ManagedLedger::add_entry`] with an explicit timestamp (used for publish-time seeks).
    ///
    /// # Errors
    /// As [`ManagedLedger::add_entry`].
    pub async fn add_entry_with_time(
        self: &Arc<Self>,
        data: Bytes,
        timestamp: u64,
    ) -> Result<Position> {
        match self.start_add(data, timestamp)? {
            (pos, None) => Ok(pos),
            (pos, Some(done)) => {
                done.await?;
                Ok(pos)
            }
        }
    }

    /// Blocking variant for callers outside an async runtime (the Python bindings).
    ///
    /// # Errors
    /// As [`ManagedLedger::add_entry`].
    pub fn add_entry_blocking(self: &Arc<Self>, data: Bytes) -> Result<Position> {
        let ts = self.shared.clock.now_ms();
        match self.start_add(data, ts)? {
            (pos, None) => Ok(pos),
            (pos, Some(done)) => {
                done.wait()?;
                Ok(pos)
            }
        }
    }

    /// Queues an append; returns its position and, in durable mode, the completion to wait for.
    ///
    /// # Errors
    /// As [`ManagedLedger::add_entry`].
    pub fn start_add(
        self: &Arc<Self>,
        data: Bytes,
        timestamp: u64,
    ) -> Result<(Position, Option<AddCompletion>)> {
        let now = self.shared.clock.now_ms();
        let durable = self.shared.journal.is_durable();
        let mut st = loop {
            let st = self.state.lock();
            if st.closed {
                return Err(LedgerError::Closed {
                    what: format!("managed ledger {}", self.name),
                });
            }
            if st.rolling {
                // A rollover is recording its new ledger: queue behind it (not under `state`).
                drop(st);
                drop(self.roll_gate.lock());
                continue;
            }
            let needs = st.roll_before_append
                || st
                    .ledgers
                    .get(&st.current)
                    .is_some_and(|s| self.needs_rollover(s, now));
            if !needs {
                break st;
            }
            drop(st);
            self.roll_over(now)?;
        };
        let ledger = st.current;
        let slot = st
            .ledgers
            .get_mut(&ledger)
            .ok_or_else(|| LedgerError::Closed {
                what: "current ledger".into(),
            })?;
        let pos = Position::new(ledger, slot.locs.len() as i64);
        let len = data.len() as u64;
        // Non-durable appends normally complete at once; when the journal has too many unwritten
        // bytes they wait for the write like durable ones, so memory stays bounded.
        let wait_for_write = durable || self.shared.journal.backlogged();
        let (completion, rx): (Option<Completion>, _) = if wait_for_write {
            let (completer, done) = pending();
            let ml = Arc::clone(self);
            let cb: Completion = Box::new(move |res| {
                let res = res.and_then(|()| ml.confirm(pos, len));
                if let Err(e) = &res {
                    ml.fail(pos, e);
                }
                completer.complete(res);
            });
            (Some(cb), Some(done))
        } else {
            (None, None)
        };
        let loc = self
            .shared
            .journal
            .append(ledger, pos.entry_id, timestamp, &data, completion)?;
        slot.locs.push(loc);
        slot.appended_size += len;
        if self.active_cursors.load(Ordering::Relaxed) > 0 {
            // Relaxed: a stale count only costs one cache insert or miss.
            self.cache.insert(pos, data, now);
        }
        if !wait_for_write {
            Self::confirm_locked(&mut st, pos, len);
            drop(st);
            self.new_entries.notify_waiters();
        }
        Ok((pos, rx))
    }

    fn confirm_locked(st: &mut State, pos: Position, len: u64) {
        if let Some(slot) = st.ledgers.get_mut(&pos.ledger_id) {
            slot.confirmed += 1;
            slot.confirmed_size += len;
        }
        // Durable confirmations arrive in append order. In non-durable mode an append that
        // waited for a backlogged journal may confirm after later ones: never move backwards.
        if pos > st.last_confirmed {
            st.last_confirmed = pos;
        }
        st.entries_added += 1;
    }

    /// Runs on the journal flusher once `pos` is durable.
    fn confirm(&self, pos: Position, len: u64) -> Result<()> {
        let mut st = self.state.lock();
        let fenced = st
            .ledgers
            .get(&pos.ledger_id)
            .and_then(|s| s.failed_at)
            .is_some_and(|f| pos.entry_id as u64 >= f);
        if fenced {
            return Err(LedgerError::Closed {
                what: format!("ledger {} (fenced after a failed write)", pos.ledger_id),
            });
        }
        Self::confirm_locked(&mut st, pos, len);
        drop(st);
        self.new_entries.notify_waiters();
        Ok(())
    }

    /// Runs on the journal flusher when `pos` could not be made durable: fence its ledger there.
    fn fail(&self, pos: Position, err: &LedgerError) {
        let mut st = self.state.lock();
        if let Some(slot) = st.ledgers.get_mut(&pos.ledger_id) {
            let at = pos.entry_id as u64;
            if slot.failed_at.is_none_or(|f| at < f) {
                tracing::warn!(ledger = %self.name, position = %pos, error = %err, "append failed; fencing ledger");
                slot.failed_at = Some(at);
                if slot.info.closed_ms.is_some() {
                    slot.info.entries = slot.info.entries.min(at);
                }
            }
        }
    }
}
