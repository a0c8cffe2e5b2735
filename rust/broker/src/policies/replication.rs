//! Where a topic replicates to (Pulsar's `checkReplication` list): the topic's own
//! `replicationClusters` policy, else its namespace's `replication_clusters`, else only the
//! local cluster. Both are kept as Pulsar's JSON field names in the stored policies.

use std::collections::HashMap;

use serde_json::Value;

use super::store::PolicyStore;
use super::DispatchRate;
use crate::naming::TopicName;

/// The topic policy field of a topic's replication clusters.
pub const TOPIC_FIELD: &str = "replicationClusters";
/// The namespace `Policies` field of a namespace's replication clusters.
pub const NAMESPACE_FIELD: &str = "replication_clusters";
/// The field of the replicators' rate: a topic policy (Pulsar's `DispatchRate`), and in a
/// namespace's `Policies` a map from cluster name to `DispatchRate`.
pub const RATE_FIELD: &str = "replicatorDispatchRate";

fn names(v: Option<&Value>) -> Option<Vec<String>> {
    let list = v?.as_array()?;
    Some(
        list.iter()
            .filter_map(|c| c.as_str().map(str::to_owned))
            .collect(),
    )
}

/// Namespace → its replication clusters (`None`: not set), filled as topics are resolved, so
/// one pass over many topics reads each namespace's policies once.
pub type NamespaceClusters = HashMap<String, Option<Vec<String>>>;

impl PolicyStore {
    /// The clusters `t` replicates to besides `local`, sorted; empty when it is not replicated.
    /// System topics (`__`-prefixed local names: transaction logs, topic policies) stay home.
    #[must_use]
    pub fn remote_clusters(&self, t: &TopicName, local: &str) -> Vec<String> {
        self.remote_clusters_in(t, local, &mut NamespaceClusters::new())
    }

    /// [`PolicyStore::remote_clusters`], reading namespaces through `seen`.
    #[must_use]
    pub fn remote_clusters_in(
        &self,
        t: &TopicName,
        local: &str,
        seen: &mut NamespaceClusters,
    ) -> Vec<String> {
        if t.local.starts_with("__") {
            return Vec::new();
        }
        let clusters = names(self.topic(t).other.get(TOPIC_FIELD)).or_else(|| {
            seen.entry(t.namespace_name())
                .or_insert_with_key(|ns| names(self.namespace(ns).other.get(NAMESPACE_FIELD)))
                .clone()
        });
        let clusters = clusters.unwrap_or_default();
        // A list without this cluster (another cluster's namespace seen through a shared store,
        // e.g. Pulsar's `initialize-cluster-metadata` of another cluster): nothing is replicated
        // from here. Pulsar would not serve the topic at all; this broker serves it, locally.
        if !clusters.iter().any(|c| c == local) {
            return Vec::new();
        }
        let mut remotes: Vec<String> = clusters.into_iter().filter(|c| c != local).collect();
        remotes.sort();
        remotes.dedup();
        remotes
    }

    /// The rate of `t`'s replicators, (messages/s, bytes/s), 0 = unlimited: its
    /// `replicatorDispatchRate` topic policy, else its namespace's for this cluster (the
    /// `Policies` document's map, keyed by `clusterName`, as Pulsar's), else the broker's
    /// `dispatchThrottlingRatePerReplicatorIn{Msg,Byte}`.
    #[must_use]
    pub fn replicator_rate(&self, t: &TopicName) -> (f64, f64) {
        let rate = |v: &Value| serde_json::from_value::<DispatchRate>(v.clone()).ok();
        let own = self
            .topic(t)
            .other
            .get(RATE_FIELD)
            .and_then(rate)
            .or_else(|| {
                self.namespace(&t.namespace_name())
                    .other
                    .get(RATE_FIELD)
                    .and_then(|m| m.get(&self.config.cluster_name))
                    .and_then(rate)
            });
        match own {
            Some(r) => r.per_second(),
            None => {
                let c = &self.config;
                #[allow(clippy::cast_precision_loss)]
                let positive = |v: i64| if v > 0 { v as f64 } else { 0.0 };
                (
                    positive(c.dispatch_throttling_rate_per_replicator_in_msg),
                    positive(c.dispatch_throttling_rate_per_replicator_in_byte),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::config::BrokerConfig;
    use pulsar_rs_ledger::MetaStore;

    #[test]
    fn replicator_rate_topic_then_this_clusters_namespace_entry_then_broker() {
        let dir = tempfile::tempdir().unwrap();
        let meta: Arc<dyn MetaStore> =
            Arc::new(pulsar_rs_ledger::FileMetaStore::open(dir.path()).unwrap());
        let cfg = Arc::new(BrokerConfig {
            cluster_name: "east".into(),
            dispatch_throttling_rate_per_replicator_in_msg: 9,
            ..BrokerConfig::default()
        });
        let store = PolicyStore::open(meta, cfg).unwrap();
        let t = TopicName::parse("persistent://a/b/t").unwrap();
        assert_eq!(store.replicator_rate(&t), (9.0, 0.0), "the broker's");
        let rate = |msg: i64| json!({"dispatchThrottlingRateInMsg": msg, "dispatchThrottlingRateInByte": -1, "ratePeriodInSecond": 1});
        // Another cluster's entry is not this broker's.
        store
            .update_namespace("a/b", |p| {
                p.other.insert(RATE_FIELD.into(), json!({"west": rate(5)}));
            })
            .unwrap();
        assert_eq!(
            store.replicator_rate(&t),
            (9.0, 0.0),
            "west's entry is ignored"
        );
        store
            .update_namespace("a/b", |p| {
                p.other.insert(
                    RATE_FIELD.into(),
                    json!({"west": rate(5), "east": rate(50)}),
                );
            })
            .unwrap();
        assert_eq!(
            store.replicator_rate(&t),
            (50.0, 0.0),
            "the namespace's, for east"
        );
        store
            .update_topic(&t, |p| {
                p.other.insert(RATE_FIELD.into(), rate(7));
            })
            .unwrap();
        assert_eq!(
            store.replicator_rate(&t.partition(1)),
            (7.0, 0.0),
            "the topic's"
        );
    }

    #[test]
    fn a_list_without_this_cluster_replicates_nothing_from_here() {
        let dir = tempfile::tempdir().unwrap();
        let meta: Arc<dyn MetaStore> =
            Arc::new(pulsar_rs_ledger::FileMetaStore::open(dir.path()).unwrap());
        let store = PolicyStore::open(meta, Arc::new(BrokerConfig::default())).unwrap();
        let t = TopicName::parse("persistent://a/b/t").unwrap();
        let set = |clusters: &[&str]| {
            store
                .update_namespace("a/b", |p| {
                    p.other.insert(NAMESPACE_FIELD.into(), json!(clusters));
                })
                .unwrap();
        };
        set(&["east", "west"]);
        assert_eq!(store.remote_clusters(&t, "east"), vec!["west".to_owned()]);
        set(&["west"]);
        assert!(
            store.remote_clusters(&t, "east").is_empty(),
            "east is not in the list"
        );
    }
}
