//! The writing side of a ledger (BookKeeper's `LedgerHandle` + `PendingAddOp`): pipelined adds, each
//! sent to its round-robin write set and acknowledged once `Qa` bookies of that set confirm it,
//! completed strictly in entry order; the LAC (last entry completed) rides on every later entry.
//! When a bookie fails, the ledger's ensemble is changed (a writable bookie not in it takes its
//! place from the first unconfirmed entry on, the metadata is compare-and-set) and the pending
//! entries are sent again. Any bookie answering EFENCED ends the handle: a recovery open took over.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::oneshot;

use crate::bookie_client::BookieClient;
use crate::digest::{package_entry, MASTER_KEY_LENGTH};
use crate::error::{BkError, Result};
use crate::metadata::{LedgerMetadata, LedgerState};
use crate::placement::{replacement, write_set};
use crate::protocol::{ADD_OVERHEAD, BOOKIE_MAX_FRAME};
use crate::zk_store::{MetadataVersion, ZkStore};

/// An entry sent but not yet completed. Lives in `WriterState::pending`, so it is owned by whoever
/// holds the state lock.
struct PendingAdd {
    /// Its entry id. Set by `append`, never changed.
    entry_id: i64,
    /// Ledger length including this entry.
    length: i64,
    /// The digest-framed entry, resent unchanged after an ensemble change.
    stored: Bytes,
    /// Bookies that confirmed it (only those still in its write set count). At most Qw ids, so a
    /// vector searched linearly: cheaper than hashing an id per answer.
    acked: Vec<Arc<str>>,
    /// Bookies it was sent to and that have not answered (at most Qw, as `acked`).
    outstanding: Vec<Arc<str>>,
    /// The caller waiting for the entry id.
    done: Option<oneshot::Sender<Result<i64>>>,
}

/// The mutable state of a writing ledger; every field is read and written under `Shared::state`.
struct WriterState {
    /// The ledger's metadata as last written by us (ensembles grow on ensemble changes, written by
    /// the ensemble-change task; state set by `close`).
    metadata: LedgerMetadata,
    /// The znode version of `metadata`, for the next compare-and-set (same writers as `metadata`).
    version: MetadataVersion,
    /// The id the next `append` takes (written by `append` only).
    next_entry_id: i64,
    /// Length of the ledger including every entry handed out so far.
    length: i64,
    /// Last entry completed (in order); advanced by response handling only.
    lac: i64,
    /// The ledger length through `lac` (same writer).
    lac_length: i64,
    /// Entries not yet completed, in entry order: pushed by `append`, popped or drained by response
    /// handling and by a failed ensemble change.
    pending: VecDeque<PendingAdd>,
    /// An ensemble change is running; sends wait for it. Set by response handling, cleared by the
    /// ensemble-change task.
    changing_ensemble: bool,
    /// Bookies of the current ensemble that failed and still need replacing.
    failed_bookies: Vec<String>,
    /// Set once the handle is closed or failed; later adds get this error.
    terminal: Option<TerminalState>,
}

#[derive(Clone)]
enum TerminalState {
    /// `close` was called.
    Closed,
    /// A bookie answered EFENCED, or a recovery took the metadata over.
    Fenced,
    /// An add or an ensemble change failed for good; the reason.
    Failed(String),
}

/// Shared between the handle and the tasks that carry its requests.
struct Shared {
    /// Immutable.
    ledger_id: i64,
    /// SHA-1("ledger" ‖ password); immutable.
    master_key: [u8; MASTER_KEY_LENGTH],
    /// Cloneable, immutable.
    bookies: BookieClient,
    /// Cloneable, immutable.
    store: ZkStore,
    /// Owned jointly by `append` callers, response tasks and ensemble-change tasks; every holder
    /// takes the lock for bookkeeping only and never across an `.await`.
    state: Mutex<WriterState>,
    /// Signalled whenever adds complete or fail, for `close` to wait for the pending ones.
    progress: tokio::sync::Notify,
}

/// A ledger open for writing.
#[derive(Clone)]
pub struct LedgerWriter {
    /// Shared with clones of the handle and with the request and ensemble-change tasks.
    shared: Arc<Shared>,
}

/// A request to send: entry to bookie.
struct AddSend {
    bookie: Arc<str>,
    entry_id: i64,
    stored: Bytes,
}

impl LedgerWriter {
    pub(crate) fn new(
        ledger_id: i64,
        password: &[u8],
        metadata: LedgerMetadata,
        version: MetadataVersion,
        bookies: BookieClient,
        store: ZkStore,
    ) -> LedgerWriter {
        let state = WriterState {
            metadata,
            version,
            next_entry_id: 0,
            length: 0,
            lac: -1,
            lac_length: 0,
            pending: VecDeque::new(),
            changing_ensemble: false,
            failed_bookies: Vec::new(),
            terminal: None,
        };
        let shared = Shared {
            ledger_id,
            master_key: crate::digest::master_key(password),
            bookies,
            store,
            state: Mutex::new(state),
            progress: tokio::sync::Notify::new(),
        };
        LedgerWriter {
            shared: Arc::new(shared),
        }
    }

    /// The ledger id.
    pub fn id(&self) -> i64 {
        self.shared.ledger_id
    }

    /// Last entry confirmed by an ack quorum, with every earlier one.
    pub fn last_add_confirmed(&self) -> i64 {
        // Lock: one field read.
        self.shared.lock().lac
    }

    /// A copy of the ledger's current metadata (ensembles as changed so far).
    pub fn metadata(&self) -> LedgerMetadata {
        // Lock: copying the metadata out.
        self.shared.lock().metadata.clone()
    }

    /// Appends an entry. The entry id is assigned and the entry sent when this is called, so calls
    /// made one after another are entries in that order, and many may be in flight at once; the
    /// returned future resolves with the entry id once it and every earlier entry reached their ack
    /// quorum (as `LedgerHandle.asyncAddEntry`). Call it inside a Tokio runtime: it spawns the sends.
    pub fn append(
        &self,
        payload: &[u8],
    ) -> impl std::future::Future<Output = Result<i64>> + Send + 'static {
        let (done, wait) = oneshot::channel();
        let ledger_id = self.shared.ledger_id;
        let refused = {
            // Lock: assigning the entry id and queueing it; released before the sends are spawned.
            let mut st = self.shared.lock();
            if let Some(t) = &st.terminal {
                Some(self.shared.terminal_error(t))
            } else if payload.len() + ADD_OVERHEAD > BOOKIE_MAX_FRAME {
                Some(BkError::InvalidArgument(format!(
                    "entry of {} bytes exceeds the bookies' frame limit of {BOOKIE_MAX_FRAME}",
                    payload.len()
                )))
            } else {
                let entry_id = st.next_entry_id;
                st.next_entry_id += 1;
                st.length += payload.len() as i64;
                let stored = package_entry(
                    st.metadata.digest_type,
                    ledger_id,
                    entry_id,
                    st.lac,
                    st.length,
                    payload,
                );
                let length = st.length;
                st.pending.push_back(PendingAdd {
                    entry_id,
                    length,
                    stored,
                    acked: Vec::new(),
                    outstanding: Vec::new(),
                    done: Some(done),
                });
                // Only the new entry: every earlier one was sent when it was appended, or is
                // resent by the ensemble change that holds the sends back.
                let mut sends = Vec::new();
                let last = st.pending.len() - 1;
                sends_missing_for(&mut st, last, &mut sends);
                drop(st);
                self.shared.clone().dispatch(sends);
                None
            }
        };
        async move {
            if let Some(e) = refused {
                return Err(e);
            }
            wait.await
                .unwrap_or(Err(BkError::LedgerClosed { ledger_id }))
        }
    }

    /// Waits for pending adds (and a running ensemble change), then closes the ledger in its
    /// metadata (state CLOSED, last entry and length), as `LedgerHandle.close` does.
    pub async fn close(&self) -> Result<()> {
        // Let in-flight adds finish (they complete or fail on their own).
        loop {
            let progress = self.shared.progress.notified();
            tokio::pin!(progress);
            // Registered before looking, so a completion between the look and the wait is seen.
            progress.as_mut().enable();
            {
                // Lock: checking for pending adds; released before waiting.
                let st = self.shared.lock();
                if let Some(TerminalState::Fenced) = st.terminal {
                    return Err(BkError::Fenced {
                        ledger_id: self.shared.ledger_id,
                    });
                }
                // An ensemble change in flight would race our compare-and-set; let it land.
                if st.pending.is_empty() && !st.changing_ensemble {
                    break;
                }
            }
            progress.await;
        }
        loop {
            let (m, version) = {
                // Lock: marking the handle closed and taking a copy of what to write; released before ZooKeeper.
                let mut st = self.shared.lock();
                st.terminal = Some(TerminalState::Closed);
                let mut m = st.metadata.clone();
                m.state = LedgerState::Closed;
                m.last_entry_id = st.lac;
                m.length = st.lac_length;
                (m, st.version)
            };
            match self
                .shared
                .store
                .write_ledger_metadata(self.shared.ledger_id, &m, version)
                .await
            {
                Ok(v) => {
                    // Lock: storing the written metadata.
                    let mut st = self.shared.lock();
                    st.version = v;
                    st.metadata = m;
                    return Ok(());
                }
                Err(BkError::MetadataVersionConflict { .. }) => {
                    let (theirs, v) = self
                        .shared
                        .store
                        .read_ledger_metadata(self.shared.ledger_id)
                        .await?;
                    if theirs.state == LedgerState::Closed
                        && theirs.last_entry_id == m.last_entry_id
                        && theirs.length == m.length
                    {
                        return Ok(());
                    }
                    if theirs.state != LedgerState::Open {
                        return Err(BkError::Fenced {
                            ledger_id: self.shared.ledger_id,
                        });
                    }
                    // Still open: only the ensembles can differ; retry with theirs on their version.
                    // Lock: adopting the stored ensembles and version.
                    let mut st = self.shared.lock();
                    st.metadata.ensembles = theirs.ensembles;
                    st.version = v;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// For every pending entry, the members of its write set it was not yet sent to and that have not
/// confirmed it (after an ensemble change). Nothing is sent while an ensemble change runs.
fn sends_missing(st: &mut WriterState) -> Vec<AddSend> {
    let mut out = Vec::new();
    for i in 0..st.pending.len() {
        sends_missing_for(st, i, &mut out);
    }
    out
}

/// The sends `sends_missing` makes for the pending entry at index `i`, pushed onto `out`.
fn sends_missing_for(st: &mut WriterState, i: usize, out: &mut Vec<AddSend>) {
    if st.changing_ensemble || st.terminal.is_some() {
        return;
    }
    let (e, qw) = (st.metadata.ensemble_size, st.metadata.write_quorum);
    let entry_id = st.pending[i].entry_id;
    let ensemble = st.metadata.ensemble_for(entry_id);
    let p = &mut st.pending[i];
    for pos in write_set(entry_id, e, qw) {
        let b = ensemble[pos].as_str();
        let named = |v: &Vec<Arc<str>>| v.iter().any(|x| &**x == b);
        if !named(&p.acked) && !named(&p.outstanding) {
            let b: Arc<str> = Arc::from(b);
            p.outstanding.push(b.clone());
            out.push(AddSend {
                bookie: b,
                entry_id,
                stored: p.stored.clone(),
            });
        }
    }
}

/// The index in `pending` of entry `entry_id`: pending entries are consecutive ids (appended in
/// order, completed from the front, failed all at once), so no search is needed.
fn pending_index(pending: &VecDeque<PendingAdd>, entry_id: i64) -> Option<usize> {
    let first = pending.front()?.entry_id;
    let i = usize::try_from(entry_id.checked_sub(first)?).ok()?;
    (i < pending.len()).then_some(i)
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, WriterState> {
        // Lock: see `state`; poisoning only means a panicking holder, the state stays usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn terminal_error(&self, t: &TerminalState) -> BkError {
        match t {
            TerminalState::Closed => BkError::LedgerClosed {
                ledger_id: self.ledger_id,
            },
            TerminalState::Fenced => BkError::Fenced {
                ledger_id: self.ledger_id,
            },
            TerminalState::Failed(reason) => BkError::LedgerFailed {
                ledger_id: self.ledger_id,
                reason: reason.clone(),
            },
        }
    }

    /// Sends `sends` from one task (an append's Qw sends, or an ensemble change's resends), each
    /// answer handled as it arrives: one task per call rather than one per bookie request.
    fn dispatch(self: Arc<Self>, sends: Vec<AddSend>) {
        if sends.is_empty() {
            return;
        }
        tokio::spawn(async move {
            let mut answers: FuturesUnordered<_> = sends
                .into_iter()
                .map(|s| {
                    let me = &self;
                    async move {
                        let r = me
                            .bookies
                            .add(
                                &s.bookie,
                                me.master_key,
                                me.ledger_id,
                                s.entry_id,
                                s.stored,
                                false,
                            )
                            .await;
                        (s.entry_id, s.bookie, r)
                    }
                })
                .collect();
            while let Some((entry_id, bookie, r)) = answers.next().await {
                self.on_add_response(entry_id, &bookie, r);
            }
        });
    }

    fn on_add_response(self: &Arc<Self>, entry_id: i64, bookie: &str, r: Result<()>) {
        let mut completions = Vec::new();
        let mut start_change = false;
        {
            // Lock: recording the answer and completing entries; completions are sent under it (oneshot sends do not block) to keep their order.
            let mut st = self.lock();
            let in_write_set = {
                let ensemble = st.metadata.ensemble_for(entry_id);
                write_set(
                    entry_id,
                    st.metadata.ensemble_size,
                    st.metadata.write_quorum,
                )
                .into_iter()
                .any(|pos| ensemble[pos] == bookie)
            };
            let Some(i) = pending_index(&st.pending, entry_id) else {
                return; // already completed or failed
            };
            let p = &mut st.pending[i];
            debug_assert_eq!(p.entry_id, entry_id);
            let Some(at) = p.outstanding.iter().position(|b| &**b == bookie) else {
                return; // answered before an ensemble change forgot it
            };
            let bookie_id = p.outstanding.swap_remove(at);
            match r {
                Ok(()) if in_write_set => {
                    p.acked.push(bookie_id);
                }
                Ok(()) => {} // an ack from a bookie replaced meanwhile does not count
                Err(BkError::Fenced { .. }) => {
                    st.terminal = Some(TerminalState::Fenced);
                    completions.extend(
                        st.pending
                            .drain(..)
                            .filter_map(|mut p| p.done.take())
                            .map(|d| (d, Err(()))),
                    );
                }
                Err(e) if e.replaces_bookie_on_add() && in_write_set => {
                    tracing::warn!(ledger = self.ledger_id, bookie, error = %e, "bookie failed; changing ensemble");
                    if !st.failed_bookies.iter().any(|b| b == bookie) {
                        st.failed_bookies.push(bookie.to_string());
                    }
                    if !st.changing_ensemble {
                        st.changing_ensemble = true;
                        start_change = true;
                    }
                }
                Err(_) if !in_write_set => {}
                Err(e) => {
                    tracing::warn!(ledger = self.ledger_id, bookie, error = %e, "add failed");
                    st.terminal = Some(TerminalState::Failed(e.to_string()));
                    completions.extend(
                        st.pending
                            .drain(..)
                            .filter_map(|mut p| p.done.take())
                            .map(|d| (d, Err(()))),
                    );
                }
            }
            // Complete in order every entry at the head that reached its ack quorum.
            let qa = st.metadata.ack_quorum;
            while st.pending.front().is_some_and(|p| p.acked.len() >= qa) {
                let mut p = st.pending.pop_front().expect("front exists");
                st.lac = p.entry_id;
                st.lac_length = p.length;
                if let Some(d) = p.done.take() {
                    completions.push((d, Ok(p.entry_id)));
                }
            }
            let terminal = st.terminal.clone().unwrap_or(TerminalState::Closed);
            for (d, res) in completions {
                let res = res.map_err(|()| self.terminal_error(&terminal));
                let _ = d.send(res);
            }
        }
        self.progress.notify_waiters();
        if start_change {
            let me = self.clone();
            tokio::spawn(async move { me.change_ensemble().await });
        }
    }

    /// Replaces every failed bookie of the current ensemble, from the first unconfirmed entry on,
    /// with compare-and-set on the metadata; then resends what the new members lack.
    async fn change_ensemble(self: Arc<Self>) {
        loop {
            let (failed, first_entry, mut ensemble, metadata, version) = {
                // Lock: snapshot of what to replace; released before ZooKeeper.
                let st = self.lock();
                if st.failed_bookies.is_empty() || st.terminal.is_some() {
                    break;
                }
                let first = st.lac + 1;
                (
                    st.failed_bookies.clone(),
                    first,
                    st.metadata.ensemble_for(first).to_vec(),
                    st.metadata.clone(),
                    st.version,
                )
            };
            let result: Result<(LedgerMetadata, MetadataVersion)> = async {
                let writable = self.store.writable_bookies().await?;
                for f in &failed {
                    if let Some(pos) = ensemble.iter().position(|b| b == f) {
                        ensemble[pos] = replacement(writable.clone(), &ensemble, &failed)?;
                    }
                }
                let mut m = metadata.clone();
                m.ensembles.insert(first_entry, ensemble.clone());
                let mut version = version;
                loop {
                    match self
                        .store
                        .write_ledger_metadata(self.ledger_id, &m, version)
                        .await
                    {
                        Ok(v) => return Ok((m, v)),
                        Err(BkError::MetadataVersionConflict { .. }) => {
                            let (theirs, v) =
                                self.store.read_ledger_metadata(self.ledger_id).await?;
                            if theirs.state != LedgerState::Open {
                                // A recovery open (or close) got there first: we are fenced.
                                return Err(BkError::Fenced {
                                    ledger_id: self.ledger_id,
                                });
                            }
                            version = v;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            .await;
            let sends = {
                // Lock: installing the new ensemble and computing the resends; released before they are spawned.
                let mut st = self.lock();
                match result {
                    Ok((m, v)) => {
                        tracing::info!(ledger = self.ledger_id, first_entry, ensemble = ?ensemble, "ensemble changed");
                        st.metadata = m;
                        st.version = v;
                        st.failed_bookies.retain(|b| !failed.contains(b));
                        // Acks from replaced bookies no longer count.
                        for p in st.pending.iter_mut() {
                            p.acked.retain(|b| !failed.iter().any(|f| **b == **f));
                            p.outstanding.retain(|b| !failed.iter().any(|f| **b == **f));
                        }
                        if !st.failed_bookies.is_empty() {
                            continue;
                        }
                        st.changing_ensemble = false;
                        sends_missing(&mut st)
                    }
                    Err(e) => {
                        tracing::warn!(ledger = self.ledger_id, error = %e, "ensemble change failed");
                        let fenced = matches!(e, BkError::Fenced { .. });
                        st.terminal = Some(if fenced {
                            TerminalState::Fenced
                        } else {
                            TerminalState::Failed(e.to_string())
                        });
                        st.changing_ensemble = false;
                        let err = || {
                            if fenced {
                                BkError::Fenced {
                                    ledger_id: self.ledger_id,
                                }
                            } else {
                                BkError::QuorumNotReached {
                                    entry_id: first_entry,
                                    reason: e.to_string(),
                                }
                            }
                        };
                        for mut p in st.pending.drain(..) {
                            if let Some(d) = p.done.take() {
                                let _ = d.send(Err(err()));
                            }
                        }
                        Vec::new()
                    }
                }
            };
            self.progress.notify_waiters();
            self.dispatch(sends);
            return;
        }
        let sends = {
            // Lock: clearing the change flag and computing the sends.
            let mut st = self.lock();
            st.changing_ensemble = false;
            sends_missing(&mut st)
        };
        self.progress.notify_waiters();
        self.dispatch(sends);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(ids: std::ops::Range<i64>) -> VecDeque<PendingAdd> {
        ids.map(|entry_id| PendingAdd {
            entry_id,
            length: 0,
            stored: Bytes::new(),
            acked: Vec::new(),
            outstanding: Vec::new(),
            done: None,
        })
        .collect()
    }

    #[test]
    fn a_pending_entry_is_found_by_its_offset_from_the_first() {
        let p = pending(7..12);
        for id in 7..12 {
            let i = pending_index(&p, id).expect("pending");
            assert_eq!(p[i].entry_id, id);
        }
        // Completed (before the first), never appended (after the last), nothing pending.
        assert_eq!(pending_index(&p, 6), None);
        assert_eq!(pending_index(&p, 12), None);
        assert_eq!(pending_index(&p, i64::MIN), None);
        assert_eq!(pending_index(&pending(0..0), 0), None);
    }
}
