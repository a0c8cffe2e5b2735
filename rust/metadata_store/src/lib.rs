//! The metadata-store client of pulsar_rs: Pulsar's metadata store as the cluster and the managed
//! ledgers on BookKeeper use it, with Pulsar's semantics whichever store is behind it: versioned reads, create-if-absent and compare-and-set writes, deletes, ephemeral
//! records tied to this broker's session, the children of a path, a watch on a subtree, and the
//! session's loss reported once. `metadataStoreUrl` picks the store as Pulsar's
//! `MetadataStoreFactory` does: `etcd:http://host:port[,http://host:port]` is etcd
//! ([`etcd`]), `zk:host:port[,host:port][/chroot]` or a bare `host:port` ZooKeeper
//! ([`zookeeper`]). Versions count from 0 at creation on both (etcd's own count starts at 1:
//! Pulsar subtracts one, and so does [`etcd`]). The JSON helpers are written once, here.
//!
//! Modules, each importing only those before it (and this one's records): `error`; `zookeeper`;
//! `etcd`.

pub mod error;
pub mod etcd;
pub mod zookeeper;

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

pub use error::{Result, StoreError};

pub use etcd::EtcdMetadataStore;
pub use zookeeper::ZkMetadataStore;

/// The scheme Pulsar's `metadataStoreUrl` gives an etcd store.
pub const ETCD_SCHEME: &str = "etcd:";

/// The scheme Pulsar's `metadataStoreUrl` gives a ZooKeeper store (optional).
pub const ZOOKEEPER_SCHEME: &str = "zk:";

/// What a read returns besides the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordStat {
    /// The record's version, for compare-and-set (0 at creation).
    pub version: i32,
    /// The session that owns an ephemeral record (0: persistent): ZooKeeper's session id,
    /// etcd's lease id.
    pub ephemeral_owner: i64,
}

/// What a watch on a subtree reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreEvent {
    /// A record below the watched path was created, changed or deleted (its path).
    Changed(String),
    /// The connection was lost or re-established: events may have been missed in between
    /// (ZOOKEEPER-4698; a broken etcd watch stream), so a follower must read everything again.
    /// After the session (or the etcd stream) is over nothing more comes: the follower watches
    /// again.
    Resync,
}

/// A watch on one subtree of the store, as Pulsar's metadata cache follows the store.
pub enum StoreWatch {
    /// ZooKeeper's persistent recursive watch.
    ZooKeeper(zookeeper::ZkWatch),
    /// An etcd watch stream over the subtree's key range (boxed: the stream is large).
    Etcd(Box<etcd::EtcdWatch>),
}

impl StoreWatch {
    /// The next change below the watched path.
    pub async fn next(&mut self) -> StoreEvent {
        match self {
            StoreWatch::ZooKeeper(w) => w.next().await,
            StoreWatch::Etcd(w) => w.next().await,
        }
    }
}

/// One session with the metadata store. Cheap to clone; every clone is the same session, which
/// ends when the last clone is dropped.
#[derive(Clone)]
pub enum MetadataStore {
    /// A ZooKeeper session.
    ZooKeeper(ZkMetadataStore),
    /// An etcd client and its lease.
    Etcd(EtcdMetadataStore),
}

/// Whether `url` (a `metadataStoreUrl`) names an etcd store.
#[must_use]
pub fn is_etcd(url: &str) -> bool {
    url.trim().starts_with(ETCD_SCHEME)
}

fn to_json<T: Serialize>(path: &str, value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| StoreError::Corrupt {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

impl MetadataStore {
    /// Opens a session with the store `url` names (see the module) that ends
    /// `session_timeout` after this broker stops answering.
    ///
    /// # Errors
    /// The store cannot be reached.
    pub async fn connect(url: &str, session_timeout: Duration) -> Result<MetadataStore> {
        let url = url.trim();
        if let Some(endpoints) = url.strip_prefix(ETCD_SCHEME) {
            return Ok(MetadataStore::Etcd(
                EtcdMetadataStore::connect(endpoints, session_timeout).await?,
            ));
        }
        let servers = url.strip_prefix(ZOOKEEPER_SCHEME).unwrap_or(url);
        Ok(MetadataStore::ZooKeeper(
            ZkMetadataStore::connect(servers, session_timeout).await?,
        ))
    }

    /// This session's id (an ephemeral record's `ephemeral_owner` when this session made it).
    #[must_use]
    pub fn session_id(&self) -> i64 {
        match self {
            MetadataStore::ZooKeeper(s) => s.session_id(),
            MetadataStore::Etcd(s) => s.session_id(),
        }
    }

    /// The session timeout in force.
    #[must_use]
    pub fn session_timeout(&self) -> Duration {
        match self {
            MetadataStore::ZooKeeper(s) => s.session_timeout(),
            MetadataStore::Etcd(s) => s.session_timeout(),
        }
    }

    /// Resolves once the session is lost (expired, closed, or unreachable for longer than its
    /// timeout): this broker must then act as if everything ephemeral it made is gone.
    pub async fn lost(&self) {
        match self {
            MetadataStore::ZooKeeper(s) => s.lost().await,
            MetadataStore::Etcd(s) => s.lost().await,
        }
    }

    /// Reads a record.
    ///
    /// # Errors
    /// Store failures.
    pub async fn get(&self, path: &str) -> Result<Option<(Vec<u8>, RecordStat)>> {
        match self {
            MetadataStore::ZooKeeper(s) => s.get(path).await,
            MetadataStore::Etcd(s) => s.get(path).await,
        }
    }

    /// Reads a JSON record.
    ///
    /// # Errors
    /// Store failures; [`StoreError::Corrupt`] for a record that does not parse.
    pub async fn get_json<T: DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<Option<(T, RecordStat)>> {
        let Some((raw, stat)) = self.get(path).await? else {
            return Ok(None);
        };
        let v = serde_json::from_slice(&raw).map_err(|e| StoreError::Corrupt {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(Some((v, stat)))
    }

    /// Creates a record that must not exist yet; `ephemeral` ties it to this session. An
    /// existing record is [`StoreError::BadVersion`].
    ///
    /// # Errors
    /// As above; store failures.
    pub async fn create(&self, path: &str, value: &[u8], ephemeral: bool) -> Result<()> {
        match self {
            MetadataStore::ZooKeeper(s) => s.create(path, value, ephemeral).await,
            MetadataStore::Etcd(s) => s.create(path, value, ephemeral).await,
        }
    }

    /// Creates a JSON record; see [`MetadataStore::create`].
    ///
    /// # Errors
    /// As [`MetadataStore::create`].
    pub async fn create_json<T: Serialize>(
        &self,
        path: &str,
        value: &T,
        ephemeral: bool,
    ) -> Result<()> {
        self.create(path, &to_json(path, value)?, ephemeral).await
    }

    /// Creates a persistent record unless one exists; whether it was created.
    ///
    /// # Errors
    /// Store failures.
    pub async fn create_if_absent(&self, path: &str, value: &[u8]) -> Result<bool> {
        match self.create(path, value, false).await {
            Ok(()) => Ok(true),
            Err(StoreError::BadVersion { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Creates a persistent JSON record unless one exists; whether it was created.
    ///
    /// # Errors
    /// Store failures.
    pub async fn create_json_if_absent<T: Serialize>(&self, path: &str, value: &T) -> Result<bool> {
        self.create_if_absent(path, &to_json(path, value)?).await
    }

    /// Replaces an existing record at version `expected` (`None`: whatever its version); its
    /// new version.
    ///
    /// # Errors
    /// [`StoreError::BadVersion`] when it changed meanwhile; a missing record
    /// ([`StoreError::Metadata`]); store failures.
    pub async fn set(&self, path: &str, value: &[u8], expected: Option<i32>) -> Result<i32> {
        match self {
            MetadataStore::ZooKeeper(s) => s.set(path, value, expected).await,
            MetadataStore::Etcd(s) => s.set(path, value, expected).await,
        }
    }

    /// Replaces a JSON record; see [`MetadataStore::set`].
    ///
    /// # Errors
    /// As [`MetadataStore::set`].
    pub async fn set_json<T: Serialize>(
        &self,
        path: &str,
        value: &T,
        expected: Option<i32>,
    ) -> Result<i32> {
        self.set(path, &to_json(path, value)?, expected).await
    }

    /// Deletes a record at version `expected` (`None`: whatever its version); a missing record
    /// is not an error.
    ///
    /// # Errors
    /// [`StoreError::BadVersion`]; store failures.
    pub async fn delete(&self, path: &str, expected: Option<i32>) -> Result<()> {
        match self {
            MetadataStore::ZooKeeper(s) => s.delete(path, expected).await,
            MetadataStore::Etcd(s) => s.delete(path, expected).await,
        }
    }

    /// Watches every record at or below `path` (created, changed, deleted) until the session
    /// ends.
    ///
    /// # Errors
    /// Store failures.
    pub async fn watch(&self, path: &str) -> Result<StoreWatch> {
        Ok(match self {
            MetadataStore::ZooKeeper(s) => StoreWatch::ZooKeeper(s.watch(path).await?),
            MetadataStore::Etcd(s) => StoreWatch::Etcd(Box::new(s.watch(path).await?)),
        })
    }

    /// Names of the records directly below `path`, sorted (none when there are none).
    ///
    /// # Errors
    /// Store failures.
    pub async fn children(&self, path: &str) -> Result<Vec<String>> {
        let mut names = match self {
            MetadataStore::ZooKeeper(s) => s.children(path).await?,
            MetadataStore::Etcd(s) => s.children(path).await?,
        };
        names.sort();
        Ok(names)
    }
}
