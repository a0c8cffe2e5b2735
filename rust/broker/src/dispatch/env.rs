//! What a dispatcher borrows from its subscription for one pass (`Env`: the cursor, limits,
//! redelivery counts and delayed tracker, and the delivery of one entry to a consumer), and what
//! the pass answers ([`Outcome`]).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use pulsar_rs_ledger::{Cursor, Position};

use super::delayed::DelayedTracker;
use super::entry::EntryInfo;
use crate::consumer::Consumer;
use crate::transaction::pending_ack::PendingAcks;

/// What one dispatch pass did.
#[derive(Default, Debug, Clone, Copy)]
pub struct Outcome {
    /// Messages sent.
    pub messages: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Entries sent.
    pub entries: usize,
    /// Entries put (back) into the replay set.
    pub requeued: usize,
}

impl Outcome {
    pub(crate) fn record(&mut self, messages: u32, bytes: u64) {
        self.messages += u64::from(messages);
        self.bytes += bytes;
        self.entries += 1;
    }
}

/// What a dispatcher borrows from its subscription for one pass.
pub(crate) struct Env<'a> {
    /// The subscription's cursor (acknowledged entries are skipped, batch ack sets read).
    pub(crate) cursor: &'a Cursor,
    /// Partition index of the topic, -1 if not partitioned.
    pub(crate) partition: i32,
    /// Per-consumer unacked limit in force (0 = none).
    pub(crate) unacked_limit: u32,
    /// `dispatcherMaxRoundRobinBatchSize`.
    pub(crate) rr_chunk: u32,
    /// Redelivery counts (position → times queued), locked by the pass for its duration.
    pub(crate) redeliveries: Option<&'a HashMap<Position, u32>>,
    /// The delayed tracker, when delayed delivery is on, and the due cutoff (ms).
    pub(crate) delayed: Option<(&'a Mutex<DelayedTracker>, i64)>,
    /// The subscription's pending acks when its topic has transactions (none: nothing to
    /// consult on the delivery path): messages of a batch a transaction holds are left out of
    /// its delivery.
    pub(crate) pending_acks: Option<&'a PendingAcks>,
}

impl Env<'_> {
    /// Hands an entry with a future `deliver_at_time` to the delayed tracker; true if it took it.
    pub(crate) fn defer(&self, position: Position, info: &EntryInfo) -> bool {
        match (self.delayed, info.deliver_at) {
            (Some((tracker, cutoff)), Some(at)) => tracker.lock().add(position, at, cutoff),
            _ => false,
        }
    }

    /// The redelivery count a (replayed) entry carries.
    pub(crate) fn redelivery_count(&self, position: Position, replayed: bool) -> u32 {
        if !replayed {
            return 0;
        }
        self.redeliveries
            .and_then(|r| r.get(&position).copied())
            .unwrap_or(0)
    }

    /// Delivers one entry to `consumer` (charging its permits); false if it could not take it.
    pub(crate) fn deliver(
        &self,
        consumer: &Arc<Consumer>,
        position: Position,
        info: &EntryInfo,
        redelivery_count: u32,
        data: Bytes,
    ) -> bool {
        // Only a batch of several messages can be partly acknowledged: acknowledging the one
        // message of a batch acknowledges its entry. So the cursor's lock is skipped for the rest.
        let ack_set = (info.messages > 1)
            .then(|| {
                match (
                    self.cursor.batch_ack_set(position),
                    self.pending_acks.and_then(|p| p.held_ack_set(position)),
                ) {
                    (Some(a), Some(h)) => Some(a.iter().zip(&h).map(|(x, y)| x & y).collect()),
                    (a, h) => a.or(h),
                }
            })
            .flatten()
            .map(|w: Vec<u64>| w.iter().map(|x| *x as i64).collect());
        let len = data.len() as u64;
        let sent = consumer.deliver(
            position,
            info.messages,
            self.partition,
            redelivery_count,
            ack_set,
            data,
            self.unacked_limit,
        );
        if sent && info.chunk.is_some() {
            consumer.chunked.record(1, len);
        }
        sent
    }
}
