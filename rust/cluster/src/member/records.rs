//! The cluster's records a member reads and writes besides ownership: the cluster, tenant and
//! namespace records a first broker writes when they are missing, each namespace's bundle
//! boundaries (`LocalPolicies` first, then `Policies`, as `NamespaceBundleFactory`), and
//! partitioned-topic metadata, which any broker answers from the store.

use serde_json::json;

use crate::bundles::{bundles_data, equal_boundaries, parse_boundaries, topic_parts};
use crate::documents::{BundlesOf, PartitionedTopicMetadata};
use crate::error::{ClusterError, Result};
use crate::paths;
use crate::setup::{self, ClusterSetup, SETUP_BUNDLES};

use super::policies::Document;
use super::ClusterMember;

impl ClusterMember {
    /// Writes what `pulsar initialize-cluster-metadata` writes, where missing (as Pulsar's
    /// standalone does on its store): this broker's URLs as the cluster's, the tenants
    /// `public` and `pulsar`, the namespaces `public/default` and `pulsar/system` with
    /// [`SETUP_BUNDLES`] bundles and the bookies' rack record ([`setup::initialize`]; not the
    /// transaction coordinators' topic). Records that exist (another broker's, Apache Pulsar's
    /// set-up) are left as they are.
    pub(super) async fn initialize_cluster_metadata(&self) -> Result<()> {
        let stores = self.stores.read().clone();
        let u = &self.config.urls;
        let new_cluster = ClusterSetup {
            cluster: self.config.cluster.clone(),
            web_service_url: u.web.clone(),
            web_service_url_tls: u.web_tls.clone(),
            broker_service_url: Some(u.service.clone()),
            broker_service_url_tls: u.service_tls.clone(),
            default_namespace_bundles: SETUP_BUNDLES,
            // With transactions on, a broker records the coordinators' count it serves.
            transaction_coordinators: 0,
        };
        setup::initialize(&stores.local, stores.configuration(), &new_cluster, false).await
    }

    /// Creates a namespace's policies record with the bundle `boundaries` it was created with
    /// (`None`: `defaultNumberOfNamespaceBundles` equal bundles) and the policy fields `fields`
    /// (replicated to this cluster only unless they name the replication clusters) unless it
    /// exists.
    ///
    /// # Errors
    /// Store failures.
    pub async fn ensure_namespace(
        &self,
        ns: &str,
        fields: &Document,
        boundaries: Option<&[u32]>,
    ) -> Result<()> {
        let mut policies = fields.clone();
        let equal;
        let boundaries = match boundaries {
            Some(b) => b,
            None => {
                equal = equal_boundaries(self.config.default_bundles);
                &equal
            }
        };
        policies.insert("bundles".into(), json!(bundles_data(boundaries)));
        policies
            .entry("replication_clusters")
            .or_insert_with(|| json!([self.config.cluster]));
        self.configuration_store()
            .create_json_if_absent(&paths::namespace_policies(ns), &policies)
            .await?;
        Ok(())
    }

    /// Creates a tenant's `TenantInfo` record (`info`, Pulsar's JSON) unless it exists.
    ///
    /// # Errors
    /// Store failures.
    pub async fn ensure_tenant(&self, tenant: &str, info: &serde_json::Value) -> Result<()> {
        self.configuration_store()
            .create_json_if_absent(&paths::tenant(tenant), info)
            .await?;
        Ok(())
    }

    /// Deletes a namespace's policies record (and forgets its bundles).
    ///
    /// # Errors
    /// Store failures.
    pub async fn delete_namespace(&self, ns: &str) -> Result<()> {
        self.boundaries.write().remove(ns);
        Ok(self
            .configuration_store()
            .delete(&paths::namespace_policies(ns), None)
            .await?)
    }

    /// A namespace's bundle boundaries (cached after the first read).
    ///
    /// # Errors
    /// [`ClusterError::NamespaceNotFound`] when neither record exists; store failures.
    pub async fn boundaries(&self, ns: &str) -> Result<Vec<u32>> {
        if let Some(b) = self.boundaries.read().get(ns) {
            return Ok(b.clone());
        }
        let mut found = None;
        for path in [paths::local_policies(ns), paths::namespace_policies(ns)] {
            let store = self.store_for(&path);
            if let Some((p, _)) = store.get_json::<BundlesOf>(&path).await? {
                if let Some(b) = p.bundles.filter(|b| !b.boundaries.is_empty()) {
                    found = Some(parse_boundaries(&b)?);
                    break;
                }
                if path == paths::namespace_policies(ns) {
                    // A namespace without bundles in its policies: Pulsar's default split.
                    found = Some(equal_boundaries(self.config.default_bundles));
                }
            }
        }
        let b = found.ok_or_else(|| ClusterError::NamespaceNotFound(ns.to_owned()))?;
        self.boundaries.write().insert(ns.to_owned(), b.clone());
        Ok(b)
    }

    /// The partition count the store records for a topic (its base name); `None`: not a
    /// partitioned topic.
    ///
    /// # Errors
    /// Store failures; an invalid name.
    pub async fn partitions(&self, full_name: &str) -> Result<Option<u32>> {
        let p = topic_parts(full_name)?;
        let path = paths::partitioned_topic(p.tenant, p.namespace, p.domain, p.local);
        Ok(self
            .store_for(&path)
            .get_json::<PartitionedTopicMetadata>(&path)
            .await?
            .map(|(m, _)| m.partitions))
    }

    /// Records a partitioned topic with `n` partitions unless the store has it already; the
    /// count the store holds afterwards (another broker's, if it was first).
    ///
    /// # Errors
    /// Store failures; an invalid name.
    pub async fn record_partitions(&self, full_name: &str, n: u32) -> Result<u32> {
        let p = topic_parts(full_name)?;
        let path = paths::partitioned_topic(p.tenant, p.namespace, p.domain, p.local);
        let store = self.store_for(&path);
        let meta = PartitionedTopicMetadata::new(n);
        if store.create_json_if_absent(&path, &meta).await? {
            return Ok(n);
        }
        Ok(store
            .get_json::<PartitionedTopicMetadata>(&path)
            .await?
            .map_or(n, |(m, _)| m.partitions))
    }

    /// Raises a partitioned topic's recorded count to `n`.
    ///
    /// # Errors
    /// Store failures; an invalid name.
    pub async fn update_partitions(&self, full_name: &str, n: u32) -> Result<()> {
        let p = topic_parts(full_name)?;
        let path = paths::partitioned_topic(p.tenant, p.namespace, p.domain, p.local);
        let meta = PartitionedTopicMetadata::new(n);
        let store = self.store_for(&path);
        match store.get(&path).await? {
            Some((_, stat)) => {
                store.set_json(&path, &meta, Some(stat.version)).await?;
            }
            None => store.create_json(&path, &meta, false).await?,
        }
        Ok(())
    }

    /// Deletes a partitioned topic's record.
    ///
    /// # Errors
    /// Store failures; an invalid name.
    pub async fn delete_partitions(&self, full_name: &str) -> Result<()> {
        let p = topic_parts(full_name)?;
        let path = paths::partitioned_topic(p.tenant, p.namespace, p.domain, p.local);
        Ok(self.store_for(&path).delete(&path, None).await?)
    }
}
