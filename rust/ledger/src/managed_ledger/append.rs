//! Appending to a managed ledger: rollover, queueing a record in the journal, and confirming it
//! (or fencing the ledger) when the journal reports the write.
//!
//! Durable appends wait in [`State::unconfirmed`] in append order. The journal reports them by
//! mark (the append's index in that queue since the ledger opened), once per run of this
//! ledger's appends in a round, and the report confirms every append up to the mark and tells
//! their waiters, one call per run of each waiter's appends.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::completion::{pending, AddCompletion, AddWaiter};
use super::{ManagedLedger, Slot, State, Unconfirmed};
use crate::journal::{Completion, DurableThrough, KnownCrc};
use crate::{LedgerError, Position, Result};

/// How [`ManagedLedger::start_add_then`] queued an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// Confirmed at once (non-durable mode, journal not backlogged): the waiter is not told.
    Confirmed(Position),
    /// Waiting for the journal: the waiter is told, on the flusher, when it completes.
    Queued(Position),
}

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
        let recorded = self.next_ledger().and_then(|(id, writer)| {
            self.state.lock().pending_ledger = Some(Slot::new(id, now).info);
            match self.persist() {
                Ok(()) => Ok((id, writer)),
                Err(e) => {
                    if let (Some(b), Some(_)) = (&self.shared.backing, &writer) {
                        self.seam_delete_ledgers(b, &[id]); // never recorded: nobody reads it
                    }
                    Err(e)
                }
            }
        });
        let mut st = self.state.lock();
        st.rolling = false;
        st.pending_ledger = None;
        match recorded {
            Ok((id, writer)) => {
                let mut slot = Slot::new(id, now);
                slot.writer = writer;
                st.ledgers.insert(id, slot);
                st.current = id;
                st.roll_before_append = false;
                let retired = st.ledgers.get_mut(&old).and_then(|s| s.writer.take());
                drop(st);
                if let (Some(b), Some(w)) = (&self.shared.backing, retired) {
                    Self::seam_close_writer(b, w);
                }
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
    /// The ledger is closed, metadata could not be written, or the journal refused the append.
    pub fn start_add(
        self: &Arc<Self>,
        data: Bytes,
        timestamp: u64,
    ) -> Result<(Position, Option<AddCompletion>)> {
        let mut done = None;
        let added = self.add(data, timestamp, None, || {
            let (waiter, completion) = pending();
            done = Some(completion);
            (waiter, 0)
        })?;
        Ok(match added {
            Added::Confirmed(pos) => (pos, None),
            Added::Queued(pos) => (pos, done),
        })
    }

    /// Queues an append; if it has to wait for the journal, `waiter` is told with `token` when it
    /// completes (see [`AddWaiter`]). No allocation per append. `known`: a checksum of part of
    /// `data` the caller already verified, which spares the journal reading those bytes again.
    ///
    /// # Errors
    /// As [`ManagedLedger::start_add`]; the waiter is then not told.
    pub fn start_add_then(
        self: &Arc<Self>,
        data: Bytes,
        timestamp: u64,
        known: Option<KnownCrc>,
        waiter: &Arc<dyn AddWaiter>,
        token: u64,
    ) -> Result<Added> {
        self.add(data, timestamp, known, || (Arc::clone(waiter), token))
    }

    /// Queues an append; `waiter` is asked for the append's waiter only if it has to wait.
    fn add(
        self: &Arc<Self>,
        data: Bytes,
        timestamp: u64,
        known: Option<KnownCrc>,
        waiter: impl FnOnce() -> (Arc<dyn AddWaiter>, u64),
    ) -> Result<Added> {
        let now = self.shared.clock.now_ms();
        let backing = self.shared.backing.as_deref();
        let durable = backing.is_some() || self.shared.journal.is_durable();
        let mut st = loop {
            let st = self.state.lock();
            if st.closed {
                return Err(LedgerError::Closed {
                    what: format!("managed ledger {}", self.name),
                });
            }
            if st.fenced {
                return Err(self.fenced_error());
            }
            if st.terminated.is_some() {
                return Err(self.terminated_error());
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
            // A ledger closed: the offload thresholds may select it (once its appends settle;
            // housekeeping looks again).
            self.maybe_offload();
        };
        let ledger = st.current;
        let mark = st.unconfirmed_front + st.unconfirmed.len() as u64;
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
        // Neither the journal nor the bookies can report this append before `unconfirmed` holds
        // it: the report takes `state`, which this thread holds until then.
        let loc = match (backing, &slot.writer) {
            (Some(b), Some(writer)) => {
                self.seam_append(b, writer, data.clone(), mark);
                super::on_seam::remote_loc(len)
            }
            (Some(_), None) => {
                return Err(LedgerError::Closed {
                    what: format!("ledger {ledger} of {} (no writer)", self.name),
                })
            }
            (None, _) => {
                let completion = wait_for_write.then(|| {
                    let owner: Arc<dyn DurableThrough> = Arc::clone(self) as _;
                    Completion::through(owner, mark)
                });
                self.shared.journal.append_known(
                    ledger,
                    pos.entry_id,
                    timestamp,
                    &data,
                    completion,
                    known,
                )?
            }
        };
        slot.locs.push(loc);
        slot.appended_size += len;
        if self.active_cursors.load(Ordering::Relaxed) > 0 {
            // Relaxed: a stale count only costs one cache insert or miss.
            self.cache.insert(pos, data, now);
        }
        if wait_for_write {
            st.unconfirmed.push_back(Unconfirmed {
                pos,
                len,
                waiter: waiter(),
            });
            return Ok(Added::Queued(pos));
        }
        Self::confirm_locked(&mut st, pos, len);
        drop(st);
        self.new_entries.notify_waiters();
        Ok(Added::Confirmed(pos))
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

    /// Confirms the durable append at `pos`, unless its ledger was fenced at or before it by an
    /// earlier failed write. Caller holds the lock.
    fn confirm_unless_fenced(st: &mut State, pos: Position, len: u64) -> Result<()> {
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
        Self::confirm_locked(st, pos, len);
        Ok(())
    }

    /// `pos` could not be made durable: fence its ledger there. Caller holds the lock.
    fn fail_locked(&self, st: &mut State, pos: Position, err: &LedgerError) {
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

/// Waiters to tell after a report, one entry per run of one waiter's appends with one outcome.
type Told = Vec<(Arc<dyn AddWaiter>, u64, Result<()>)>;

impl DurableThrough for ManagedLedger {
    /// Runs on the journal flusher: confirms (or fails) every queued append up to `mark`, wakes
    /// readers once, then tells the waiters, outside the lock.
    fn durable_through(&self, mark: u64, result: Result<()>) {
        let mut told: Told = Vec::new();
        let mut confirmed = false;
        let mut st = self.state.lock();
        while st.unconfirmed_front <= mark {
            let Some(u) = st.unconfirmed.pop_front() else {
                break;
            };
            st.unconfirmed_front += 1;
            let r = match &result {
                Ok(()) => Self::confirm_unless_fenced(&mut st, u.pos, u.len),
                Err(e) => Err(e.duplicate()),
            };
            match &r {
                Ok(()) => confirmed = true,
                Err(e) => self.fail_locked(&mut st, u.pos, e),
            }
            let (waiter, token) = u.waiter;
            tell(&mut told, waiter, token, r);
        }
        drop(st);
        if confirmed {
            self.new_entries.notify_waiters();
        }
        for (waiter, token, r) in told {
            waiter.added_through(token, r);
        }
    }
}

/// Adds one append's outcome to `told`, extending the last run if it has the same waiter and
/// the same kind of outcome (the first error of a run is the one reported).
fn tell(told: &mut Told, waiter: Arc<dyn AddWaiter>, token: u64, r: Result<()>) {
    if let Some((last, last_token, last_r)) = told.last_mut() {
        if std::ptr::addr_eq(Arc::as_ptr(last), Arc::as_ptr(&waiter)) && last_r.is_ok() == r.is_ok()
        {
            *last_token = token;
            return;
        }
    }
    told.push((waiter, token, r));
}
