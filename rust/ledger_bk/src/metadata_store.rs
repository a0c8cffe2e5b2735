//! [`MetadataVersionedStore`]: the seam's versioned records in the cluster's metadata store
//! (ZooKeeper or etcd, as `metadataStoreUrl` names it: `pulsar_rs_metadata_store::MetadataStore`), the
//! version being the record's (ZooKeeper's `Stat.version`; etcd's version minus one, as Pulsar
//! counts), so a write made with a stale version fails with `BadVersion` exactly as Pulsar's
//! metadata store reports it. On ZooKeeper parent znodes are created (empty) on first write, as
//! Pulsar's `ZKMetadataStore` does; etcd keeps no parents.

use std::time::Duration;

use pulsar_rs_ledger::seam::{BoxFut, Version, Versioned, VersionedStore};
use pulsar_rs_ledger::{LedgerError, Result};
use pulsar_rs_metadata_store::{MetadataStore, StoreError};

/// The session timeout of the managed ledgers' store session (it owns no ephemeral record).
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Records in the metadata store.
pub struct MetadataVersionedStore {
    /// The session; cheap to clone and safe to share.
    store: MetadataStore,
}

/// A metadata-store failure as the seam reports it: a lost compare-and-set keeps its meaning,
/// anything else is a backend failure carrying the store's message.
fn from_store(e: StoreError) -> LedgerError {
    match e {
        StoreError::BadVersion { path } => LedgerError::BadVersion { key: path },
        e => LedgerError::Backend {
            context: e.to_string(),
        },
    }
}

fn version(v: Version, path: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| LedgerError::BadVersion {
        key: path.to_owned(),
    })
}

impl MetadataVersionedStore {
    /// Connects to the store `url` names (`zk:host:port[,host:port]`, a bare `host:port`, or
    /// `etcd:http://host:port[,...]`).
    ///
    /// # Errors
    /// The store cannot be reached.
    pub async fn connect(url: &str) -> Result<MetadataVersionedStore> {
        let store = MetadataStore::connect(url, SESSION_TIMEOUT)
            .await
            .map_err(from_store)?;
        Ok(MetadataVersionedStore { store })
    }
}

impl VersionedStore for MetadataVersionedStore {
    fn get(&self, path: &str) -> BoxFut<'_, Result<Option<Versioned>>> {
        let path = path.to_owned();
        Box::pin(async move {
            Ok(self
                .store
                .get(&path)
                .await
                .map_err(from_store)?
                .map(|(data, stat)| (data, Version::from(stat.version))))
        })
    }

    fn put(
        &self,
        path: &str,
        value: Vec<u8>,
        expected: Option<Version>,
    ) -> BoxFut<'_, Result<Version>> {
        let path = path.to_owned();
        Box::pin(async move {
            if let Some(v) = expected {
                let new = self
                    .store
                    .set(&path, &value, Some(version(v, &path)?))
                    .await
                    .map_err(from_store)?;
                return Ok(Version::from(new));
            }
            self.store
                .create(&path, &value, false)
                .await
                .map_err(from_store)?;
            // A new record's version is 0 in both stores.
            Ok(0)
        })
    }

    fn delete(&self, path: &str, expected: Option<Version>) -> BoxFut<'_, Result<()>> {
        let path = path.to_owned();
        Box::pin(async move {
            let v = expected.map(|v| version(v, &path)).transpose()?;
            self.store.delete(&path, v).await.map_err(from_store)
        })
    }

    fn children(&self, path: &str) -> BoxFut<'_, Result<Vec<String>>> {
        let path = path.to_owned();
        Box::pin(async move { self.store.children(&path).await.map_err(from_store) })
    }
}
