//! Every key prefix of the metadata store, in one place. Records live under
//! `<prefix>/<escaped name>`; build keys with the functions here and list a prefix with
//! [`MetaStore::list`](pulsar_rs_ledger::MetaStore::list), naming each record with [`name_of`].
//!
//! The ledger crate owns its own keys (managed ledgers, cursors, the ledger id counter, all in
//! its `metastore` module); they are re-exported here so this module is the one list of what the
//! store holds. [`ALL_PREFIXES`] names every prefix, for Python (`pulsar_rs._native.METADATA_PREFIXES`).

use pulsar_rs_ledger::metastore::child_key;
pub use pulsar_rs_ledger::metastore::{
    cursor_key, cursor_prefix, key_name as name_of, managed_ledger_key, CURSORS_PREFIX,
    LEDGER_ID_COUNTER_KEY, MANAGED_LEDGERS_PREFIX, META_DIR, SEAM_RECORDS_PREFIX,
};

/// Partition count of a partitioned topic: `partitioned-topics/<topic>` → decimal count.
pub const PARTITIONED_TOPICS: &str = "partitioned-topics";
/// Schema versions of a topic: `schemas/<topic>` → JSON list.
pub const SCHEMAS: &str = "schemas";
/// Namespace policies: `policies/namespaces/<tenant/ns>` → JSON `Policies`; a namespace exists
/// exactly when its record does (as in Pulsar).
pub const NAMESPACE_POLICIES: &str = "policies/namespaces";
/// Topic policies: `policies/topics/<topic>` → JSON `Policies`.
pub const TOPIC_POLICIES: &str = "policies/topics";
/// Namespace permission grants: `auth/namespaces/<tenant/ns>` → JSON role → actions.
pub const NAMESPACE_PERMISSIONS: &str = "auth/namespaces";
/// Topic permission grants: `auth/topics/<topic>` → JSON role → actions.
pub const TOPIC_PERMISSIONS: &str = "auth/topics";

/// Clusters: `clusters/<name>` → JSON `ClusterData`.
pub const CLUSTERS: &str = "clusters";
/// Tenants: `tenants/<name>` → JSON `TenantInfo`.
pub const TENANTS: &str = "tenants";
/// What the standalone start wrote itself and nobody has changed since:
/// `standalone/defaults` → JSON `{"clusters": {..}, "tenants": {..}, "namespaces": {..}}`.
pub const STANDALONE_DEFAULTS: &str = "standalone/defaults";

/// The admin API's dynamic configuration values (one key; Pulsar's `/admin/configuration`).
pub const DYNAMIC_CONFIGURATION: &str = "admin/configuration";

/// Every key prefix (and the single keys) of the store, by a name: the table Python's
/// tests read (`pulsar_rs._native.METADATA_PREFIXES`) instead of writing the paths again.
pub const ALL_PREFIXES: &[(&str, &str)] = &[
    ("dynamic_configuration", DYNAMIC_CONFIGURATION),
    ("managed_ledgers", MANAGED_LEDGERS_PREFIX),
    ("cursors", CURSORS_PREFIX),
    ("seam_records", SEAM_RECORDS_PREFIX),
    ("ledger_id_counter", LEDGER_ID_COUNTER_KEY),
    ("partitioned_topics", PARTITIONED_TOPICS),
    ("schemas", SCHEMAS),
    ("namespace_policies", NAMESPACE_POLICIES),
    ("topic_policies", TOPIC_POLICIES),
    ("namespace_permissions", NAMESPACE_PERMISSIONS),
    ("topic_permissions", TOPIC_PERMISSIONS),
    ("clusters", CLUSTERS),
    ("tenants", TENANTS),
    ("standalone_defaults", STANDALONE_DEFAULTS),
];

/// Key of a cluster's data.
#[must_use]
pub fn cluster(name: &str) -> String {
    child_key(CLUSTERS, name)
}

/// Key of a tenant's info.
#[must_use]
pub fn tenant(name: &str) -> String {
    child_key(TENANTS, name)
}

/// Key of a partitioned topic's partition count (`topic` is the base name).
#[must_use]
pub fn partitioned_topic(topic: &str) -> String {
    child_key(PARTITIONED_TOPICS, topic)
}

/// Key of a topic's schemas (`topic` is the base name).
#[must_use]
pub fn schema(topic: &str) -> String {
    child_key(SCHEMAS, topic)
}

/// Key of a namespace's policies (`ns` is `tenant/ns`).
#[must_use]
pub fn namespace_policies(ns: &str) -> String {
    child_key(NAMESPACE_POLICIES, ns)
}

/// Key of a topic's policies (`topic` is the full name).
#[must_use]
pub fn topic_policies(topic: &str) -> String {
    child_key(TOPIC_POLICIES, topic)
}

/// Key of a namespace's permission grants.
#[must_use]
pub fn namespace_permissions(ns: &str) -> String {
    child_key(NAMESPACE_PERMISSIONS, ns)
}

/// Key of a topic's permission grants.
#[must_use]
pub fn topic_permissions(topic: &str) -> String {
    child_key(TOPIC_PERMISSIONS, topic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_escaped_and_named_back() {
        let k = namespace_policies("public/default");
        assert_eq!(k, "policies/namespaces/public%2Fdefault");
        assert_eq!(name_of(&k), "public/default");
        assert_eq!(
            partitioned_topic("persistent://a/b/c"),
            "partitioned-topics/persistent%3A%2F%2Fa%2Fb%2Fc"
        );
    }
}
