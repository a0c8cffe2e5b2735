//! The local journal behind the ledger-storage seam: [`JournalLedgers`] keeps ledgers in the data
//! directory's shared journal (group commit, one `fdatasync` per round for every topic), with the
//! directory's ledger id allocator, so seam ledgers and the broker's managed ledgers never share an id.
//!
//! One process owns a data directory (its `LOCK`), so "fencing" a ledger here needs no protocol:
//! a recovery open marks the ledger closed at its last confirmed entry, and its writer's later
//! appends, and any append still in flight, fail with [`LedgerError::Fenced`]. After a restart, a
//! ledger is rebuilt from what the journal scan found for it (the directory keeps the ledgers the
//! seam's records name: see [`super::local_store`]).
//!
//! Reads (`pread`s), id reservations (which may fsync the id counter) and deletes (which may
//! unlink segments) run on Tokio's blocking pool, never on a worker thread. An append only queues
//! its record (as with the broker's managed ledger, the journal may open its next segment file on
//! the appending thread).

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::{BoxFut, LedgerStorage, Quorums, ReadLedger, WriteLedger};
use crate::journal::{Completion, Loc};
use crate::shared::Shared;
use crate::{LedgerError, Result};

/// Ledgers in the local journal.
pub struct JournalLedgers {
    /// The data directory's journal, id allocator, recovery results and clock; shared with the
    /// storage.
    shared: Arc<Shared>,
    /// Ledgers created or opened in this process, by id. Lock: map lookups and inserts only.
    ledgers: Mutex<HashMap<i64, Arc<LocalLedger>>>,
}

/// One ledger in the journal; shared by its writer, its readers and the journal's completions.
struct LocalLedger {
    /// The ledger id; immutable.
    id: i64,
    /// Itself, for the journal's completions to find it; immutable.
    me: Weak<LocalLedger>,
    /// The journal, for appends and reads.
    shared: Arc<Shared>,
    /// Entry locations and confirmation. Lock: taken by appenders around the journal append (so a
    /// completion, which takes it too, always finds its entry's location recorded) and by the
    /// journal flusher to confirm; never across I/O or an `.await`.
    state: Mutex<LocalState>,
}

struct LocalState {
    /// Where each appended entry lives, by entry id.
    locs: Vec<Loc>,
    /// Last entry durable with every earlier one.
    lac: i64,
    /// Bytes of the entries up to `lac`.
    length: u64,
    /// Closed by its writer or by a recovery open at this entry: no more appends, and no
    /// confirmation past it.
    closed_at: Option<i64>,
    /// Closed by a recovery open (appends then fail as fenced, not as closed).
    fenced: bool,
}

impl JournalLedgers {
    pub(crate) fn new(shared: Arc<Shared>) -> Arc<JournalLedgers> {
        Arc::new(JournalLedgers {
            shared,
            ledgers: Mutex::new(HashMap::new()),
        })
    }

    /// The ledger `id` as known in this process, else as the journal scan at open found it
    /// (closed at its last entry found).
    fn ledger(&self, id: i64) -> Arc<LocalLedger> {
        // Lock: bookkeeping only, released before any await or I/O.
        if let Some(l) = self.ledgers.lock().get(&id) {
            return Arc::clone(l);
        }
        // Not known in this process: rebuild it from the scan (index reads, unlocked).
        let mut found = self.shared.take_recovered(id);
        found.sort_by_key(|(e, _)| *e);
        found.dedup_by_key(|(e, _)| *e);
        let mut locs = Vec::with_capacity(found.len());
        for (e, loc) in found {
            if e != locs.len() as i64 {
                break; // a hole: nothing after it was confirmed in order
            }
            locs.push(loc);
        }
        let lac = locs.len() as i64 - 1;
        let length = locs.iter().map(|l| u64::from(l.len)).sum();
        let ledger = Arc::new_cyclic(|me| LocalLedger {
            id,
            me: me.clone(),
            shared: Arc::clone(&self.shared),
            state: Mutex::new(LocalState {
                locs,
                lac,
                length,
                closed_at: Some(lac),
                fenced: false,
            }),
        });
        // Lock: insert unless another caller rebuilt it meanwhile.
        Arc::clone(self.ledgers.lock().entry(id).or_insert(ledger))
    }
}

impl LedgerStorage for JournalLedgers {
    /// One journal on one disk: there is nothing to replicate, so `quorums` does not apply.
    fn create_ledger(
        &self,
        _ml_name: &str,
        _quorums: Option<Quorums>,
    ) -> BoxFut<'_, Result<Arc<dyn WriteLedger>>> {
        Box::pin(async move {
            if self.shared.read_only {
                return Err(LedgerError::ReadOnly {
                    what: "creating a ledger".into(),
                });
            }
            // Reserving a block of ids may write (and fsync) the id counter: not on a worker.
            let shared = Arc::clone(&self.shared);
            let id = tokio::task::spawn_blocking(move || shared.next_ledger_id())
                .await
                .map_err(|e| LedgerError::Backend {
                    context: format!("ledger id task: {e}"),
                })??;
            let ledger = Arc::new_cyclic(|me| LocalLedger {
                id,
                me: me.clone(),
                shared: Arc::clone(&self.shared),
                state: Mutex::new(LocalState {
                    locs: Vec::new(),
                    lac: -1,
                    length: 0,
                    closed_at: None,
                    fenced: false,
                }),
            });
            // Lock: one insert.
            self.ledgers.lock().insert(id, Arc::clone(&ledger));
            Ok(ledger as Arc<dyn WriteLedger>)
        })
    }

    fn open_ledger(
        &self,
        ledger_id: i64,
        recover: bool,
    ) -> BoxFut<'_, Result<Arc<dyn ReadLedger>>> {
        Box::pin(async move {
            let ledger = self.ledger(ledger_id);
            if recover {
                // Lock: closing the ledger at what is confirmed.
                let mut st = ledger.state.lock();
                if st.closed_at.is_none() {
                    st.closed_at = Some(st.lac);
                    st.fenced = true;
                }
            }
            Ok(ledger as Arc<dyn ReadLedger>)
        })
    }

    fn delete_ledger(&self, ledger_id: i64) -> BoxFut<'_, Result<()>> {
        Box::pin(async move {
            // Lock: one removal.
            self.ledgers.lock().remove(&ledger_id);
            // Releasing may unlink segment files and sync the directory: not on a worker.
            let shared = Arc::clone(&self.shared);
            tokio::task::spawn_blocking(move || shared.journal.release_ledger(ledger_id))
                .await
                .map_err(|e| LedgerError::Backend {
                    context: format!("ledger delete task: {e}"),
                })
        })
    }
}

impl LocalLedger {
    fn refused(&self, st: &LocalState) -> LedgerError {
        if st.fenced {
            LedgerError::Fenced {
                what: format!("ledger {}", self.id),
            }
        } else {
            LedgerError::Closed {
                what: format!("ledger {}", self.id),
            }
        }
    }

    /// Runs on the journal flusher: the append of `entry_id` (`len` bytes) completed.
    fn completed(&self, entry_id: i64, len: u64, result: Result<()>) -> Result<i64> {
        // Lock: bookkeeping only.
        let mut st = self.state.lock();
        result?;
        if st.closed_at.is_some_and(|c| entry_id > c) {
            return Err(self.refused(&st));
        }
        // The journal completes one ledger's appends in append order.
        st.lac = entry_id;
        st.length += len;
        Ok(entry_id)
    }
}

impl WriteLedger for LocalLedger {
    fn id(&self) -> i64 {
        self.id
    }

    fn append(&self, data: Bytes) -> BoxFut<'static, Result<i64>> {
        let (tx, rx) = oneshot::channel();
        let queued = {
            // Lock: held across the journal append so the completion (which takes it) cannot
            // run before the location is recorded; the journal append itself only queues.
            let mut st = self.state.lock();
            if st.closed_at.is_some() {
                Err(self.refused(&st))
            } else {
                let entry_id = st.locs.len() as i64;
                let me = self.me.clone();
                let len = data.len() as u64;
                let done = Completion::once(move |r| {
                    let r = match me.upgrade() {
                        Some(l) => l.completed(entry_id, len, r),
                        None => r.map(|()| entry_id),
                    };
                    let _ = tx.send(r);
                });
                let now = self.shared.clock.now_ms();
                self.shared
                    .journal
                    .append(self.id, entry_id, now, &data, Some(done))
                    .map(|loc| st.locs.push(loc))
            }
        };
        Box::pin(async move {
            queued?;
            rx.await.unwrap_or_else(|_| {
                Err(LedgerError::Closed {
                    what: "journal".into(),
                })
            })
        })
    }

    fn last_add_confirmed(&self) -> i64 {
        // Lock: one field read.
        self.state.lock().lac
    }

    fn length(&self) -> u64 {
        // Lock: one field read.
        self.state.lock().length
    }

    fn close(&self) -> BoxFut<'_, Result<()>> {
        Box::pin(async move {
            // Appends still in flight complete or fail on their own; nothing past the confirmed
            // entry is part of the closed ledger.
            let mut st = self.state.lock();
            if st.fenced {
                return Err(self.refused(&st));
            }
            if st.closed_at.is_none() {
                st.closed_at = Some(st.lac);
            }
            Ok(())
        })
    }
}

impl ReadLedger for LocalLedger {
    fn id(&self) -> i64 {
        self.id
    }

    fn last_entry_id(&self) -> Option<i64> {
        // Lock: bookkeeping only, released before any await or I/O.
        self.state.lock().closed_at
    }

    fn length(&self) -> u64 {
        // Lock: two field reads.
        let st = self.state.lock();
        if st.closed_at.is_some() {
            st.length
        } else {
            0
        }
    }

    fn read(&self, first: i64, last: i64) -> BoxFut<'_, Result<Vec<Bytes>>> {
        Box::pin(async move {
            let locs: Vec<Loc> = {
                // Lock: bookkeeping only, released before any await or I/O.
                let st = self.state.lock();
                if first < 0 || last < first || last > st.lac {
                    return Err(LedgerError::Backend {
                        context: format!(
                            "read of entries {first}..={last} of ledger {} (last confirmed {})",
                            self.id, st.lac
                        ),
                    });
                }
                st.locs[first as usize..=last as usize].to_vec()
            };
            let shared = Arc::clone(&self.shared);
            let id = self.id;
            let records =
                tokio::task::spawn_blocking(move || shared.journal.read(id, first, &locs))
                    .await
                    .map_err(|e| LedgerError::Backend {
                        context: format!("journal read task: {e}"),
                    })??;
            Ok(records.into_iter().map(|r| r.payload).collect())
        })
    }

    fn read_last_add_confirmed(&self) -> BoxFut<'_, Result<i64>> {
        // Lock: bookkeeping only, released before any await or I/O.
        Box::pin(async move { Ok(self.state.lock().lac) })
    }
}
