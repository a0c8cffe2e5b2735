//! The ledger crate's one error type.

use std::io;

use crate::Position;

/// Everything that can go wrong in the storage layer.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum LedgerError {
    /// An I/O call failed; `context` says what we were doing.
    #[error("I/O error while {context}: {source}")]
    Io {
        /// What the storage was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The disk (or quota) is full: the write was not acknowledged and can be retried later.
    #[error("no space left on device while {context}")]
    NoSpace {
        /// What the storage was doing.
        context: String,
    },
    /// Stored entry bytes failed their checksum or framing check.
    #[error("corrupt entry in ledger {ledger_id} at journal segment {segment} offset {offset}: {reason}")]
    CorruptEntry {
        /// Ledger of the damaged entry (as far as it is known).
        ledger_id: i64,
        /// Journal segment file holding it.
        segment: u32,
        /// Byte offset of the record inside the segment.
        offset: u64,
        /// What check failed.
        reason: String,
    },
    /// A metadata record (ledger list, cursor state) failed its checksum or could not be parsed.
    #[error("corrupt metadata record {key:?}: {reason}")]
    CorruptMetadata {
        /// The metadata key.
        key: String,
        /// What check failed.
        reason: String,
    },
    /// A setting is out of range.
    #[error("invalid setting {key}: {reason}")]
    InvalidConfig {
        /// Pulsar's name of the setting.
        key: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// A position does not name an entry of this managed ledger.
    #[error("invalid position {position} for managed ledger {ledger}")]
    InvalidPosition {
        /// The managed ledger's name.
        ledger: String,
        /// The rejected position.
        position: Position,
    },
    /// The managed ledger, cursor or storage has been closed.
    #[error("{what} is closed")]
    Closed {
        /// What was closed.
        what: String,
    },
    /// Another process (or another `Storage` in this one) has the data directory open.
    #[error("data directory {path} is in use by another broker or storage instance")]
    Locked {
        /// The data directory.
        path: String,
    },
    /// A name is not acceptable (empty, too long, control characters).
    #[error("invalid name {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Why.
        reason: &'static str,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = LedgerError> = std::result::Result<T, E>;

impl LedgerError {
    /// Wraps an I/O error, turning "disk full" into [`LedgerError::NoSpace`].
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        if source.kind() == io::ErrorKind::StorageFull || source.raw_os_error() == Some(28) {
            LedgerError::NoSpace {
                context: context.into(),
            }
        } else {
            LedgerError::Io {
                context: context.into(),
                source,
            }
        }
    }

    /// A cheap copy for fanning one failure out to many waiters.
    #[must_use]
    pub fn duplicate(&self) -> Self {
        match self {
            LedgerError::Io { context, source } => LedgerError::Io {
                context: context.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            LedgerError::NoSpace { context } => LedgerError::NoSpace {
                context: context.clone(),
            },
            other => LedgerError::Io {
                context: other.to_string(),
                source: io::Error::other("journal failure"),
            },
        }
    }
}
