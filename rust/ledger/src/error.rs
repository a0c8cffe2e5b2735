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
    #[error("corrupt entry {entry_id} of ledger {ledger_id} (journal segment {segment} offset {offset}): {reason}")]
    CorruptEntry {
        /// Ledger of the damaged entry (as far as it is known).
        ledger_id: i64,
        /// Entry id of the damaged entry (as far as it is known).
        entry_id: i64,
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
    /// A write was attempted on a data directory opened read-only (export, inspection).
    #[error("{what} cannot be changed: the data directory is open read-only")]
    ReadOnly {
        /// What the write was for.
        what: String,
    },
    /// A name is not acceptable (empty, too long, control characters).
    #[error("invalid name {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// Another owner took the managed ledger over: its ledger was fenced by a recovery open, or
    /// a metadata compare-and-set found a newer version (Pulsar's `ManagedLedgerFencedException`).
    #[error("{what} is fenced (another owner took it over)")]
    Fenced {
        /// What was fenced.
        what: String,
    },
    /// The managed ledger was terminated (Pulsar's `ManagedLedgerTerminatedException`): it
    /// takes no more appends, for good.
    #[error("{what} is terminated: no more entries can be added")]
    Terminated {
        /// What was terminated.
        what: String,
    },
    /// A compare-and-set on a metadata record found another version (Pulsar's `BadVersion`).
    #[error("metadata {key} changed under us (version conflict)")]
    BadVersion {
        /// The record's key or path.
        key: String,
    },
    /// A ledger-storage backend (BookKeeper, ZooKeeper) failed; the message says how.
    #[error("ledger storage: {context}")]
    Backend {
        /// What failed, with the backend's own message.
        context: String,
    },
    /// Tiered storage (an offload, or a read of an offloaded ledger) failed; the message says how.
    #[error("tiered storage: {context}")]
    Offload {
        /// What failed, with the store's own message.
        context: String,
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

    /// A copy of this error for fanning one failure out to many waiters. The variant (and so
    /// the Python exception it maps to) is kept; only an I/O source is re-created from its kind
    /// and message.
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
            LedgerError::CorruptEntry {
                ledger_id,
                entry_id,
                segment,
                offset,
                reason,
            } => LedgerError::CorruptEntry {
                ledger_id: *ledger_id,
                entry_id: *entry_id,
                segment: *segment,
                offset: *offset,
                reason: reason.clone(),
            },
            LedgerError::CorruptMetadata { key, reason } => LedgerError::CorruptMetadata {
                key: key.clone(),
                reason: reason.clone(),
            },
            LedgerError::InvalidConfig { key, reason } => LedgerError::InvalidConfig {
                key,
                reason: reason.clone(),
            },
            LedgerError::InvalidPosition { ledger, position } => LedgerError::InvalidPosition {
                ledger: ledger.clone(),
                position: *position,
            },
            LedgerError::Closed { what } => LedgerError::Closed { what: what.clone() },
            LedgerError::Terminated { what } => LedgerError::Terminated { what: what.clone() },
            LedgerError::Locked { path } => LedgerError::Locked { path: path.clone() },
            LedgerError::ReadOnly { what } => LedgerError::ReadOnly { what: what.clone() },
            LedgerError::InvalidName { name, reason } => LedgerError::InvalidName {
                name: name.clone(),
                reason,
            },
            LedgerError::Fenced { what } => LedgerError::Fenced { what: what.clone() },
            LedgerError::BadVersion { key } => LedgerError::BadVersion { key: key.clone() },
            LedgerError::Backend { context } => LedgerError::Backend {
                context: context.clone(),
            },
            LedgerError::Offload { context } => LedgerError::Offload {
                context: context.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keeps_the_variant() {
        let all = [
            LedgerError::io("x", io::Error::other("boom")),
            LedgerError::io("x", io::Error::from(io::ErrorKind::StorageFull)),
            LedgerError::CorruptEntry {
                ledger_id: 3,
                entry_id: 4,
                segment: 1,
                offset: 64,
                reason: "crc".into(),
            },
            LedgerError::CorruptMetadata {
                key: "k".into(),
                reason: "r".into(),
            },
            LedgerError::Closed { what: "w".into() },
            LedgerError::Locked { path: "p".into() },
            LedgerError::ReadOnly { what: "w".into() },
            LedgerError::InvalidName {
                name: "n".into(),
                reason: "r",
            },
        ];
        for e in &all {
            let d = e.duplicate();
            assert_eq!(
                std::mem::discriminant(e),
                std::mem::discriminant(&d),
                "{e} became {d}"
            );
            assert_eq!(e.to_string(), d.to_string());
        }
    }
}
