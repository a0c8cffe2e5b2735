//! Which of a broker's two metadata stores holds a path, as Pulsar's `PulsarResources` wires
//! its resources: the configuration (global) store (`configurationMetadataStoreUrl`, shared by
//! clusters that know each other) holds the cluster records (`ClusterResources`), the tenants
//! and namespace policies (`TenantResources`, `NamespaceResources`: both under
//! `/admin/policies`), the partitioned-topic metadata (`PartitionedTopicResources`) and the
//! resource groups; everything else (broker registrations, the leader, load reports, bundle
//! ownership, `LocalPolicies`, managed ledgers and cursors, the bookies' rack record) is in the
//! cluster's own store (`metadataStoreUrl`). Without a configuration store of its own, a broker
//! keeps both kinds in the one store, as Pulsar does when the two URLs are the same.

use crate::store::MetadataStore;

/// Roots of the paths Pulsar keeps in the configuration store.
pub const CONFIGURATION_ROOTS: [&str; 4] = [
    "/admin/clusters",
    "/admin/policies",
    "/admin/partitioned-topics",
    "/admin/resourcegroups",
];

/// Whether `path` is one Pulsar keeps in the configuration store (a root itself, or below one).
#[must_use]
pub fn in_configuration_store(path: &str) -> bool {
    CONFIGURATION_ROOTS.iter().any(|root| {
        path.strip_prefix(root)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// A broker's metadata stores: the cluster's own, and the configuration store when it is
/// another one.
#[derive(Clone)]
pub struct Stores {
    /// `metadataStoreUrl`'s session.
    pub local: MetadataStore,
    /// `configurationMetadataStoreUrl`'s session, when that names another store.
    pub configuration: Option<MetadataStore>,
}

impl Stores {
    /// The store holding `path`.
    #[must_use]
    pub fn for_path(&self, path: &str) -> &MetadataStore {
        if in_configuration_store(path) {
            self.configuration()
        } else {
            &self.local
        }
    }

    /// The store of the configuration paths.
    #[must_use]
    pub fn configuration(&self) -> &MetadataStore {
        self.configuration.as_ref().unwrap_or(&self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths;

    #[test]
    fn configuration_paths_are_pulsars_configuration_resources() {
        for shared in [
            paths::cluster("east"),
            "/admin/clusters".to_owned(),
            paths::POLICIES_ROOT.to_owned(),
            paths::tenant("t"),
            paths::namespace_policies("t/n"),
            paths::partitioned_topic("t", "n", "persistent", "a b"),
            "/admin/resourcegroups/rg".to_owned(),
        ] {
            assert!(in_configuration_store(&shared), "{shared}");
        }
        for local in [
            paths::broker("127.0.0.1:8080"),
            paths::LEADER.to_owned(),
            paths::BOOKIE_RACK_INFO.to_owned(),
            paths::ownership("t/n/0x00000000_0xffffffff"),
            paths::local_policies("t/n"),
            "/managed-ledgers/t/n/persistent/a".to_owned(),
            "/ledgers/available".to_owned(),
            "/admin/policies-elsewhere".to_owned(),
            "/admin".to_owned(),
        ] {
            assert!(!in_configuration_store(&local), "{local}");
        }
    }
}
