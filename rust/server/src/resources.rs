//! Clusters and tenants, Pulsar's top-level admin objects, cached in memory and persisted in
//! the metadata store (namespaces are the namespace policy records of the broker's
//! `PolicyStore`). [`bootstrap`] does what Pulsar standalone does on its first start and
//! registers the namespaces a data directory of an earlier version already uses.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::RwLock;
use pulsar_rs_broker::policies::Policies;
use pulsar_rs_broker::{metadata_keys, BrokerError, BrokerService};
use pulsar_rs_ledger::metastore::MetaStore;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::standalone_defaults::{Kind, StandaloneDefaults};

/// Pulsar's `TenantInfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantInfo {
    /// Roles that administer the tenant and its namespaces.
    #[serde(default)]
    pub admin_roles: BTreeSet<String>,
    /// Clusters the tenant may use.
    #[serde(default)]
    pub allowed_clusters: BTreeSet<String>,
}

/// Pulsar's `ClusterData`, kept as the JSON object given (service URLs and the rest).
pub type ClusterData = Map<String, Value>;

/// `data` with the fields Pulsar's `ClusterData` has by default (its TLS settings) where it
/// leaves them out, as Pulsar's JSON of a deserialized `ClusterData` carries them.
#[must_use]
pub fn with_pulsar_defaults(data: ClusterData) -> ClusterData {
    let mut full = match pulsar_rs_cluster::setup::cluster_data(None, None, None, None) {
        Value::Object(d) => d,
        _ => ClusterData::new(),
    };
    full.extend(data);
    full
}

/// Clusters and tenants.
pub struct Resources {
    /// Where records persist.
    meta: Arc<dyn MetaStore>,
    /// Cluster name → data. Read by admin calls; written by admin calls and [`bootstrap`]. The
    /// lock is held for the map change and its synchronous store write, never across `.await`.
    clusters: RwLock<BTreeMap<String, ClusterData>>,
    /// Tenant name → info; read on every authorization of a tenant admin, same discipline.
    tenants: RwLock<BTreeMap<String, TenantInfo>>,
    /// What the standalone start created itself (a user's create may replace it).
    pub defaults: StandaloneDefaults,
}

fn corrupt(key: &str, e: &serde_json::Error) -> BrokerError {
    BrokerError::Ledger(pulsar_rs_ledger::LedgerError::CorruptMetadata {
        key: key.to_owned(),
        reason: e.to_string(),
    })
}

fn load<T: serde::de::DeserializeOwned>(
    meta: &dyn MetaStore,
    prefix: &str,
) -> Result<BTreeMap<String, T>, BrokerError> {
    let mut out = BTreeMap::new();
    for key in meta.list(prefix)? {
        let Some(raw) = meta.get(&key)? else { continue };
        let v = serde_json::from_slice(&raw).map_err(|e| corrupt(&key, &e))?;
        out.insert(metadata_keys::name_of(&key), v);
    }
    Ok(out)
}

/// Whether a cluster, tenant or namespace name is valid (Pulsar's `NamedEntity`).
#[must_use]
pub fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'=' | b':' | b'.'))
}

impl Resources {
    /// Loads every cluster and tenant.
    ///
    /// # Errors
    /// Metadata I/O or corrupt records.
    pub fn open(meta: Arc<dyn MetaStore>) -> Result<Self, BrokerError> {
        Ok(Resources {
            clusters: RwLock::new(load(meta.as_ref(), metadata_keys::CLUSTERS)?),
            tenants: RwLock::new(load(meta.as_ref(), metadata_keys::TENANTS)?),
            defaults: StandaloneDefaults::open(Arc::clone(&meta))?,
            meta,
        })
    }

    /// Cluster names, sorted.
    #[must_use]
    pub fn clusters(&self) -> Vec<String> {
        self.clusters.read().keys().cloned().collect()
    }

    /// A cluster's data.
    #[must_use]
    pub fn cluster(&self, name: &str) -> Option<ClusterData> {
        self.clusters.read().get(name).cloned()
    }

    /// Creates (`create`) or updates a cluster; `Ok(false)` when creation finds it present
    /// (and not an untouched standalone default, which it replaces) or an update finds it
    /// missing.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn put_cluster(
        &self,
        name: &str,
        data: ClusterData,
        create: bool,
    ) -> Result<bool, BrokerError> {
        // Write lock: the check, the store write and the map change happen together.
        let mut map = self.clusters.write();
        let replaces = create
            && map.get(name).is_some_and(|cur| {
                self.defaults
                    .untouched(Kind::Cluster, name, &Value::Object(cur.clone()))
            });
        if map.contains_key(name) == create && !replaces {
            return Ok(false);
        }
        let raw = serde_json::to_vec(&data).unwrap_or_default();
        self.meta.put(&metadata_keys::cluster(name), &raw)?;
        map.insert(name.to_owned(), data);
        if replaces {
            self.defaults.forget(Kind::Cluster, name)?;
        }
        Ok(true)
    }

    /// Deletes a cluster; `Ok(false)` when missing.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn delete_cluster(&self, name: &str) -> Result<bool, BrokerError> {
        let mut map = self.clusters.write();
        if !map.contains_key(name) {
            return Ok(false);
        }
        self.meta.delete(&metadata_keys::cluster(name))?;
        map.remove(name);
        Ok(true)
    }

    /// Installs a cluster's record as the configuration store holds it (created or changed
    /// through any broker, of this cluster or, with a shared configuration store, another);
    /// whether anything changed.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn install_cluster(&self, name: &str, data: ClusterData) -> Result<bool, BrokerError> {
        // Write lock: the comparison, the store write and the map change happen together.
        let mut map = self.clusters.write();
        if map.get(name) == Some(&data) {
            return Ok(false);
        }
        // The record this broker's first start wrote, as the store has it now (the cluster's
        // first broker wrote it there): still the default a user's create may replace.
        let default = map.get(name).is_some_and(|cur| {
            self.defaults
                .untouched(Kind::Cluster, name, &Value::Object(cur.clone()))
        });
        let raw = serde_json::to_vec(&data).unwrap_or_default();
        self.meta.put(&metadata_keys::cluster(name), &raw)?;
        if default {
            self.defaults
                .remember(Kind::Cluster, name, Value::Object(data.clone()))?;
        }
        map.insert(name.to_owned(), data);
        Ok(true)
    }

    /// Tenant names, sorted.
    #[must_use]
    pub fn tenants(&self) -> Vec<String> {
        self.tenants.read().keys().cloned().collect()
    }

    /// A tenant's info.
    #[must_use]
    pub fn tenant(&self, name: &str) -> Option<TenantInfo> {
        self.tenants.read().get(name).cloned()
    }

    /// Creates (`create`) or updates a tenant; `Ok(false)` when creation finds it present
    /// (and not an untouched standalone default, which it replaces) or an update finds it
    /// missing.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn put_tenant(
        &self,
        name: &str,
        info: TenantInfo,
        create: bool,
    ) -> Result<bool, BrokerError> {
        // Write lock: the check, the store write and the map change happen together.
        let mut map = self.tenants.write();
        let replaces = create
            && map.get(name).is_some_and(|cur| {
                let cur = serde_json::to_value(cur).unwrap_or_default();
                self.defaults.untouched(Kind::Tenant, name, &cur)
            });
        if map.contains_key(name) == create && !replaces {
            return Ok(false);
        }
        let raw = serde_json::to_vec(&info).unwrap_or_default();
        self.meta.put(&metadata_keys::tenant(name), &raw)?;
        map.insert(name.to_owned(), info);
        if replaces {
            self.defaults.forget(Kind::Tenant, name)?;
        }
        Ok(true)
    }

    /// Deletes a tenant; `Ok(false)` when missing.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn delete_tenant(&self, name: &str) -> Result<bool, BrokerError> {
        self.delete_tenant_record(name)
    }

    /// Installs a tenant as the cluster's metadata store holds it (created or changed through
    /// any broker of the cluster); whether anything changed.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn install_tenant(&self, name: &str, info: TenantInfo) -> Result<bool, BrokerError> {
        // Write lock: the comparison, the store write and the map change happen together.
        let mut map = self.tenants.write();
        if map.get(name) == Some(&info) {
            return Ok(false);
        }
        self.meta.put(
            &metadata_keys::tenant(name),
            &serde_json::to_vec(&info).unwrap_or_default(),
        )?;
        map.insert(name.to_owned(), info);
        Ok(true)
    }

    fn delete_tenant_record(&self, name: &str) -> Result<bool, BrokerError> {
        let mut map = self.tenants.write();
        if !map.contains_key(name) {
            return Ok(false);
        }
        self.meta.delete(&metadata_keys::tenant(name))?;
        map.remove(name);
        Ok(true)
    }
}

/// URLs a cluster record of this broker names.
pub struct BrokerUrls {
    /// `http://host:port` of the admin API.
    pub web: String,
    /// `https://...` when TLS is on.
    pub web_tls: Option<String>,
    /// `pulsar://host:port`.
    pub service: String,
    /// `pulsar+ssl://...` when TLS is on.
    pub service_tls: Option<String>,
}

/// First start as Pulsar standalone: cluster `clusterName`, tenants `public` and `pulsar`
/// (admin roles = superusers), namespaces `public/default` and `pulsar/system`, each noted in
/// [`StandaloneDefaults`] (a user's create of them succeeds, as against Pulsar). Then every
/// namespace that holds topics or an older version's policy or permission records is
/// registered (with its tenant), so existing data directories keep working.
///
/// # Errors
/// Metadata I/O.
pub fn bootstrap(
    res: &Resources,
    service: &BrokerService,
    urls: &BrokerUrls,
) -> Result<(), BrokerError> {
    let cfg = &service.config;
    let cluster = cfg.cluster_name.clone();
    let default_tenant = || TenantInfo {
        admin_roles: cfg.super_user_roles.iter().cloned().collect(),
        allowed_clusters: BTreeSet::from([cluster.clone()]),
    };
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    let mut first_start: BTreeSet<String> = BTreeSet::new();
    if res.clusters().is_empty() {
        let mut data = ClusterData::new();
        data.insert("serviceUrl".into(), Value::from(urls.web.clone()));
        data.insert("brokerServiceUrl".into(), Value::from(urls.service.clone()));
        if let Some(u) = &urls.web_tls {
            data.insert("serviceUrlTls".into(), Value::from(u.clone()));
        }
        if let Some(u) = &urls.service_tls {
            data.insert("brokerServiceUrlTls".into(), Value::from(u.clone()));
        }
        res.defaults
            .remember(Kind::Cluster, &cluster, Value::Object(data.clone()))?;
        res.put_cluster(&cluster, data, true)?;
        first_start.insert("public/default".into());
        first_start.insert("pulsar/system".into());
        wanted.extend(first_start.iter().cloned());
    }
    wanted.extend(service.namespaces_with_topics());
    for prefix in [
        metadata_keys::NAMESPACE_PERMISSIONS,
        metadata_keys::TOPIC_POLICIES,
        metadata_keys::TOPIC_PERMISSIONS,
    ] {
        for key in service.storage.meta().list(prefix)? {
            let name = metadata_keys::name_of(&key);
            let ns = pulsar_rs_broker::TopicName::parse(&name).map_or(name, |t| t.namespace_name());
            wanted.insert(ns);
        }
    }
    for ns in service.policies.namespaces() {
        wanted.insert(ns);
    }
    for ns in wanted {
        let Some((tenant, _)) = ns.split_once('/') else {
            continue;
        };
        let default = first_start.contains(&ns);
        if res.tenant(tenant).is_none() {
            let info = default_tenant();
            if default {
                let v = serde_json::to_value(&info).unwrap_or_default();
                res.defaults.remember(Kind::Tenant, tenant, v)?;
            }
            res.put_tenant(tenant, info, true)?;
        }
        if !service.policies.namespace_exists(&ns) {
            if default {
                let v = serde_json::to_value(Policies::default()).unwrap_or_default();
                res.defaults.remember(Kind::Namespace, &ns, v)?;
            }
            service
                .policies
                .create_namespace(&ns, Policies::default())?;
        }
    }
    Ok(())
}
