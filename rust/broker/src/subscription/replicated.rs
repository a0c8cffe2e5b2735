//! A subscription's side of replicated subscriptions
//! ([`crate::replicated_subscriptions`]): whether it is replicated (the cursor property Pulsar
//! sets, so it survives restarts), the snapshots its dispatcher reads, and the snapshot its
//! mark-delete passed, which the topic turns into an UPDATE marker for the other clusters.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use pulsar_rs_ledger::Position;

use super::Subscription;
use crate::replicated_subscriptions::cache::{Snapshot, SnapshotCache};
use crate::replicated_subscriptions::markers::{self, Marker};
use crate::replicated_subscriptions::REPLICATED_PROPERTY;

/// A subscription's replication state; guarded by [`Subscription::replicated`].
#[derive(Debug, Default)]
pub(super) struct Replicated {
    /// The snapshots read and not yet passed; `Some` exactly when the subscription is
    /// replicated (and the broker has `enableReplicatedSubscriptions`).
    cache: Option<SnapshotCache>,
    /// The newest snapshot the mark-delete passed since the topic last took it.
    due: Option<Snapshot>,
}

impl Replicated {
    /// The state of a subscription whose cursor has `properties`, on a broker with replicated
    /// subscriptions `enabled` keeping `max` snapshots each.
    pub(super) fn from_cursor(
        properties: &std::collections::BTreeMap<String, i64>,
        enabled: bool,
        max: usize,
    ) -> Self {
        Replicated {
            cache: (enabled && properties.contains_key(REPLICATED_PROPERTY))
                .then(|| SnapshotCache::new(max)),
            due: None,
        }
    }
}

impl Subscription {
    /// Whether the subscription is replicated (Pulsar's `isReplicated`).
    #[must_use]
    pub fn is_replicated(&self) -> bool {
        self.replicated.lock().cache.is_some()
    }

    /// Makes the subscription replicated or not, as Pulsar's `setReplicated`: the cursor
    /// property is set or removed (persisted with the next mark-delete). Returns false when
    /// asked to replicate on a broker without `enableReplicatedSubscriptions` (nothing changes).
    pub fn set_replicated(&self, on: bool) -> bool {
        let enabled = self.config.enable_replicated_subscriptions;
        if on && !enabled {
            tracing::warn!(topic = %self.topic, subscription = %self.name, "a replicated subscription asked for, but enableReplicatedSubscriptions is off");
            return false;
        }
        if !self.durable {
            return !on;
        }
        let mut r = self.replicated.lock();
        if on {
            if r.cache.is_none() {
                let max = self
                    .config
                    .replicated_subscriptions_snapshot_max_cached_per_subscription;
                r.cache = Some(SnapshotCache::new(max as usize));
                self.cursor.set_property(REPLICATED_PROPERTY, 1);
            }
        } else if r.cache.take().is_some() {
            r.due = None;
            self.cursor.remove_property(REPLICATED_PROPERTY);
        }
        true
    }

    /// Shares the topic's "may hold markers" flag (once; later calls are ignored): while it is
    /// clear, the dispatcher does not look for markers in what it reads.
    pub fn share_marker_flag(&self, flag: Arc<AtomicBool>) {
        let _ = self.markers.set(flag);
    }

    /// Whether the topic may hold server markers the dispatcher must hide.
    pub(super) fn may_hold_markers(&self) -> bool {
        // Relaxed: a hint set once and never cleared; a marker appended after a pass that read
        // the flag clear is read (and hidden) by a later pass, which reads it set.
        self.markers
            .get()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// A marker entry the dispatcher read (and hides): a SNAPSHOT goes to the cache.
    pub(super) fn read_marker(&self, marker_type: i32, payload: &Bytes) {
        let Some(Marker::Snapshot(s)) = markers::decode(marker_type, payload) else {
            return;
        };
        let mut r = self.replicated.lock();
        if let (Some(cache), Some(local)) = (r.cache.as_mut(), s.local_message_id.as_ref()) {
            cache.add(Snapshot {
                local: markers::position(local),
                clusters: s
                    .clusters
                    .iter()
                    .map(|c| (c.cluster.clone(), markers::position(&c.message_id)))
                    .collect(),
            });
        }
    }

    /// The mark-delete moved forward to `mark_delete`: the newest snapshot it passed becomes due.
    pub(super) fn mark_delete_advanced(&self, mark_delete: Position) {
        let mut r = self.replicated.lock();
        if let Some(s) = r.cache.as_mut().and_then(|c| c.advanced(mark_delete)) {
            r.due = Some(s);
        }
    }

    /// Takes the snapshot due for an UPDATE marker, if any.
    pub fn take_due_snapshot(&self) -> Option<Snapshot> {
        self.replicated.lock().due.take()
    }

    /// Another cluster's UPDATE: the mark-delete moves to `position` (never back), as a
    /// cumulative acknowledgement without a consumer.
    pub fn apply_replicated_update(&self, position: Position) {
        let before = self.cursor.mark_delete_position();
        if position <= before {
            return;
        }
        let last = self.cursor.ledger().last_confirmed();
        if let Err(e) = self.cursor.mark_delete(position.min(last)) {
            tracing::warn!(topic = %self.topic, subscription = %self.name, error = %e, "applying a replicated subscription's update");
            return;
        }
        self.note_ack(before);
        self.redeliveries.lock().retain(|p, _| *p > position);
        self.poke();
    }
}
