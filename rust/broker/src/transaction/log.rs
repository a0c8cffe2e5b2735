//! The records of a coordinator's transaction log (Pulsar's `TransactionMetadataEntry`, with
//! its field numbers): one managed-ledger entry per change of a transaction's metadata. A
//! change is acknowledged to the client only once its record is durable, and replaying the log
//! from its cursor's mark-delete position rebuilds every unfinished transaction.

use prost::Message;

/// What a record changes (`TransactionMetadataOp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogOp {
    /// A new transaction (with its timeout and start time).
    New = 0,
    /// Partitions joined the transaction.
    AddPartition = 1,
    /// Subscriptions joined the transaction.
    AddSubscription = 2,
    /// A status change (`expected_status` → `new_status`).
    Update = 3,
}

/// A subscription in a transaction (`TransactionMetadataEntry.subscriptions`).
#[derive(Clone, PartialEq, Eq, Hash, Message)]
pub struct LogSubscription {
    /// The (partition) topic.
    #[prost(string, tag = "1")]
    pub topic: String,
    /// The subscription name.
    #[prost(string, tag = "2")]
    pub subscription: String,
}

/// One record of the transaction log.
#[derive(Clone, PartialEq, Message)]
pub struct LogRecord {
    /// [`LogOp`] as a number.
    #[prost(int32, tag = "1")]
    pub metadata_op: i32,
    /// Transaction id, least significant bits.
    #[prost(uint64, tag = "2")]
    pub txnid_least_bits: u64,
    /// Transaction id, most significant bits (the coordinator id).
    #[prost(uint64, tag = "3")]
    pub txnid_most_bits: u64,
    /// Status the transaction had (Update).
    #[prost(int32, tag = "4")]
    pub expected_status: i32,
    /// Status it moves to (Update).
    #[prost(int32, tag = "5")]
    pub new_status: i32,
    /// Partitions added (AddPartition).
    #[prost(string, repeated, tag = "6")]
    pub partitions: Vec<String>,
    /// Subscriptions added (AddSubscription).
    #[prost(message, repeated, tag = "7")]
    pub subscriptions: Vec<LogSubscription>,
    /// Timeout in ms (New).
    #[prost(uint64, tag = "8")]
    pub timeout_ms: u64,
    /// Start time in ms since the epoch (New).
    #[prost(uint64, tag = "9")]
    pub start_time: u64,
    /// When the record was written, ms since the epoch.
    #[prost(uint64, tag = "10")]
    pub last_modification_time: u64,
    /// The highest sequence handed out so far (New), so ids are never reused after a restart.
    #[prost(uint64, tag = "11")]
    pub max_local_txn_id: u64,
    /// The role that opened the transaction (New), when the client authenticated: only it or
    /// a superuser may add to or end it (Pulsar's `verifyTxnOwnership`).
    #[prost(string, optional, tag = "12")]
    pub owner: Option<String>,
}

impl LogRecord {
    /// The record's op, if known.
    #[must_use]
    pub fn op(&self) -> Option<LogOp> {
        Some(match self.metadata_op {
            0 => LogOp::New,
            1 => LogOp::AddPartition,
            2 => LogOp::AddSubscription,
            3 => LogOp::Update,
            _ => return None,
        })
    }

    /// Encodes the record as a ledger entry.
    #[must_use]
    pub fn to_bytes(&self) -> bytes::Bytes {
        bytes::Bytes::from(self.encode_to_vec())
    }
}
