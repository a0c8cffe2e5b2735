//! Message deduplication, as Pulsar's `MessageDeduplication` does it.
//!
//! Per producer name the broker keeps the highest sequence id *pushed* (accepted for writing) and
//! the highest *persisted* (durable). A SEND whose sequence id is at or below the pushed one is a
//! duplicate: answered with message id −1:−1 when it is also at or below the persisted one, else
//! "unknown" (still in flight, answered with a PersistenceError so the client resends).
//!
//! The persisted map survives restarts through the `pulsar.dedup` cursor: every
//! `brokerDeduplicationEntriesInterval` persisted entries (and on the
//! `brokerDeduplicationSnapshotIntervalSeconds` timer) the map is stored as the cursor's
//! properties and the cursor is mark-deleted at the snapshot position; recovery starts from those
//! properties and replays the entries after the mark-delete position. A snapshot never passes an
//! entry still in flight, so a replay from it covers everything not in its map.
//!
//! Another cluster's replicator that negotiated `supports_repl_dedup_by_lid_and_eid` is
//! deduplicated by source position instead ([`super::repl_source`]): per replicator producer the
//! highest source position pushed and persisted, with the same Dup/Unknown verdicts. Those
//! watermarks go into the same snapshots (`<producer>_LID`/`_EID`) and are rebuilt by the same
//! replay (from each replicated entry's property), so a reload or restart keeps them; they are
//! never forgotten for inactivity (the source may replay after a failover).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_ledger::{Cursor, ManagedLedger, Position};
use pulsar_rs_proto::pb::MessageMetadata;

use super::repl_source::{self, SourcePosition};
use crate::config::BrokerConfig;
use crate::error::BrokerError;

/// Name of the cursor holding the snapshots (Pulsar's `DEDUPLICATION_CURSOR_NAME`).
pub const DEDUP_CURSOR: &str = "pulsar.dedup";

/// What a SEND is, for deduplication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// New: store it.
    NotDup,
    /// Already persisted: answer SEND_RECEIPT −1:−1.
    Dup,
    /// At or below the pushed sequence id but not yet persisted: answer PersistenceError.
    Unknown,
}

/// What a SEND is deduplicated on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DedupBy {
    /// The producer's sequence ids (`sequence_id`, `highest_sequence_id`).
    SequenceId,
    /// The source position a replicator that negotiated `supports_repl_dedup_by_lid_and_eid`
    /// put on the message; `None` when the property is missing or malformed (never stored:
    /// answered "unknown", as Pulsar does).
    SourcePosition(Option<SourcePosition>),
}

/// The sequence ids of one SEND.
#[derive(Clone, Copy, Debug)]
pub struct SendIds<'a> {
    /// Producer name: the producer's, the original one of a replicated message deduplicated by
    /// sequence id, the replicator's for one deduplicated by source position.
    pub producer: &'a str,
    /// `sequence_id` of the SEND.
    pub sequence_id: u64,
    /// `highest_sequence_id` of the SEND (batches), if any.
    pub highest_sequence_id: Option<u64>,
    /// The SEND carries a chunk other than the last of its message: deduplication neither
    /// checks nor records it ([`pulsar_rs_proto::is_non_last_chunk`] of its metadata).
    pub non_last_chunk: bool,
    /// The SEND is a server marker another cluster's replicator forwards (Pulsar's
    /// `isMarkerMessage`): deduplication neither checks nor records it (every marker has
    /// producer `pulsar.marker` and sequence id 0), and it is not the topic's latest data.
    pub marker: bool,
    /// What the SEND is deduplicated on.
    pub by: DedupBy,
}

impl SendIds<'_> {
    fn seq(&self) -> i64 {
        i64::try_from(self.sequence_id).unwrap_or(i64::MAX)
    }

    fn highest(&self) -> i64 {
        let h = self
            .highest_sequence_id
            .map_or(-1, |h| i64::try_from(h).unwrap_or(i64::MAX));
        h.max(self.seq())
    }
}

/// Whether a stored message is a chunk other than the last one (never checked nor recorded).
#[must_use]
pub fn is_non_last_chunk(md: &MessageMetadata) -> bool {
    pulsar_rs_proto::is_non_last_chunk(md.chunk_id, md.num_chunks_from_msg)
}

#[derive(Default)]
struct State {
    enabled: bool,
    /// Set once `set_enabled` ran (before that, a stale cursor may be left from an earlier run).
    initialised: bool,
    cursor: Option<Arc<Cursor>>,
    pushed: HashMap<String, i64>,
    persisted: HashMap<String, i64>,
    /// Per replicator producer, the highest source position accepted for writing.
    repl_pushed: HashMap<String, SourcePosition>,
    /// Per replicator producer, the highest source position durable.
    repl_persisted: HashMap<String, SourcePosition>,
    /// Positions written and not yet recorded as persisted (a snapshot stays before them).
    inflight: BTreeSet<Position>,
    /// Entries persisted since the last snapshot.
    since_snapshot: u64,
    /// When the last snapshot was taken (ms).
    last_snapshot_ms: u64,
    /// Producers not connected, with when they left (ms).
    inactive: HashMap<String, u64>,
}

/// One topic's deduplication state.
pub struct Deduplication {
    /// Broker settings; immutable.
    config: Arc<BrokerConfig>,
    /// The broker's clock (snapshot intervals, producer expiry); immutable.
    clock: Arc<dyn pulsar_rs_clock::Clock>,
    /// Everything else. A short lock: never held across I/O on entries nor `.await` (cursor
    /// calls under it only touch the cursor's in-memory state).
    state: Mutex<State>,
    /// `State::enabled`, stored under the lock by `set_enabled`: lets every SEND of a topic
    /// without deduplication (the default) skip the lock. Relaxed: the lock orders the state
    /// itself, and a SEND racing a policy change may see either value, as it could have taken
    /// the lock before or after the change.
    on: AtomicBool,
}

/// A written entry whose persistence must be reported back ([`Ticket::persisted`]).
pub struct Ticket {
    dedup: Arc<Deduplication>,
    producer: String,
    highest: i64,
    record: bool,
    /// The source position it records instead of `highest` (deduplicated by source position).
    source: Option<SourcePosition>,
    position: Position,
}

impl Ticket {
    /// Reports the outcome of the write: recorded as persisted, or forgotten on failure (the
    /// pushed sequence id falls back to the persisted one so a resend is accepted).
    pub fn persisted(self, ok: bool) {
        let key = match self.source {
            Some(at) => Key::Source(at),
            None => Key::Sequence(self.highest),
        };
        self.dedup
            .finish(&self.producer, key, self.record, self.position, ok);
    }
}

impl Deduplication {
    /// Disabled deduplication for a topic.
    #[must_use]
    pub fn new(config: Arc<BrokerConfig>, clock: Arc<dyn pulsar_rs_clock::Clock>) -> Arc<Self> {
        Arc::new(Deduplication {
            config,
            clock,
            state: Mutex::new(State::default()),
            on: AtomicBool::new(false),
        })
    }

    /// Whether deduplication is on.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.state.lock().enabled
    }

    /// Turns deduplication on (opening and replaying `pulsar.dedup`) or off (deleting it).
    ///
    /// # Errors
    /// Storage failures opening, replaying or deleting the cursor.
    pub fn set_enabled(&self, on: bool, ml: &Arc<ManagedLedger>) -> Result<(), BrokerError> {
        {
            let st = self.state.lock();
            if st.initialised && st.enabled == on {
                return Ok(());
            }
        }
        if !on {
            let mut st = self.state.lock();
            let had_cursor = st.cursor.take().is_some()
                || ml.cursors().iter().any(|c| c.name() == DEDUP_CURSOR)
                || ml
                    .persisted_cursor_names()
                    .map(|n| n.iter().any(|c| c == DEDUP_CURSOR))
                    .unwrap_or(false);
            *st = State {
                initialised: true,
                ..State::default()
            };
            self.on.store(false, Ordering::Relaxed);
            drop(st);
            if had_cursor {
                ml.delete_cursor(DEDUP_CURSOR)?;
            }
            return Ok(());
        }
        let cursor = ml.open_cursor(DEDUP_CURSOR)?;
        // Not a reader: it must not keep entries in the cache.
        cursor.set_active(false);
        let (mut persisted, mut repl) =
            repl_source::split_snapshot(cursor.properties(), &self.config.replicator_prefix);
        let mut maps = Replayed {
            sequences: &mut persisted,
            sources: &mut repl,
            prefix: &self.config.replicator_prefix,
            local: &self.config.cluster_name,
        };
        let replayed = replay(ml, cursor.mark_delete_position(), &mut maps)?;
        let mut st = self.state.lock();
        *st = State {
            enabled: true,
            initialised: true,
            cursor: Some(cursor),
            pushed: persisted.clone(),
            persisted,
            repl_pushed: repl.clone(),
            repl_persisted: repl,
            last_snapshot_ms: self.clock.now_ms(),
            ..State::default()
        };
        self.on.store(true, Ordering::Relaxed);
        if replayed >= self.config.broker_deduplication_entries_interval.max(1) {
            self.snapshot_locked(&mut st, ml.last_confirmed());
        }
        tracing::debug!(
            ledger = ml.name(),
            replayed,
            producers = st.persisted.len(),
            "deduplication enabled"
        );
        Ok(())
    }

    /// Checks a SEND before it is written (Pulsar's `isDuplicate`); a `NotDup` raises the pushed
    /// sequence id.
    #[must_use]
    pub fn check(&self, ids: SendIds<'_>) -> Verdict {
        // Relaxed: see `on`.
        if !self.on.load(Ordering::Relaxed) {
            return Verdict::NotDup;
        }
        let mut st = self.state.lock();
        if !st.enabled || ids.marker {
            return Verdict::NotDup;
        }
        if let DedupBy::SourcePosition(source) = ids.by {
            // Every entry (each chunk too) has its own source position: all are checked.
            let Some(at) = source else {
                return Verdict::Unknown;
            };
            if let Some(&pushed) = st.repl_pushed.get(ids.producer) {
                if at <= pushed {
                    let persisted = st.repl_persisted.get(ids.producer).copied();
                    return if persisted.is_some_and(|p| at <= p) {
                        Verdict::Dup
                    } else {
                        Verdict::Unknown
                    };
                }
            }
            st.repl_pushed.insert(ids.producer.to_owned(), at);
            return Verdict::NotDup;
        }
        if ids.non_last_chunk {
            return Verdict::NotDup;
        }
        let seq = ids.seq();
        if let Some(&pushed) = st.pushed.get(ids.producer) {
            if seq <= pushed {
                let persisted = st.persisted.get(ids.producer).copied();
                return if persisted.is_some_and(|p| seq <= p) {
                    Verdict::Dup
                } else {
                    Verdict::Unknown
                };
            }
        }
        st.pushed.insert(ids.producer.to_owned(), ids.highest());
        Verdict::NotDup
    }

    /// Notes an entry written at `position`; its [`Ticket`] reports its persistence.
    #[must_use]
    pub fn written(self: &Arc<Self>, ids: SendIds<'_>, position: Position) -> Option<Ticket> {
        // Relaxed: see `on`.
        if !self.on.load(Ordering::Relaxed) {
            return None;
        }
        let mut st = self.state.lock();
        if !st.enabled {
            return None;
        }
        st.inflight.insert(position);
        let (source, record) = match ids.by {
            DedupBy::SourcePosition(source) => (source, source.is_some() && !ids.marker),
            DedupBy::SequenceId => (None, !ids.non_last_chunk && !ids.marker),
        };
        Some(Ticket {
            dedup: Arc::clone(self),
            producer: ids.producer.to_owned(),
            highest: ids.highest(),
            record,
            source,
            position,
        })
    }

    /// A write of `producer` failed before it got a position: the pushed sequence id (or source
    /// position) falls back to the persisted one (Pulsar's `resetHighestSequenceIdPushed`).
    pub fn failed(&self, producer: &str) {
        let mut st = self.state.lock();
        match st.persisted.get(producer).copied() {
            Some(p) => st.pushed.insert(producer.to_owned(), p),
            None => st.pushed.remove(producer),
        };
        match st.repl_persisted.get(producer).copied() {
            Some(p) => st.repl_pushed.insert(producer.to_owned(), p),
            None => st.repl_pushed.remove(producer),
        };
    }

    fn finish(&self, producer: &str, key: Key, record: bool, position: Position, ok: bool) {
        let mut st = self.state.lock();
        st.inflight.remove(&position);
        if !st.enabled {
            return;
        }
        if !ok {
            drop(st);
            self.failed(producer);
            return;
        }
        if record {
            match key {
                Key::Sequence(highest) => {
                    let e = st.persisted.entry(producer.to_owned()).or_insert(highest);
                    *e = (*e).max(highest);
                }
                Key::Source(at) => {
                    let e = st.repl_persisted.entry(producer.to_owned()).or_insert(at);
                    *e = (*e).max(at);
                }
            }
        }
        st.since_snapshot += 1;
        if st.since_snapshot >= self.config.broker_deduplication_entries_interval.max(1) {
            self.snapshot_locked(&mut st, position);
        }
    }

    /// PRODUCER_SUCCESS `last_sequence_id`: the highest pushed sequence id, −1 if none.
    #[must_use]
    pub fn last_sequence_id(&self, producer: &str) -> i64 {
        self.state
            .lock()
            .pushed
            .get(producer)
            .copied()
            .unwrap_or(-1)
    }

    /// The persisted map (stats, tests).
    #[must_use]
    pub fn persisted(&self) -> BTreeMap<String, i64> {
        self.state.lock().persisted.clone().into_iter().collect()
    }

    /// The persisted source positions, per replicator producer (stats, tests).
    #[must_use]
    pub fn persisted_source_positions(&self) -> BTreeMap<String, SourcePosition> {
        self.state
            .lock()
            .repl_persisted
            .clone()
            .into_iter()
            .collect()
    }

    /// A producer connected: it is active again.
    pub fn producer_added(&self, producer: &str) {
        self.state.lock().inactive.remove(producer);
    }

    /// A producer disconnected: from now it counts as inactive.
    pub fn producer_removed(&self, producer: &str) {
        let mut st = self.state.lock();
        if st.enabled {
            st.inactive.insert(producer.to_owned(), self.clock.now_ms());
        }
    }

    /// Periodic work: forget producers inactive longer than
    /// `brokerDeduplicationProducerInactivityTimeoutMinutes` (then re-snapshot; source-position
    /// watermarks stay), and take a
    /// time-based snapshot when `brokerDeduplicationSnapshotIntervalSeconds` passed with new
    /// entries.
    pub fn tick(&self, now_ms: u64, lac: Position) {
        let mut st = self.state.lock();
        if !st.enabled {
            return;
        }
        let timeout = self
            .config
            .broker_deduplication_producer_inactivity_timeout_minutes
            .saturating_mul(60_000);
        let expired: Vec<String> = st
            .inactive
            .iter()
            .filter(|(_, &t)| now_ms.saturating_sub(t) >= timeout)
            .map(|(n, _)| n.clone())
            .collect();
        if !expired.is_empty() {
            for n in &expired {
                st.inactive.remove(n);
                st.pushed.remove(n);
                st.persisted.remove(n);
            }
            let at = st.cursor.as_ref().map_or(lac, |c| c.mark_delete_position());
            self.snapshot_locked(&mut st, at);
        }
        let interval = self
            .config
            .broker_deduplication_snapshot_interval_seconds
            .saturating_mul(1000);
        let behind = st
            .cursor
            .as_ref()
            .is_some_and(|c| c.mark_delete_position() < lac);
        if behind && now_ms.saturating_sub(st.last_snapshot_ms) >= interval {
            self.snapshot_locked(&mut st, lac);
        }
    }

    /// Stores the persisted map as the cursor's properties and mark-deletes it at `at`, or just
    /// before the first entry still in flight (whose producer's id may be missing from the map).
    fn snapshot_locked(&self, st: &mut State, at: Position) {
        let Some(cursor) = st.cursor.clone() else {
            return;
        };
        let mut position = at;
        if let Some(&first) = st.inflight.first() {
            if first <= position {
                position = cursor.ledger().previous_position(first);
            }
        }
        let max = self.config.broker_deduplication_max_number_of_producers as usize;
        let mut props: BTreeMap<String, i64> = st
            .persisted
            .iter()
            .take(max)
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        // Not bounded by the producer limit (as Pulsar's): one per remote cluster at most.
        for (producer, at) in &st.repl_persisted {
            props.extend(repl_source::snapshot_keys(producer, *at));
        }
        st.since_snapshot = 0;
        st.last_snapshot_ms = self.clock.now_ms();
        if position <= cursor.mark_delete_position() || position.entry_id < 0 {
            return;
        }
        if let Err(e) = cursor.mark_delete_with_properties(position, props) {
            tracing::warn!(cursor = DEDUP_CURSOR, error = %e, "deduplication snapshot failed");
        }
    }
}

/// What persists, by the kind of key.
#[derive(Clone, Copy)]
enum Key {
    /// A producer's highest sequence id.
    Sequence(i64),
    /// A replicator producer's source position.
    Source(SourcePosition),
}

/// The maps a replay raises.
struct Replayed<'a> {
    /// Per producer (in the metadata), the highest sequence id.
    sequences: &'a mut HashMap<String, i64>,
    /// Per replicator producer, the highest source position of the entries it replicated.
    sources: &'a mut HashMap<String, SourcePosition>,
    /// `replicatorPrefix`.
    prefix: &'a str,
    /// This cluster's name (the replicators' destination).
    local: &'a str,
}

impl Replayed<'_> {
    fn entry(&mut self, md: &MessageMetadata) {
        if md.marker_type.is_some() {
            return;
        }
        let (Some(from), Some(at)) = (md.replicated_from.as_deref(), SourcePosition::of(md)) else {
            return;
        };
        let name = repl_source::replicator_producer_name(self.prefix, from, self.local);
        let slot = self.sources.entry(name).or_insert(at);
        *slot = (*slot).max(at);
    }
}

/// Replays the entries after `from`, raising the maps to each producer's highest sequence id
/// and each replicator's highest source position; returns how many entries were read.
fn replay(
    ml: &Arc<ManagedLedger>,
    from: Position,
    maps: &mut Replayed<'_>,
) -> Result<u64, BrokerError> {
    let lac = ml.last_confirmed();
    let mut next = ml.next_valid_position(from);
    let mut count = 0u64;
    while next <= lac && next.entry_id >= 0 {
        let entries = ml.read_entries(next, 1000, 64 << 20, lac)?;
        let Some(last) = entries.last().map(|e| e.position) else {
            break;
        };
        for e in &entries {
            count += 1;
            let Ok((md, _)) = pulsar_rs_proto::parse_stored_entry(&e.data) else {
                continue;
            };
            maps.entry(&md);
            if is_non_last_chunk(&md) {
                // A message counts once its last chunk is stored.
                continue;
            }
            let seq = i64::try_from(md.sequence_id).unwrap_or(i64::MAX);
            let highest = md
                .highest_sequence_id
                .map_or(-1, |h| i64::try_from(h).unwrap_or(i64::MAX));
            let v = seq.max(highest);
            let slot = maps.sequences.entry(md.producer_name.clone()).or_insert(v);
            *slot = (*slot).max(v);
        }
        next = ml.next_valid_position(last);
    }
    Ok(count)
}

#[cfg(test)]
#[path = "dedup_tests.rs"]
mod tests;
