//! Splitting an owned bundle, as Pulsar's `NamespaceService.splitAndOwnBundle` does it with the
//! modular load manager: the children's locks are taken first, then the namespace's new
//! boundaries are written, to its `LocalPolicies` (`/admin/local-policies/{tenant}/{ns}`, by
//! version: the authoritative split) and to its `Policies.bundles`, then the parent's lock is
//! removed. The topics stay loaded: they are in the children now, owned by this broker. A lost
//! compare-and-set (another split, a policy change) is tried again, as Pulsar retries. Other
//! brokers learn the new boundaries from the `Policies` change their watch reports
//! ([`ClusterMember::forget_boundaries`]).

use serde_json::{json, Value};

use crate::bundles::{bundles_data, parse_boundaries, Bundle};
use crate::documents::{BundlesOf, NamespaceEphemeralData};
use crate::error::{ClusterError, Result};
use crate::paths;
use crate::split::split_boundaries;
use crate::store::StoreError;

use super::ClusterMember;

/// How many times a split whose write lost a race is tried (Pulsar's `BUNDLE_SPLIT_RETRY_LIMIT`).
const ATTEMPTS: usize = 7;

impl ClusterMember {
    /// Forgets a namespace's cached boundaries: its `Policies` changed (a split elsewhere); the
    /// next lookup reads them again.
    pub fn forget_boundaries(&self, ns: &str) {
        self.boundaries.write().remove(ns);
    }

    /// Splits `bundle`, owned by this broker, at `points` (inside it); the children, all owned
    /// by this broker. No point: nothing changes.
    ///
    /// # Errors
    /// [`ClusterError::BundleUnloading`] when this broker does not own `bundle` (any more) or it
    /// is no longer one of the namespace's bundles; store failures; [`StoreError::BadVersion`]
    /// after [`ATTEMPTS`] lost races.
    pub async fn split_bundle(&self, bundle: &Bundle, points: &[u32]) -> Result<Vec<Bundle>> {
        if points.is_empty() {
            return Ok(vec![bundle.clone()]);
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.split_once(bundle, points).await {
                Err(ClusterError::Store(StoreError::BadVersion { .. })) if attempt < ATTEMPTS => {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                r => return r,
            }
        }
    }

    async fn split_once(&self, bundle: &Bundle, points: &[u32]) -> Result<Vec<Bundle>> {
        let not_here = || ClusterError::BundleUnloading(bundle.name());
        if !self.owned.read().contains_key(&bundle.name()) {
            return Err(not_here());
        }
        let ns = bundle.namespace.as_str();
        let store = self.store();
        self.forget_boundaries(ns);
        let current = self.boundaries(ns).await?;
        let at = current
            .windows(2)
            .any(|w| w[0] == bundle.lo && w[1] == bundle.hi);
        if !at {
            return Err(not_here());
        }
        let (all, children) = split_boundaries(&current, bundle, points);
        // The children's locks first: no other broker can take them while the split is written.
        let me = NamespaceEphemeralData::from(&self.config.urls);
        let mut locked = Vec::new();
        let mut taken = Ok(());
        for child in &children {
            taken = store
                .create_json(&paths::ownership(&child.name()), &me, true)
                .await;
            if taken.is_err() {
                break;
            }
            locked.push(child);
        }
        if let Err(e) = taken
            .map_err(ClusterError::from)
            .and(self.write_boundaries(ns, &all).await)
        {
            for child in locked {
                let _ = store.delete(&paths::ownership(&child.name()), None).await;
            }
            return Err(e);
        }
        {
            let mut owned = self.owned.write();
            owned.remove(&bundle.name());
            for child in &children {
                owned.insert(child.name(), child.clone());
            }
        }
        self.boundaries.write().insert(ns.to_owned(), all);
        self.owned_changed.notify_one();
        let removed = store.delete(&paths::ownership(&bundle.name()), None).await;
        tracing::info!(bundle = %bundle.name(), children = ?children.iter().map(Bundle::range).collect::<Vec<_>>(), "bundle split");
        removed?;
        Ok(children)
    }

    /// Writes `boundaries` as the namespace's split: its `LocalPolicies` (created when missing,
    /// its other fields kept) and its `Policies.bundles`, each by compare-and-set.
    async fn write_boundaries(&self, ns: &str, boundaries: &[u32]) -> Result<()> {
        let (store, configuration) = (self.store(), self.configuration_store());
        let data =
            serde_json::to_value(bundles_data(boundaries)).map_err(|e| StoreError::Corrupt {
                path: paths::local_policies(ns),
                reason: e.to_string(),
            })?;
        let local = paths::local_policies(ns);
        match store.get_json::<Value>(&local).await? {
            Some((mut doc, stat)) => {
                // The split it was made from must still be the one recorded.
                if let Some(b) = serde_json::from_value::<BundlesOf>(doc.clone())
                    .ok()
                    .and_then(|d| d.bundles)
                    .filter(|b| !b.boundaries.is_empty())
                {
                    let recorded = parse_boundaries(&b)?;
                    if recorded.iter().any(|r| !boundaries.contains(r)) {
                        return Err(StoreError::BadVersion { path: local }.into());
                    }
                }
                doc["bundles"] = data.clone();
                store.set_json(&local, &doc, Some(stat.version)).await?;
            }
            None => {
                let doc = json!({
                    "bundles": data,
                    "bookieAffinityGroup": null,
                    "namespaceAntiAffinityGroup": null,
                    "migrated": false,
                });
                store.create_json(&local, &doc, false).await?;
            }
        }
        let policies = paths::namespace_policies(ns);
        if let Some((mut doc, stat)) = configuration.get_json::<Value>(&policies).await? {
            doc["bundles"] = data;
            configuration
                .set_json(&policies, &doc, Some(stat.version))
                .await?;
        }
        Ok(())
    }
}
