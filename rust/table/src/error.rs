//! The table crate's error type.

use pulsar_rs_broker::BrokerError;
use pulsar_rs_ledger::LedgerError;

/// Why a commit to a topic's table failed.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum TableError {
    /// Reading the topic's entries failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// Reading the topic's schema failed.
    #[error(transparent)]
    Broker(#[from] BrokerError),
    /// The catalog, a metadata file or a data file failed.
    #[error("iceberg: {0}")]
    Iceberg(#[from] iceberg::Error),
    /// Building an Arrow batch failed (a bug: columns of unequal length or wrong types).
    #[error("building the rows: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The settings or the policy are unusable (named).
    #[error("{0}")]
    Config(String),
    /// Another writer committed this partition's range first (a broker that lost the topic):
    /// nothing was committed by this one.
    #[error("the table moved under this commit: {0}")]
    Superseded(String),
    /// No table is configured on this broker (`icebergCatalogUri` unset).
    #[error("no Iceberg catalog is configured (icebergCatalogUri)")]
    NotConfigured,
    /// The committer thread is gone (the broker is stopping).
    #[error("the table committer stopped")]
    Stopped,
}
