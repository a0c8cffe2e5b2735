//! `pulsar-rs initialize-cluster-metadata`: a new cluster's records in its metadata stores, as
//! `pulsar initialize-cluster-metadata` writes them: BookKeeper's format of `/ledgers` (unless an
//! existing BookKeeper is named) and the cluster's own records
//! ([`pulsar_rs_cluster::setup::initialize`]). Each store is ZooKeeper (`zk:host:port[/chroot]`;
//! a chroot is created first, as Pulsar creates it) or etcd (`etcd:http://host:port[,...]`; there
//! BookKeeper must exist already: pulsar-rs formats BookKeeper's metadata on ZooKeeper only).

use std::time::Duration;

use pulsar_rs_bookkeeper::zk_store::{ZkStore, DEFAULT_LEDGERS_ROOT};
use pulsar_rs_broker::BrokerConfig;
use pulsar_rs_cluster::store::ZkMetadataStore;
use pulsar_rs_cluster::{setup, ClusterError, ClusterSetup, MetadataStore, StoreError};
use pulsar_rs_ledger_bk::BkSettings;

use crate::error::ServerError;

/// What `initialize-cluster-metadata` is told besides the cluster's own records.
#[derive(Debug, Clone)]
pub struct InitializeClusterMetadata {
    /// The cluster's name, URLs and counts.
    pub setup: ClusterSetup,
    /// `-md`: the local metadata store (`zk:host:port[/chroot]` or `etcd:http://host:port`).
    pub metadata_store_url: String,
    /// `-cms`: the configuration metadata store (the same store, usually).
    pub configuration_metadata_store_url: String,
    /// `--existing-bk-metadata-service-uri`: BookKeeper is formatted already (not touched).
    pub existing_bookkeeper: bool,
    /// `--zookeeper-session-timeout-ms`.
    pub session_timeout: Duration,
}

/// Whether BookKeeper's metadata was formatted by this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Initialized {
    /// `/ledgers` was created (it did not exist and no existing BookKeeper was named).
    pub formatted_bookkeeper: bool,
}

/// The ZooKeeper servers (with the chroot) of a metadata store URL, read as a broker reads its
/// `metadataStoreUrl` (empty and the embedded stores name none; etcd, Oxia, ... are refused).
///
/// # Errors
/// [`ServerError::BadRequest`] for a store other than ZooKeeper.
pub fn zookeeper_of(url: &str) -> Result<String, ServerError> {
    let refused = || {
        ServerError::BadRequest(format!(
            "metadata store {url:?}: only ZooKeeper (zk:host:port[/chroot]) and etcd (etcd:http://host:port) are supported"
        ))
    };
    let config = BrokerConfig {
        metadata_store_url: url.to_owned(),
        ..BrokerConfig::default()
    };
    let servers = config.bookkeeper_zookeeper().ok_or_else(refused)?;
    BkSettings::new(&format!("zk:{servers}"))
        .metadata_servers()
        .map_err(|_| refused())
}

/// The store a `-md` / `-cms` URL names: etcd as given, ZooKeeper as [`zookeeper_of`] reads it.
///
/// # Errors
/// As [`zookeeper_of`].
fn store_of(url: &str) -> Result<Store, ServerError> {
    if pulsar_rs_cluster::store::is_etcd(url) {
        return Ok(Store::Etcd(url.trim().to_owned()));
    }
    zookeeper_of(url).map(Store::ZooKeeper)
}

/// A store named by the command's flags.
enum Store {
    /// ZooKeeper servers, with the chroot.
    ZooKeeper(String),
    /// An etcd `metadataStoreUrl`.
    Etcd(String),
}

impl Store {
    async fn connect(&self, timeout: Duration) -> Result<MetadataStore, ClusterError> {
        match self {
            Store::ZooKeeper(servers) => connect(servers, timeout).await,
            Store::Etcd(url) => Ok(MetadataStore::connect(url, timeout).await?),
        }
    }
}

/// Connects to `servers` (`host:port[/chroot]`), creating the chroot first.
async fn connect(servers: &str, timeout: Duration) -> Result<MetadataStore, ClusterError> {
    if let Some((hosts, chroot)) = servers.split_once('/') {
        let root = MetadataStore::ZooKeeper(ZkMetadataStore::connect(hosts, timeout).await?);
        root.create_if_absent(&format!("/{chroot}"), &[]).await?;
    }
    Ok(MetadataStore::ZooKeeper(
        ZkMetadataStore::connect(servers, timeout).await?,
    ))
}

/// Writes a new cluster's records (see the module); run again, it changes nothing.
///
/// # Errors
/// A store that is neither ZooKeeper nor etcd, or etcd without an existing BookKeeper
/// ([`ServerError::BadRequest`]); store failures ([`ServerError::Metadata`]).
pub async fn initialize(args: &InitializeClusterMetadata) -> Result<Initialized, ServerError> {
    if args.setup.transaction_coordinators == 0 {
        return Err(ServerError::BadRequest(
            "Number of transaction coordinators must greater than 0".into(),
        ));
    }
    let local_store = store_of(&args.metadata_store_url)?;
    let configuration_store = store_of(&args.configuration_metadata_store_url)?;
    if !args.existing_bookkeeper && matches!(local_store, Store::Etcd(_)) {
        return Err(ServerError::BadRequest(
            "an etcd metadata store needs --existing-bk-metadata-service-uri: pulsar-rs formats \
             BookKeeper's metadata on ZooKeeper only"
                .into(),
        ));
    }
    // Connected first: a ZooKeeper chroot is created by the connection, before BookKeeper's
    // format under it.
    let local = local_store.connect(args.session_timeout).await?;
    let configuration = configuration_store.connect(args.session_timeout).await?;
    let mut formatted_bookkeeper = false;
    // (An etcd store without an existing BookKeeper was refused above.)
    if let (false, Store::ZooKeeper(local_servers)) = (args.existing_bookkeeper, &local_store) {
        let bk_error = |e: pulsar_rs_bookkeeper::error::BkError| {
            ClusterError::Store(StoreError::Metadata {
                path: DEFAULT_LEDGERS_ROOT.into(),
                reason: e.to_string(),
            })
        };
        let bk = ZkStore::connect(local_servers, DEFAULT_LEDGERS_ROOT)
            .await
            .map_err(bk_error)?;
        formatted_bookkeeper = bk.format().await.map_err(bk_error)?;
    }
    setup::initialize(&local, &configuration, &args.setup, true).await?;
    tracing::info!(cluster = %args.setup.cluster, "Cluster metadata for '{}' setup correctly", args.setup.cluster);
    Ok(Initialized {
        formatted_bookkeeper,
    })
}

#[cfg(test)]
mod tests {
    use super::zookeeper_of;

    #[test]
    fn only_zookeeper_stores_are_taken() {
        assert_eq!(
            zookeeper_of("zk:127.0.0.1:2181/a").unwrap(),
            "127.0.0.1:2181/a"
        );
        assert_eq!(
            zookeeper_of("10.0.0.1:2181,10.0.0.2:2181").unwrap(),
            "10.0.0.1:2181,10.0.0.2:2181"
        );
        for bad in [
            "",
            "rocksdb:/tmp/x",
            "etcd:http://127.0.0.1:2379",
            "memory:local",
        ] {
            assert!(zookeeper_of(bad).is_err(), "{bad}");
        }
    }

    /// The broker's configuration and the cluster's store read `metadataStoreUrl`'s etcd scheme
    /// alike: a URL the store connects to as etcd is a cluster on etcd for the broker too.
    #[test]
    fn the_broker_and_the_store_name_etcd_alike() {
        let url = format!(
            "{}http://127.0.0.1:2379",
            pulsar_rs_cluster::store::ETCD_SCHEME
        );
        assert!(pulsar_rs_cluster::store::is_etcd(&url));
        let config = pulsar_rs_broker::BrokerConfig {
            metadata_store_url: url.clone(),
            ..pulsar_rs_broker::BrokerConfig::default()
        };
        assert_eq!(config.cluster_metadata_store(), Some(url));
        assert_eq!(config.bookkeeper_zookeeper(), None);
    }

    /// The system namespace and the coordinators' topic are written by the cluster crate's
    /// set-up and served by the broker crate: the two names must stay one.
    #[test]
    fn the_set_up_and_the_broker_name_the_same_system_records() {
        use pulsar_rs_broker::policies::limits::SYSTEM_NAMESPACE;
        use pulsar_rs_broker::transaction::COORDINATOR_ASSIGN_TOPIC;
        use pulsar_rs_cluster::setup;
        assert_eq!(setup::SYSTEM_NAMESPACE, SYSTEM_NAMESPACE);
        assert_eq!(
            format!(
                "persistent://{}/{}",
                setup::SYSTEM_NAMESPACE,
                setup::TRANSACTION_COORDINATOR_ASSIGN
            ),
            COORDINATOR_ASSIGN_TOPIC
        );
    }
}
