//! The export crate's error type.

use pulsar_rs_broker::BrokerError;
use pulsar_rs_ledger::LedgerError;

/// Export failures.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum ExportError {
    /// Reading storage failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// Loading a topic failed.
    #[error(transparent)]
    Broker(#[from] BrokerError),
    /// Building an Arrow batch failed (a bug: columns of unequal length or wrong types).
    #[error("building Arrow table {table}: {source}")]
    Arrow {
        /// The table being built.
        table: &'static str,
        /// The cause.
        #[source]
        source: arrow_schema::ArrowError,
    },
    /// The progress callback asked to stop.
    #[error("export cancelled")]
    Cancelled,
}
