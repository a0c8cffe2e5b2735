//! A topic's side of replicated subscriptions ([`crate::replicated_subscriptions`]): the
//! snapshot timer's step, the markers another cluster's replicator brought (read by this
//! cluster's replicator back to it, as Pulsar's), the UPDATE markers its subscriptions' acks
//! make due, and writing markers into the ledger. The server runs the timer and the I/O.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use pulsar_rs_ledger::Position;

use super::Topic;
use crate::error::BrokerError;
use crate::replicated_subscriptions::controller::SnapshotTimes;
use crate::replicated_subscriptions::markers::{self, Marker};
use crate::subscription::Subscription;

impl Topic {
    /// Notes that the topic holds (or will hold) markers its dispatchers must hide.
    pub fn note_marker(&self) {
        // Relaxed: see the field.
        self.may_hold_markers.store(true, Ordering::Relaxed);
    }

    /// The replicated subscriptions.
    #[must_use]
    pub fn replicated_subscriptions(&self) -> Vec<Arc<Subscription>> {
        self.subscriptions()
            .into_iter()
            .filter(|s| s.is_replicated())
            .collect()
    }

    /// Appends a marker entry; returns its position once durable.
    ///
    /// # Errors
    /// Storage failures.
    pub async fn write_marker(&self, entry: Bytes) -> Result<Position, BrokerError> {
        self.note_marker();
        Ok(Arc::clone(&self.ledger).add_entry(entry).await?)
    }

    /// The snapshot timer's step for `remotes` (all connected or not): the markers to write —
    /// an UPDATE for each replicated subscription whose mark-delete passed a snapshot, then a
    /// REQUEST when a new snapshot starts. Nothing while no subscription is replicated.
    #[must_use]
    pub fn replicated_subscriptions_tick(
        &self,
        remotes: &[String],
        all_connected: bool,
    ) -> Vec<Bytes> {
        let subs = self.replicated_subscriptions();
        if subs.is_empty() || !self.config.enable_replicated_subscriptions {
            return Vec::new();
        }
        let now = self.ledger.clock().now_ms();
        let mut out: Vec<Bytes> = subs
            .iter()
            .filter_map(|s| {
                s.take_due_snapshot()
                    .map(|snap| markers::update(&s.name, &snap.clusters, now))
            })
            .collect();
        // Relaxed: a statistic-grade timestamp (see the field).
        let last_data = self.last_publish_ms.load(Ordering::Relaxed);
        if let Some(request) = self
            .snapshots
            .lock()
            .tick(now, last_data, remotes, all_connected)
        {
            out.push(request);
        }
        out
    }

    /// A replicated-subscription marker at `at` in this topic's ledger that came from another
    /// cluster (the one the calling replicator sends to): a REQUEST is answered, a RESPONSE
    /// advances a snapshot, an UPDATE moves this cluster's subscription (created, replicated,
    /// if missing, as Pulsar's). Returns the marker to write, if any. Blocking: may open a
    /// cursor.
    ///
    /// # Errors
    /// Storage failures creating the subscription.
    pub fn received_marker(
        &self,
        at: Position,
        marker_type: i32,
        payload: &[u8],
    ) -> Result<Option<Bytes>, BrokerError> {
        if !self.config.enable_replicated_subscriptions {
            return Ok(None);
        }
        self.note_marker();
        let now = self.ledger.clock().now_ms();
        match markers::decode(marker_type, payload) {
            Some(Marker::Request(r)) => Ok(self.snapshots.lock().on_request(at, &r, now)),
            Some(Marker::Response(r)) => Ok(self.snapshots.lock().on_response(at, &r, now)),
            Some(Marker::Update(u)) => {
                let local = &self.config.cluster_name;
                let Some(here) = u.clusters.iter().rev().find(|c| &c.cluster == local) else {
                    return Ok(None);
                };
                let position = markers::position(&here.message_id);
                let sub = match self.subscription(&u.subscription_name) {
                    Some(s) => s,
                    None => {
                        let s = self.durable_subscription(&u.subscription_name, true, true)?;
                        s.set_replicated(true);
                        s
                    }
                };
                if sub.durable {
                    sub.apply_replicated_update(position);
                }
                Ok(None)
            }
            Some(Marker::Snapshot(_)) | None => Ok(None),
        }
    }

    /// Snapshots in progress, snapshots dropped unanswered and snapshots completed with their
    /// durations (Pulsar's `pulsar_replicated_subscriptions_pending_snapshots`,
    /// `timedout_snapshots` and `snapshot_ms`).
    #[must_use]
    pub fn replicated_subscription_snapshots(&self) -> (usize, u64, SnapshotTimes) {
        let c = self.snapshots.lock();
        (c.pending(), c.timed_out(), c.completed())
    }
}
