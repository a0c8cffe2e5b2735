//! Several pulsar_rs brokers as one Apache Pulsar cluster.
//!
//! Everything a cluster shares lives in the metadata store (ZooKeeper or etcd, chosen by
//! `metadataStoreUrl` as Pulsar chooses), in Pulsar's own paths and JSON
//! documents, so Apache Pulsar brokers and pulsar_rs brokers can read each other's records:
//! broker registrations and load reports under `/loadbalance/brokers`, the leader at
//! `/loadbalance/leader`, namespace policies with their bundle boundaries under
//! `/admin/policies`, partitioned topics under `/admin/partitioned-topics`, and the ephemeral
//! ownership lock of each namespace bundle under `/namespace`. A [`ClusterMember`] is one
//! broker's part: it owns bundles, answers lookups (Connect, or Redirect with Pulsar's
//! `authoritative` flag), checks ownership for producers and consumers, and gives everything up
//! when its session is lost. Topics' data is on BookKeeper (`pulsar-rs-ledger-bk`), whose
//! fencing keeps a broker that lost a bundle from writing to it.
//!
//! With `configurationMetadataStoreUrl` naming another store, the records Pulsar keeps in its
//! configuration (global) store (clusters, tenants, namespace policies, partitioned topics) are
//! there instead, shared with the other clusters that use it ([`stores`]).
//!
//! The metadata-store client is its own crate, `pulsar-rs-metadata-store`, re-exported as
//! [`store`] (the managed ledgers on BookKeeper use it without the cluster).
//!
//! Modules, each importing only those before it: `error`; `paths`; `documents`; `bundles`;
//! `split`; `setup`; `stores`; `member`.

pub mod bundles;
pub mod documents;
pub mod error;
pub mod member;
pub mod paths;
pub mod setup;
pub mod shedding;
pub mod split;
pub mod stores;
pub use pulsar_rs_metadata_store as store;

pub use bundles::Bundle;
pub use documents::BrokerUrls;
pub use error::{ClusterError, Result};
pub use member::{
    BrokerLoad, ClusterMember, LoadSource, LookupAnswer, MemberConfig, OnRelease, ReportPolicy,
};
pub use setup::ClusterSetup;
pub use store::{MetadataStore, StoreError, StoreEvent, StoreWatch};
pub use stores::Stores;
