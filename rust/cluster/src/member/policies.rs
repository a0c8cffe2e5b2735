//! Tenant and namespace documents in the store, as every broker of the cluster (Apache
//! Pulsar's too) reads and writes them: `TenantInfo` at `/admin/policies/{tenant}`, `Policies`
//! at `/admin/policies/{tenant}/{ns}`. Read one, change some of a namespace's fields by
//! compare-and-set (the others, another broker's, kept as they are), replace or delete a
//! tenant's, list them, and watch them all for changes made through other brokers.

use serde_json::{Map, Value};

use crate::error::{ClusterError, Result};
use crate::paths;
use crate::store::{StoreError, StoreWatch};

use super::ClusterMember;

/// Attempts of one field change against concurrent writers before it gives up.
const CAS_ATTEMPTS: usize = 16;

/// A namespace's `Policies` document, as JSON fields.
pub type Document = Map<String, Value>;

impl ClusterMember {
    /// A namespace's `Policies` document and its version in the store (`None`: no such
    /// namespace in the cluster). The version orders what a broker installs: a document read
    /// before a change it made itself is older than the one it wrote.
    ///
    /// # Errors
    /// Store failures; a record that is not a JSON object.
    pub async fn namespace_document(&self, ns: &str) -> Result<Option<(Document, i32)>> {
        Ok(self
            .configuration_store()
            .get_json::<Document>(&paths::namespace_policies(ns))
            .await?
            .map(|(d, stat)| (d, stat.version)))
    }

    /// The JSON record at `path`, without its version.
    async fn document<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<Option<T>> {
        Ok(self
            .configuration_store()
            .get_json::<T>(path)
            .await?
            .map(|(d, _)| d))
    }

    /// Sets the fields `set` and removes the fields `removed` of a namespace's document, by
    /// compare-and-set: fields changed meanwhile through another broker are kept. The document
    /// written, with its new version.
    ///
    /// # Errors
    /// [`ClusterError::NamespaceNotFound`]; [`StoreError::BadVersion`] after
    /// [`CAS_ATTEMPTS`] lost races; store failures.
    pub async fn update_namespace_document(
        &self,
        ns: &str,
        set: &Document,
        removed: &[String],
    ) -> Result<(Document, i32)> {
        let path = paths::namespace_policies(ns);
        let store = self.configuration_store();
        for _ in 0..CAS_ATTEMPTS {
            let Some((mut doc, stat)) = store.get_json::<Document>(&path).await? else {
                return Err(ClusterError::NamespaceNotFound(ns.to_owned()));
            };
            for (k, v) in set {
                doc.insert(k.clone(), v.clone());
            }
            for k in removed {
                doc.remove(k);
            }
            match store.set_json(&path, &doc, Some(stat.version)).await {
                Ok(version) => return Ok((doc, version)),
                Err(StoreError::BadVersion { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::BadVersion { path }.into())
    }

    /// A tenant's `TenantInfo` document (`None`: no such tenant in the cluster).
    ///
    /// # Errors
    /// Store failures; a record that is not JSON.
    pub async fn tenant_document(&self, tenant: &str) -> Result<Option<Value>> {
        self.document(&paths::tenant(tenant)).await
    }

    /// Replaces a tenant's `TenantInfo` (as Pulsar's `updateTenant` writes the whole record),
    /// creating it when missing.
    ///
    /// # Errors
    /// Store failures.
    pub async fn put_tenant_document(&self, tenant: &str, info: &Value) -> Result<()> {
        let path = paths::tenant(tenant);
        let store = self.configuration_store();
        match store.set_json(&path, info, None).await {
            Ok(_) => Ok(()),
            Err(StoreError::Metadata { .. }) if store.get(&path).await?.is_none() => {
                store.create_json_if_absent(&path, info).await?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes a tenant's record; one that still has namespaces in the store is refused with
    /// [`StoreError::Metadata`] (ZooKeeper's `NotEmpty`).
    ///
    /// # Errors
    /// As above; store failures.
    pub async fn delete_tenant(&self, tenant: &str) -> Result<()> {
        Ok(self
            .configuration_store()
            .delete(&paths::tenant(tenant), None)
            .await?)
    }

    /// Every tenant with a `TenantInfo` document.
    ///
    /// # Errors
    /// Store failures.
    pub async fn tenants(&self) -> Result<Vec<String>> {
        let mut out = self
            .configuration_store()
            .children(paths::POLICIES_ROOT)
            .await?;
        out.sort();
        Ok(out)
    }

    /// Every namespace (`tenant/ns`) with a `Policies` document.
    ///
    /// # Errors
    /// Store failures.
    pub async fn namespaces(&self) -> Result<Vec<String>> {
        let store = self.configuration_store();
        let mut out = Vec::new();
        for tenant in self.tenants().await? {
            for ns in store.children(&paths::tenant(&tenant)).await? {
                out.push(format!("{tenant}/{ns}"));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Watches every tenant and namespace document in the current session (a new session
    /// needs a new watch: [`StoreWatch::next`] answers `Resync` once this one ended).
    ///
    /// # Errors
    /// Store failures.
    pub async fn watch_policies(&self) -> Result<StoreWatch> {
        Ok(self
            .configuration_store()
            .watch(paths::POLICIES_ROOT)
            .await?)
    }
}
