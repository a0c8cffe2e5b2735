//! The admin calls on the brokers and the cluster: the brokers' health and configuration
//! ([`brokers`], [`dynamic_config`]), the load report ([`broker_stats`]), the clusters' records
//! ([`clusters`]) and the namespaces' bundles ([`bundles`]); and how a topic's call reaches the
//! broker that owns it: [`owner`] (answered there, or redirected) and [`fan_out`] (a
//! partitioned topic's call on every owner of its partitions).

pub(in crate::admin) mod broker_stats;
pub(in crate::admin) mod brokers;
pub(in crate::admin) mod bundles;
pub(in crate::admin) mod clusters;
pub(in crate::admin) mod dynamic_config;
pub(in crate::admin) mod fan_out;
pub(in crate::admin) mod owner;
