//! Cluster records (`ClusterData` at `/admin/clusters/{name}`) in the configuration store, as
//! Pulsar's `ClusterResources` keeps them: read one, create or replace one, delete one, list
//! them, and watch them for changes made through other brokers, of this cluster or, with a
//! shared configuration store, of the others.

use serde_json::Value;

use crate::error::Result;
use crate::paths;
use crate::setup::GLOBAL_CLUSTER;
use crate::store::{StoreError, StoreWatch};

use super::ClusterMember;

impl ClusterMember {
    /// A cluster's `ClusterData` (`None`: no such cluster).
    ///
    /// # Errors
    /// Store failures; a record that is not JSON.
    pub async fn cluster_document(&self, name: &str) -> Result<Option<Value>> {
        let path = paths::cluster(name);
        Ok(self
            .store_for(&path)
            .get_json::<Value>(&path)
            .await?
            .map(|(d, _)| d))
    }

    /// Replaces a cluster's `ClusterData`, creating it when missing.
    ///
    /// # Errors
    /// Store failures.
    pub async fn put_cluster_document(&self, name: &str, data: &Value) -> Result<()> {
        let path = paths::cluster(name);
        let store = self.store_for(&path);
        if store.create_json_if_absent(&path, data).await? {
            return Ok(());
        }
        store.set_json(&path, data, None).await?;
        Ok(())
    }

    /// Deletes a cluster's record (one already gone is not an error).
    ///
    /// # Errors
    /// Store failures (a record that still has children among them).
    pub async fn delete_cluster_document(&self, name: &str) -> Result<()> {
        let path = paths::cluster(name);
        let store = self.store_for(&path);
        if store.get(&path).await?.is_none() {
            return Ok(());
        }
        match store.delete(&path, None).await {
            Err(StoreError::Metadata { .. }) if store.get(&path).await?.is_none() => Ok(()),
            r => Ok(r?),
        }
    }

    /// Every cluster with a record, without Pulsar's `global` marker.
    ///
    /// # Errors
    /// Store failures.
    pub async fn cluster_names(&self) -> Result<Vec<String>> {
        let store = self.store_for(paths::CLUSTERS_ROOT);
        let mut out = store.children(paths::CLUSTERS_ROOT).await?;
        out.retain(|c| c != GLOBAL_CLUSTER);
        out.sort();
        Ok(out)
    }

    /// Watches every cluster record in the current session (a new session needs a new watch:
    /// [`StoreWatch::next`] answers `Resync` once this one ended).
    ///
    /// # Errors
    /// Store failures.
    pub async fn watch_clusters(&self) -> Result<StoreWatch> {
        Ok(self
            .store_for(paths::CLUSTERS_ROOT)
            .watch(paths::CLUSTERS_ROOT)
            .await?)
    }
}
