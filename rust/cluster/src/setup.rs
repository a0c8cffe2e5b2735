//! A new cluster's records, as `pulsar initialize-cluster-metadata` (`PulsarClusterMetadataSetup`)
//! writes them: the documents (Pulsar's `ClusterData`, `TenantInfo` and a new namespace's
//! `Policies`, with the fields Pulsar's JSON carries for their defaults) and [`initialize`], which
//! writes the cluster, the `global` marker, the tenants `public` and `pulsar`, the namespaces
//! `public/default` and `pulsar/system`, the transaction coordinators' partitioned topic and the
//! bookies' rack record. BookKeeper's own format (`/ledgers`) is the BookKeeper client's.
//!
//! Not written, as pulsar-rs runs neither: the DistributedLog namespace of Pulsar Functions
//! (`/pulsar/functions`) and BookKeeper's stream storage (`/stream`).

use serde_json::{json, Value};

use crate::bundles::{bundles_data, equal_boundaries};
use crate::documents::PartitionedTopicMetadata;
use crate::error::Result;
use crate::paths;
use crate::store::MetadataStore;

/// The tenant `public` and its namespace `public/default`.
pub const PUBLIC_TENANT: &str = "public";
/// The default namespace of the `public` tenant.
pub const DEFAULT_NAMESPACE: &str = "public/default";
/// The system tenant (`pulsar`) and its namespace.
pub const SYSTEM_TENANT: &str = "pulsar";
/// Pulsar's system namespace (transaction coordinators, ...).
pub const SYSTEM_NAMESPACE: &str = "pulsar/system";
/// The partitioned topic whose partitions assign transaction coordinators to brokers (in
/// [`SYSTEM_NAMESPACE`]).
pub const TRANSACTION_COORDINATOR_ASSIGN: &str = "transaction_coordinator_assign";
/// Bundles of the namespaces the set-up creates, unless told otherwise (Pulsar 4.0's
/// `DEFAULT_BUNDLE_NUMBER`).
pub const SETUP_BUNDLES: u32 = 16;
/// Transaction coordinators of a new cluster, unless told otherwise.
pub const SETUP_TRANSACTION_COORDINATORS: u32 = 16;
/// The cluster name Pulsar records as a marker beside the real ones.
pub const GLOBAL_CLUSTER: &str = "global";

/// What `initialize-cluster-metadata` is told (its flags).
#[derive(Debug, Clone)]
pub struct ClusterSetup {
    /// `-c`: the cluster's name.
    pub cluster: String,
    /// `-uw`: the cluster's web service URL.
    pub web_service_url: String,
    /// `-tw`.
    pub web_service_url_tls: Option<String>,
    /// `-ub`.
    pub broker_service_url: Option<String>,
    /// `-tb`.
    pub broker_service_url_tls: Option<String>,
    /// `-bn`: bundles of `public/default`.
    pub default_namespace_bundles: u32,
    /// `--initial-num-transaction-coordinators` (0: the coordinators' topic is not written).
    pub transaction_coordinators: u32,
}

/// Pulsar's `ClusterData` JSON for these URLs (a missing one is left out, as Pulsar leaves out
/// nulls), with the TLS defaults its builder fills in.
#[must_use]
pub fn cluster_data(
    web: Option<&str>,
    web_tls: Option<&str>,
    broker: Option<&str>,
    broker_tls: Option<&str>,
) -> Value {
    let mut doc = serde_json::Map::new();
    for (key, v) in [
        ("serviceUrl", web),
        ("serviceUrlTls", web_tls),
        ("brokerServiceUrl", broker),
        ("brokerServiceUrlTls", broker_tls),
    ] {
        if let Some(v) = v {
            doc.insert(key.into(), v.into());
        }
    }
    let defaults = json!({
        "brokerClientTlsEnabled": false,
        "tlsAllowInsecureConnection": false,
        "brokerClientTlsEnabledWithKeyStore": false,
        "brokerClientTlsTrustStoreType": "JKS",
        "brokerClientTlsKeyStoreType": "JKS",
        "brokerClientSslFactoryPlugin": "org.apache.pulsar.common.util.DefaultPulsarSslFactory",
    });
    if let Value::Object(d) = defaults {
        doc.extend(d);
    }
    Value::Object(doc)
}

/// Pulsar's `TenantInfo` JSON: no admin roles, `cluster` allowed.
#[must_use]
pub fn tenant_info(cluster: &str) -> Value {
    json!({"allowedClusters": [cluster], "adminRoles": []})
}

/// The `Policies` JSON of a namespace Pulsar's set-up creates: `bundles` equal bundles,
/// replicated to (and deletable from) `cluster`, every other field at Pulsar's default.
#[must_use]
pub fn new_namespace_policies(bundles: u32, cluster: &str) -> Value {
    json!({
        "auth_policies": {"namespace_auth": {}, "destination_auth": {}, "subscription_auth_roles": {}},
        "replication_clusters": [cluster],
        "allowed_clusters": [],
        "bundles": bundles_data(&equal_boundaries(bundles)),
        "backlog_quota_map": {},
        "clusterDispatchRate": {},
        "topicDispatchRate": {},
        "subscriptionDispatchRate": {},
        "replicatorDispatchRate": {},
        "clusterSubscribeRate": {},
        "publishMaxMessageRate": {},
        "latency_stats_sample_rate": {},
        "deleted": false,
        "encryption_required": false,
        "subscription_auth_mode": "None",
        "offload_threshold": -1,
        "offload_threshold_in_seconds": -1,
        "schema_compatibility_strategy": "UNDEFINED",
        "schema_validation_enforced": false,
        "subscription_types_enabled": [],
        "properties": {},
        "migrated": false,
        "clusterThatCanDeleteNamespace": cluster,
    })
}

/// Writes a new cluster's records as `initialize-cluster-metadata` does: the bookies' rack
/// record `/bookies` in the `local` store (when missing); in the `configuration` store the
/// cluster (when missing), the `global` marker, the tenants `public` and `pulsar` (created, or
/// `cluster` added to their allowed clusters), the namespaces `public/default` and
/// `pulsar/system` (created, or `cluster` added to their replication clusters), and the
/// transaction coordinators' partitioned topic (created, or raised to the count). Run again, it
/// changes nothing. With `update_existing` false (a broker joining a cluster) records that
/// exist are left as they are.
///
/// # Errors
/// Store failures; [`crate::StoreError::Corrupt`] for an existing record that does not parse;
/// [`crate::StoreError::BadVersion`] when another writer changed a record meanwhile.
pub async fn initialize(
    local: &MetadataStore,
    configuration: &MetadataStore,
    setup: &ClusterSetup,
    update_existing: bool,
) -> Result<()> {
    let c = setup.cluster.as_str();
    local
        .create_if_absent(paths::BOOKIE_RACK_INFO, b"{}")
        .await?;
    let data = cluster_data(
        Some(&setup.web_service_url),
        setup.web_service_url_tls.as_deref(),
        setup.broker_service_url.as_deref(),
        setup.broker_service_url_tls.as_deref(),
    );
    configuration
        .create_json_if_absent(&paths::cluster(c), &data)
        .await?;
    configuration
        .create_json_if_absent(
            &paths::cluster(GLOBAL_CLUSTER),
            &cluster_data(None, None, None, None),
        )
        .await?;
    for tenant in [PUBLIC_TENANT, SYSTEM_TENANT] {
        let path = paths::tenant(tenant);
        if !configuration
            .create_json_if_absent(&path, &tenant_info(c))
            .await?
            && update_existing
        {
            add_to_list(configuration, &path, "allowedClusters", c, &[]).await?;
        }
    }
    for (ns, bundles) in [
        (DEFAULT_NAMESPACE, setup.default_namespace_bundles),
        (SYSTEM_NAMESPACE, SETUP_BUNDLES),
    ] {
        let path = paths::namespace_policies(ns);
        if !configuration
            .create_json_if_absent(&path, &new_namespace_policies(bundles, c))
            .await?
            && update_existing
        {
            add_to_list(
                configuration,
                &path,
                "replication_clusters",
                c,
                DROPPED_ON_REWRITE,
            )
            .await?;
        }
    }
    if setup.transaction_coordinators == 0 {
        return Ok(());
    }
    let (tenant, ns) = SYSTEM_NAMESPACE.split_once('/').unwrap_or_default();
    let assign = paths::partitioned_topic(tenant, ns, "persistent", TRANSACTION_COORDINATOR_ASSIGN);
    let meta = PartitionedTopicMetadata::new(setup.transaction_coordinators);
    if !configuration.create_json_if_absent(&assign, &meta).await? && update_existing {
        if let Some((old, stat)) = configuration
            .get_json::<PartitionedTopicMetadata>(&assign)
            .await?
        {
            if old.partitions < meta.partitions {
                configuration
                    .set_json(&assign, &meta, Some(stat.version))
                    .await?;
            }
        }
    }
    Ok(())
}

/// Fields of a namespace's `Policies` that Pulsar writes when it creates the record but does
/// not read back, so a rewrite (the set-up adding a cluster) leaves them out (seen on 4.0.8).
const DROPPED_ON_REWRITE: &[&str] = &["clusterThatCanDeleteNamespace"];

/// Adds `item` to the list `field` of the JSON record at `path` unless it is there (Pulsar's
/// set-up run for a second cluster on a shared configuration store), leaving out the fields
/// `dropped` as Pulsar's rewrite does.
async fn add_to_list(
    store: &MetadataStore,
    path: &str,
    field: &str,
    item: &str,
    dropped: &[&str],
) -> Result<()> {
    let Some((mut doc, stat)) = store.get_json::<Value>(path).await? else {
        return Ok(());
    };
    let Some(obj) = doc.as_object_mut() else {
        return Ok(());
    };
    for f in dropped {
        obj.remove(*f);
    }
    let list = obj.entry(field).or_insert_with(|| json!([]));
    match list.as_array_mut() {
        Some(items) if !items.iter().any(|v| v.as_str() == Some(item)) => items.push(item.into()),
        _ => return Ok(()),
    }
    store.set_json(path, &doc, Some(stat.version)).await?;
    Ok(())
}
