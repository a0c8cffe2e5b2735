//! Pulsar's paths in its metadata store (`pulsar-broker-common`'s resources, the load manager and
//! the ownership cache), each written once here.

use pulsar_rs_ledger::seam::paths::url_encode;

/// Registered brokers, one ephemeral child per broker id (`host:webServicePort`).
pub const BROKERS: &str = "/loadbalance/brokers";
/// The leader broker's ephemeral record.
pub const LEADER: &str = "/loadbalance/leader";
/// The bookies' rack placement record (`BookieRackAffinityMapping`, `{}` in a new cluster).
pub const BOOKIE_RACK_INFO: &str = "/bookies";
/// Root of bundle ownership: `/namespace/{tenant}/{ns}/{0xLOW_0xHIGH}`.
pub const OWNERSHIP_ROOT: &str = "/namespace";

/// A registered broker's record.
#[must_use]
pub fn broker(broker_id: &str) -> String {
    format!("{BROKERS}/{broker_id}")
}

/// Root of the clusters' `ClusterData` records.
pub const CLUSTERS_ROOT: &str = "/admin/clusters";

/// A cluster's `ClusterData`.
#[must_use]
pub fn cluster(name: &str) -> String {
    format!("{CLUSTERS_ROOT}/{name}")
}

/// The cluster whose `ClusterData` lives at `path`, if it is such a record (not one of its
/// children: failure domains, isolation policies).
#[must_use]
pub fn cluster_of(path: &str) -> Option<&str> {
    let name = path.strip_prefix(CLUSTERS_ROOT)?.strip_prefix('/')?;
    (!name.is_empty() && !name.contains('/')).then_some(name)
}

/// Root of the tenants' `TenantInfo` (`/admin/policies/{tenant}`) and the namespaces'
/// `Policies` (`/admin/policies/{tenant}/{ns}`).
pub const POLICIES_ROOT: &str = "/admin/policies";

/// A tenant's `TenantInfo`.
#[must_use]
pub fn tenant(name: &str) -> String {
    format!("{POLICIES_ROOT}/{name}")
}

/// A namespace's `Policies` (`ns` is `tenant/ns`).
#[must_use]
pub fn namespace_policies(ns: &str) -> String {
    format!("{POLICIES_ROOT}/{ns}")
}

/// The tenant whose `TenantInfo` lives at `path`, if it is such a record.
#[must_use]
pub fn tenant_of(path: &str) -> Option<&str> {
    let name = path.strip_prefix(POLICIES_ROOT)?.strip_prefix('/')?;
    (!name.is_empty() && !name.contains('/')).then_some(name)
}

/// The namespace (`tenant/ns`) whose `Policies` live at `path`, if it is such a record (not a
/// tenant's, nor a v1 namespace's `tenant/cluster/ns`).
#[must_use]
pub fn namespace_of_policies(path: &str) -> Option<&str> {
    let ns = path.strip_prefix(POLICIES_ROOT)?.strip_prefix('/')?;
    let mut parts = ns.split('/');
    let valid = |p: Option<&str>| p.is_some_and(|p| !p.is_empty());
    (valid(parts.next()) && valid(parts.next()) && parts.next().is_none()).then_some(ns)
}

/// A namespace's `LocalPolicies`, where the current bundle split is kept.
#[must_use]
pub fn local_policies(ns: &str) -> String {
    format!("/admin/local-policies/{ns}")
}

/// A partitioned topic's `PartitionedTopicMetadata`: `tenant/ns/domain/local`, the local name
/// URL-encoded as Pulsar's `Codec.encode`.
#[must_use]
pub fn partitioned_topic(tenant: &str, ns: &str, domain: &str, local: &str) -> String {
    format!(
        "/admin/partitioned-topics/{tenant}/{ns}/{domain}/{}",
        url_encode(local)
    )
}

/// The ownership lock of a bundle (`bundle` is `tenant/ns/0xLOW_0xHIGH`).
#[must_use]
pub fn ownership(bundle: &str) -> String {
    format!("{OWNERSHIP_ROOT}/{bundle}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_namespace_records_name_a_namespace() {
        let ns = namespace_of_policies;
        assert_eq!(ns(&namespace_policies("t/n")), Some("t/n"));
        assert_eq!(ns(&tenant("t")), None);
        assert_eq!(ns("/admin/policies/t/c/n"), None);
        assert_eq!(ns("/admin/policies"), None);
        assert_eq!(ns("/admin/policies/t/"), None);
        assert_eq!(ns("/admin/local-policies/t/n"), None);
        assert_eq!(tenant_of(&tenant("t")), Some("t"));
        assert_eq!(tenant_of(&namespace_policies("t/n")), None);
        assert_eq!(tenant_of("/admin/policies/"), None);
        assert_eq!(cluster_of(&cluster("east")), Some("east"));
        assert_eq!(cluster_of("/admin/clusters/east/failureDomain/d"), None);
        assert_eq!(cluster_of("/admin/clusters/"), None);
    }

    #[test]
    fn paths_are_pulsars() {
        assert_eq!(
            broker("127.0.0.1:8080"),
            "/loadbalance/brokers/127.0.0.1:8080"
        );
        assert_eq!(
            ownership("public/default/0x00000000_0x10000000"),
            "/namespace/public/default/0x00000000_0x10000000"
        );
        assert_eq!(
            partitioned_topic("public", "default", "persistent", "a b"),
            "/admin/partitioned-topics/public/default/persistent/a+b"
        );
        assert_eq!(local_policies("t/n"), "/admin/local-policies/t/n");
    }
}
