//! The one error type of the cluster crate.

/// What can go wrong talking to the metadata store or deciding a lookup.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
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
    /// The namespace has no policies in the store (Pulsar answers a lookup with this).
    #[error("Namespace does not exist: {0}")]
    NamespaceNotFound(String),
    /// A topic or bundle name that does not parse.
    #[error("invalid name: {0}")]
    InvalidName(String),
    /// The bundle is being unloaded by its owner; a later lookup finds the next owner.
    #[error("Namespace bundle {0} is being unloaded")]
    BundleUnloading(String),
    /// No broker is registered to take the bundle.
    #[error("No broker was available to own {0}")]
    NoBroker(String),
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, ClusterError>;
