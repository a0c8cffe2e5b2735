//! The one error type of the metadata-store client.

/// What can go wrong talking to the metadata store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The metadata store failed (connection loss, an unexpected answer).
    #[error("metadata store: {path}: {reason}")]
    Metadata {
        /// The path the operation was on.
        path: String,
        /// The store's message.
        reason: String,
    },
    /// A compare-and-set lost: the record changed (or was created) meanwhile.
    #[error("metadata store: {path}: bad version")]
    BadVersion {
        /// The record's path.
        path: String,
    },
    /// The session with the metadata store is gone: nothing this broker owned is its any more.
    #[error("metadata store session lost")]
    SessionLost,
    /// A record that does not parse as the document Pulsar keeps there.
    #[error("metadata store: {path}: not a valid document: {reason}")]
    Corrupt {
        /// The record's path.
        path: String,
        /// The parser's message.
        reason: String,
    },
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, StoreError>;
