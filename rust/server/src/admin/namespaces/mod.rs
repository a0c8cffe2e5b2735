//! The admin calls on tenants and namespaces: their records ([`tenants`], [`lifecycle`]), their
//! policies ([`policies`], [`ns_policies`], [`metric_labels`], [`quota_retention`]) and the permissions granted on
//! them ([`permissions`]).

mod allowed_clusters;
pub(in crate::admin) mod lifecycle;
pub(in crate::admin) mod metric_labels;
pub(in crate::admin) mod ns_policies;
pub(in crate::admin) mod per_cluster;
pub(in crate::admin) mod permissions;
pub(in crate::admin) mod policies;
mod policy_kinds;
pub(in crate::admin) mod quota_retention;
pub(in crate::admin) mod replication;
pub(in crate::admin) mod tenants;
