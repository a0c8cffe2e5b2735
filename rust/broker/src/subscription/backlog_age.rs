//! PIP-492 (Pulsar 5.0): the publish time of a durable subscription's oldest unacknowledged
//! message, for `pulsar_subscription_storage_backlog_age_seconds` (when
//! `exposeSubscriptionBacklogAgeInPrometheus`, off by default as Pulsar's).
//!
//! As Pulsar's `PersistentTopic.updateOldPositionInfo`, the value is best effort: it is computed
//! by the periodic backlog quota check (off the Tokio runtime: it may read one entry), kept with
//! the mark-delete position it was read at, and read again only when that position moved; a
//! subscription without backlog has none. `/metrics` only reads what is kept.

use parking_lot::Mutex;
use pulsar_rs_ledger::{ManagedLedger, Position};

use super::Subscription;
use crate::error::BrokerError;

/// The publish time (ms) of the first entry after `mark_delete`, if the ledger has one:
/// the oldest message a cursor at that mark-delete position has not acknowledged.
///
/// # Errors
/// Storage failures reading the entry (blocking I/O: call it off the runtime).
pub(crate) fn first_publish_time_after(
    ledger: &ManagedLedger,
    mark_delete: Position,
) -> Result<Option<u64>, BrokerError> {
    let last = ledger.last_confirmed();
    let p = ledger.next_valid_position(mark_delete);
    if p > last {
        return Ok(None);
    }
    let entries = ledger.read_entries(p, 1, u64::MAX, p)?;
    Ok(entries
        .first()
        .and_then(|e| pulsar_rs_proto::parse_stored_entry(&e.data).ok())
        .map(|(md, _)| md.publish_time))
}

/// A subscription's kept backlog age.
#[derive(Debug, Default)]
pub struct BacklogAge {
    /// (mark-delete position, publish time of the oldest unacknowledged message) at the last
    /// check; none without backlog or before the first check. Written by the backlog quota
    /// check, read by `/metrics` and the stats; a short lock, never held across I/O.
    kept: Mutex<Option<(Position, u64)>>,
}

impl BacklogAge {
    /// The kept publish time (ms), if any.
    #[must_use]
    pub fn publish_time(&self) -> Option<u64> {
        // Short lock: a copy out.
        self.kept.lock().map(|(_, t)| t)
    }
}

impl Subscription {
    /// Recomputes the kept backlog age (PIP-492): none for a reader's subscription or one
    /// without backlog; unchanged while the mark-delete position has not moved; else the
    /// publish time of the entry after it, read from storage.
    ///
    /// # Errors
    /// Storage failures reading that entry (blocking I/O: call it off the runtime).
    pub fn update_backlog_age(&self) -> Result<(), BrokerError> {
        if !self.durable || self.cursor.backlog() == 0 {
            // Short lock: cleared.
            *self.backlog_age.kept.lock() = None;
            return Ok(());
        }
        let mdp = self.cursor.mark_delete_position();
        // Short lock, released before the read below.
        if matches!(*self.backlog_age.kept.lock(), Some((p, _)) if p == mdp) {
            return Ok(());
        }
        let found = first_publish_time_after(self.cursor.ledger(), mdp)?;
        // Short lock: the new value published.
        *self.backlog_age.kept.lock() = found.map(|t| (mdp, t));
        Ok(())
    }

    /// The age in seconds of the oldest unacknowledged message at `now_ms`, as last kept;
    /// none when unknown (Pulsar's -1: no sample).
    #[must_use]
    pub fn backlog_age_seconds(&self, now_ms: u64) -> Option<u64> {
        self.backlog_age
            .publish_time()
            .map(|t| now_ms.saturating_sub(t) / 1000)
    }
}
