//! This broker acting in a cluster: what it carries out of the decisions of
//! [`pulsar_rs_cluster`] (named as that crate names them), and the calls it makes to its peers.
//!
//! * [`member`]: joining the cluster `metadataStoreUrl` names, giving up released bundles, the
//!   load report's source;
//! * [`sync`]: tenants and namespace policies as the configuration store holds them;
//! * [`registry`]: the cluster records as the configuration store holds them;
//! * [`bundles`]: a namespace's bundles as the admin API sees them;
//! * [`load`]: what this broker carries (bundle figures, CPU, bandwidth);
//! * [`balancer`]: what the load balancer keeps between rounds (CPU sampler, counts);
//! * [`split`]: automatic bundle splitting;
//! * [`shedding`]: load shedding, led by the cluster's leader;
//! * [`setup`]: `pulsar-rs initialize-cluster-metadata`;
//! * [`peers`]: this broker as a client of the other brokers (binary protocol and admin API).

pub mod balancer;
pub mod bundles;
pub mod load;
pub mod member;
pub mod peers;
pub mod registry;
pub mod setup;
pub mod shedding;
pub mod split;
pub mod sync;
