//! The server crate's error type, and the one place broker errors become wire `ServerError`s.

use pulsar_rs_broker::policies::backlog_quota::RetentionPolicy;
use pulsar_rs_broker::BrokerError;
use pulsar_rs_ledger::LedgerError;
use pulsar_rs_proto::{ProtocolError, ServerError as Wire};

/// Server-level failures.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum ServerError {
    /// Socket or file I/O.
    #[error("I/O error while {context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Broker failure.
    #[error(transparent)]
    Broker(#[from] BrokerError),
    /// A peer broke the protocol; its connection is closed.
    #[error("protocol error: {0}")]
    Protocol(#[from] ProtocolError),
    /// A peer sent a command that is not valid now.
    #[error("{0}")]
    BadRequest(String),
    /// A client failed authentication; its connection is closed.
    #[error("authentication failed: {0}")]
    Authentication(String),
    /// The cluster's metadata store failed or holds a record that does not parse.
    #[error(transparent)]
    Metadata(#[from] pulsar_rs_cluster::ClusterError),
}

impl ServerError {
    /// Wraps an I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ServerError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Maps a broker error to Pulsar's `ServerError` code (as the Java broker does).
#[must_use]
pub fn wire_code(e: &BrokerError) -> Wire {
    match e {
        BrokerError::TopicNotFound(_) => Wire::TopicNotFound,
        BrokerError::SubscriptionNotFound { .. } => Wire::SubscriptionNotFound,
        BrokerError::ConsumerBusy(_) => Wire::ConsumerBusy,
        BrokerError::ProducerBusy(_) => Wire::ProducerBusy,
        BrokerError::ProducerFenced(_) => Wire::ProducerFenced,
        BrokerError::InvalidTopicName { .. } => Wire::InvalidTopicName,
        BrokerError::ConsumerAssign(_) => Wire::ConsumerAssignError,
        BrokerError::ShuttingDown | BrokerError::NotServed(_) => Wire::ServiceNotReady,
        BrokerError::CoordinatorNotFound(_) => Wire::TransactionCoordinatorNotFound,
        BrokerError::InvalidTxnStatus(_) => Wire::InvalidTxnStatus,
        BrokerError::TransactionNotFound(_) => Wire::TransactionNotFound,
        BrokerError::TransactionConflict(_) => Wire::TransactionConflict,
        BrokerError::IncompatibleSchema(_) => Wire::IncompatibleSchema,
        BrokerError::QuotaExceeded(RetentionPolicy::ProducerException) => {
            Wire::ProducerBlockedQuotaExceededException
        }
        BrokerError::QuotaExceeded(_) => Wire::ProducerBlockedQuotaExceededError,
        BrokerError::Ledger(LedgerError::InvalidPosition { .. }) => Wire::NotAllowedError,
        BrokerError::TopicTerminated(_) | BrokerError::Ledger(LedgerError::Terminated { .. }) => {
            Wire::TopicTerminatedError
        }
        BrokerError::Ledger(_) => Wire::PersistenceError,
        _ => Wire::NotAllowedError,
    }
}
