//! The admin calls on topics: one module per resource of Pulsar's `PersistentTopics` (and
//! `NonPersistentTopics`, `Schemas`, the REST lookup).

pub(in crate::admin) mod compaction;
pub(in crate::admin) mod iceberg_table;
pub(in crate::admin) mod instant;
pub(in crate::admin) mod internal_stats;
pub(in crate::admin) mod lifecycle;
pub(in crate::admin) mod listing;
pub(in crate::admin) mod lookup;
pub(in crate::admin) mod messages;
pub(in crate::admin) mod non_persistent;
pub(in crate::admin) mod offload;
pub(in crate::admin) mod partitions;
pub(in crate::admin) mod policies_delete;
pub(in crate::admin) mod replication_stats;
pub(in crate::admin) mod schemas;
pub(in crate::admin) mod search;
pub(in crate::admin) mod stats;
pub(in crate::admin) mod subscriptions;
pub(in crate::admin) mod terminate;
pub(in crate::admin) mod unload;
