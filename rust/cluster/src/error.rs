//! The one error type of the cluster crate (the metadata store's failures carried as they are).

use crate::store::StoreError;

/// What can go wrong talking to the metadata store or deciding a lookup.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The metadata store failed, or a compare-and-set on it lost (see [`StoreError`]).
    #[error(transparent)]
    Store(#[from] StoreError),
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
