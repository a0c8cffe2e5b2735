//! Terminating a managed ledger (Pulsar's `asyncTerminate`): no append is taken from then on,
//! for good, and the position it ended at is recorded with the ledger list, so a restart (or
//! another owner, on BookKeeper) finds it terminated too.

use std::sync::atomic::Ordering;

use super::ManagedLedger;
use crate::{LedgerError, Position, Result};

impl ManagedLedger {
    /// Terminates the managed ledger and returns its last entry's position: the last entry
    /// appended (appends already taken are confirmed or fail as usual; none is taken after
    /// this), or `(current ledger, -1)` when it never had one. Terminating again returns the
    /// same position. Blocking: writes the metadata record.
    ///
    /// # Errors
    /// The ledger is closed or fenced; the metadata write failed (the ledger is then left as
    /// it was, not terminated).
    pub fn terminate(&self) -> Result<Position> {
        let at = loop {
            let mut st = self.state.lock();
            if st.closed {
                return Err(LedgerError::Closed {
                    what: format!("managed ledger {}", self.name),
                });
            }
            if st.fenced {
                return Err(self.fenced_error());
            }
            if let Some(p) = st.terminated {
                return Ok(p);
            }
            if st.rolling {
                // A rollover is recording its new ledger: wait for it (not under `state`).
                drop(st);
                drop(self.roll_gate.lock());
                continue;
            }
            let last_appended = st
                .ledgers
                .iter()
                .rev()
                .find(|(_, s)| !s.locs.is_empty())
                .map(|(id, s)| Position::new(*id, s.locs.len() as i64 - 1));
            let at = last_appended.unwrap_or(st.last_confirmed);
            st.terminated = Some(at);
            // Release: pairs with the Acquire of `is_terminated`; a reader that sees the flag
            // sees the ledger terminated (the state lock orders everything else).
            self.terminated_flag.store(true, Ordering::Release);
            break at;
        };
        if let Err(e) = self.persist() {
            let mut st = self.state.lock();
            st.terminated = None;
            // Release: as above.
            self.terminated_flag.store(false, Ordering::Release);
            drop(st);
            return Err(e);
        }
        tracing::info!(ledger = %self.name, position = %at, "managed ledger terminated");
        Ok(at)
    }

    /// Whether the managed ledger was terminated; lock-free.
    #[must_use]
    pub fn is_terminated(&self) -> bool {
        // Acquire: pairs with the Release of `terminate`.
        self.terminated_flag.load(Ordering::Acquire)
    }

    /// Where the managed ledger was terminated, if it was.
    #[must_use]
    pub fn terminated_position(&self) -> Option<Position> {
        self.state.lock().terminated
    }

    /// The error of an append after termination.
    pub(super) fn terminated_error(&self) -> LedgerError {
        LedgerError::Terminated {
            what: format!("managed ledger {}", self.name),
        }
    }
}
