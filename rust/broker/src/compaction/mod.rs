//! Topic compaction, as Pulsar does it: a durable cursor named `__compaction` whose mark-delete
//! is the compaction horizon and whose `CompactedTopicLedger` property names the compacted
//! ledger ([`ledger`]) holding, for every key, the latest message up to the horizon
//! ([`compactor`]). Consumers that subscribe with `readCompacted` (Exclusive/Failover only) are
//! served that view up to the horizon, then the live topic (the subscription's compacted read,
//! [`crate::subscription::compacted_read`]).
//!
//! A run (admin `PUT …/compaction`, or the `compactionThreshold` monitor) reads the previous
//! compacted view plus the topic from the horizon to the last confirmed entry, twice (phase one
//! finds the winners, phase two writes them), makes the new ledger durable, then moves the
//! cursor; only then is the previous ledger deleted. A crash in between leaves the previous
//! state whole.

pub mod compactor;
pub mod ledger;
pub mod on_bookies;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use pulsar_rs_ledger::seam::SeamBacking;
use pulsar_rs_ledger::{Entry, ManagedLedger, Position};
use serde::Serialize;

use self::compactor::KeyMap;
use self::ledger::CompactedLedger;
use crate::error::BrokerError;
use crate::naming::TopicName;

/// Pulsar's `Compactor.COMPACTION_SUBSCRIPTION`.
pub const COMPACTION_CURSOR: &str = "__compaction";
/// Pulsar's `Compactor.COMPACTED_TOPIC_LEDGER_PROPERTY`.
pub const COMPACTED_LEDGER_PROPERTY: &str = "CompactedTopicLedger";
/// Entries read per storage call during a run.
const READ_CHUNK: usize = 1000;

/// Pulsar's `LongRunningProcessStatus.Status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    /// Never run since the topic was loaded.
    NotRun,
    /// A run is in progress.
    Running,
    /// The last run succeeded.
    Success,
    /// The last run failed (see `lastError`).
    Error,
}

/// Pulsar's `LongRunningProcessStatus` JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStatus {
    /// Where the last run stands.
    pub status: Status,
    /// Why the last run failed ("" otherwise).
    pub last_error: String,
}

/// What `internalStats` and the export show about a topic's compaction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionInfo {
    /// The compacted ledger's id, if any.
    pub ledger_id: Option<i64>,
    /// The horizon (last position compacted), if any.
    pub horizon: Option<Position>,
    /// Entries in the compacted ledger.
    pub entries: u64,
    /// Size of the compacted ledger file in bytes.
    pub size: u64,
    /// When the last successful run ended (ms since the epoch; this process only).
    pub last_run_ms: Option<u64>,
}

/// Run state; guarded by [`Compaction::run`].
struct RunState {
    status: Status,
    last_error: String,
    last_run_ms: Option<u64>,
    last: LastRun,
}

/// Pulsar's `CompactionStats` of a topic (`stats.compaction`): the last run, this process only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastRun {
    /// Messages the last successful run removed (read minus kept).
    pub last_compaction_removed_event_count: u64,
    /// When the last successful run ended (ms since the epoch; 0 if none).
    pub last_compaction_succeed_timestamp: u64,
    /// When the last failed run ended (ms since the epoch; 0 if none).
    pub last_compaction_failed_timestamp: u64,
    /// How long the last run took, successful or not (Pulsar's spelling of the key).
    #[serde(rename = "lastCompactionDurationTimeInMills")]
    pub last_compaction_duration_time_in_mills: u64,
}

/// One topic's compaction: its compacted view and run state.
pub struct Compaction {
    /// Directory of this topic's compacted ledgers; immutable.
    dir: PathBuf,
    /// The bookies the topic is on, which then hold its compacted ledgers too (as Pulsar keeps
    /// them); immutable.
    backing: Option<Arc<SeamBacking>>,
    /// Keep messages without a key (`topicCompactionRetainNullKey`); immutable.
    retain_null_key: bool,
    /// The broker's clock, for the run's timestamps and duration; immutable.
    clock: Arc<dyn pulsar_rs_clock::Clock>,
    /// The current compacted ledger. Read (a short read lock, cloned out) by each compacted read;
    /// replaced by a run after the cursor moved.
    view: RwLock<Option<Arc<CompactedLedger>>>,
    /// Status of the current or last run. Short lock; taken to start a run (so two cannot).
    run: Mutex<RunState>,
    /// The topic's transaction buffer, set once by the topic: a run stops at the max read
    /// position and leaves aborted messages out (markers are always left out).
    txn_buffer: std::sync::OnceLock<Arc<crate::transaction::buffer::TransactionBuffer>>,
}

/// Where a topic's compacted ledgers live under the data directory: `compacted/<ledger name>`
/// with `/` written as `%2F`, so every topic has one flat directory.
#[must_use]
pub fn topic_dir(data_dir: &Path, ledger_name: &str) -> PathBuf {
    data_dir
        .join("compacted")
        .join(ledger_name.replace('%', "%25").replace('/', "%2F"))
}

/// The compacted ledger the `__compaction` cursor of `ml` names, if any.
#[must_use]
pub fn compacted_ledger_id(ml: &ManagedLedger) -> Option<i64> {
    ml.cursors()
        .into_iter()
        .find(|c| c.name() == COMPACTION_CURSOR)
        .and_then(|c| c.properties().get(COMPACTED_LEDGER_PROPERTY).copied())
}

impl Compaction {
    /// Opens a topic's compaction state: the view named by the `__compaction` cursor, if any.
    /// A compacted ledger that fails its checks is logged and not served (its cursor stays, so
    /// the next run rebuilds the view from what the topic still holds). Blocking I/O.
    #[must_use]
    pub fn open(
        dir: PathBuf,
        backing: Option<Arc<SeamBacking>>,
        ml: &ManagedLedger,
        retain_null_key: bool,
    ) -> Arc<Self> {
        let cursor = ml
            .cursors()
            .into_iter()
            .find(|c| c.name() == COMPACTION_CURSOR);
        let view = cursor.and_then(|c| {
            let id = compacted_ledger_id(ml)?;
            let opened = match &backing {
                // On the bookies the horizon is the cursor's mark-delete, as in Pulsar.
                Some(b) => on_bookies::open(b, id).map(|(l, size)| {
                    CompactedLedger::on_bookies(id, c.mark_delete_position(), size, l)
                }),
                None => ledger::open(&dir, id),
            };
            match opened {
                Ok(l) => Some(Arc::new(l)),
                Err(e) => {
                    tracing::error!(ledger = ml.name(), error = %e, "compacted ledger not usable");
                    None
                }
            }
        });
        Arc::new(Compaction {
            dir,
            backing,
            retain_null_key,
            clock: Arc::clone(ml.clock()),
            view: RwLock::new(view),
            run: Mutex::new(RunState {
                status: Status::NotRun,
                last_error: String::new(),
                last_run_ms: None,
                last: LastRun::default(),
            }),
            txn_buffer: std::sync::OnceLock::new(),
        })
    }

    /// Gives compaction the topic's transaction buffer (once; later calls are ignored).
    pub fn set_transaction_buffer(&self, tb: Arc<crate::transaction::buffer::TransactionBuffer>) {
        let _ = self.txn_buffer.set(tb);
    }

    /// The current compacted view.
    #[must_use]
    pub fn view(&self) -> Option<Arc<CompactedLedger>> {
        self.view.read().clone()
    }

    /// Status JSON of the current or last run.
    #[must_use]
    pub fn status(&self) -> RunStatus {
        let r = self.run.lock();
        RunStatus {
            status: r.status,
            last_error: r.last_error.clone(),
        }
    }

    /// Stats: the compacted ledger, horizon and last run.
    #[must_use]
    pub fn info(&self) -> CompactionInfo {
        let last_run_ms = self.run.lock().last_run_ms;
        match self.view() {
            Some(v) => CompactionInfo {
                ledger_id: Some(v.id),
                horizon: Some(v.horizon),
                entries: v.len() as u64,
                size: v.size,
                last_run_ms,
            },
            None => CompactionInfo {
                last_run_ms,
                ..CompactionInfo::default()
            },
        }
    }

    /// `stats.compaction`: the last run's figures.
    #[must_use]
    pub fn last_run(&self) -> LastRun {
        self.run.lock().last
    }

    /// Marks a run as started; `false` if one is already running (Pulsar answers 409).
    #[must_use]
    pub fn try_start(&self) -> bool {
        let mut r = self.run.lock();
        if r.status == Status::Running {
            return false;
        }
        r.status = Status::Running;
        r.last_error.clear();
        true
    }

    /// Runs a compaction started with [`Compaction::try_start`] and records its outcome.
    /// Blocking I/O: call from a blocking thread.
    pub fn run_started(&self, ml: &Arc<ManagedLedger>) {
        let started = self.clock.now_ms();
        let result = self.compact(ml);
        let ended = self.clock.now_ms();
        let mut r = self.run.lock();
        r.last.last_compaction_duration_time_in_mills = ended.saturating_sub(started);
        match result {
            Ok(removed) => {
                r.status = Status::Success;
                r.last_run_ms = Some(ended);
                r.last.last_compaction_succeed_timestamp = ended;
                r.last.last_compaction_removed_event_count = removed;
            }
            Err(e) => {
                tracing::warn!(ledger = ml.name(), error = %e, "compaction failed");
                r.status = Status::Error;
                r.last_error = e.to_string();
                r.last.last_compaction_failed_timestamp = ended;
            }
        }
    }

    /// The `__compaction` cursor's backlog in bytes, or the topic's size when it has none
    /// (Pulsar's `PersistentTopic.checkCompaction` estimate).
    #[must_use]
    pub fn backlog_estimate(ml: &ManagedLedger) -> u64 {
        ml.cursors()
            .into_iter()
            .find(|c| c.name() == COMPACTION_CURSOR)
            .map_or_else(|| ml.stats().total_size, |c| c.estimated_backlog_size())
    }

    /// Feeds every entry of the current view, then the topic's entries after `after` up to
    /// `upto`, to `f`.
    fn scan(
        ml: &ManagedLedger,
        old: Option<&CompactedLedger>,
        after: Position,
        upto: Position,
        f: &mut dyn FnMut(Entry),
    ) -> Result<(), BrokerError> {
        if let Some(old) = old {
            let mut from = Position::new(-1, -1);
            loop {
                let chunk = old.read_from(from, READ_CHUNK)?;
                let Some(last) = chunk.last() else { break };
                from = Position::new(last.position.ledger_id, last.position.entry_id + 1);
                chunk.into_iter().for_each(&mut *f);
            }
        }
        let mut from = ml.next_valid_position(after);
        while from <= upto {
            let chunk = ml.read_entries(from, READ_CHUNK, u64::MAX, upto)?;
            let Some(last) = chunk.last() else { break };
            from = ml.next_valid_position(last.position);
            chunk.into_iter().for_each(&mut *f);
        }
        Ok(())
    }

    /// One run; returns how many messages it removed.
    fn compact(&self, ml: &Arc<ManagedLedger>) -> Result<u64, BrokerError> {
        let cursor = ml.open_cursor_at(COMPACTION_CURSOR, true)?;
        let old = self.view();
        let tb = self.txn_buffer.get();
        // Never past an open transaction's first message (Pulsar compacts what it dispatches).
        let upto = tb.map_or_else(
            || ml.last_confirmed(),
            |tb| tb.max_read_position(|| ml.last_confirmed()),
        );
        let hidden =
            |e: &Entry| tb.is_some_and(|tb| tb.hides(&crate::dispatch::entry::entry_info(&e.data)));
        // Where the topic's unread part starts: after the horizon, or after the cursor's
        // mark-delete for the first run.
        let after = old
            .as_ref()
            .map_or(cursor.mark_delete_position(), |o| o.horizon);
        if upto.entry_id < 0 || upto <= after {
            return Ok(0); // nothing new since the horizon
        }
        let mut keys = KeyMap::new(self.retain_null_key);
        Self::scan(ml, old.as_deref(), after, upto, &mut |e| {
            if !hidden(&e) {
                keys.observe(&e);
            }
        })?;
        let mut kept = Vec::new();
        Self::scan(ml, old.as_deref(), after, upto, &mut |e| {
            if !hidden(&e) {
                kept.extend(keys.rewrite(e));
            }
        })?;
        let written = match &self.backing {
            Some(b) => {
                let topic = TopicName::from_ledger_name(ml.name())
                    .map_or_else(|| ml.name().to_owned(), |t| t.to_string());
                let (id, l, size) = on_bookies::write(b, &topic, upto, kept)?;
                CompactedLedger::on_bookies(id, upto, size, l)
            }
            None => ledger::write(&self.dir, old.as_ref().map_or(1, |o| o.id + 1), upto, kept)?,
        };
        let mut props = BTreeMap::new();
        props.insert(COMPACTED_LEDGER_PROPERTY.to_owned(), written.id);
        let moved = cursor
            .mark_delete_with_properties(upto, props)
            .and_then(|()| cursor.flush());
        if let Err(e) = moved {
            written.discard(); // never named by the cursor: nobody reads it
            return Err(e.into());
        }
        *self.view.write() = Some(Arc::new(written));
        if let Some(old) = old {
            old.discard();
        }
        tracing::info!(
            ledger = ml.name(),
            horizon = %upto,
            keys = keys.keys(),
            messages = keys.messages_read,
            kept = keys.messages_kept,
            "compaction done"
        );
        Ok(keys.messages_read.saturating_sub(keys.messages_kept))
    }
}

#[cfg(test)]
mod tests;
