//! Transactions, in Pulsar's three rooms: the coordinator's metadata store and its log
//! ([`coordinator`], [`log`]), the per-topic transaction buffer ([`buffer`]) and the
//! per-subscription pending acks ([`pending_ack`], durable in [`pending_ack_store`]). The fan-out
//! from the coordinator to topics and subscriptions is a broker-service concern (`crate::service::transactions`), through
//! [`buffer_client`] for topics another broker of a cluster owns.

pub mod buffer;
pub mod buffer_client;
pub mod coordinator;
pub mod log;
pub mod pending_ack;
pub mod pending_ack_store;

use std::fmt;

/// The partitioned topic whose partitions place the coordinators (TC i = partition i).
pub const COORDINATOR_ASSIGN_TOPIC: &str =
    "persistent://pulsar/system/transaction_coordinator_assign";

/// `MarkerType.TXN_COMMIT` (rust/proto/proto/PulsarMarkers.proto).
pub const MARKER_TXN_COMMIT: i32 = pulsar_rs_proto::pb::MarkerType::TxnCommit as i32;
/// `MarkerType.TXN_ABORT`.
pub const MARKER_TXN_ABORT: i32 = pulsar_rs_proto::pb::MarkerType::TxnAbort as i32;
/// The producer name of marker entries.
pub const MARKER_PRODUCER: &str = "pulsar.txn.marker";

/// A transaction id: `most` is the coordinator id, `least` the coordinator's sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxnId {
    /// Most significant bits: the coordinator (TC) id.
    pub most: u64,
    /// Least significant bits: the sequence within the coordinator.
    pub least: u64,
}

impl TxnId {
    /// Builds an id from its two halves.
    #[must_use]
    pub const fn new(most: u64, least: u64) -> Self {
        TxnId { most, least }
    }
}

/// Those of `ids` from coordinator `most` with a sequence at or below `least` (what a low
/// watermark covers), in sequence order.
pub fn at_or_below<'a>(ids: impl Iterator<Item = &'a TxnId>, most: u64, least: u64) -> Vec<TxnId> {
    let mut found: Vec<TxnId> = ids
        .filter(|t| t.most == most && t.least <= least)
        .copied()
        .collect();
    found.sort_unstable_by_key(|t| t.least);
    found
}

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Pulsar's TxnID.toString.
        write!(f, "({},{})", self.most, self.least)
    }
}

/// How a transaction ends (proto's `TxnAction` on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnAction {
    /// Make its messages visible and its acks effective.
    Commit,
    /// Discard its messages and acks.
    Abort,
}

impl TxnAction {
    /// From the wire value; anything but ABORT commits, as absent means COMMIT.
    #[must_use]
    pub fn from_wire(v: Option<i32>) -> Self {
        use pulsar_rs_proto::pb::TxnAction as Wire;
        match v.and_then(|v| Wire::try_from(v).ok()) {
            Some(Wire::Abort) => TxnAction::Abort,
            Some(Wire::Commit) | None => TxnAction::Commit,
        }
    }

    /// The marker type written for it.
    #[must_use]
    pub fn marker_type(self) -> i32 {
        match self {
            TxnAction::Commit => MARKER_TXN_COMMIT,
            TxnAction::Abort => MARKER_TXN_ABORT,
        }
    }
}

/// The coordinator's transaction states, numbered as Pulsar's `TxnStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnStatus {
    /// Accepting partitions, subscriptions, messages and acks.
    Open = 0,
    /// Commit decided; markers and acks being applied.
    Committing = 1,
    /// Committed everywhere.
    Committed = 2,
    /// Abort decided; markers and acks being applied.
    Aborting = 3,
    /// Aborted everywhere.
    Aborted = 4,
}

impl TxnStatus {
    /// From the number stored in the log.
    #[must_use]
    pub fn from_i32(v: i32) -> Option<Self> {
        Some(match v {
            0 => TxnStatus::Open,
            1 => TxnStatus::Committing,
            2 => TxnStatus::Committed,
            3 => TxnStatus::Aborting,
            4 => TxnStatus::Aborted,
            _ => return None,
        })
    }

    /// Pulsar's name, for messages and the admin API.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            TxnStatus::Open => "OPEN",
            TxnStatus::Committing => "COMMITTING",
            TxnStatus::Committed => "COMMITTED",
            TxnStatus::Aborting => "ABORTING",
            TxnStatus::Aborted => "ABORTED",
        }
    }
}

#[cfg(test)]
mod tests;
